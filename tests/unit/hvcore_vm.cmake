hv_unit_area(hvcore/vm LIBS hvcore_vm hv_proto TIMEOUT 120)
