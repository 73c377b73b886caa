#!/bin/bash
# The fleet at scale (docs/benchmarks.md, "Fleet at scale"): a local
# 3-member etcd (tests/integration/lib_etcd.sh), then fleet-sim registers
# simulated hosts under leases kept alive, claims their VMs' ownership
# keys (the daemon's own code, migrated/fleet/fleet.c) and moves
# ownership with the commit's transaction at each rate asked, while
# watchers follow the VM keys. Prints one row per rate.
#
#   tools/bench/fleet-sim.sh [BUILD_DIR] [fleet-sim options...]
#
# BUILD_DIR defaults to build/release. Options go to fleet-sim (--hosts,
# --vms-per-host, --rates, --duration, --clients, --watchers, --ttl; see
# fleet-sim --help); the defaults are 1000 hosts x 30 VMs, rates
# 100,500,1000,max, 20 s each, 8 clients, 4 watchers.
#
# FLEET_SIM_TMP (default /tmp): where the members keep their data. On a
# machine whose disk is shared with builds, /dev/shm takes fsync out of
# the figures (then they are etcd's CPU and protocol cost, not a disk's).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build/release
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	b=$1
	shift
fi
SIM=$b/tools/fleetsim/fleet-sim
[ -x "$SIM" ] || { echo "no $SIM: build first (tools/setup.sh release)"; exit 1; }
TMP=$(mktemp -d "${FLEET_SIM_TMP:-/tmp}/fleet-sim.XXXXXX")
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT
source "$top/tests/integration/lib_etcd.sh"
etcd_need
etcd_start 3
echo "etcd $("$ETCD" --version | head -1 | awk '{print $3}'), 3 members on" \
	"loopback, data in $TMP ($(df -T "$TMP" | awk 'NR == 2 {print $2}'))"
"$SIM" --etcd "$ETCD_ENDPOINTS" "$@"
rc=$?
ectl endpoint status -w table
exit $rc
