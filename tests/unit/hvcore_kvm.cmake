hv_unit_area(hvcore/kvm LIBS hvcore_vm hvcore_kvm hv_arch_x86 hv_proto TIMEOUT 300)
