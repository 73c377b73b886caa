hv_unit_area(hvcore/soft LIBS hvcore_soft LABELS tsan TIMEOUT 120)
