#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Snapshot and restore of a running Linux guest with its devices (label
# kvm: where /dev/kvm is, or in the KVM rig; issue 29, docs/snapshots.md).
# The project's guest (tools/guest) with 2 vCPUs, a disk and an rng boots;
# hvblk writes checksummed blocks to /dev/vda; the stamp workload
# (hvguest) starts and the guest says how many lines its kernel log has
# and its uptime (lib_linux.sh). A live snapshot with --stop ends the VM
# (its disk, flushed at the pause, then stays as it was: what makes the
# restore consistent); the image is unchanged until the restore. The VM
# is restored from the files (its devices made again and their state
# loaded, the kernel not booted again) and, in the guest: the workload's
# check passes over its whole region, the kernel logged nothing new, the
# uptime continued from the snapshot, the disk's blocks read back from
# the device (lib_linux.sh's linux_after_checks). A second restore of the
# same snapshot while the first runs on its writable disk is refused and
# leaves no VM. After, on the host, the image holds the blocks.
# Usage: test_linux_snapshot.sh MIGRATED MIGRATECTL
source "$(dirname "$0")/lib.sh" "$@"
source "$(dirname "$0")/lib_linux.sh"

need_kvm
linux_guest
MIB=8
SEED=$((RANDOM * 32768 + RANDOM + 1))
DISK=$TMP/disk.img
truncate -s 32M "$DISK"

start_daemon d1 --accel kvm
expect_rc 0 "vm create (2 vCPUs, --disk, --rng)" ctl vm create lx \
	--kernel "$GUEST_IMG/vmlinuz" --initrd "$GUEST_IMG/initramfs.cpio.gz" \
	--mem 256M --vcpus 2 --accel kvm --disk "$DISK" --rng \
	--cmdline "hv.run=0 hv.after=shell hv.blk=/dev/vda hv.blk_mib=$MIB hv.blk_seed=$SEED"
[ "$LAST_RC" = 0 ] || { tail -20 "$TMP/d1.log"; finish; }

linux_boot_wait "$SOCK" lx
grep -q "^hvblk: ok dev=/dev/vda mib=$MIB seed=$SEED " "$TMP/boot.txt" &&
	ok "before: $MIB MiB of checksummed blocks written to /dev/vda" ||
	fail "hvblk: $(grep hvblk "$TMP/boot.txt")"

DUR=30
linux_workload_start "$SOCK" lx "$DUR"

out=$(ctl --json vm snapshot lx "$TMP/snap" --stop) ||
	{ fail "snapshot of the Linux guest: $out"; tail -20 "$TMP/d1.log"; finish; }
echo "snapshot: $out"
[ "$(json_get "$out" .live)" = true ] && [ "$(json_get "$out" .vm.state)" = VM_STATE_STOPPED ] &&
	ok "live snapshot, then the VM ended (pause $(json_get "$out" .pause_ns) ns, $(json_get "$out" .file_bytes) bytes on disk)" ||
	fail "snapshot: $out"
expect_rc 3 "lx is gone" ctl vm inspect lx
sum0=$(md5sum <"$DISK")
sleep 2
[ "$(md5sum <"$DISK")" = "$sum0" ] && ok "the image stays as it was at the snapshot" ||
	fail "the image changed after the VM ended"

expect_rc 0 "restore lx from the snapshot" ctl vm restore lx "$TMP/snap"
[ "$LAST_RC" = 0 ] || { tail -20 "$TMP/d1.log"; finish; }

# The same snapshot again, over the same writable disk: refused.
out=$(ctl vm restore lx2 "$TMP/snap" 2>&1)
rc=$?
[ "$rc" != 0 ] && grep -q "disk $DISK is open for writing by process" <<<"$out" &&
	ok "a second restore over the disk in use refused (rc $rc)" ||
	fail "second restore: rc=$rc $out"
expect_rc 3 "  ... and no lx2" ctl vm inspect lx2

linux_after_checks "$SOCK" lx "$DUR" "$MIB" "$SEED"
# One run in the rig (2026-12-05) found the restored guest's console empty
# right after the restore, cause unknown: say what the daemon saw.
if [ "$FAILS" -ne 0 ]; then
	ctl vm inspect lx 2>&1 | head -20
	tail -n 60 "$TMP/d1.log"
fi

expect_rc 0 "vm destroy" ctl vm destroy lx
out=$("$HVBLK" --verify hv.blk="$DISK" hv.blk_mib=$MIB hv.blk_seed=$SEED 2>&1)
rc=$?
[ "$rc" = 0 ] && ok "on the host: $out" || fail "the image (rc=$rc): $out"
finish
