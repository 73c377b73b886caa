# mig: test_parse checks the RPC's VM name rule against the stream's
# (mig_vm_name_valid); the server itself links only mig_tls.
hv_unit_area(migrated/rpc LIBS migd_rpc mig LABELS tsan TIMEOUT 60)
