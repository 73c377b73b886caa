#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Linux guest through the tools, on KVM (label kvm: where /dev/kvm is,
# or in the KVM rig): vm create --kernel --initrd boots it, vm console
# shows the kernel's banner and the guest's shell, input typed through
# vm console --input is answered (a computed value and the vCPU count, so
# the echo of what was typed cannot pass for the answer), migrate-send to
# no listener fails and vm update (no memfd) refuses, the VM left running, and after
# `reboot -f` the VM is stopped with reason reboot: in vm list, vm
# inspect, a vm event; its console then takes no input, and vm destroy
# removes its console log.
#
# The guest: MIGD_GUEST_KERNEL (a bzImage or vmlinux) and
# MIGD_GUEST_INITRD (an initramfs whose init runs a shell on the serial
# console), both required: without them the test fails, it never skips.
# MIGD_GUEST_READY: what the guest prints once its shell reads the
# console (default "# ", busybox's root prompt); MIGD_GUEST_CMDLINE:
# appended to the default command line; MIGD_GUEST_BOOT_S: how long a boot
# may take (default 300: KVM nested under TCG is slow).
# Usage: test_linux_vm.sh MIGRATED MIGRATECTL MIGRATE-SEND MIGRATE-RECV
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] || { echo "FAIL: migrate-send not built"; exit 1; }
need_kvm
KERNEL=${MIGD_GUEST_KERNEL:-}
INITRD=${MIGD_GUEST_INITRD:-}
# Without a guest named, the project's own (tools/guest, docs/guests.md):
# Debian's kernel and the initramfs with a plain shell on the console.
if [ -z "$KERNEL$INITRD" ] && [ -x "${MIGD_GUEST_HVGUEST:-}" ]; then
	img=$(dirname "$MIGD_GUEST_HVGUEST")
	"$(dirname "$0")/../../tools/guest/mkinitramfs.sh" \
		--hvguest "$MIGD_GUEST_HVGUEST" --out "$img/initramfs.cpio.gz" \
		--kernel-out "$img/vmlinuz" ||
		{ echo "FAIL: cannot build the guest initramfs"; exit 1; }
	KERNEL=$img/vmlinuz INITRD=$img/initramfs.cpio.gz
	: "${MIGD_GUEST_CMDLINE:=hv.run=0 hv.after=shell}"
fi
if [ ! -r "$KERNEL" ] || [ ! -r "$INITRD" ]; then
	echo "FAIL: set MIGD_GUEST_KERNEL and MIGD_GUEST_INITRD to a readable" \
		"kernel and initramfs (now: '$KERNEL', '$INITRD'); docs/testing.md"
	exit 1
fi
READY=${MIGD_GUEST_READY:-"# "}
BOOT_S=${MIGD_GUEST_BOOT_S:-300}
VCPUS=2

start_daemon d --accel kvm
args=(--kernel "$KERNEL" --initrd "$INITRD" --mem 256M --vcpus $VCPUS
	--accel kvm)
[ -n "${MIGD_GUEST_CMDLINE:-}" ] && args+=(--cmdline "$MIGD_GUEST_CMDLINE")
expect_rc 0 "vm create --kernel --initrd" ctl vm create lx "${args[@]}"
[ "$LAST_RC" = 0 ] || { cat "$TMP/d.log" | tail -20; finish; }

# Every VM event of lx from now on, as JSON lines.
ctl --json events --vm lx --kind vm >"$TMP/events" 2>&1 &
PIDS+=($!)

# Boot: from the first byte, until the shell's prompt.
t0=$(date +%s)
timeout "$BOOT_S" "$CTL" --socket "$SOCK" vm console lx --from-start \
	--until "$READY" >"$TMP/boot.out" 2>"$TMP/boot.err"
rc=$?
[ "$rc" = 0 ] && ok "the guest's shell is up after $(($(date +%s) - t0)) s" ||
	fail "no '$READY' on the console within $BOOT_S s (rc=$rc):" \
		"$(tail -c 2000 "$TMP/boot.out") $(cat "$TMP/boot.err")"
grep -q "Linux version" "$TMP/boot.out" && ok "the console shows the kernel's banner" ||
	fail "no kernel banner on the console"

out=$(ctl vm inspect lx)
grep -qF "kernel:    $KERNEL" <<<"$out" && grep -qF "initrd:    $INITRD" <<<"$out" &&
	ok "vm inspect names the kernel and the initrd" || fail "vm inspect: $out"
log=$(ctl --json vm inspect lx | jq -r .console_log)
[ -s "$log" ] && grep -q "Linux version" "$log" &&
	ok "the console log $log holds the boot" || fail "console log '$log'"

# A round trip through the console's input: the answer is computed by the
# guest's shell, so the echo of the typed line does not match it.
rt() { # rt DESC LINE EXPECT
	printf '%s\n' "$2" >"$TMP/in"
	timeout 60 "$CTL" --socket "$SOCK" vm console lx --input "$TMP/in" \
		--until "$3" >"$TMP/rt.out" 2>&1
	local rc=$?
	[ "$rc" = 0 ] && ok "$1: '$3' came back" ||
		fail "$1 (rc=$rc): $(tail -c 1000 "$TMP/rt.out")"
}
rt "a command typed into the console" \
	'echo migd-$((6*7))-$(grep -c ^processor /proc/cpuinfo)-ok' \
	"migd-42-$VCPUS-ok"

# A migration to nowhere fails and leaves the VM running (a Linux
# guest's live migration: test_linux_migrate.sh); what would move it
# otherwise refuses it at once.
out=$("$SEND" --socket "$SOCK" lx 127.0.0.1:1 2>&1)
rc=$?
[ "$rc" != 0 ] && ok "migrate-send to no listener fails (rc=$rc)" ||
	fail "migrate-send (rc=$rc): $out"
# Its RAM is not in a memfd (default backing): vm update refuses it (a
# Linux VM with --backing memfd is updated in test_linux_update.sh).
expect_rc 1 "vm update refuses the VM without a memfd" ctl vm update lx
grep -q "memfd" <<<"$LAST_OUT" || fail "vm update: $LAST_OUT"
expect_rc 1 "vm check refuses the Linux VM" ctl vm check lx
[ "$(ctl --json vm inspect lx | jq -r .info.state)" = VM_STATE_RUNNING ] &&
	ok "the VM still runs" || fail "state after the refusals"
rt "the console still answers after the refusals" 'echo again-$((1+1))' \
	"again-2"

# reboot -f: the guest resets; the VM stops with reason reboot.
printf 'reboot -f\n' >"$TMP/in"
expect_rc 0 "reboot -f typed" ctl vm console lx --input "$TMP/in"
for _ in $(seq 120); do
	ctl vm list | grep -q "^lx .*stopped (reboot)" && break
	sleep 0.5
done
out=$(ctl vm list)
grep -q "^lx .*stopped (reboot)" <<<"$out" &&
	ok "vm list: stopped (reboot)" || fail "vm list after reboot: $out"
out=$(ctl --json vm inspect lx)
[ "$(jq -r .info.state <<<"$out")" = VM_STATE_STOPPED ] &&
	[ "$(jq -r .info.stop_reason <<<"$out")" = reboot ] &&
	ok "vm inspect: stopped, reason reboot" || fail "vm inspect: $out"
ctl vm inspect lx | grep -q "^stopped:   reboot" ||
	fail "text inspect lacks the reason"
for _ in $(seq 20); do
	grep -q '"stop_reason":"reboot"' "$TMP/events" && break
	sleep 0.25
done
grep '"stop_reason":"reboot"' "$TMP/events" | grep -q VM_STATE_STOPPED &&
	ok "a vm event says stopped, reason reboot" ||
	fail "events: $(cat "$TMP/events")"
out=$(timeout 20 "$CTL" --socket "$SOCK" vm console lx --follow 2>&1)
rc=$?
[ "$rc" = 0 ] && grep -q "stopped (reboot)" <<<"$out" &&
	ok "vm console --follow of the stopped VM ends by itself" ||
	fail "console --follow after the stop (rc=$rc): $out"
expect_rc 1 "the stopped VM's console takes no input" \
	ctl vm console lx --input "$TMP/in"
grep -q "is stopped (reboot)" <<<"$LAST_OUT" || fail "input: $LAST_OUT"
expect_rc 0 "vm destroy" ctl vm destroy lx
[ ! -e "$log" ] && ok "the console log went with the VM" ||
	fail "console log $log left"

finish
