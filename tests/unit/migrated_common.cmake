hv_unit_area(migrated/common LIBS migd_common TIMEOUT 60)
