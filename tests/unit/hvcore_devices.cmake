hv_unit_area(hvcore/devices LIBS hvcore LABELS tsan)
