#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The host daemon carries neither the migration engine, nor the generic
# VM (hvcore_vm), nor an accelerator, nor the worker: no VM runs in it
# (docs/processes.md).
#
#   tools/check-host-symbols.sh MIGRATED [LINK_CLOSURE]
#
# MIGRATED: the built host daemon; its symbol table (nm) must define no
# symbol of those. LINK_CLOSURE (optional): a file naming, one per line,
# every library the CMake target links, directly or not (tests/CMakeLists.txt
# writes it); none of those libraries may be among them, so the check holds
# even when nothing of theirs happens to be pulled in. Exit 0: clean, 1: a
# symbol or library found (listed), 2: usage. ctest runs it (test
# host_symbols).
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ ! -f "$1" ]; then
	sed -n '2,/^set/p' "$0" | sed '$d' >&2
	exit 2
fi
bin=$1
closure=${2:-}

# The engine (mig_ but for mig_tls's TLS, address and dev-CA objects), the
# VM and its vCPUs, guest memory and the dirty-rate monitor, the two
# accelerators, the worker's own objects.
bad_syms='^(mig_|dst_|src_|hv_vm_|hv_vcpu_|hv_guest_|hv_dirtyrate_|hv_kvm_|hv_soft_|sched_|migd_registry_|migd_vmm_|migd_worker_(check_idle|claim_name|takeover_start|server_ops)|migd_mig_(start|find|cancel|resolve|fleet)|migd_call_(vm_|mig_|dirty_rate|converge|worker_))'
allowed_syms='^mig_(tls_|addr_|devca_)'
bad_libs='^(mig|hvcore_vm|hvcore_kvm|hvcore_soft|migd_vmm|migd_worker)$'

rc=0
found=$(nm --defined-only "$bin" | awk '$2 ~ /^[TtDdBbRr]$/ {print $3}' |
	grep -E "$bad_syms" | grep -vE "$allowed_syms" || true)
if [ -n "$found" ]; then
	n=$(printf '%s\n' "$found" | wc -l)
	echo "check-host-symbols: $bin defines $n symbol(s) of the engine," \
		"the VM, an accelerator or the worker:"
	printf '%s\n' "$found" | head -20 | sed 's/^/  /'
	rc=1
fi
if [ -n "$closure" ]; then
	libs=$(grep -E "$bad_libs" "$closure" || true)
	if [ -n "$libs" ]; then
		echo "check-host-symbols: the host daemon links" \
			$libs "($closure)"
		rc=1
	fi
fi
if [ $rc -eq 0 ]; then
	total=$(nm --defined-only "$bin" | wc -l)
	libs=
	[ -n "$closure" ] &&
		libs="; its link closure: $(wc -l <"$closure") libraries"
	echo "check-host-symbols: ok ($bin: $total symbols, none of the" \
		"engine, the VM, an accelerator or the worker$libs)"
fi
exit $rc
