#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Linux guest with a virtio-net NIC live-migrated between two daemons in
# two network namespaces, each with its own tap of the same name, while
# the host pings it (label kvm: in the KVM rig). The test runs in a
# network namespace of its own (unshare -n), on 10.0.77.0/24 only:
#
#   here      br0 10.0.77.1 ---- veth ---- nsA: brx 10.0.77.11 + mtap0 (src)
#                           \--- veth ---- nsB: brx 10.0.77.12 + mtap0 (dst)
#   guest     eth0 10.0.77.2 on whichever mtap0 its VM has
#
# A ping runs from here all along (0.2 s apart). After the migration the
# destination announces the guest's MAC (RARP) on its tap, so br0 learns
# the new port at once: without the announce the replies would stop until
# the guest spoke first or br0's entry aged out (300 s). Checked: the
# migration completes, the destination logged the announce, the ping got
# replies after the switchover (and lost at most a few around it), a TCP
# connection to the guest's echo opened before the migration echoes more
# on the destination (net_conn.py: SHA-256 of all of it equal), and 1 MiB
# round-trips through the guest's echo on the destination.
#
# The rig's image has no tun, bridge, stp or llc module: mkinitramfs.sh
# leaves the kernel package's beside the initramfs (host/), loaded here.
# Usage: test_linux_net_migrate.sh MIGRATED MIGRATECTL MIGRATE-SEND MIGRATE-RECV
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
ECHO=$(dirname "$0")/net_echo.py
CONN=$(dirname "$0")/net_conn.py
BOOT_S=${MIGD_GUEST_BOOT_S:-300}
TAP=mtap0
MAC=52:54:00:77:00:02
GUEST=10.0.77.2
PORT=7777

for m in tun llc stp bridge; do
	grep -q "^$m " /proc/modules || [ -d /sys/module/$m ] ||
		"$BB" insmod "$img/host/$m.ko" || echo "insmod $m.ko failed"
done
for _ in $(seq 50); do [ -c /dev/net/tun ] && break; sleep 0.1; done
[ -c /dev/net/tun ] || { echo "FAIL: no /dev/net/tun"; exit 1; }

NS=()
netns_del() { local n; for n in "${NS[@]}"; do ip netns del "$n" 2>/dev/null; done; }
ip link set lo up
ip link add br0 type bridge || { echo "FAIL: no bridge"; exit 1; }
ip addr add 10.0.77.1/24 dev br0
ip link set br0 up
for h in a b; do
	ns=mnet$h$$
	n=$([ $h = a ] && echo 11 || echo 12)
	ip netns add $ns || { echo "FAIL: ip netns add"; exit 1; }
	NS+=("$ns")
	ip link add vth$h type veth peer name up0 netns $ns
	ip link set vth$h master br0 up
	ip netns exec $ns sh -ec "
		ip link set lo up
		ip link add brx type bridge
		ip link set up0 master brx up
		ip tuntap add dev $TAP mode tap
		ip link set $TAP master brx up
		ip addr add 10.0.77.$n/24 dev brx
		ip link set brx up" || { echo "FAIL: netns $ns"; netns_del; exit 1; }
	printf '#!/bin/sh\nexec ip netns exec %s %q "$@"\n' $ns "$MIGRATED" \
		>"$TMP/migrated-$h"
	chmod +x "$TMP/migrated-$h"
done

MIGRATED=$TMP/migrated-a start_daemon src --accel kvm
SRC=$SOCK
MIGRATED=$TMP/migrated-b start_daemon dst --accel kvm
DST=$SOCK
SOCK=$SRC

expect_rc 0 "vm create --net $TAP (in nsA)" ctl vm create lx \
	--kernel "$img/vmlinuz" --initrd "$img/initramfs.cpio.gz" --mem 256M \
	--vcpus 1 --accel kvm --net "$TAP,mac=$MAC" \
	--cmdline "hv.run=0 hv.after=shell hv.net=$GUEST/24 hv.echo=$PORT"
[ "$LAST_RC" = 0 ] || { tail -20 "$TMP/src.log"; netns_del; finish; }
t0=$(date +%s)
timeout "$BOOT_S" "$CTL" --socket "$SRC" vm console lx --from-start \
	--until "hvguest: shell" >"$TMP/boot.out" 2>&1
rc=$?
[ "$rc" = 0 ] && ok "the guest booted in $(($(date +%s) - t0)) s" ||
	{ fail "no shell within $BOOT_S s (rc=$rc): $(tail -c 3000 "$TMP/boot.out")"
	  netns_del; finish; }

for _ in $(seq 30); do
	"$BB" ping -c 1 -W 2 $GUEST >/dev/null 2>&1 && break
	sleep 1
done
"$BB" ping -c 3 -W 2 $GUEST >"$TMP/ping0" 2>&1 &&
	ok "the host pings the guest on the source: $(grep packets "$TMP/ping0")" ||
	fail "ping before: $(cat "$TMP/ping0")"

# A TCP connection across the migration: echoes before, waits for
# $TMP/go, echoes on the same connection after.
timeout 400 python3 "$CONN" $GUEST $PORT "$TMP" >"$TMP/conn.out" 2>&1 &
CPID=$!
for _ in $(seq 600); do
	[ -s "$TMP/conn.1" ] || ! kill -0 $CPID 2>/dev/null && break
	sleep 0.2
done
[ -s "$TMP/conn.1" ] && ok "before the migration: a TCP connection echoed $(cat "$TMP/conn.1") bytes" ||
	fail "the connection before the migration: $(cat "$TMP/conn.out")"

# The ping across the migration.
"$BB" ping -i 0.2 $GUEST >"$TMP/ping.log" 2>&1 &
PING=$!
PIDS+=("$PING")
sleep 3
port=$("$RECV" --socket "$DST" --name lx --insecure 10.0.77.12:0) ||
	{ fail "migrate-recv: $port"; netns_del; finish; }
expect_rc 0 "live migration nsA -> nsB" \
	"$SEND" --socket "$SRC" --insecure lx "10.0.77.12:$port"
echo "$LAST_OUT" | tail -6
seq_mig=$(grep -o 'seq=[0-9]*' "$TMP/ping.log" | tail -1 | cut -d= -f2)
sleep 5
kill -INT $PING 2>/dev/null
wait $PING 2>/dev/null
[ "$LAST_RC" = 0 ] || { tail -n 30 "$TMP/src.log" "$TMP/dst.log"; netns_del; finish; }
SOCK=$DST
[ "$(ctl --json vm inspect lx | jq -r .info.state)" = VM_STATE_RUNNING ] &&
	ok "lx runs on the destination" || fail "lx not running on the destination"
grep -rqs "op=net_announce dev=net0 tap=$TAP mac=$MAC ret=0" "$TMP" &&
	ok "the destination announced $MAC on its $TAP (RARP)" ||
	fail "no announce in the logs: $(grep -rhs net_announce "$TMP" | head -3)"
after=$(grep -o 'seq=[0-9]*' "$TMP/ping.log" |
	awk -F= -v s="${seq_mig:-0}" '$2 > s' | wc -l)
tail -3 "$TMP/ping.log"
[ "$after" -ge 10 ] &&
	ok "the ping went on after the switchover: $after replies in the 5 s after it ($(grep -E 'packets' "$TMP/ping.log"))" ||
	fail "ping after the switchover: $after replies: $(tail -5 "$TMP/ping.log")"
touch "$TMP/go"
wait $CPID
read -r want got n <"$TMP/conn.out"
[ -n "$want" ] && [ "$want" = "$got" ] && [ "$n" = $((512 << 10)) ] &&
	ok "the TCP connection opened on the source echoed 256 KiB more on the destination, SHA-256 of all $n bytes equal" ||
	fail "the connection across the migration: $(cat "$TMP/conn.out")"
read -r want got n <<<"$(timeout 240 python3 "$ECHO" $GUEST $PORT 2>"$TMP/echo.err")"
[ -n "$want" ] && [ "$want" = "$got" ] && [ "$n" = 1048576 ] &&
	ok "1 MiB echoed by the guest on the destination, SHA-256 equal" ||
	fail "echo after: sent $want, got ${got:-?} (${n:-0} bytes): $(cat "$TMP/echo.err")"
expect_rc 0 "vm destroy on the destination" ctl vm destroy lx
netns_del
finish
