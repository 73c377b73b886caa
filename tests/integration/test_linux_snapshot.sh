#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Snapshot and restore of a running Linux guest with its devices (label
# kvm; issue 29, docs/snapshots.md). The project's guest (tools/guest)
# with 2 vCPUs, a disk and an rng boots; hvblk writes checksummed blocks
# to /dev/vda; the stamp workload (hvguest) starts and the guest says how
# many lines its kernel log has and its uptime. A live snapshot with
# --stop ends the VM (its disk then stays as it was at the pause, which is
# what makes the restore consistent); the VM is restored from the files
# and, in the guest: the workload's check passes over its whole region,
# the kernel logged nothing new, the uptime continued from the snapshot
# (not back, not further than the wall clock), the disk's blocks read
# back from the device.
#
# NOT REGISTERED in ctest yet: vm snapshot still refuses Linux guests. It
# was written with the Linux path (migrated/vmm/calls_snap.c) and never
# seen to pass: this host's /dev/kvm (nested under Firecracker) boots no
# Linux guest, and the KVM rig's own kernel hung (kvm_clear_dirty_log_protect)
# on its one try (2026-12-05). Register it (label kvm) with the path.
#
# MIGD_GUEST_HVGUEST: the hvguest binary (hvblk beside it);
# MIGD_GUEST_BOOT_S: how long a boot may take (default 300).
# Usage: test_linux_snapshot.sh MIGRATED MIGRATECTL
source "$(dirname "$0")/lib.sh" "$@"

need_kvm
HVG=${MIGD_GUEST_HVGUEST:-}
[ -x "$HVG" ] && [ -x "$(dirname "$HVG")/hvblk" ] ||
	{ echo "FAIL: MIGD_GUEST_HVGUEST names no hvguest with hvblk beside it"; exit 1; }
img=$(dirname "$HVG")
"$(dirname "$0")/../../tools/guest/mkinitramfs.sh" --hvguest "$HVG" \
	--out "$img/initramfs.cpio.gz" --kernel-out "$img/vmlinuz" ||
	{ echo "FAIL: cannot build the guest initramfs"; exit 1; }
BOOT_S=${MIGD_GUEST_BOOT_S:-300}
MIB=8
SEED=$((RANDOM * 32768 + RANDOM + 1))
DISK=$TMP/disk.img
truncate -s 32M "$DISK"

start_daemon d1 --accel kvm

expect_rc 0 "vm create (2 vCPUs, --disk, --rng)" ctl vm create lx \
	--kernel "$img/vmlinuz" --initrd "$img/initramfs.cpio.gz" \
	--mem 256M --vcpus 2 --accel kvm --disk "$DISK" --rng \
	--cmdline "hv.run=0 hv.after=shell hv.blk=/dev/vda hv.blk_mib=$MIB hv.blk_seed=$SEED"
[ "$LAST_RC" = 0 ] || { tail -20 "$TMP/d1.log"; finish; }

t0=$(date +%s)
timeout "$BOOT_S" "$CTL" --socket "$SOCK" vm console lx --from-start \
	--until "hvguest: shell" >"$TMP/boot.out" 2>&1
rc=$?
tr -d '\r' <"$TMP/boot.out" >"$TMP/boot.txt"
[ "$rc" = 0 ] && ok "the guest booted in $(($(date +%s) - t0)) s" ||
	{ fail "no shell within $BOOT_S s (rc=$rc): $(tail -c 3000 "$TMP/boot.txt")"
	  finish; }
grep -q "^hvblk: ok dev=/dev/vda mib=$MIB seed=$SEED " "$TMP/boot.txt" &&
	ok "before: $MIB MiB of checksummed blocks written to /dev/vda" ||
	fail "hvblk: $(grep hvblk "$TMP/boot.txt")"

DUR=30
printf '%s\n' "hvguest hv.size=32 hv.rate=4000 hv.duration=$DUR hv.check=1 >/tmp/wl.out 2>&1 &" \
	'sleep 2; echo "pre""mark $(dmesg | wc -l) $(cut -d" " -f1 /proc/uptime)"' >"$TMP/in1"
expect_rc 0 "workload started" ctl vm console lx --input "$TMP/in1"
timeout 60 "$CTL" --socket "$SOCK" vm console lx --until "premark " >/dev/null 2>&1
sleep 1
ctl vm console lx | tr -d '\r' >"$TMP/pre.txt"
read -r _ nlog up0 <<<"$(grep -E "^premark [0-9]+ [0-9.]+$" "$TMP/pre.txt" | tail -1)"
[ -n "$up0" ] && ok "before: $nlog kernel log lines, uptime $up0 s" ||
	{ fail "no premark line: $(tail -c 1000 "$TMP/pre.txt")"; finish; }
w0=$(date +%s)

out=$(ctl --json vm snapshot lx "$TMP/snap" --stop) ||
	{ fail "snapshot of the Linux guest: $out"; tail -20 "$TMP/d1.log"; finish; }
echo "snapshot: $out"
[ "$(json_get "$out" .live)" = true ] && [ "$(json_get "$out" .vm.state)" = VM_STATE_STOPPED ] &&
	ok "live snapshot, then the VM ended (pause $(json_get "$out" .pause_ns) ns, $(json_get "$out" .file_bytes) bytes on disk)" ||
	fail "snapshot: $out"
expect_rc 3 "lx is gone" ctl vm inspect lx
expect_rc 0 "restore lx from the snapshot" ctl vm restore lx "$TMP/snap"
[ "$LAST_RC" = 0 ] || { tail -20 "$TMP/d1.log"; finish; }

cat >"$TMP/in2" <<IN
wait; cat /tmp/wl.out; echo "post""mark \$(dmesg | wc -l) \$(cut -d" " -f1 /proc/uptime)"
dmesg | tail -n +$((nlog + 1)) | sed 's/^/newlog: /'
echo 3 >/proc/sys/vm/drop_caches; hvblk --verify hv.blk=/dev/vda hv.blk_mib=$MIB hv.blk_seed=$SEED; echo "end""mark \$?"
IN
expect_rc 0 "commands typed into the restored guest" ctl vm console lx --input "$TMP/in2"
timeout $((DUR + 120)) "$CTL" --socket "$SOCK" vm console lx --from-start \
	--until "endmark " >/dev/null 2>&1 || fail "no endmark on the restored guest's console"
sleep 1
w1=$(date +%s)
ctl vm console lx --from-start | tr -d '\r' >"$TMP/post.txt"
grep -E "^(hvguest|hvblk|postmark|endmark|newlog)" "$TMP/post.txt"
grep -q "^hvguest: check ok pages=" "$TMP/post.txt" &&
	ok "after: the workload's check passed over its whole region" ||
	fail "workload: $(grep -E '^hvguest' "$TMP/post.txt")"
read -r _ nlog1 up1 <<<"$(grep -E "^postmark [0-9]+ [0-9.]+$" "$TMP/post.txt" | tail -1)"
grep '^newlog: ' "$TMP/post.txt" | grep -v 'hrtimer: interrupt took [0-9]* ns$' >"$TMP/newlog" || true
new=$(wc -l <"$TMP/newlog")
[ -n "$nlog1" ] && [ "$new" = 0 ] &&
	ok "after: the kernel logged nothing new ($nlog lines before, $nlog1 after)" ||
	fail "the kernel logged $((${nlog1:-0} - nlog)) new lines: $(cat "$TMP/newlog")"
awk -v a="$up0" -v b="${up1:-0}" -v w=$((w1 - w0 + 2)) \
	'BEGIN { exit !(b > a && b - a <= w) }' &&
	ok "after: uptime continued ($up0 s -> $up1 s, wall $((w1 - w0)) s)" ||
	fail "uptime $up0 -> ${up1:-?} over $((w1 - w0)) s of wall clock"
grep -q "^hvblk: ok dev=/dev/vda mib=$MIB seed=$SEED " "$TMP/post.txt" &&
	grep -q "^endmark 0$" "$TMP/post.txt" &&
	ok "after: the disk's blocks read back from the device in the guest" ||
	fail "hvblk --verify in the guest: $(grep -E '^(hvblk|endmark)' "$TMP/post.txt")"

expect_rc 0 "vm destroy" ctl vm destroy lx
finish
