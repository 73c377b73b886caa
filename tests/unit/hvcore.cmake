hv_unit_area(hvcore LIBS hvcore PkgConfig::ZSTD LABELS tsan)
