#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Linux guest's virtio-net NIC through the tools, on KVM (label kvm:
# where /dev/kvm is, or in the KVM rig). The test runs in a network
# namespace of its own (unshare -n) with a persistent tap, mtap0, at
# 10.0.77.1/24 (never another network). vm create --net mtap0,mac=...
# boots the project's guest (tools/guest) with hv.net=10.0.77.2/24 and a
# TCP echo (busybox nc) on port 7777. Then:
#   - the daemon refuses, before any worker, a malformed or multicast
#     MAC, a bad tap name, and the tap once the VM has it (another VM);
#   - the host pings the guest, and 1 MiB of random bytes round-trips
#     through the guest's echo with the same SHA-256;
#   - vm inspect shows the NIC (tap, MAC, driver bound, MSI-X) and its
#     counters;
#   - vm update (its RAM is a memfd) while a TCP connection to the echo
#     is open and the host pings: the VM runs in a new worker (the tap's
#     fd handed over, not reopened: it is busy), the ping lost at most a
#     pause's worth, and the SAME connection echoes more data after the
#     update (SHA-256 of all of it equal);
#   - a migration to a second daemon on the same host fails (the tap is
#     busy there), says so, and the VM keeps running and answering pings.
#
# The rig's own image has no tun.ko: mkinitramfs.sh leaves the kernel
# package's beside the initramfs (host/tun.ko, with busybox for ping),
# loaded here when /dev/net/tun is missing.
# Usage: test_linux_net.sh MIGRATED MIGRATECTL MIGRATE-SEND MIGRATE-RECV
if [ -z "${MIGD_NET_NETNS:-}" ]; then
	MIGD_NET_NETNS=1 exec unshare --net -- bash "$0" "$@"
	echo "FAIL: unshare --net (root needed)"
	exit 1
fi
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "FAIL: migrate-send/recv not built"; exit 1; }
need_kvm
HVG=${MIGD_GUEST_HVGUEST:-}
[ -x "$HVG" ] || { echo "FAIL: MIGD_GUEST_HVGUEST names no hvguest"; exit 1; }
img=$(dirname "$HVG")
"$(dirname "$0")/../../tools/guest/mkinitramfs.sh" --hvguest "$HVG" \
	--out "$img/initramfs.cpio.gz" --kernel-out "$img/vmlinuz" ||
	{ echo "FAIL: cannot build the guest initramfs"; exit 1; }
BB=$img/host/busybox
BOOT_S=${MIGD_GUEST_BOOT_S:-300}
TAP=mtap0
MAC=52:54:00:77:00:02
GUEST=10.0.77.2
PORT=7777

# The host side: tun, the tap, its address, in this namespace only.
if [ ! -c /dev/net/tun ]; then
	# busybox's insmod: the rig's root (the host's) may have no kmod.
	"$BB" insmod "$img/host/tun.ko" || echo "insmod tun.ko failed"
	for _ in $(seq 50); do [ -c /dev/net/tun ] && break; sleep 0.1; done
fi
[ -c /dev/net/tun ] || { echo "FAIL: no /dev/net/tun (tun.ko: $img/host/tun.ko)"; exit 1; }
ip link set lo up
ip tuntap add dev $TAP mode tap || { echo "FAIL: ip tuntap add"; exit 1; }
ip addr add 10.0.77.1/24 dev $TAP
ip link set $TAP up

# refused DESC PATTERN CMD...: CMD fails and says PATTERN.
refused() {
	local desc=$1 pat=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	[ "$rc" != 0 ] && grep -q -- "$pat" <<<"$out" &&
		ok "$desc (rc=$rc): $out" || fail "$desc: rc=$rc: $out"
}

start_daemon src --dev-tls --tls-dir "$TMP/tls" --accel kvm
SRC=$SOCK
K=(--kernel "$img/vmlinuz" --initrd "$img/initramfs.cpio.gz" --mem 256M
	--vcpus 1 --accel kvm)
refused "a multicast MAC" "multicast" ctl vm create bad "${K[@]}" \
	--net "$TAP,mac=01:00:5e:00:00:01"
refused "a malformed MAC" "XX:XX:XX:XX:XX:XX" ctl vm create bad "${K[@]}" \
	--net "$TAP,mac=52:54:00:77:00"
refused "a bad tap name" "tap interface name" ctl vm create bad "${K[@]}" \
	--net "a/b"
refused "--net without --kernel" "needs --kernel" ctl vm create bad \
	--net "$TAP"

expect_rc 0 "vm create --net $TAP,mac=$MAC" ctl vm create lx "${K[@]}" \
	--net "$TAP,mac=$MAC" --backing memfd \
	--cmdline "hv.run=0 hv.after=shell hv.net=$GUEST/24 hv.echo=$PORT"
[ "$LAST_RC" = 0 ] || { tail -20 "$TMP/src.log"; finish; }
refused "the tap of a running VM, for another" "in use by another VM" \
	ctl vm create lx2 "${K[@]}" --net "$TAP"

t0=$(date +%s)
timeout "$BOOT_S" "$CTL" --socket "$SRC" vm console lx --from-start \
	--until "hvguest: shell" >"$TMP/boot.out" 2>&1
rc=$?
tr -d '\r' <"$TMP/boot.out" >"$TMP/boot.txt"
[ "$rc" = 0 ] && ok "the guest booted in $(($(date +%s) - t0)) s" ||
	{ fail "no shell within $BOOT_S s (rc=$rc): $(tail -c 3000 "$TMP/boot.txt")"
	  finish; }
grep -E "virtio|eth0|hvguest: (net|echo)" "$TMP/boot.txt"
grep -q "^hvguest: net eth0 $GUEST/24 mac=$MAC$" "$TMP/boot.txt" &&
	ok "in the guest: eth0 up at $GUEST/24 with MAC $MAC" ||
	fail "guest network: $(grep 'hvguest: net' "$TMP/boot.txt")"

# ping: the first answers may wait for the guest's ARP.
pings() {
	local i
	for i in $(seq 30); do
		"$BB" ping -c 3 -W 2 $GUEST >"$TMP/ping.out" 2>&1 && return 0
		sleep 1
	done
	return 1
}
pings && ok "the host pings the guest: $(grep -E 'packets' "$TMP/ping.out")" ||
	fail "ping $GUEST: $(cat "$TMP/ping.out")"

# 1 MiB through the guest's echo and back.
cat >"$TMP/echo.py" <<'PY'
import hashlib, os, socket, sys, threading
host, port = sys.argv[1], int(sys.argv[2])
data = os.urandom(1 << 20)
s = socket.create_connection((host, port), timeout=120)
got = bytearray()
def rd():
    while True:
        b = s.recv(65536)
        if not b:
            break
        got.extend(b)
t = threading.Thread(target=rd)
t.start()
s.sendall(data)
s.shutdown(socket.SHUT_WR)
t.join(180)
print(hashlib.sha256(data).hexdigest(), hashlib.sha256(bytes(got)).hexdigest(),
      len(got))
PY
t0=$(date +%s.%N)
read -r want got n <<<"$(timeout 240 python3 "$TMP/echo.py" $GUEST $PORT 2>"$TMP/echo.err")"
t1=$(date +%s.%N)
[ -n "$want" ] && [ "$want" = "$got" ] && [ "$n" = 1048576 ] &&
	ok "1 MiB echoed by the guest, SHA-256 equal ($(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s)" ||
	fail "echo: sent $want, got ${got:-?} (${n:-0} bytes): $(cat "$TMP/echo.err")"

out=$(ctl vm inspect lx)
echo "$out" | grep -A1 "virtio-net"
grep -q "^device:    00:0[0-9].0 virtio-net $TAP, bar0 0x[0-9a-f]*, driver ok, msi-x" <<<"$out" &&
	grep -q "mac $MAC, [0-9]* packets" <<<"$out" &&
	ok "vm inspect: the NIC on $TAP with MAC $MAC, bound, MSI-X" ||
	fail "vm inspect: $out"
j=$(ctl --json vm inspect lx)
rx=$(jq -r '[.devices[] | select(.kind == "virtio-net")][0].bytes_read // 0' <<<"$j")
tx=$(jq -r '[.devices[] | select(.kind == "virtio-net")][0].bytes_written // 0' <<<"$j")
[ "$rx" -ge 1048576 ] && [ "$tx" -ge 1048576 ] &&
	ok "counters: the guest received $rx bytes, sent $tx" ||
	fail "counters: rx=$rx tx=$tx: $j"
[ "$(jq -r '.boot.net.tap' <<<"$j")" = $TAP ] &&
	[ "$(jq -r '.boot.net.mac' <<<"$j")" = $MAC ] &&
	ok "vm inspect --json: boot.net is $TAP, $MAC" || fail "boot.net: $j"

# vm update with a TCP connection open across it and pings all along.
# The client echoes 256 KiB, waits for $TMP/go, echoes 256 KiB more on
# the same connection, and prints the SHA-256 of all it sent and got.
cat >"$TMP/conn.py" <<'PY'
import hashlib, os, socket, sys, time
host, port, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection((host, port), timeout=120)
sent, got = bytearray(), bytearray()
def echo(n):
    d = os.urandom(n)
    s.sendall(d)
    sent.extend(d)
    want = len(sent)
    while len(got) < want:
        b = s.recv(65536)
        if not b:
            raise SystemExit("connection closed after %d bytes" % len(got))
        got.extend(b)
echo(256 << 10)
open(tmp + "/conn.1", "w").write("%d\n" % len(got))
while not os.path.exists(tmp + "/go"):
    time.sleep(0.2)
echo(256 << 10)
s.shutdown(socket.SHUT_WR)
print(hashlib.sha256(sent).hexdigest(), hashlib.sha256(bytes(got)).hexdigest(),
      len(got))
PY
timeout 400 python3 "$TMP/conn.py" $GUEST $PORT "$TMP" >"$TMP/conn.out" 2>&1 &
cpid=$!
for _ in $(seq 600); do
	[ -s "$TMP/conn.1" ] || ! kill -0 $cpid 2>/dev/null && break
	sleep 0.2
done
[ -s "$TMP/conn.1" ] && ok "before the update: a TCP connection echoed $(cat "$TMP/conn.1") bytes" ||
	fail "the connection before the update: $(cat "$TMP/conn.out")"
"$BB" ping -i 0.2 -c 100 -W 1 $GUEST >"$TMP/ping_upd.out" 2>&1 &
ppid=$!
sleep 5
pid_of() { ctl --json vm inspect lx | jq -r .info.worker_pid; }
p0=$(pid_of)
out=$(ctl --json vm update lx 2>&1)
rc=$?
p1=$(pid_of)
if [ "$rc" = 0 ] && [ -n "$p1" ] && [ "$p1" != "$p0" ] &&
	[ "$(jq -r .new_pid <<<"$out")" = "$p1" ]; then
	ok "vm update: worker $p0 -> $p1, paused $(($(jq -r '.pause_ns // 0' <<<"$out") / 1000)) us"
else
	fail "vm update: rc=$rc pids $p0 -> $p1: $out"
	grep -E "handover|tap" "$TMP/src.log" | tail -n 10
fi
[ "$(ctl --json vm inspect lx | jq -r .info.state)" = VM_STATE_RUNNING ] &&
	ok "lx runs (worker $p1)" || fail "lx is not running after the update"
wait $ppid
tx=$(sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p' "$TMP/ping_upd.out")
rx=$(sed -n 's/.* \([0-9]*\) packets received.*/\1/p' "$TMP/ping_upd.out")
# 100 pings 0.2 s apart over 20 s: the pause (a few seconds at most
# nested under TCG) costs a handful; more lost means the NIC stalled.
[ -n "$rx" ] && [ "${tx:-0}" -ge 100 ] && [ "$rx" -ge $((tx * 3 / 4)) ] &&
	ok "the ping went on across the update: $rx of $tx answered" ||
	fail "ping across the update: $(tail -n 3 "$TMP/ping_upd.out")"
touch "$TMP/go"
wait $cpid
read -r want got n <"$TMP/conn.out"
[ -n "$want" ] && [ "$want" = "$got" ] && [ "$n" = $((512 << 10)) ] &&
	ok "the same TCP connection echoed 256 KiB more after the update, SHA-256 of all $n bytes equal" ||
	fail "the connection across the update: $(cat "$TMP/conn.out")"
pings && ok "the guest answers pings from worker $p1" || fail "no ping after the update"

# A migration to the same host: the destination cannot have the tap (the
# source's VM holds it); refused, the VM goes on here.
start_daemon dst --dev-tls --tls-dir "$TMP/tls" --accel kvm
DST=$SOCK
SOCK=$SRC
port=$("$RECV" --socket "$DST" --name lx 127.0.0.1:0) ||
	{ fail "migrate-recv: $port"; finish; }
out=$("$SEND" --socket "$SRC" lx "127.0.0.1:$port" 2>&1)
rc=$?
[ "$rc" != 0 ] && grep -q "tap '$TAP' is busy on the destination" <<<"$out" &&
	ok "migration to the same host refused (rc=$rc): $(grep -m1 busy <<<"$out")" ||
	{ fail "migration to the same host: rc=$rc: $out"; tail -n 20 "$TMP/dst.log"; }
[ "$(ctl --json vm inspect lx | jq -r .info.state)" = VM_STATE_RUNNING ] &&
	ok "lx still runs on the source" || fail "lx not running on the source"
pings && ok "and still answers pings" || fail "no ping after the refused migration"

expect_rc 0 "vm destroy" ctl vm destroy lx
# The tap is free again: the guest's NIC closed it.
"$BB" true
ip link show $TAP >/dev/null && ok "the persistent tap outlives the VM" ||
	fail "tap gone"

finish
