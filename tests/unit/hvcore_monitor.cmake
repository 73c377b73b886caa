hv_unit_area(hvcore/monitor LIBS hvcore_vm LABELS tsan TIMEOUT 90)
