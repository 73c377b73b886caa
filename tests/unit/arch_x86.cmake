hv_unit_area(arch/x86 LIBS hv_arch_x86 hvcore TIMEOUT 120)
