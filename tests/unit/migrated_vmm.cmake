hv_unit_area(migrated/vmm LIBS migd_vmm TIMEOUT 240)
