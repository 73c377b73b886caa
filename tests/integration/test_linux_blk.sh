#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Linux guest's virtio devices through the tools, on KVM (label kvm:
# where /dev/kvm is, or in the KVM rig): vm create --disk IMG --disk
# IMG2,ro --rng boots the project's guest (tools/guest) with a 64 MiB
# sparse raw image the test made; in the guest, hvblk writes 32 MiB of
# self-describing 4 KiB blocks to /dev/vda (block number and seed in each,
# a checksum), fsyncs, reads them back with O_DIRECT and says "hvblk: ok";
# /dev/hwrng gives 64 bytes with virtio_rng.0 as the source; /dev/vdb is
# read-only. vm inspect shows the three devices on PCI slots 1-3 with the
# driver bound and MSI-X on, and the disk's counters, and the pages the
# devices wrote into guest RAM in the VM's dirty log (its live migration
# is test_linux_migrate.sh). After the guest's reboot the HOST checks the image: every block
# the guest wrote is there (hvblk --verify, and a few block headers read
# with od, independently of hvblk), the rest of the image still reads
# zero, and the read-only image was not touched.
#
# The guest: the project's own, made from MIGD_GUEST_HVGUEST's folder
# (tools/guest/mkinitramfs.sh); MIGD_GUEST_BOOT_S: how long a boot may
# take (default 300: KVM nested under TCG is slow).
# Usage: test_linux_blk.sh MIGRATED MIGRATECTL MIGRATE-SEND MIGRATE-RECV
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] || { echo "FAIL: migrate-send not built"; exit 1; }
need_kvm
HVG=${MIGD_GUEST_HVGUEST:-}
[ -x "$HVG" ] && [ -x "$(dirname "$HVG")/hvblk" ] ||
	{ echo "FAIL: MIGD_GUEST_HVGUEST names no hvguest with hvblk beside it"; exit 1; }
img=$(dirname "$HVG")
HVBLK=$img/hvblk
"$(dirname "$0")/../../tools/guest/mkinitramfs.sh" --hvguest "$HVG" \
	--out "$img/initramfs.cpio.gz" --kernel-out "$img/vmlinuz" ||
	{ echo "FAIL: cannot build the guest initramfs"; exit 1; }
BOOT_S=${MIGD_GUEST_BOOT_S:-300}
MIB=32
SEED=$((RANDOM * 32768 + RANDOM + 1))
DISK=$TMP/disk.img
RO=$TMP/ro.img
truncate -s 64M "$DISK"
head -c 1M /dev/urandom >"$RO"
ro_sum=$(sha256sum <"$RO")

start_daemon d --accel kvm
expect_rc 0 "vm create --disk --disk ,ro --rng" ctl vm create lx \
	--kernel "$img/vmlinuz" --initrd "$img/initramfs.cpio.gz" \
	--mem 256M --vcpus 1 --accel kvm --disk "$DISK" --disk "$RO,ro" --rng \
	--cmdline "hv.run=0 hv.after=shell hv.rng=1 hv.blk=/dev/vda hv.blk_mib=$MIB hv.blk_seed=$SEED"
[ "$LAST_RC" = 0 ] || { tail -20 "$TMP/d.log"; finish; }

t0=$(date +%s)
timeout "$BOOT_S" "$CTL" --socket "$SOCK" vm console lx --from-start \
	--until "hvguest: shell" >"$TMP/boot.out" 2>"$TMP/boot.err"
rc=$?
tr -d '\r' <"$TMP/boot.out" >"$TMP/boot.txt"
[ "$rc" = 0 ] && ok "the guest ran its checks in $(($(date +%s) - t0)) s" ||
	fail "no shell within $BOOT_S s (rc=$rc): $(tail -c 3000 "$TMP/boot.txt")"
grep -E "virtio|vd[ab]|hvblk|hvguest: rng|PCI->APIC" "$TMP/boot.txt"
grep -q "^hvblk: ok dev=/dev/vda mib=$MIB seed=$SEED blocks=$((MIB * 256)) " \
	"$TMP/boot.txt" && ok "in the guest: $MIB MiB written, synced, read back and verified" ||
	fail "no hvblk verdict ok: $(grep hvblk "$TMP/boot.txt")"
grep -q "^hvguest: rng current=virtio_rng.0 bytes=64$" "$TMP/boot.txt" &&
	ok "in the guest: /dev/hwrng gave 64 bytes from virtio_rng.0" ||
	fail "rng: $(grep 'hvguest: rng' "$TMP/boot.txt")"
grep -q "\[vda\] 131072 512-byte logical blocks" "$TMP/boot.txt" &&
	grep -q "\[vdb\] 2048 512-byte logical blocks" "$TMP/boot.txt" &&
	ok "the guest sees vda (64 MiB) and vdb (1 MiB)" ||
	fail "disk sizes: $(grep -E 'vd[ab]' "$TMP/boot.txt")"

# vdb is read-only: the guest says so, and a write to it fails (the
# marker is computed, so the echo of the typed line cannot match it).
printf '%s\n' 'x=vdb; echo "$x-ro-$(cat /sys/block/vdb/ro)-$(dd if=/dev/zero of=/dev/vdb bs=4096 count=1 2>/dev/null && echo written || echo refused)"' >"$TMP/in"
timeout 60 "$CTL" --socket "$SOCK" vm console lx --input "$TMP/in" \
	--until "vdb-ro-" >"$TMP/rt.out" 2>&1
sleep 1
ctl vm console lx >"$TMP/all.out" 2>&1
tr -d '\r' <"$TMP/all.out" | grep -q "^vdb-ro-1-refused" &&
	ok "vdb is read-only in the guest; a write to it fails" ||
	fail "vdb: $(tail -c 500 "$TMP/all.out")"

out=$(ctl vm inspect lx)
echo "$out" | grep "device:" -A1
grep -q "^device:    00:01.0 virtio-blk $DISK, bar0 0x[0-9a-f]*, driver ok, msi-x" <<<"$out" &&
	grep -q "^device:    00:02.0 virtio-blk $RO (ro), bar0 0x[0-9a-f]*, driver ok, msi-x" <<<"$out" &&
	grep -q "^device:    00:03.0 virtio-rng, bar0 0x[0-9a-f]*, driver ok, msi-x" <<<"$out" &&
	ok "vm inspect: the three devices, bound, MSI-X" || fail "vm inspect: $out"
j=$(ctl --json vm inspect lx)
w=$(jq -r '.devices[0].bytes_written' <<<"$j")
f=$(jq -r '.devices[0].flushes' <<<"$j")
e=$(jq -r '.devices[1].bytes_written // 0' <<<"$j")
r=$(jq -r '.devices[2].bytes_read' <<<"$j")
[ "$w" -ge $((MIB << 20)) ] && [ "$f" -ge 1 ] && [ "$e" = 0 ] && [ "$r" -ge 64 ] &&
	ok "counters: vda $w bytes written, $f flushes; vdb nothing written; rng $r bytes" ||
	fail "counters: written=$w flushes=$f vdb_written=$e rng=$r: $j"
[ "$(jq -r '.info.state' <<<"$j")" = VM_STATE_RUNNING ] || fail "not running"
# The device's writes into guest RAM (the read-back's 32 MiB at least)
# reached the VM's dirty log, which the dirty-rate monitor keeps on:
# without them a migration would miss what the disk wrote.
vw=$(jq -r '.vmm_writes // 0' <<<"$j")
[ "$vw" -ge $((MIB * 256)) ] &&
	ok "device writes marked dirty: $vw pages (>= $((MIB * 256)))" ||
	fail "device writes marked dirty: $vw pages, fewer than $((MIB * 256))"

printf 'reboot -f\n' >"$TMP/in"
expect_rc 0 "reboot -f typed" ctl vm console lx --input "$TMP/in"
for _ in $(seq 120); do
	ctl vm list | grep -q "^lx .*stopped (reboot)" && break
	sleep 0.5
done
ctl vm list | grep -q "^lx .*stopped (reboot)" && ok "the VM stopped (reboot)" ||
	fail "vm list after reboot: $(ctl vm list)"

# The host's view of the image: what the guest wrote, block for block.
out=$("$HVBLK" --verify hv.blk="$DISK" hv.blk_mib=$MIB hv.blk_seed=$SEED 2>&1)
rc=$?
[ "$rc" = 0 ] && ok "on the host: $out" || fail "the image (rc=$rc): $out"
# Independently of hvblk: block b's header is "hvblk01\0", b, the seed.
hdr_ok=1
for b in 0 1 4097 $((MIB * 256 - 1)); do
	h=$(od -A n -t x8 -w24 -j $((b * 4096)) -N 24 "$DISK" | tr -s ' ')
	want=$(printf ' 0031306b6c627668 %016x %016x' "$b" "$SEED")
	[ "$h" = "$want" ] || { hdr_ok=0; echo "block $b: '$h' != '$want'"; }
done
[ "$hdr_ok" = 1 ] && ok "block headers read with od carry their number and the seed" ||
	fail "block headers"
cmp -s -n $(((64 - MIB) << 20)) -i $((MIB << 20)):0 "$DISK" /dev/zero &&
	ok "the image past $MIB MiB still reads zero" || fail "bytes past $MIB MiB changed"
[ "$(sha256sum <"$RO")" = "$ro_sum" ] && ok "the read-only image is untouched" ||
	fail "the read-only image changed"
expect_rc 0 "vm destroy" ctl vm destroy lx

finish
