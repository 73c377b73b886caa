hv_unit_area(migrated/host LIBS migd_host LABELS tsan TIMEOUT 60)
