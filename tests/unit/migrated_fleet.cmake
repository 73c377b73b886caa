hv_unit_area(migrated/fleet LIBS migd_fleet TIMEOUT 60)
