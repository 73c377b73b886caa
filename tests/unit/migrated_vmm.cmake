hv_unit_area(migrated/vmm LIBS migd_vmm migd_worker TIMEOUT 240)
