#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Postcopy, and postcopy recovery, of a running Linux guest with its
# devices (label kvm: where /dev/kvm is, or in the KVM rig; issue 27).
# Two daemons; on the source a Linux guest (tools/guest) with 2 vCPUs, a
# disk (a raw image both daemons see) and an rng, set up as in
# test_linux_migrate.sh (lib_linux.sh): hvblk's 8 MiB of checksummed
# blocks at boot, the stamp workload writing, and the guest reading its
# disk over and over into 16 MiB of memory it keeps (hvblk --hold: device
# DMA, checked in the guest). The migration goes through a TCP relay
# (tcpproxy.py) and switches to postcopy after its first pass, the push
# slowed (fault point src.pc.push) so that the postcopy lasts: on the
# destination the vCPUs and the device threads run while pages are
# missing, and a device's DMA into or out of a missing page faults it in
# as a vCPU's access does (docs/migration-protocol.md, "Postcopy of a
# Linux guest"). In the middle of it the relay is killed: both sides
# pause (POSTCOPY_PAUSED), the destination does not list the VM; the
# source recovers straight to the destination's port and the migration
# completes, verified. Then, in the guest on the destination: the device
# reads' verdict (every block the last read brought), the workload's
# check over its whole region, no new kernel log line, the uptime went
# on, the disk read back from the device; on the host the image holds
# the blocks.
# NOT REGISTERED YET: postcopy of a Linux guest is still refused
# (migrated/vmm/calls_mig.c) until this test is seen passing in the rig;
# its one run there was ended by the rig's 660 s silence limit with no
# verdict (2026-12-05). To try it, lift the refusal and run it with
# ctest's environment (MIGD_GUEST_HVGUEST).
# Usage: test_linux_postcopy.sh MIGRATED MIGRATECTL MIGRATE-SEND MIGRATE-RECV
source "$(dirname "$0")/lib_faults.sh" "$@"
source "$(dirname "$0")/lib_linux.sh"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "FAIL: migrate-send/recv not built"; exit 1; }
command -v python3 >/dev/null || { echo "FAIL: no python3 (tcpproxy.py)"; exit 1; }
need_kvm
linux_guest
PROXY="python3 $(dirname "$0")/tcpproxy.py"
MIB=8
SEED=$((RANDOM * 32768 + RANDOM + 1))
DISK=$TMP/disk.img
truncate -s 32M "$DISK"

# 64 pages per push refill, 20 ms each: at most 12 MiB/s of background
# push (the rig, nested under TCG, moves less anyway), so that the
# postcopy lasts seconds; the faults are served at once.
MIGRATED_FAULTPOINTS="src.pc.push=sleep:20" start_daemon src --dev-tls \
	--tls-dir "$TMP/tls" --accel kvm
SRC=$SOCK
start_daemon dst --dev-tls --tls-dir "$TMP/tls" --accel kvm
DST=$SOCK

# st SOCK VM: PH and MSG of VM's latest migration there.
st() {
	local j
	j=$("$CTL" --socket "$1" --json migration status "$2" 2>/dev/null)
	PH=$(jq -r '.migrations[0].progress.phase // empty' <<<"$j" 2>/dev/null)
	MSG=$(jq -r '.migrations[0].progress.message // empty' <<<"$j" 2>/dev/null)
}
# wait_phase SOCK VM PHASE [TENTHS]: 0 once VM's migration is in PHASE.
wait_phase() {
	local n=${4:-300}
	for _ in $(seq "$n"); do
		st "$1" "$2"
		[ "$PH" = "$3" ] && return 0
		case "$PH" in MIG_PHASE_COMPLETED | MIG_PHASE_FAILED | MIG_PHASE_CANCELLED)
			return 1 ;;
		esac
		sleep 0.1
	done
	return 1
}

SOCK=$SRC expect_rc 0 "vm create (2 vCPUs, --disk, --rng)" ctl vm create lx \
	--kernel "$GUEST_IMG/vmlinuz" --initrd "$GUEST_IMG/initramfs.cpio.gz" \
	--mem 256M --vcpus 2 --accel kvm --disk "$DISK" --rng \
	--cmdline "hv.run=0 hv.after=shell hv.blk=/dev/vda hv.blk_mib=$MIB hv.blk_seed=$SEED"
[ "$LAST_RC" = 0 ] || { tail -20 "$TMP/src.log"; finish; }

linux_boot_wait "$SRC" lx
grep -q "^hvblk: ok dev=/dev/vda mib=$MIB seed=$SEED " "$TMP/boot.txt" &&
	ok "before: $MIB MiB of checksummed blocks written to /dev/vda" ||
	fail "hvblk: $(grep hvblk "$TMP/boot.txt")"

DUR=60
linux_workload_start "$SRC" lx "$DUR"
# MIGD_LX_HOLD_MIB=0 leaves the device reads out.
HOLD_MIB=${MIGD_LX_HOLD_MIB:-16}
[ "$HOLD_MIB" = 0 ] || linux_hold_start "$SRC" lx "$MIB" "$SEED" "$HOLD_MIB" 4

port=$("$RECV" --socket "$DST" --name lx 127.0.0.1:0) ||
	{ fail "migrate-recv: $port"; finish; }
rm -f "$TMP/relay.port"
$PROXY "$port" --ready "$TMP/relay.port" --life 300 &
RPID=$!
PIDS+=("$RPID")
# Python starts slowly nested under TCG: give it a minute.
wait_until '[ -s "$TMP/relay.port" ]' 60 || { fail "the relay did not start"; finish; }
RPORT=$(cat "$TMP/relay.port")

"$SEND" --socket "$SRC" --postcopy-after 0 lx "127.0.0.1:$RPORT" \
	>"$TMP/send.out" 2>&1 &
send_pid=$!
if wait_phase "$SRC" lx MIG_PHASE_POSTCOPY 1200; then
	ok "postcopy: lx runs on the destination with pages missing ($MSG)"
else
	fail "never in postcopy: $PH $MSG"
	tail -20 "$TMP/send.out" "$TMP/src.log" "$TMP/dst.log"
	kill "$send_pid" 2>/dev/null
	finish
fi
# The guest runs there on partial memory for a moment: its vCPUs and
# devices fault pages in. Then the link breaks.
sleep 1
kill -9 "$RPID" 2>/dev/null
wait "$RPID" 2>/dev/null
t_break=$SECONDS
ok "relay killed in phase POSTCOPY"
wait_phase "$SRC" lx MIG_PHASE_POSTCOPY_PAUSED 300 &&
	ok "source paused: $MSG" || fail "source not paused: $PH $MSG"
if wait_phase "$DST" lx MIG_PHASE_POSTCOPY_PAUSED 300; then
	ok "destination paused: $MSG"
else
	st "$DST" lx
	# Every page may have come in before the break: nothing to pause.
	fail "destination not paused: $PH $MSG"
fi
[ "$(vm_state "$DST" lx)" != VM_STATE_RUNNING ] &&
	ok "lx is not listed on the destination while paused" ||
	fail "lx listed running on partial memory"
kill -0 "$send_pid" 2>/dev/null && ok "migrate-send waits" ||
	fail "migrate-send ended: $(tail -3 "$TMP/send.out")"

# Recovered straight to the destination's port: complete.
SOCK=$SRC expect_rc 0 "recover to the destination" \
	ctl migration recover lx "127.0.0.1:$port"
echo "paused for $((SECONDS - t_break)) s"
for _ in $(seq 1800); do
	kill -0 "$send_pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$send_pid" 2>/dev/null; then
	st "$SRC" lx
	fail "not complete 180 s after the recovery: $PH $MSG"
	kill "$send_pid"
fi
wait "$send_pid"
rc=$?
tail -14 "$TMP/send.out"
[ "$rc" = 0 ] && ok "lx migrated by postcopy after a recovery (migrate-send rc=0)" ||
	{ fail "migrate-send rc=$rc"; tail -n 30 "$TMP/src.log" "$TMP/dst.log"; }
assert_verified_zero "$TMP/send.out" lx
grep -q "migration recover 1" "$TMP/send.out" &&
	ok "migrate-send said how to recover" || fail "migrate-send did not say how to recover"
grep -qE 'op=postcopy_in .*err=0 .*recoveries=1' "$TMP/dst.log" &&
	ok "the destination counted the recovery" ||
	fail "no 'recoveries=1' in the destination's log: $(grep op=postcopy_in "$TMP/dst.log")"
grep -E 'op=postcopy_(in|load|done|switch) |op=postcopy_load_pages ' "$TMP/src.log" "$TMP/dst.log" | sed 's/^/  /'
wait_state "$DST" lx VM_STATE_RUNNING 100 && ok "lx runs on the destination" ||
	fail "lx on the destination: $(vm_state "$DST" lx)"
SOCK=$SRC expect_rc 3 "the source no longer has lx" ctl vm inspect lx

# In the guest, on the destination.
[ "$HOLD_MIB" = 0 ] || linux_hold_stop "$DST" lx
linux_after_checks "$DST" lx "$DUR" "$MIB" "$SEED"

SOCK=$DST expect_rc 0 "vm destroy on the destination" ctl vm destroy lx
out=$("$HVBLK" --verify hv.blk="$DISK" hv.blk_mib=$MIB hv.blk_seed=$SEED 2>&1)
rc=$?
[ "$rc" = 0 ] && ok "on the host: $out" || fail "the image (rc=$rc): $out"
echo "elapsed: $SECONDS s"
finish
