hv_unit_area(migrated/daemon LIBS migd LABELS tsan TIMEOUT 60)
