hv_unit_area(migrated/daemon LIBS migd TIMEOUT 60)
