#!/usr/bin/env bash
# The guest image under plain QEMU (arch/x86/guest/qemu_mode.c), on TCG so
# that it runs without /dev/kvm: the workload comes from the PVH command
# line, the prefill writes every page and is reported on the debug
# console with host-readable heartbeats, a pmemsave dump of its RAM passes
# the page-stamp oracle (hvbench wlcheck) and a dump with one flipped byte
# does not; a bad command line is refused with its reason; without "hvwl"
# the self-test still runs. Skips (77) without qemu-system-x86_64.
source "$(dirname "$0")/lib.sh"

B=$(cd "$(dirname "$MIGRATED")/../.." && pwd)
GUEST=$B/arch/x86/guest/guest.elf
HVBENCH=$B/tools/hvbench
PY="python3 $(dirname "$0")/../../tools/bench/vsqemu.py"
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "SKIP: no qemu-system-x86_64"; exit 77; }
[ -e "$GUEST" ] && [ -x "$HVBENCH" ] ||
	{ echo "FAIL: missing $GUEST or $HVBENCH"; exit 1; }

qemu() { # cmdline extra... (TCG, 64 MiB, debug console to $TMP/hb)
	local cl=$1
	shift
	timeout 120 qemu-system-x86_64 -M microvm -accel tcg -cpu qemu64 \
		-m 64M -smp 1 -kernel "$GUEST" -append "$cl" -display none \
		-monitor none -serial "file:$TMP/serial" -no-reboot \
		-device isa-debug-exit,iobase=0xf4,iosize=4 \
		-chardev "file,id=hb,path=$TMP/hb" \
		-device isa-debugcon,iobase=0x402,chardev=hb "$@"
}

# 1. A workload from the command line, prefilled, then checked page by page.
qemu "hvwl pattern=random content=text rate=2000 heartbeat_us=1000 prefill=1 tsc_khz=$("$HVBENCH" tsc-khz)" \
	-qmp "unix:$TMP/qmp,server=on,wait=off" >"$TMP/qemu.log" 2>&1 &
QP=$!
PIDS+=("$QP")
for _ in $(seq 1200); do
	grep -q '^prefill done' "$TMP/hb" 2>/dev/null && break
	kill -0 "$QP" 2>/dev/null || break
	sleep 0.1
done
if grep -q '^prefill done' "$TMP/hb" 2>/dev/null; then
	ok "the guest reports its prefill done on the debug console"
else
	fail "no 'prefill done': $(cat "$TMP/serial" "$TMP/qemu.log")"
fi
sleep 0.5
n=$(grep -c '^hb 0 ' "$TMP/hb" || true)
[ "$n" -ge 2 ] && ok "heartbeats on the debug console ($n)" ||
	fail "heartbeats: $n"
$PY qmp "$TMP/qmp" stop >/dev/null
$PY qmp "$TMP/qmp" pmemsave \
	"{\"val\": 0, \"size\": $((64 << 20)), \"filename\": \"$TMP/ram\"}" \
	>/dev/null
$PY qmp "$TMP/qmp" quit >/dev/null 2>&1
wait "$QP" 2>/dev/null
# 56 MiB of region from 8 MiB: 14336 pages, every one written.
expect_rc 0 "the dump passes the page-stamp oracle" "$HVBENCH" wlcheck \
	"$TMP/ram"
echo "$LAST_OUT" | grep -q " 14336 pages checked, 14336 written, 0 bad" &&
	ok "  ... every page of the region prefilled" ||
	fail "wlcheck: $LAST_OUT"
python3 - "$TMP/ram" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek((8 << 20) + 77 * 4096 + 3000)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 1]))
EOF
expect_rc 1 "one flipped byte in the dump is found" "$HVBENCH" wlcheck \
	"$TMP/ram"
echo "$LAST_OUT" | grep -q "1 bad (stamp 0, content 1" &&
	ok "  ... as bad content" || fail "wlcheck: $LAST_OUT"
expect_rc 2 "a dump without a workload is refused" "$HVBENCH" wlcheck \
	/dev/null

# 2. A bad command line: QEMU exits with status 1 ((1 << 1) | 1 = 3).
rm -f "$TMP/serial"
expect_rc 3 "an unknown key ends the guest" qemu \
	"hvwl pattern=sweep colour=red tsc_khz=1000"
grep -q "bad command line: unknown key 'colour'" "$TMP/serial" &&
	ok "  ... naming the key" || fail "serial: $(cat "$TMP/serial")"
rm -f "$TMP/serial"
expect_rc 3 "a workload without tsc_khz is refused" qemu "hvwl prefill=1"

# 3. No "hvwl": the built-in self-test, as before (status 0 -> 1).
rm -f "$TMP/serial"
expect_rc 1 "the self-test passes without a workload" qemu ""
grep -q "selftest OK" "$TMP/serial" && ok "  ... and says so" ||
	fail "serial: $(cat "$TMP/serial")"
finish
