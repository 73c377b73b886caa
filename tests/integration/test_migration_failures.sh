#!/bin/bash
# Live-migration failures between real daemons on loopback: the
# destination daemon killed (-9) mid-migration, the TCP connections
# killed mid-migration (ss -K; else the destination stopped with SIGSTOP
# until the engine's I/O timeout), and a cancel. After each: migrate-send
# exits non-zero, the VM still runs on the source with its counters
# moving, and a destination that is still alive holds no VM.
# argv: migrated migratectl migrate-send migrate-recv
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
# KVM where /dev/kvm is there, else the soft accelerator: these run on
# every machine. MIGD_IT_ACCEL=soft forces the soft one.
ACCEL=$(it_accel)
echo "accelerator: $ACCEL"
start_daemon src --dev-tls --tls-dir "$TMP/tls" --accel "$ACCEL"
SRC=$SOCK
if [ "$(SOCK=$SRC ctl --json ping | jq -r .engine)" != true ]; then
	echo "SKIP: migration engine not built"
	exit 77
fi

# new_dst NAME: a fresh destination daemon; sets DST and DST_PID.
new_dst() {
	start_daemon "$1" --dev-tls --tls-dir "$TMP/tls" --accel "$ACCEL"
	DST=$SOCK
	DST_PID=$DPID
}

# guest NAME: 128 MiB of random (incompressible) pages being rewritten,
# so that a migration capped at 4 MB/s lasts several seconds.
guest() {
	SOCK=$SRC expect_rc 0 "create $1" ctl vm create "$1" --mem 128M \
		--vcpus 2 --content random --rate 8000 --heartbeat-us 2000
	sleep 0.5
}

# start_send NAME: migrate-send in the background (SP, output in
# $TMP/NAME.out), once the destination listens and pages flow. Returns 1
# (a failed check) unless the migration is still iterating when it
# returns: a fault injected into a migration that already failed, or
# never started, would test nothing.
start_send() {
	local port phase= sent=0
	port=$("$RECV" --socket "$DST" --name "$1" 127.0.0.1:0) ||
		{ fail "migrate-recv $1: $port"; return 1; }
	PORT=$port
	"$SEND" --socket "$SRC" --bandwidth 4M "$1" "127.0.0.1:$port" \
		>"$TMP/$1.out" 2>&1 &
	SP=$!
	# Wait until the migration is iterating, then until pages are sent.
	for _ in $(seq 100); do
		phase=$(SOCK=$SRC ctl --json migration status "$1" 2>/dev/null |
			jq -r '.. | .phase? // empty' | head -1)
		[ "$phase" = MIG_PHASE_ITERATE ] && break
		kill -0 "$SP" 2>/dev/null || break
		sleep 0.05
	done
	sleep 0.7
	st=$(SOCK=$SRC ctl --json migration status "$1" 2>/dev/null)
	phase=$(jq -r '.. | .phase? // empty' <<<"$st" | head -1)
	sent=$(jq -r '[.. | .pages_sent? // empty] | first // 0' <<<"$st")
	if [ "$phase" != MIG_PHASE_ITERATE ] || [ "${sent:-0}" -eq 0 ] ||
		! kill -0 "$SP" 2>/dev/null; then
		fail "$1: not iterating before the fault (phase ${phase:-none}," \
			"$sent pages sent): $(tail -4 "$TMP/$1.out")"
		kill "$SP" 2>/dev/null
		wait "$SP" 2>/dev/null
		SOCK=$SRC ctl vm destroy "$1" >/dev/null 2>&1
		return 1
	fi
	ok "$1: iterating, $sent pages sent, when the fault comes"
}


# after_failure NAME DST_ALIVE WHY: the failure semantics. WHY (an
# extended regex) must match the reason in migrate-send's report: the
# engine prefixes it with the phase it failed in ("iteration N: ..."), so
# it shows that the failure came from the fault, while iterating.
after_failure() {
	local name=$1 alive=$2 why=$3 rc s1 s2 state reason
	if [ -n "$SP" ]; then
		wait "$SP"
		rc=$?
	else
		rc=$SPRC
	fi
	[ "$rc" -ne 0 ] && ok "$name: migrate-send exits $rc" ||
		fail "$name: migrate-send exited 0: $(cat "$TMP/$name.out")"
	reason=$(sed -nE 's/^ *reason: +//p' "$TMP/$name.out" | tail -1)
	grep -qE "$why" <<<"$reason" &&
		ok "$name: failed where the fault was: $reason" ||
		fail "$name: reason \"$reason\", wanted /$why/"
	# The source may need a moment to roll back (resume, stop logging).
	for _ in $(seq 50); do
		state=$(SOCK=$SRC ctl --json vm inspect "$name" | jq -r .info.state)
		[ "$state" = VM_STATE_RUNNING ] && break
		sleep 0.1
	done
	[ "$state" = VM_STATE_RUNNING ] && ok "$name: still runs on the source" ||
		fail "$name: source state $state"
	s1=$(SOCK=$SRC seq_sum "$name")
	sleep 0.5
	s2=$(SOCK=$SRC seq_sum "$name")
	[ "${s2:-0}" -gt "${s1:-0}" ] && ok "$name: guest keeps writing on the source ($s1 -> $s2)" ||
		fail "$name: no progress on the source: $s1 -> $s2"
	if [ "$alive" = 1 ]; then
		for _ in $(seq 50); do
			[ "$(SOCK=$DST ctl --json vm list | jq '[.vms[]?] | length')" = 0 ] && break
			sleep 0.1
		done
		SOCK=$DST expect_rc 3 "$name: destination holds no VM" ctl vm inspect "$name"
		n=$(SOCK=$DST ctl --json vm list | jq '[.vms[]?] | length')
		[ "$n" = 0 ] && ok "$name: destination VM list empty" ||
			fail "$name: destination lists $n VMs"
	fi
	SOCK=$SRC ctl vm destroy "$name" >/dev/null 2>&1
}

# 1. The destination's worker -- the process that receives the VM --
# dies (SIGKILL) while pages flow: the connections break mid-iteration.
new_dst dst1
guest k1
if start_send k1; then
	wpid=$(pgrep -f -- "migrated-vmm .*--state-dir $TMP/dst1" | head -1)
	[ -n "$wpid" ] && kill -9 "$wpid" || fail "k1: no destination worker"
	after_failure k1 1 '^iteration [0-9]+: '
fi

# 1b. The destination daemon dies (SIGKILL) while pages flow: its worker,
# orphaned, cancels the incoming migration (it cannot hand the VM to
# anyone) and discards what it received; the VM stays on the source.
new_dst dst1b
guest k1b
if start_send k1b; then
	kill -9 "$DST_PID"
	after_failure k1b 0 'cancelled by the peer \(the destination.*its daemon stopped'
	for _ in $(seq 50); do
		[ -z "$(pgrep -f -- "migrated-vmm .*--state-dir $TMP/dst1b/")" ] &&
			break
		sleep 0.1
	done
	[ -z "$(pgrep -f -- "migrated-vmm .*--state-dir $TMP/dst1b/")" ] &&
		ok "k1b: the orphaned destination worker exited" ||
		fail "k1b: destination worker still running"
	[ -s "$TMP/dst1b/vms/"*.outcome ] 2>/dev/null &&
		ok "k1b: it left its outcome for the next daemon" ||
		fail "k1b: no outcome file in $TMP/dst1b/vms"
fi

# 2. The TCP connections are killed while pages flow.
new_dst dst2
guest k2
if start_send k2; then
	if ss -K dst 127.0.0.1 dport = ":$PORT" >/dev/null 2>&1 &&
		! ss -tn state established "( dport = :$PORT )" | grep -q ":$PORT"; then
		ok "k2: connections to port $PORT killed (ss -K)"
	else
		# No socket destroy here: a destination that stops answering
		# must fail the source by its I/O timeout instead.
		ok "k2: ss -K unavailable, stopping the destination instead"
		kill -STOP "$DST_PID"
		wait "$SP"
		SPRC=$?
		kill -CONT "$DST_PID"
		SP=
	fi
	after_failure k2 1 '^iteration [0-9]+: '
fi

# 3. Cancel from the source side while pages flow.
guest c1
if start_send c1; then
	SOCK=$SRC expect_rc 0 "c1: cancel" ctl migration cancel c1
	after_failure c1 1 '^cancelled in iteration [0-9]+'
	grep -qi cancel "$TMP/c1.out" && ok "c1: report says cancelled" ||
		fail "c1: report: $(tail -3 "$TMP/c1.out")"
fi
finish
