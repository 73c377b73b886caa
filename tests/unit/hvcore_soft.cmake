hv_unit_area(hvcore/soft LIBS hvcore_soft hvcore_vm LABELS tsan TIMEOUT 120)
