#!/bin/bash
# Snapshots (docs/snapshots.md): a live snapshot of a guest writing
# stamps, restored on the same daemon after the VM is gone and on another
# daemon from a copy of the files, every page's stamp intact (vm check)
# and the guest's own counters exactly those of the moment of the pause;
# a corrupted memory page, a truncated, a wrong-version and a foreign
# state file and a short memory file each refused with their reason and
# no VM left behind; a snapshot killed before it replaced the previous
# one leaves that one usable.
source "$(dirname "$0")/lib.sh" "$@"

ACCEL=$(it_accel)
start_daemon d1 --accel "$ACCEL" --metrics-listen 127.0.0.1:0
D1=$SOCK
MPORT=$(sed -n 's/.*comp=migd.metrics event=listening addr=[^:]*:\([0-9]*\).*/\1/p' \
	"$TMP/d1.log" | head -1)
metric() { curl -s "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
S=$TMP/snaps
mkdir -p "$S"

check_clean() { # NAME DESC
	local out
	out=$(ctl vm check "$1" 2>&1)
	if [ $? -eq 0 ] && grep -q " 0 bad" <<<"$out" &&
		grep -q " 0 vCPU(s) lost" <<<"$out"; then
		ok "$2: every stamp intact ($(grep -o '[0-9]* written' <<<"$out"))"
	else
		fail "$2: vm check: $out"
	fi
}
vm_count() { ctl --json vm list | jq '.vms | length'; }
# The guest's own counters (its status lines in guest RAM), per vCPU.
seqs() { ctl --json vm inspect "$1" | jq -c '[.vcpus[].seq]'; }

expect_rc 0 "create vm1 (2 vCPUs, sweep, 4000 pages/s)" ctl vm create vm1 \
	--accel "$ACCEL" --mem 64M --vcpus 2 --rate 4000 --heartbeat-us 2000
wait_until '[ "$(seq_sum vm1)" -gt 2000 ]' 10 ||
	fail "vm1 does not write: $(seq_sum vm1)"

# ---- a live snapshot; the VM runs on ---------------------------------
out=$(ctl --json vm snapshot vm1 "$S/one") || fail "snapshot: $out"
echo "snapshot: $out"
[ "$(json_get "$out" .live)" = true ] && ok "snapshot of a running VM is live" ||
	fail "not live: $out"
[ "$(json_get "$out" .passes)" -ge 2 ] && ok "passes: $(json_get "$out" .passes)" ||
	fail "passes: $out"
[ "$(json_get "$out" .pause_ns)" -gt 0 ] &&
	ok "pause reported: $(json_get "$out" .pause_ns) ns" || fail "pause: $out"
[ "$(json_get "$out" .vm.state)" = VM_STATE_RUNNING ] && ok "vm1 runs on" ||
	fail "vm1 after snapshot: $out"
[ -f "$S/one/state" ] && [ "$(stat -c %s "$S/one/memory")" = $((64 << 20)) ] &&
	ok "state and a 64 MiB memory file" || fail "files: $(ls -l "$S/one")"
alloc=$(($(stat -c %b "$S/one/memory") * 512))
[ "$alloc" -lt $((64 << 20)) ] && ok "memory file is sparse ($alloc bytes allocated)" ||
	fail "memory file not sparse: $alloc"
ls -a "$S" | grep -q partial && fail "a .partial directory stayed: $(ls -a "$S")"
s0=$(seq_sum vm1)
wait_until '[ "$(seq_sum vm1)" -gt $((s0 + 1000)) ]' 10 &&
	ok "vm1 progresses after the snapshot" || fail "vm1 stuck after snapshot"
check_clean vm1 "vm1 after its snapshot"

# ---- restore after the VM is gone ------------------------------------
expect_rc 1 "restore under an existing name refused" \
	ctl vm restore vm1 "$S/one"
grep -q "exists" <<<"$LAST_OUT" || fail "refusal says: $LAST_OUT"
expect_rc 0 "destroy vm1" ctl vm destroy vm1
expect_rc 0 "restore vm1 from the snapshot (paused)" ctl vm restore vm1 \
	"$S/one" --paused
check_clean vm1 "restored vm1, before it runs"
expect_rc 0 "resume restored vm1" ctl vm resume vm1
s0=$(seq_sum vm1)
wait_until '[ "$(seq_sum vm1)" -gt $((s0 + 1000)) ]' 10 &&
	ok "restored vm1 writes on ($s0 -> $(seq_sum vm1))" ||
	fail "restored vm1 does not run: $(seq_sum vm1)"
check_clean vm1 "restored vm1, running"

# ---- the snapshot is of the moment of the pause ----------------------
# --pause: the VM stays as it was when the last pass was written; a
# restore of the files must show exactly its counters. A snapshot that
# missed the last pass shows older ones.
out=$(ctl --json vm snapshot vm1 "$S/two" --pause) || fail "snapshot --pause: $out"
[ "$(json_get "$out" .vm.state)" = VM_STATE_PAUSED ] && ok "--pause leaves vm1 paused" ||
	fail "after --pause: $out"
want=$(seqs vm1)
expect_rc 0 "restore vm1b from the paused snapshot" ctl vm restore vm1b \
	"$S/two" --paused
got=$(seqs vm1b)
[ "$got" = "$want" ] && ok "restored counters are the paused VM's: $got" ||
	fail "restored counters $got, the VM paused at $want"
check_clean vm1b "vm1b"
expect_rc 0 "destroy vm1b" ctl vm destroy vm1b
expect_rc 0 "resume vm1" ctl vm resume vm1

# ---- elsewhere: a copy of the files, another daemon ------------------
cp -a --sparse=always "$S/one" "$TMP/copied"
start_daemon d2 --accel "$ACCEL"
expect_rc 0 "restore on another daemon from copied files" ctl vm restore \
	vm1 "$TMP/copied"
check_clean vm1 "vm1 on d2"
expect_rc 0 "destroy vm1 on d2" ctl vm destroy vm1
SOCK=$D1

# ---- damaged snapshots are refused, nothing stays ---------------------
# refused DESC DIR PATTERN [RC]: restore refused (exit RC, 2: bad input)
# with PATTERN in the reason; no VM named bad afterwards.
refused() {
	local n0
	n0=$(vm_count)
	expect_rc "${4:-2}" "$1 refused" ctl vm restore bad "$2"
	grep -q -- "$3" <<<"$LAST_OUT" && ok "reason: $LAST_OUT" ||
		fail "$1: reason '$LAST_OUT' lacks '$3'"
	grep -q "nothing was created" <<<"$LAST_OUT" ||
		fail "$1: does not say nothing was created"
	[ "$(vm_count)" = "$n0" ] && ! ctl vm inspect bad >/dev/null 2>&1 &&
		ok "$1: no VM left" || fail "$1: a VM stayed: $(ctl vm list)"
}
damaged() { # NAME: a fresh sparse copy of snapshot one
	rm -rf "${S:?}/$1"
	cp -a --sparse=always "$S/one" "$S/$1"
}

damaged corrupt
# Flip one byte in the first page with data of the workload region.
python3 - "$S/corrupt/memory" <<'EOF' || fail "cannot corrupt the copy"
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
off = os.lseek(fd, 2 << 20, os.SEEK_DATA) + 100
b = os.pread(fd, 1, off)
os.pwrite(fd, bytes([b[0] ^ 0x5a]), off)
os.close(fd)
EOF
refused "a corrupted memory page" "$S/corrupt" "do not match their digest"

damaged trunc
truncate -s $(($(stat -c %s "$S/trunc/state") / 2)) "$S/trunc/state"
refused "a truncated state file" "$S/trunc" "truncated"

damaged version
printf '\x02' | dd of="$S/version/state" bs=1 seek=8 conv=notrunc status=none
refused "a state file of format version 2" "$S/version" "version 2"

damaged foreign
head -c 10000 /dev/urandom >"$S/foreign/state"
refused "a foreign state file" "$S/foreign" "not a snapshot state file"

damaged short
truncate -s $((32 << 20)) "$S/short/memory"
refused "a truncated memory file" "$S/short" "truncated"

refused "a directory without a snapshot" "$TMP" "cannot open" 3
expect_rc 0 "the name is free after the refusals" ctl vm restore bad "$S/one"
expect_rc 0 "destroy it" ctl vm destroy bad

# ---- metrics: two snapshots and three restores that worked, six refused
m_ok=$(metric 'migd_snapshots_total{result="ok"}')
r_ok=$(metric 'migd_restores_total{result="ok"}')
r_bad=$(metric 'migd_restores_total{result="failed"}')
pause=$(metric migd_snapshot_pause_seconds_total)
[ "$m_ok" = 2 ] && [ "$r_ok" = 3 ] && [ "$r_bad" = 6 ] &&
	awk -v p="$pause" 'BEGIN { exit !(p > 0) }' &&
	ok "metrics: snapshots ok $m_ok, restores ok $r_ok failed $r_bad, pauses ${pause} s" ||
	fail "metrics: snapshots ok '$m_ok', restores ok '$r_ok' failed '$r_bad', pause '$pause'"

# ---- a snapshot killed midway leaves the previous one -----------------
# d3's workers die at their second snapshot's last step, when the files
# are written and fsynced but have not replaced the previous snapshot.
MIGRATED_FAULTPOINTS="snap.written@2=kill" start_daemon d3 --accel "$ACCEL"
expect_rc 0 "create vm3 on d3" ctl vm create vm3 --accel "$ACCEL" --mem 64M \
	--vcpus 2 --rate 4000 --heartbeat-us 2000
wait_until '[ "$(seq_sum vm3)" -gt 1000 ]' 10 || fail "vm3 does not write"
expect_rc 0 "first snapshot of vm3" ctl vm snapshot vm3 "$S/three"
sum0=$(sha256sum "$S/three/state" "$S/three/memory")
wait_until '[ "$(seq_sum vm3)" -gt 4000 ]' 10
expect_rc 4 "second snapshot: the worker is killed before the rename" \
	ctl vm snapshot vm3 "$S/three"
[ "$(sha256sum "$S/three/state" "$S/three/memory")" = "$sum0" ] &&
	ok "the previous snapshot's files are untouched" ||
	fail "the previous snapshot changed"
expect_rc 0 "restore the previous snapshot" ctl vm restore vm3b "$S/three"
check_clean vm3b "vm3b from the snapshot that survived"

finish
