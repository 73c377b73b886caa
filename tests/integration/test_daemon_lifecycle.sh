#!/bin/bash
# Daemon life cycle: private state dir and socket, refusal of a second
# daemon on the same socket, bad frames from a client, events, clean
# shutdown on SIGTERM (VMs stopped, socket removed, exit 0).
source "$(dirname "$0")/lib.sh" "$@"

start_daemon d1
[ "$(stat -c %a "$TMP/d1")" = 700 ] && ok "state dir is 0700" ||
	fail "state dir mode $(stat -c %a "$TMP/d1")"
[ "$(stat -c %a "$SOCK")" = 600 ] && ok "socket is 0600" ||
	fail "socket mode $(stat -c %a "$SOCK")"

# A second daemon on the same socket must refuse, not steal it.
"$MIGRATED" --state-dir "$TMP/d1" >"$TMP/d2.log" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "another daemon" "$TMP/d2.log" &&
	ok "second daemon on the same socket refused" ||
	fail "second daemon rc=$rc: $(cat "$TMP/d2.log")"
[ -S "$SOCK" ] && ctl ping >/dev/null && ok "first daemon still serves" ||
	fail "first daemon lost its socket"

# Bad input on the wire: oversized length, garbage protobuf, truncated
# frame. Each closes that connection only.
python3 - "$SOCK" <<'PY' && ok "bad frames: connection closed, answer id 0" || fail "bad frames"
import socket, struct, sys
def conn():
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(5); return s
def drain(s):
    data = b""
    while True:
        try:
            b = s.recv(65536)
        except socket.timeout:
            raise SystemExit("daemon did not close the connection")
        if not b:
            return data
        data += b
s = conn(); s.sendall(struct.pack("<I", (1 << 20) + 1)); drain(s)
s = conn(); s.sendall(struct.pack("<I", 0)); drain(s)
s = conn(); s.sendall(struct.pack("<I", 3) + b"\xff\xff\xff"); d = drain(s)
assert len(d) > 4, "expected an error response before close"
s = conn(); s.sendall(struct.pack("<I", 100) + b"abc"); s.shutdown(socket.SHUT_WR); drain(s)
PY
expect_rc 0 "daemon alive after bad clients" ctl ping

# Events: a subscriber sees a VM appear and change state.
ctl --json events --kind vm --count 3 >"$TMP/events" 2>&1 &
EVP=$!
sleep 0.3
expect_rc 0 "create idle VM" ctl vm create ev1 --mem 32M --pattern idle
expect_rc 0 "pause it" ctl vm pause ev1
expect_rc 0 "destroy it" ctl vm destroy ev1
wait_until '! kill -0 "$EVP"' 5
kill $EVP 2>/dev/null
wait $EVP 2>/dev/null
n=$(grep -c VM_STATE "$TMP/events")
[ "$(sed -n 3p "$TMP/events" | jq -r .vm_state.destroyed)" = true ] &&
	[ "$n" -ge 3 ] && ok "events: created, paused, destroyed" ||
	fail "events: $(cat "$TMP/events")"

# SIGTERM with a running VM: clean exit, socket removed, and the VM keeps
# running in its worker process; a new daemon on the same state dir
# adopts it; with --stop-vms, SIGTERM destroys it.
expect_rc 0 "create a busy VM" ctl vm create busy --mem 64M --rate 5000
kill -TERM "$DPID"
wait "$DPID"
rc=$?
[ $rc -eq 0 ] && ok "SIGTERM: exit 0" || fail "SIGTERM: exit $rc"
[ ! -e "$SOCK" ] && ok "socket removed" || fail "socket left behind"
grep -q "event=vm_destroyed vm=busy" "$TMP/d1.log" &&
	fail "SIGTERM destroyed the VM" || ok "SIGTERM left the VM alone"
[ -n "$(worker_pids)" ] && ok "its worker still runs" ||
	fail "no worker left after SIGTERM"
mv "$TMP/d1.log" "$TMP/d1-first.log"
start_daemon d1 --stop-vms
L=$(ctl --json vm list)
[ "$(json_get "$L" '.vms[0].name')" = busy ] &&
	[ "$(json_get "$L" '.vms[0].state')" = VM_STATE_RUNNING ] &&
	ok "a new daemon adopted the running VM" || fail "after restart: $L"
kill -TERM "$DPID"
wait "$DPID"
# (the worker logs where the daemon that started it did)
grep -q "event=vm_destroyed vm=busy" "$TMP/d1-first.log" &&
	grep -q "event=stop_vms vms=1" "$TMP/d1.log" &&
	ok "--stop-vms: SIGTERM destroyed it" || fail "VM not destroyed"
wait_until '[ -z "$(worker_pids)" ]' 5
[ -z "$(worker_pids)" ] && ok "  ... and its worker exited" ||
	fail "worker still running: $(worker_pids)"
grep -q "event=stopped" "$TMP/d1.log" && ok "logged stop" || fail "no stop line"
if grep -q "ERROR: AddressSanitizer\|LeakSanitizer" "$TMP/d1.log"; then
	fail "sanitizer report: $(grep -A5 Sanitizer "$TMP/d1.log" | head -20)"
else
	ok "no sanitizer report"
fi

# Tools against no daemon: a clear error and exit code 5.
expect_rc 5 "migratectl without a daemon" ctl vm list
echo "$LAST_OUT" | grep -q "is migrated running" && ok "  ... explains" ||
	fail "message: $LAST_OUT"
finish
