#!/bin/bash
# VMs larger than 3 GiB (RAM below the MMIO hole and from 4 GiB up,
# hvcore/ram_layout.h), migrated between two daemons on loopback: an 8 GiB
# and a 256 GiB VM whose workload sweeps a 128 MiB region spanning the
# hole (64 MiB below 3 GiB, 64 MiB from 4 GiB). Both sides' memfds stay
# sparse: only what the guest wrote is sent and checked. The source's
# post-commit verification must find 0 differing pages and the page-stamp
# oracle (vm check) every page intact on the destination. MIGD_IT_ACCEL
# (lib.sh it_accel) chooses the accelerator: the plain test runs soft, its
# "kvm"-labelled twin KVM (8 GiB; 256 GiB too, except nested under TCG in
# tools/kvmrig, where the 8 GiB VM already maps RAM above 4 GiB).
source "$(dirname "$0")/lib.sh" "$@"
source "$(dirname "$0")/lib_faults.sh"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }

# rss_kib PID FIELD: VmRSS / VmHWM of a worker, in KiB.
rss_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null; }

# rss_line DESC PID: what a worker holds beyond guest RAM is RssAnon
# (its own heap and tables); RssShmem is the guest RAM it touched.
rss_line() {
	echo "  $1: VmRSS $(rss_kib "$2" VmRSS) KiB (anon $(rss_kib "$2" RssAnon)," \
		"guest RAM $(rss_kib "$2" RssShmem)), VmHWM $(rss_kib "$2" VmHWM) KiB"
}

# run_big ACCEL NAME MEM
run_big() {
	local accel=$1 name=$2 mem=$3 port i wpid
	SOCK=$SRC expect_rc 0 "create $name ($accel, $mem)" ctl vm create "$name" \
		--accel "$accel" --mem "$mem" --vcpus 2 --pattern sweep \
		--rate 20000 --region-offset 3008M --region-size 128M \
		--heartbeat-us 2000
	i=$(SOCK=$SRC ctl vm inspect "$name")
	echo "$i" | grep -E '^ram:'
	echo "$i" | grep -qE '^ram: .*MMIO hole' && ok "$name: layout has the hole" ||
		fail "$name: no hole in the layout: $(echo "$i" | head -4)"
	# Long enough for the sweep to cover the region once (16384 pages a
	# vCPU at 20000 pages/s: 0.8 s).
	sleep 1.5
	wpid=$(SOCK=$SRC ctl --json vm inspect "$name" | jq -r .info.worker_pid)
	rss_line "$name source worker before" "$wpid"
	port=$("$RECV" --socket "$DST" --name "$name" --insecure 127.0.0.1:0) ||
		{ fail "migrate-recv: $port"; return; }
	# The source worker exits after the commit: sample its peak while
	# it migrates.
	(while [ -r "/proc/$wpid/status" ]; do
		h=$(rss_kib "$wpid" VmHWM) && [ -n "$h" ] && echo "$h" >"$TMP/$name.hwm"
		sleep 0.2
	done) &
	local sampler=$!
	expect_rc 0 "migrate $name" "$SEND" --socket "$SRC" --insecure "$name" \
		"127.0.0.1:$port"
	wait "$sampler"
	echo "  $name source worker: VmHWM $(cat "$TMP/$name.hwm" 2>/dev/null) KiB (last sample)"
	echo "$LAST_OUT" | tail -6
	echo "$LAST_OUT" >"$TMP/$name.out"
	[ "$LAST_RC" = 0 ] || return
	assert_verified_zero "$TMP/$name.out" "$name"
	# The destination registers the VM as it resumes it: wait for that.
	wait_state "$DST" "$name" VM_STATE_RUNNING ||
		fail "$name: not running on the destination"
	expect_intact "$name on the destination" "$DST" "$name"
	# The whole region: 32768 pages, all stamped by now.
	local pages written
	pages=$(echo "$CHECK_JSON" | jq -r .pages)
	written=$(echo "$CHECK_JSON" | jq -r .written)
	[ "$pages" = 32768 ] && [ "$written" = 32768 ] &&
		ok "$name: 32768 region pages checked, all written" ||
		fail "$name: pages $pages written $written"
	wpid=$(SOCK=$DST ctl --json vm inspect "$name" | jq -r .info.worker_pid)
	rss_line "$name destination worker" "$wpid"
	SOCK=$DST expect_rc 0 "destroy $name" ctl vm destroy "$name"
}

ACCEL=$(it_accel)
if [ "$ACCEL" = kvm ]; then
	start_daemon ksrc --dev-tls --tls-dir "$TMP/tls" --accel kvm \
		--migration-io-timeout-ms 60000
	SRC=$SOCK
	start_daemon kdst --dev-tls --tls-dir "$TMP/tls" --accel kvm \
		--migration-io-timeout-ms 60000
	DST=$SOCK
	run_big kvm kbig8 8G
	[ -n "${KVMRIG:-}" ] || run_big kvm kbig256 256G
	finish
fi

start_daemon src --dev-tls --tls-dir "$TMP/tls" --accel soft \
	--migration-io-timeout-ms 60000
SRC=$SOCK
start_daemon dst --dev-tls --tls-dir "$TMP/tls" --accel soft \
	--migration-io-timeout-ms 60000
DST=$SOCK
if [ "$(SOCK=$SRC ctl --json ping | jq -r .engine)" != true ]; then
	echo "SKIP: migration engine not built"
	exit 77
fi
# Limits: above the maximum is refused with the reason.
SOCK=$SRC expect_rc 2 "8 TiB refused" ctl vm create huge --accel soft --mem 8T
run_big soft big8 8G
run_big soft big256 256G

finish
