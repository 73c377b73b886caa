hv_unit_area(arch/x86/boot LIBS hv_arch_x86 hvcore TIMEOUT 60)
