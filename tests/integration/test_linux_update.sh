#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Local live update of a running Linux guest with its devices (vm update;
# label kvm: where /dev/kvm is, or in the KVM rig; issue 27). One daemon;
# a Linux guest (the project's, tools/guest) with 2 vCPUs, a disk and an
# rng, its RAM in a memfd (--backing memfd). At boot hvblk writes 8 MiB
# of checksummed blocks to /dev/vda; then the stamp workload starts and
# the VM is handed to a new worker process twice while it writes. After:
# each update named a new worker and the old one exited; in the guest
# the workload's check passes over its whole region, the kernel logged
# nothing new, the uptime went on, the disk's blocks read back from the
# device (lib_linux.sh's checks, as after a migration); the console log
# file holds the boot and what the guest printed after the updates (the
# new worker continues the file); on the host the image holds the blocks.
# Usage: test_linux_update.sh MIGRATED MIGRATECTL MIGRATE-SEND MIGRATE-RECV
source "$(dirname "$0")/lib.sh" "$@"
source "$(dirname "$0")/lib_linux.sh"

need_kvm
linux_guest
MIB=8
SEED=$((RANDOM * 32768 + RANDOM + 1))
DISK=$TMP/disk.img
truncate -s 32M "$DISK"

start_daemon d --accel kvm
expect_rc 0 "vm create (2 vCPUs, --disk, --rng, --backing memfd)" ctl vm create lx \
	--kernel "$GUEST_IMG/vmlinuz" --initrd "$GUEST_IMG/initramfs.cpio.gz" \
	--mem 256M --vcpus 2 --accel kvm --disk "$DISK" --rng --backing memfd \
	--cmdline "hv.run=0 hv.after=shell hv.blk=/dev/vda hv.blk_mib=$MIB hv.blk_seed=$SEED"
[ "$LAST_RC" = 0 ] || { tail -20 "$TMP/d.log"; finish; }

linux_boot_wait "$SOCK" lx
grep -q "^hvblk: ok dev=/dev/vda mib=$MIB seed=$SEED " "$TMP/boot.txt" &&
	ok "before: $MIB MiB of checksummed blocks written to /dev/vda" ||
	fail "hvblk: $(grep hvblk "$TMP/boot.txt")"
log=$(ctl --json vm inspect lx | jq -r '[.. | .console_log? // empty][0]')
[ -f "$log" ] && ok "the console log is $log" || fail "no console log file: '$log'"

DUR=40
linux_workload_start "$SOCK" lx "$DUR"

pid_of() { ctl --json vm inspect lx | jq -r .info.worker_pid; }
for i in 1 2; do
	p0=$(pid_of)
	out=$(ctl --json vm update lx 2>&1)
	rc=$?
	p1=$(pid_of)
	if [ "$rc" = 0 ] && [ "$p1" != "$p0" ] &&
		[ "$(jq -r .new_pid <<<"$out")" = "$p1" ]; then
		ok "update $i: worker $p0 -> $p1, paused $(($(jq -r '.pause_ns // 0' <<<"$out") / 1000)) us"
	else
		fail "update $i: rc=$rc pids $p0 -> $p1: $out"
		tail -n 30 "$TMP/d.log"
		finish
	fi
	kill -0 "$p0" 2>/dev/null && sleep 1
	kill -0 "$p0" 2>/dev/null && fail "  ... old worker $p0 still runs" ||
		ok "  ... old worker $p0 exited"
	[ "$(ctl --json vm inspect lx | jq -r .info.state)" = VM_STATE_RUNNING ] &&
		ok "  ... lx runs" || fail "  ... lx is not running"
	sleep 3
done

linux_after_checks "$SOCK" lx "$DUR" "$MIB" "$SEED"
grep -q "hvguest: shell" "$log" && tr -d "\r" <"$log" | grep -q "^endmark 0" &&
	ok "the console log file holds the boot and the output after the updates" ||
	fail "console log $log: $(tail -c 500 "$log")"

expect_rc 0 "vm destroy" ctl vm destroy lx
out=$("$HVBLK" --verify hv.blk="$DISK" hv.blk_mib=$MIB hv.blk_seed=$SEED 2>&1)
rc=$?
[ "$rc" = 0 ] && ok "on the host: $out" || fail "the image (rc=$rc): $out"

finish
