hv_unit_area(migrated/mig LIBS mig LABELS tsan TIMEOUT 300)
