hv_unit_area(migrated/rpc LIBS migd_rpc LABELS tsan TIMEOUT 60)
