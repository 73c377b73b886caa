#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Linux guests at the control API, where no kernel boots (no KVM, or an
# accelerator without Linux boot): every bad vm create --kernel is refused
# with the option, the path and the errno, before the daemon spawns a
# worker when the request alone shows it; a request that reaches a worker
# and fails there leaves no VM, no worker and no console log; vm console
# of the workload guest or of no VM says why; capabilities names the
# features. Booting, the console's round trip and the refusals of a
# running Linux guest are test_linux_vm.sh's (label kvm).
# Usage: test_linux_vm_cli.sh MIGRATED MIGRATECTL
source "$(dirname "$0")/lib.sh" "$@"

start_daemon d --accel soft
LOG=$TMP/d.log
K=$TMP/vmlinuz
I=$TMP/initrd.img
printf 'not a kernel, but readable\n' >"$K"
printf 'not an initramfs either\n' >"$I"
: >"$TMP/empty"

spawned() { grep -c 'event=worker_started' "$LOG"; }

# refused DESC RC TEXT ARGS...: vm create v1 ARGS fails with RC, says TEXT,
# and no worker was started for it.
refused() {
	local desc=$1 rc=$2 text=$3 before
	shift 3
	before=$(spawned)
	expect_rc "$rc" "$desc" ctl vm create v1 "$@"
	grep -qF -- "$text" <<<"$LAST_OUT" ||
		fail "$desc: the message lacks '$text': $LAST_OUT"
	[ "$(spawned)" = "$before" ] ||
		fail "$desc: a worker was spawned for a request refused on its face"
}

refused "--kernel on the daemon's default, soft" 2 \
	"booting a Linux kernel needs --accel kvm (this VM's accelerator: soft, the daemon's default)" \
	--kernel "$K"
refused "--kernel with --accel soft" 2 \
	"booting a Linux kernel needs --accel kvm (this VM's accelerator: soft)" \
	--kernel "$K" --accel soft
refused "--initrd without --kernel" 2 "--initrd needs --kernel" \
	--initrd "$I" --accel kvm
refused "--cmdline without --kernel" 2 "--cmdline needs --kernel" \
	--cmdline quiet --accel kvm
refused "workload options with --kernel" 2 \
	"--pattern --content --rate --prefill: options of the workload guest, not of a Linux guest" \
	--kernel "$K" --accel kvm --pattern random --content text --rate 100 \
	--prefill
refused "a missing kernel" 2 \
	"--kernel '$TMP/nope': No such file or directory (errno 2)" \
	--kernel "$TMP/nope" --accel kvm
refused "a missing initrd" 2 \
	"--initrd '$TMP/nope.img': No such file or directory (errno 2)" \
	--kernel "$K" --initrd "$TMP/nope.img" --accel kvm
refused "an empty kernel" 2 "--kernel '$TMP/empty': the file is empty" \
	--kernel "$TMP/empty" --accel kvm
refused "a directory as kernel" 2 "--kernel '$TMP': not a regular file" \
	--kernel "$TMP" --accel kvm
if [ "$(id -u)" != 0 ]; then
	cp "$K" "$TMP/secret"
	chmod 000 "$TMP/secret"
	refused "an unreadable kernel" 2 \
		"--kernel '$TMP/secret': Permission denied (errno 13): the daemon's user cannot read it" \
		--kernel "$TMP/secret" --accel kvm
fi
refused "a command line of HV_BOOT_CMDLINE_MAX bytes" 2 \
	"--cmdline is 2048 bytes: at most 2047" \
	--kernel "$K" --accel kvm --cmdline "$(printf 'a%.0s' $(seq 2048))"
refused "a control character in the command line" 2 \
	"--cmdline: a control character at byte 5" \
	--kernel "$K" --accel kvm --cmdline "$(printf 'quiet\ninit=/x')"
# The virtio devices: each image checked before any worker.
truncate -s 1M "$TMP/disk.img"
printf 'x' >"$TMP/tiny.img"
refused "--disk without --kernel" 2 "--disk needs --kernel (a Linux guest)" \
	--disk "$TMP/disk.img" --accel kvm
refused "--rng without --kernel" 2 "--rng needs --kernel (a Linux guest)" \
	--rng --accel kvm
refused "a missing disk image" 2 \
	"--disk '$TMP/nope.img': No such file or directory (errno 2)" \
	--kernel "$K" --accel kvm --disk "$TMP/nope.img"
refused "a missing read-only disk image" 2 \
	"--disk '$TMP/nope.img': No such file or directory (errno 2)" \
	--kernel "$K" --accel kvm --disk "$TMP/nope.img,ro"
refused "a directory as disk" 2 \
	"--disk '$TMP': not a regular file or a block device" \
	--kernel "$K" --accel kvm --disk "$TMP,ro"
refused "a disk smaller than a sector" 2 \
	"--disk '$TMP/tiny.img': 1 bytes, smaller than one 512-byte sector" \
	--kernel "$K" --accel kvm --disk "$TMP/tiny.img"
refused "one image on two writable disks" 2 \
	"--disk '$TMP/disk.img' given twice" \
	--kernel "$K" --accel kvm --disk "$TMP/disk.img" --disk "$TMP/disk.img"
refused "five disks" 2 "--disk given 5 times: at most 4" \
	--kernel "$K" --accel kvm --disk "$TMP/disk.img,ro" \
	--disk "$TMP/disk.img,ro" --disk "$TMP/disk.img,ro" \
	--disk "$TMP/disk.img,ro" --disk "$TMP/disk.img,ro"
cp "$TMP/disk.img" "$TMP/ro.img"
chmod 444 "$TMP/ro.img"
if [ "$(id -u)" != 0 ]; then
	refused "a read-only image asked read-write" 2 \
		"--disk '$TMP/ro.img': Permission denied (errno 13): the daemon's user cannot write it (a read-only disk: --disk PATH,ro)" \
		--kernel "$K" --accel kvm --disk "$TMP/ro.img"
else
	refused "a read-only image asked read-write (the daemon is root)" 2 \
		"--disk '$TMP/ro.img': the file is read-only (mode 0444): a read-only disk is --disk PATH,ro" \
		--kernel "$K" --accel kvm --disk "$TMP/ro.img"
fi
expect_rc 2 "--disk ',ro' alone" ctl vm create v1 --kernel "$K" --accel kvm \
	--disk ,ro
# A relative path is migratectl's directory's when the daemon is local...
cd "$TMP"
refused "a relative kernel path, made absolute" 2 \
	"--kernel '$TMP/rel-nope': No such file or directory" \
	--kernel rel-nope --accel kvm
cd - >/dev/null
# ...and names nothing on a remote daemon: refused before connecting.
expect_rc 2 "a relative kernel path with --connect" \
	"$CTL" --connect 127.0.0.1:1 vm create v1 --kernel boot/vmlinuz \
	--accel kvm
grep -q "absolute path on the daemon's host" <<<"$LAST_OUT" ||
	fail "relative path with --connect: $LAST_OUT"

# Well-formed, readable files go to a worker, whose accelerator cannot
# boot them (no /dev/kvm here, or no Linux boot in this build, or not a
# kernel where it can): refused, and nothing of the VM stays behind.
before=$(spawned)
out=$(ctl vm create v1 --kernel "$K" --initrd "$I" --cmdline quiet \
	--accel kvm --mem 64M 2>&1)
rc=$?
LAST_OUT=$out
# 4: no KVM, or no Linux boot; 2: a host that boots kernels refused the
# fake one as not a kernel.
[ "$rc" = 4 ] || { [ "$rc" = 2 ] && [ -e /dev/kvm ]; } &&
	ok "a kernel no accelerator here boots: refused (rc=$rc)" ||
	fail "a kernel no accelerator here boots: rc=$rc: $out"
grep -qE "cannot boot a Linux kernel yet; nothing was created|accelerator kvm is not available here|cannot boot in" <<<"$LAST_OUT" ||
	fail "the create's failure said: $LAST_OUT"
[ "$(spawned)" -gt "$before" ] || fail "no worker was asked"
for _ in $(seq 100); do
	[ -z "$(worker_pids)" ] && break
	sleep 0.05
done
[ -z "$(worker_pids)" ] && ok "the worker of the failed create exited" ||
	fail "a worker stayed: $(worker_pids)"
[ -z "$(ls "$TMP/d/vms/" | grep console)" ] &&
	ok "no console log left" || fail "left: $(ls "$TMP/d/vms/")"
expect_rc 0 "vm list after the failures" ctl vm list
[ "$(wc -l <<<"$LAST_OUT")" = 1 ] && ok "no VM listed" ||
	fail "VMs left: $LAST_OUT"
expect_rc 3 "the name is free: no VM v1" ctl vm inspect v1

# The workload guest has no console; no VM has none at all.
expect_rc 0 "a workload VM" ctl vm create w1 --mem 64M --rate 100
expect_rc 1 "vm console of the workload guest" ctl vm console w1
grep -q "VM 'w1' runs the workload guest, which has no console" <<<"$LAST_OUT" ||
	fail "vm console w1: $LAST_OUT"
expect_rc 1 "vm console --input of the workload guest" \
	ctl vm console w1 --input /dev/null
echo nproc >"$TMP/in"
expect_rc 1 "vm console --input FILE of the workload guest" \
	ctl vm console w1 --input "$TMP/in"
grep -q "has no console" <<<"$LAST_OUT" || fail "--input: $LAST_OUT"
expect_rc 3 "vm console of no VM" ctl vm console nope --follow
expect_rc 2 "vm console without NAME" ctl vm console
expect_rc 2 "vm console --until ''" ctl vm console w1 --until ''
expect_rc 2 "vm console --input of a missing file" \
	ctl vm console w1 --input "$TMP/nope"
out=$(ctl --json vm console w1 2>/dev/null)
[ "$(json_get "$out" .error.status)" = STATUS_FAILED_PRECONDITION ] &&
	ok "--json: the refusal as a JSON error" || fail "--json: $out"
# On a terminal vm console is interactive (raw mode): the terminal's
# settings come back on its way out, here a refusal.
python3 "$(dirname "$0")/pty_run.py" 80 "$TMP/tty.out" -- sh -c \
	'a=$(stty -g); "$1" --socket "$2" vm console w1; rc=$?
	 [ "$a" = "$(stty -g)" ] && echo TTY-RESTORED; exit $rc' _ "$CTL" "$SOCK"
rc=$?
tr -d '\r' <"$TMP/tty.out" >"$TMP/tty.txt"
[ "$rc" = 1 ] && grep -q "Connected to the console of VM 'w1'; Ctrl-] detaches" "$TMP/tty.txt" &&
	grep -q TTY-RESTORED "$TMP/tty.txt" &&
	ok "vm console on a terminal: interactive, the terminal restored after the refusal" ||
	fail "vm console on a terminal (rc=$rc): $(cat "$TMP/tty.txt")"
expect_rc 0 "vm inspect of the workload guest" ctl vm inspect w1
grep -qE '^(kernel|console|guest):' <<<"$LAST_OUT" &&
	fail "inspect shows Linux fields for the workload guest: $LAST_OUT"
grep -q '^workload:' <<<"$LAST_OUT" || fail "inspect lost the workload"
out=$(ctl --json vm list)
[ "$(json_get "$out" '.vms[0].kernel // ""')" = "" ] &&
	[ "$(json_get "$out" '.vms[0].stop_reason // ""')" = "" ] &&
	ok "vm list: no kernel, no stop reason for the workload guest" ||
	fail "vm list --json: $out"

# What a client checks before it sends boot files.
out=$(ctl --json capabilities)
for f in linux-boot vm-console virtio-blk virtio-rng virtio-net; do
	json_get "$out" '.features[]' | grep -qx "$f" &&
		ok "capabilities: feature $f" || fail "capabilities lack $f: $out"
done
[ "$(json_get "$out" .api_version)" = 6 ] && ok "api_version 6" ||
	fail "api_version: $out"

finish
