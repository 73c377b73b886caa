#!/bin/bash
# A dirty-ring VM created through the daemon (KVM) and migrated between two
# daemons on loopback: the ring size is taken from the request or from the
# daemon's --dirty-ring default, shown by vm inspect, refused when invalid,
# and the source's post-commit re-hash of every sent page finds 0 pages
# differing (a page lost by the dirty log would differ). Exits 77 only
# when /dev/kvm is missing or the tools are not built.
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
need_kvm
# The source defaults to a ring; the destination to the bitmap.
start_daemon src --dev-tls --tls-dir "$TMP/tls" --dirty-ring 4096
SRC=$SOCK
start_daemon dst --dev-tls --tls-dir "$TMP/tls"
DST=$SOCK
[ "$(SOCK=$SRC ctl --json ping | jq -r .engine)" = true ] ||
	{ fail "migration engine not built"; finish; }

ring_of() { SOCK=$1 ctl --json vm inspect "$2" | jq -r '.info.dirtyRing // .info.dirty_ring // 0'; }

# Sizes: from the request, the daemon default, or none.
SOCK=$SRC expect_rc 0 "create r8k with --dirty-ring 8192" ctl vm create r8k \
	--mem 32M --pattern idle --dirty-ring 8192
[ "$(ring_of "$SRC" r8k)" = 8192 ] && ok "  ... inspect: 8192 entries" ||
	fail "r8k ring: $(ring_of "$SRC" r8k)"
SOCK=$SRC expect_rc 0 "create rdef (daemon default)" ctl vm create rdef \
	--mem 32M --pattern idle
[ "$(ring_of "$SRC" rdef)" = 4096 ] && ok "  ... inspect: 4096 entries" ||
	fail "rdef ring: $(ring_of "$SRC" rdef)"
SOCK=$SRC expect_rc 0 "create roff with --dirty-ring off" ctl vm create roff \
	--mem 32M --pattern idle --dirty-ring off
[ "$(ring_of "$SRC" roff)" = 0 ] && ok "  ... inspect: bitmap" ||
	fail "roff ring: $(ring_of "$SRC" roff)"
SOCK=$SRC ctl vm inspect r8k | grep -q "dirty log: ring, 8192 entries" &&
	ok "  ... text inspect names the ring" || fail "text inspect"
SOCK=$SRC expect_rc 2 "--dirty-ring 1000 refused (not a power of two)" \
	ctl vm create rbad --mem 32M --dirty-ring 1000
SOCK=$SRC expect_rc 2 "--dirty-ring on a soft VM refused" \
	ctl vm create rsoft --mem 32M --accel soft --dirty-ring 4096

# migrate NAME: a busy two-vCPU ring VM; asserts the page check.
migrate() {
	local name=$1 port out pages differ
	port=$("$RECV" --socket "$DST" --name "$name" 127.0.0.1:0) ||
		{ fail "migrate-recv: $port"; return; }
	# Nested under TCG on a loaded host the busy guest can outrun the
	# link and the throttle for minutes (seen: the test's 240 s): after
	# 60 s the switchover is forced, with pages pending, which the final
	# harvest of the rings must still deliver (0 differ below).
	expect_rc 0 "migrate $name" "$SEND" --socket "$SRC" \
		--timeout-ms 60000 --timeout-policy switchover "$name" \
		"127.0.0.1:$port"
	out=$LAST_OUT
	echo "$out" | tail -6
	pages=$(echo "$out" | sed -n 's/.*verified: *\([0-9]*\) pages.*/\1/p')
	differ=$(echo "$out" | sed -n 's/.*: \([0-9]*\) differ.*/\1/p')
	[ -n "$pages" ] && [ "$pages" -gt 0 ] &&
		ok "  ... $pages pages re-hashed" || fail "no verification: $out"
	[ "$differ" = 0 ] && ok "  ... 0 pages differ" ||
		fail "pages differ: '${differ}'"
	[ "$(SOCK=$DST ctl --json vm inspect "$name" | jq -r .info.state)" = \
		VM_STATE_RUNNING ] && ok "  ... $name runs on the destination" ||
		fail "$name not running on the destination"
}

# A guest that dirties fast enough that the drainer (every 512 entries)
# and the harvester both reap during the iterations.
SOCK=$SRC expect_rc 0 "create ring1 (default ring, 2 vCPUs, busy)" ctl vm \
	create ring1 --mem 128M --vcpus 2 --pattern random --rate 20000 \
	--heartbeat-us 2000
sleep 0.5
# The dirty-rate monitor measures per-vCPU rates from the rings.
est=$(SOCK=$SRC ctl --json dirty ring1 | jq -r '.vcpuSplitEstimated // .vcpu_split_estimated // false')
[ "$est" = false ] && ok "  ... per-vCPU dirty rates measured by the ring" ||
	fail "per-vCPU rates estimated in ring mode"
migrate ring1
grep -q "event=vm_created vm=ring1 .*dirty_ring=4096" "$TMP/src.log" &&
	ok "  ... source log: ring1 had a 4096-entry ring" ||
	fail "source log does not show the ring"
# hvcore's own record of the VM (the engine logs in ring mode whenever
# the VM has a ring: migrated/mig/source.c).
grep -q "comp=vm op=create .*mem=134217728 vcpus=2 .*ring=4096" "$TMP/src.log" &&
	ok "  ... hvcore created ring1 with the ring" ||
	fail "hvcore did not create ring1 with a ring"
finish
