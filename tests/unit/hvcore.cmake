hv_unit_area(hvcore LIBS hvcore LABELS tsan)
