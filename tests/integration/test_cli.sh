#!/usr/bin/env bash
# The command-line tools explain themselves: every tool answers --version
# and --help on stdout with exit 0; every migratectl and hvbench
# subcommand answers COMMAND --help the same way; every long option of
# migrated, migrate-send and migrate-recv is in its --help; bad input is
# refused with exit 2 and a message that names the option and what it
# accepts (sizes with binary suffixes, ranges; a sign is refused, not
# wrapped); --json turns client-side errors into one JSON line on stdout;
# a TLS file that does not load is named with the reason; migratectl
# takes --json anywhere and its man page names every subcommand. One
# daemon runs, with --log-format json: every line it and its worker log
# is one JSON object. Then two daemons and migrate-send as an operator
# meets it: the progress bar on 80- and 40-column pseudo-terminals,
# Ctrl-C, SIGTERM and --detach, the dirty rate and pause/resume during a
# migration, the workload shown on the destination, failure reasons with
# a next step, and an armed migrate-recv listed and disarmed, by hand or
# by its --arm-timeout; the ETA of a capped migration never rises while
# its percentage does.
# Usage: test_cli.sh MIGRATED MIGRATECTL SEND RECV DIRTYRATE HVBENCH
DR=$5
HVB=$6
source "$(dirname "$0")/lib.sh" "$1" "$2" "$3" "$4"
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
NOSOCK=$TMP/none.sock

# run_cli CMD...: sets OUT, ERR, RC.
run_cli() {
	"$@" >"$TMP/out" 2>"$TMP/err"
	RC=$?
	OUT=$(cat "$TMP/out")
	ERR=$(cat "$TMP/err")
}

# help_ok DESC CMD...: exit 0, something on stdout, nothing on stderr.
help_ok() {
	local desc=$1
	shift
	run_cli "$@"
	if [ "$RC" = 0 ] && [ -n "$OUT" ] && [ -z "$ERR" ]; then
		ok "$desc"
	else
		fail "$desc: rc=$RC stdout=$(echo "$OUT" | head -2) stderr=$ERR"
	fi
}

# refused DESC RC PATTERN CMD...: exit RC, stderr matches PATTERN (ERE).
refused() {
	local desc=$1 rc=$2 pat=$3
	shift 3
	run_cli "$@"
	if [ "$RC" = "$rc" ] && echo "$ERR" | grep -qE -- "$pat"; then
		ok "$desc: $(echo "$ERR" | grep -E -- "$pat" | head -1)"
	else
		fail "$desc: rc=$RC (want $rc) stderr=$ERR"
	fi
}

# An armed receive that no source reaches disarms itself after
# --arm-timeout (issue 25: it waited forever), saying why, its worker
# gone; --arm-timeout 0 keeps waiting. Needs $DST and nworkers.
arm_timeout_check() {
	local out id ph msg w0
	w0=$(nworkers)
	out=$("$RECV" --json --socket "$DST" --name arm2 --arm-timeout 2 127.0.0.1:0)
	id=$(jq -r .id <<<"$out")
	out=$("$RECV" --json --socket "$DST" --name arm3 --arm-timeout 0 127.0.0.1:0)
	id0=$(jq -r .id <<<"$out")
	for _ in $(seq 100); do
		ph=$(SOCK=$DST ctl --json migration status "$id" | jq -r '.migrations[0].progress.phase')
		[ "$ph" = MIG_PHASE_CANCELLED ] && break
		sleep 0.1
	done
	msg=$(SOCK=$DST ctl --json migration status "$id" | jq -r '.migrations[0].progress.message')
	[ "$ph" = MIG_PHASE_CANCELLED ] &&
		grep -q "no source connected within 2 s of arming (migrate-recv --arm-timeout): disarmed" <<<"$msg" &&
		ok "an armed receive no source reached disarms after --arm-timeout 2: $msg" ||
		fail "armed receive $id after its --arm-timeout: $ph: $msg"
	ph=$(SOCK=$DST ctl --json migration status "$id0" | jq -r '.migrations[0].progress.phase')
	[ "$ph" = MIG_PHASE_SETUP ] && ok "--arm-timeout 0: still armed" ||
		fail "--arm-timeout 0: $ph"
	SOCK=$DST ctl migration cancel "$id0" >/dev/null
	for _ in $(seq 100); do [ "$(nworkers)" -le "$((w0))" ] && break; sleep 0.1; done
	[ "$(nworkers)" -le "$w0" ] && ok "both armed receives' workers are gone" ||
		fail "workers left: $(nworkers), was $w0"
}

# The ETA never rises while progress rises (issue 25): the progress events
# of a capped migration of a writing VM, in order; wherever the percentage
# went up and both samples had an estimate, the later estimate must not be
# above the earlier one. Needs $SRC, $DST.
eta_check() {
	local port ev bad n
	SOCK=$SRC ctl vm create eta1 --mem 128M --rate 2000 --prefill \
		--content random >/dev/null || { fail "eta: vm create"; return; }
	for _ in $(seq 300); do
		[ "$(SOCK=$SRC ctl --json vm inspect eta1 | jq -r .prefill_done)" = true ] && break
		sleep 0.1
	done
	port=$("$RECV" --socket "$DST" --name eta1 127.0.0.1:0)
	SOCK=$SRC ctl --json events --vm eta1 --kind progress --interval 100 \
		>"$TMP/eta.ev" 2>/dev/null &
	ev=$!
	PIDS+=("$ev")
	sleep 0.3
	timeout 120 "$SEND" --socket "$SRC" --bandwidth 16MiB/s \
		--compress off eta1 \
		"127.0.0.1:$port" >"$TMP/eta.out" 2>&1 ||
		fail "eta: migrate-send: $(tail -3 "$TMP/eta.out")"
	kill "$ev" 2>/dev/null
	wait "$ev" 2>/dev/null
	jq -r 'select(.migration.migration.direction == "MIG_DIRECTION_OUTGOING")
		| .migration.migration.progress
		| "\(.percent // 0) \(.eta_ns // 0) \(.phase)"' \
		"$TMP/eta.ev" >"$TMP/eta.pts"
	n=$(awk '$2 > 0' "$TMP/eta.pts" | wc -l)
	bad=$(awk '$2 > 0 { if (pp != "" && $1 > pp && pe > 0 && $2 > pe)
		printf "%s%% %.2fs -> %s%% %.2fs; ", pp, pe / 1e9, $1, $2 / 1e9;
		pp = $1; pe = $2 }' "$TMP/eta.pts")
	if [ "$n" -lt 5 ]; then
		fail "eta: only $n progress samples with an estimate: $(head -5 "$TMP/eta.pts")"
	elif [ -z "$bad" ]; then
		ok "eta: never rose while progress rose ($n samples)"
	else
		fail "eta rose while progress rose: $bad"
	fi
}

# ---- --version and --help ----------------------------------------------
for t in "$MIGRATED" "$CTL" "$SEND" "$RECV" "$DR" "$HVB"; do
	n=$(basename "$t")
	help_ok "$n --version" "$t" --version
	echo "$OUT" | grep -qE "^$n.* [0-9]+\.[0-9]+\.[0-9]+$" ||
		fail "$n --version says: $OUT"
	help_ok "$n --help" "$t" --help
done

for c in vm dirty estimate migration events ping capabilities; do
	help_ok "migratectl $c --help" "$CTL" --socket "$NOSOCK" $c --help
	echo "$OUT" | grep -q "$c" || fail "migratectl $c --help: $OUT"
done
help_ok "migratectl vm create --help" "$CTL" --socket "$NOSOCK" vm create --help
help_ok "migratectl migration tune X --help" "$CTL" --socket "$NOSOCK" \
	migration tune 1 --help
cmds=$("$HVB" --help | sed -n '/^commands:/,$p' | awk 'NR > 1 {print $1}')
[ -n "$cmds" ] || fail "no hvbench commands listed"
for c in $cmds; do
	help_ok "hvbench $c --help" timeout 20 "$HVB" $c --help
done
# ...and each is in hvbench(1).
hman=$(sed 's/\\-/-/g' "$SRCDIR/docs/man/hvbench.1")
missing=
for c in $cmds; do
	grep -qx "\.B $c" <<<"$hman" || missing="$missing $c"
done
[ -z "$missing" ] && ok "hvbench(1) has every command of --help" ||
	fail "hvbench(1) lacks:$missing"

# Every long option of a tool's table is in its --help.
# options_in FILE: the names of its getopt_long table.
options_in() {
	grep -oE '^\s*\{ ?"[a-z][a-z0-9-]*", (required|no)_argument' "$1" |
		sed -E 's/.*"([^"]*)".*/\1/'
}
for pair in "$MIGRATED:migrated/host/config.c" \
	"$SEND:tools/migrate-send/main.c" "$RECV:tools/migrate-recv/main.c"; do
	bin=${pair%%:*}
	src=$SRCDIR/${pair#*:}
	help=$("$bin" --help 2>&1)
	missing=
	n=0
	for o in $(options_in "$src"); do
		n=$((n + 1))
		echo "$help" | grep -q -- "--$o\b" || missing="$missing --$o"
	done
	[ "$n" -gt 3 ] || fail "no option table found in $src"
	[ -z "$missing" ] && ok "$(basename "$bin") --help lists its $n options" ||
		fail "$(basename "$bin") --help omits:$missing"
done

# Every subcommand migratectl --help names is in migratectl(1).
man=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' "$SRCDIR/docs/man/migratectl.1")
missing=
for c in $("$CTL" --help | grep -oE '(^ {0,2}|\| )(vm|migration|host) [a-z][a-z-]+' |
	sed -E 's/^[ |]*//' | sort -u | tr ' ' ':'); do
	grep -qE "${c%%:*} ${c#*:}\b" <<<"$man" || missing="$missing ${c/:/ }"
done
[ -z "$missing" ] && ok "migratectl(1) has every subcommand of --help" ||
	fail "migratectl(1) lacks:$missing"
# ...and every option (the completion is made from --help alone,
# tools/completion/migratectl; the man page is checked against it).
missing=
for o in $("$CTL" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
	grep -q -- "$o" <<<"$man" || missing="$missing $o"
done
[ -z "$missing" ] && ok "migratectl(1) has every option of --help" ||
	fail "migratectl(1) lacks:$missing"

# ---- bad input -----------------------------------------------------------
SIZE_RE="KiB.*MiB.*GiB"
refused "--mem 12XB names the suffixes" 2 "--mem '12XB'.*$SIZE_RE" \
	"$CTL" --socket "$NOSOCK" vm create x --mem 12XB
refused "--mem -1 refused" 2 "--mem '-1'" \
	"$CTL" --socket "$NOSOCK" vm create x --mem -1
refused "--vcpus -1 refused, not wrapped" 2 "--vcpus '-1'.*1\.\.64" \
	"$CTL" --socket "$NOSOCK" vm create x --vcpus -1
refused "--vcpus 0 names the range" 2 "--vcpus '0'.*1\.\.64" \
	"$CTL" --socket "$NOSOCK" vm create x --vcpus 0
refused "--vcpus 1000: the daemon's limit, in the client" 2 \
	"--vcpus '1000'.*1\.\.64" "$CTL" --socket "$NOSOCK" vm create x --vcpus 1000
refused "vm frobnicate: an unknown command, not a missing NAME" 2 \
	"unknown vm command 'frobnicate'" "$CTL" --socket "$NOSOCK" vm frobnicate
refused "events --count 0 refused (it ran forever)" 2 "--count '0'.*1 or more" \
	"$CTL" --socket "$NOSOCK" events --count 0
refused "--write-pct 101 names the range" 2 "--write-pct '101'.*0\.\.100" \
	"$CTL" --socket "$NOSOCK" vm create x --write-pct 101
refused "--pattern names the choices" 2 "--pattern 'zig'.*sweep" \
	"$CTL" --socket "$NOSOCK" vm create x --pattern zig
refused "--rate junk names both forms" 2 "--rate '5X/s'.*PAGES/S.*MiB/s" \
	"$CTL" --socket "$NOSOCK" vm create x --rate 5X/s
refused "tune --channels is refused, naming where it is chosen" 2 \
	"--channels is not supported.*migrate-send --channels" \
	"$CTL" --socket "$NOSOCK" migration tune 1 --channels 4
refused "capabilities takes no argument" 2 "no argument" \
	"$CTL" --socket "$NOSOCK" capabilities x
refused "migrate-recv --accel names the choices" 2 "--accel 'vmx'.*kvm or soft" \
	"$RECV" --socket "$NOSOCK" --accel vmx 127.0.0.1:0
refused "tune --bandwidth -5M refused" 2 "--bandwidth '-5M'.*MiB/s" \
	"$CTL" --socket "$NOSOCK" migration tune 1 --bandwidth -5M
refused "tune with nothing to change" 2 "nothing to change" \
	"$CTL" --socket "$NOSOCK" migration tune 1
refused "--timeout 0 names the range" 2 "--timeout '0'.*1\.\.3600000" \
	"$CTL" --socket "$NOSOCK" --timeout 0 ping
refused "unknown command" 2 "unknown command 'frob'" \
	"$CTL" --socket "$NOSOCK" frob
refused "no daemon: exit 5 and the socket" 5 "$NOSOCK" \
	"$CTL" --socket "$NOSOCK" ping
refused "migrate-send --channels 0" 2 "--channels '0'.*1\.\.16" \
	"$SEND" --socket "$NOSOCK" --channels 0 vm1 127.0.0.1:1
refused "migrate-send --downtime -5 refused" 2 "--downtime '-5'.*1\.\.600000" \
	"$SEND" --socket "$NOSOCK" --downtime -5 vm1 127.0.0.1:1
refused "migrate-send --compress 23" 2 "--compress '23'.*1\.\.22" \
	"$SEND" --socket "$NOSOCK" --compress 23 vm1 127.0.0.1:1
refused "migrate-send --bandwidth 10XB/s" 2 "--bandwidth '10XB/s'.*MiB/s" \
	"$SEND" --socket "$NOSOCK" --bandwidth 10XB/s vm1 127.0.0.1:1
refused "migrate-send bad destination" 2 "destination 'nowhere'.*HOST:PORT" \
	"$SEND" --socket "$NOSOCK" vm1 nowhere
refused "migrate-recv --name" 2 "--name '-x'" \
	"$RECV" --socket "$NOSOCK" --name -x :0
refused "migrate-recv --timeout-ms -1" 2 "--timeout-ms '-1'" \
	"$RECV" --socket "$NOSOCK" --timeout-ms -1 :0
refused "migrate-recv --arm-timeout -1" 2 "--arm-timeout '-1'" \
	"$RECV" --socket "$NOSOCK" --arm-timeout -1 :0
refused "dirtyrate --interval 5" 2 "--interval '5'.*50\.\.60000" \
	"$DR" --socket "$NOSOCK" --interval 5 vm1
refused "migrated --dirty-interval-ms 5" 2 "dirty-interval-ms.*20\.\.1000" \
	"$MIGRATED" --state-dir "$TMP/never" --dirty-interval-ms 5
if [ ! -e /dev/kvm ]; then
	refused "migrated --accel kvm without /dev/kvm does not start" 1 \
		"--accel kvm, but /dev/kvm does not open" \
		timeout 10 "$MIGRATED" --state-dir "$TMP/nokvm" --accel kvm
fi

# ---- --json: client-side errors as JSON on stdout -----------------------
# json_err DESC RC CMD...: one JSON line with the status and exit code.
json_err() {
	local desc=$1 rc=$2
	shift 2
	run_cli "$@"
	if [ "$RC" = "$rc" ] && echo "$OUT" | jq -e --argjson rc "$rc" \
		'.exit_code == $rc and (.error.status | startswith("STATUS_")) and
		 (.error.message | length > 0)' >/dev/null 2>&1; then
		ok "$desc: $OUT"
	else
		fail "$desc: rc=$RC stdout=$OUT"
	fi
}
json_err "migratectl --json bad --mem" 2 \
	"$CTL" --json --socket "$NOSOCK" vm create x --mem 12XB
json_err "migratectl --json no daemon" 5 "$CTL" --json --socket "$NOSOCK" ping
json_err "migratectl --json after --socket" 5 "$CTL" --socket "$NOSOCK" --json ping
json_err "migratectl --json after the command" 2 \
	"$CTL" --socket "$NOSOCK" vm create x --mem 12XB --json
json_err "migrate-send --json bad option" 2 \
	"$SEND" --json --socket "$NOSOCK" --channels 99 vm1 127.0.0.1:1
json_err "migrate-recv --json no daemon" 5 "$RECV" --json --socket "$NOSOCK" :0
json_err "dirtyrate --json bad interval" 2 \
	"$DR" --json --socket "$NOSOCK" --interval 1 vm1

# ---- TLS files ------------------------------------------------------------
mkdir -p "$TMP/badtls"
echo junk >"$TMP/badtls/ca.pem"
refused "missing TLS file named" 2 "$TMP/nosuch/ca.pem: No such file" \
	"$CTL" --connect 127.0.0.1:1 --tls-dir "$TMP/nosuch" ping
refused "bad TLS file named with OpenSSL's reason" 2 \
	"$TMP/badtls/ca.pem: not a PEM certificate \(.+\)" \
	"$CTL" --connect 127.0.0.1:1 --tls-dir "$TMP/badtls" ping

# ---- --log-format json --------------------------------------------------
start_daemon j --accel soft --log-format json
expect_rc 0 "create a VM under a JSON-logging daemon" \
	ctl vm create j1 --mem 64M --pattern idle
# More guest RAM than the host has: created (sparse), with a warning.
big=$(awk '/^MemTotal/ { print int($2 / 1048576) * 2 + 2 }' /proc/meminfo)G
run_cli "$CTL" --socket "$SOCK" vm create big --mem "$big" --pattern idle
[ "$RC" = 0 ] && echo "$ERR" | grep -q "warning: --mem .* more than this host's RAM" &&
	ok "--mem $big on a smaller host: created, with a warning: $ERR" ||
	fail "--mem $big: rc=$RC $ERR"
ctl vm destroy big >/dev/null 2>&1
refused "--mem 15M: the option and the user's units" 2 \
	"--mem 15.0 MiB.*multiple of 2 MiB" ctl vm create j2 --mem 15M
# --json anywhere: a result as JSON wherever it stands.
for args in "--json vm list" "vm --json list" "vm list --json"; do
	run_cli "$CTL" --socket "$SOCK" $args
	[ "$RC" = 0 ] && echo "$OUT" | jq -e '.vms[0].name == "j1"' >/dev/null 2>&1 &&
		ok "migratectl $args: JSON" || fail "migratectl $args: rc=$RC $OUT $ERR"
done
expect_rc 0 "destroy it" ctl vm destroy j1
kill -TERM "$DPID"
wait "$DPID" 2>/dev/null
lines=$(grep -c . "$TMP/j.log")
if jq -e . "$TMP/j.log" >/dev/null 2>&1 &&
	[ "$(jq -c . "$TMP/j.log" | grep -c '^{')" = "$lines" ]; then
	ok "every one of the $lines log lines is a JSON object"
else
	fail "a log line is not JSON: $(grep -v '^{' "$TMP/j.log" | head -3)"
fi
jq -c 'select(.event == "vm_created" and .vm == "j1" and
	.pattern == "idle" and .level == "info" and (.ts | length) > 0)' \
	"$TMP/j.log" | grep -q . &&
	ok "vm_created as JSON names the VM and its pattern" ||
	fail "no vm_created object: $(grep vm_created "$TMP/j.log")"
jq -c 'select(.comp == "vm" and .op == "create" and .vm == "j1")' \
	"$TMP/j.log" | grep -q . &&
	ok "the worker logs JSON too, naming the VM" ||
	fail "no worker op=create line: $(grep -m2 create "$TMP/j.log")"
# ---- migrate-send on a terminal: the bar, Ctrl-C, --detach --------------
# Two daemons; the tool runs on a pseudo-terminal (pty_run.py) of 80 and
# 40 columns, as a user's. The bar redraws one line that fits the width
# (a redraw that wraps would scroll the terminal), never reads 100% before
# the end, and shows a rate during the first pass. The first Ctrl-C
# cancels the migration and says so; --detach returns at once and says
# how to follow and cancel.
start_daemon src --dev-tls --tls-dir "$TMP/tls" --accel soft \
	--migration-io-timeout-ms 4000
SRC=$SOCK
start_daemon dst --dev-tls --tls-dir "$TMP/tls" --accel soft
DST=$SOCK
PTY=(python3 "$SRCDIR/tests/integration/pty_run.py")
state_of() {
	local s
	s=$("$CTL" --socket "$1" --json vm inspect "$2" 2>/dev/null |
		jq -r '.info.state // empty')
	echo "${s:-absent}"
}
# wait_state SOCK VM STATE: up to 20 s.
wait_state() {
	local sock=$1 name=$2 state=$3
	wait_until '[ "$(state_of "$sock" "$name")" = "$state" ]' 20
}
# guest NAME: 64 MiB writing 1000 random pages/s (4 MiB/s): converges
# behind 16 MiB/s in a few seconds, not behind 2 MiB/s.
guest() {
	SOCK=$SRC ctl vm create "$1" --mem 64M --vcpus 1 --pattern random \
		--rate 1000 --content random >/dev/null || fail "create $1"
}
recv_port() {
	"$RECV" --socket "$DST" --name "$1" 127.0.0.1:0 ||
		fail "migrate-recv for $1"
}
# bar_fits COLS FILE: what the tool drew before its report (the first
# line feed) is redraws ('\r') that each fit COLS-1 columns; none but
# the completed one says 100%; some shows a rate that is not 0 (at 80
# columns, during the first pass).
bar_fits() {
	python3 - "$1" "$2" <<-'PY'
	import re, sys
	cols, data = int(sys.argv[1]), open(sys.argv[2], "rb").read().decode()
	bar = data.split("\n")[0]
	draws = [re.sub(r"\x1b\[K", "", d) for d in bar.split("\r") if d.strip()]
	bad = [d for d in draws if len(d) > cols - 1]
	full = [d for d in draws if "100%" in d and not d.startswith("completed")]
	rate = [d for d in draws if re.search(r"[1-9][0-9.]* [KMG]iB/s", d)]
	if cols >= 80:  # the pass is shown: a rate during the first one
	    rate = [d for d in rate if re.search(r"\bp(ass )?0\b", d)]
	print(f"{len(draws)} redraws, widest {max(map(len, draws), default=0)}"
	      f", {len(rate)} with a rate: {draws[-1] if draws else ''}")
	if not draws or bad or full or not rate:
	    print("too wide:", bad[:2], "at 100%:", full[:2])
	    sys.exit(1)
	PY
}
if [ "$(SOCK=$SRC ctl --json ping | jq -r .engine)" = true ]; then
	for cols in 80 40; do
		# Prefilled: the first pass sends 64 MiB behind 16 MiB/s
		# (about 4 s of redraws); a fresh guest's few written MiB
		# went in one redraw on a quiet machine.
		SOCK=$SRC ctl vm create "bar$cols" --mem 64M --vcpus 1 \
			--pattern random --rate 1000 --content random --prefill \
			>/dev/null || fail "create bar$cols"
		for _ in $(seq 200); do
			SOCK=$SRC ctl vm inspect "bar$cols" | grep -q '^prefill: *done' && break
			sleep 0.1
		done
		port=$(recv_port "bar$cols")
		"${PTY[@]}" "$cols" "$TMP/bar$cols.tty" -- "$SEND" --socket "$SRC" \
			--bandwidth 16M --interval 100 "bar$cols" "127.0.0.1:$port"
		rc=$?
		[ "$rc" = 0 ] && ok "migrate-send on a $cols-column pty: rc 0" ||
			fail "migrate-send on a $cols-column pty: rc $rc: $(tail -c 600 "$TMP/bar$cols.tty")"
		out=$(bar_fits "$cols" "$TMP/bar$cols.tty") &&
			ok "bar at $cols columns: $out" ||
			fail "bar at $cols columns: $out"
	done
	# The destination shows the workload the VM runs: the parameters
	# came in guest memory (and a set-rate updates what inspect shows).
	wl=$(SOCK=$DST ctl vm inspect bar80 | grep '^workload:')
	[[ $wl == "workload:  random, random content, 1000 pages/s per vCPU,"* ]] &&
		ok "inspect on the destination: $wl" ||
		fail "inspect on the destination: $wl"
	SOCK=$DST ctl vm set-rate bar80 700 >/dev/null
	wl=$(SOCK=$DST ctl vm inspect bar80 | grep '^workload:')
	[[ $wl == *" 700 pages/s per vCPU,"* ]] && ok "inspect after set-rate: $wl" ||
		fail "inspect after set-rate: $wl"

	guest intr
	port=$(recv_port intr)
	"${PTY[@]}" 80 "$TMP/intr.tty" --intr-on '\] +[1-9][0-9]?%' -- \
		"$SEND" --socket "$SRC" --bandwidth 2M --interval 100 intr \
		"127.0.0.1:$port"
	rc=$?
	tr '\r' '\n' <"$TMP/intr.tty" | grep -q "interrupted: cancelling migration.*stays on the source" &&
		ok "Ctrl-C: migrate-send says it cancels" ||
		fail "Ctrl-C: no cancel message: $(tail -c 600 "$TMP/intr.tty")"
	[ "$rc" = 1 ] && grep -q "cancelled" "$TMP/intr.tty" &&
		ok "Ctrl-C: exit 1 once the migration is cancelled" ||
		fail "Ctrl-C: rc $rc: $(tail -c 600 "$TMP/intr.tty")"
	[ "$(state_of "$SRC" intr)" = VM_STATE_RUNNING ] &&
		ok "Ctrl-C: the VM runs on the source" ||
		fail "Ctrl-C: intr on the source: $(state_of "$SRC" intr)"
	wait_state "$DST" intr absent && ok "Ctrl-C: nothing left on the destination" ||
		fail "Ctrl-C: intr on the destination: $(state_of "$DST" intr)"
	# SIGTERM (timeout(1)): the cancel asked for, exit at once.
	port=$(recv_port intr)
	run_cli timeout --preserve-status 3 "$SEND" --socket "$SRC" \
		--bandwidth 2M intr "127.0.0.1:$port"
	[ "$RC" = 143 ] && echo "$ERR" | tr '\n' ' ' |
		grep -q "cancelling migration.*terminated: no longer following" &&
		ok "SIGTERM: cancel asked, exit 143" || fail "SIGTERM: rc=$RC $ERR"
	wait_state "$SRC" intr VM_STATE_RUNNING && ok "SIGTERM: intr runs on the source" ||
		fail "SIGTERM: intr is $(state_of "$SRC" intr) on the source"

	guest det
	sleep 1.5 # a second of the monitor's measurement before it migrates
	port=$(recv_port det)
	start=$(date +%s)
	run_cli timeout 20 "$SEND" --socket "$SRC" --bandwidth 2M --detach det \
		"127.0.0.1:$port"
	id=$(echo "$OUT" | sed -nE 's/^migration ([0-9]+) of det started.*/\1/p')
	if [ "$RC" = 0 ] && [ -n "$id" ] && [ $(($(date +%s) - start)) -lt 10 ] &&
		echo "$OUT" | grep -q "migratectl migration watch $id" &&
		echo "$OUT" | grep -q "migratectl migration cancel $id"; then
		ok "--detach returns at once, saying how to follow and cancel"
	else
		fail "--detach: rc=$RC out=$OUT err=$ERR"
	fi
	phase=$(SOCK=$SRC ctl --json migration status "$id" | jq -r '.. | .phase? // empty' | head -1)
	case "$phase" in
	*SETUP | *ITERATE) ok "--detach: migration $id runs on ($phase)" ;;
	*) fail "--detach: migration $id is $phase" ;;
	esac
	# The first pass (32 s at 2 MiB/s) has measured no dirty rate of its
	# own yet: the VM's rate is the monitor's last, not 0.
	dr=$(SOCK=$SRC ctl --json dirty det)
	echo "$dr" | jq -e '.bytesPerS // .bytes_per_s | tonumber > 1048576' >/dev/null 2>&1 &&
		ok "dirty rate in the first pass: $(echo "$dr" | jq -c "{source, bytes_per_s}")" ||
		fail "dirty rate in the first pass: $dr"
	# Paused and resumed while it migrates: said as such, not "migrating".
	run_cli "$CTL" --socket "$SRC" vm pause det
	[ "$OUT" = "det: paused; it migrates on and arrives paused" ] &&
		ok "vm pause during a migration: $OUT" || fail "vm pause: $RC $OUT $ERR"
	run_cli "$CTL" --socket "$SRC" vm resume det
	[ "$OUT" = "det: resumed; it migrates on and arrives running" ] &&
		ok "vm resume during a migration: $OUT" || fail "vm resume: $RC $OUT $ERR"
	SOCK=$SRC expect_rc 0 "--detach: cancel it as told" \
		ctl migration cancel "$id"
	wait_state "$DST" det absent &&
		[ "$(state_of "$SRC" det)" = VM_STATE_RUNNING ] &&
		ok "--detach: cancelled, det runs on the source" ||
		fail "--detach: det is $(state_of "$SRC" det) on the source"
	# Failure reasons say what happened and what to do next.
	# reason DESC PATTERN ARGS...: migrate det with ARGS, fails (rc 1)
	# with a report whose reason matches PATTERN.
	reason() {
		local desc=$1 pat=$2
		shift 2
		run_cli "$SEND" --socket "$SRC" "$@"
		local r
		r=$(echo "$OUT" | sed -n 's/^ *reason: *//p')
		[ "$RC" = 1 ] && echo "$r" | grep -qE -- "$pat" &&
			ok "$desc: $r" || fail "$desc: rc=$RC reason '$r' $ERR"
	}
	wait_state "$SRC" det VM_STATE_RUNNING
	reason "unresolvable host" "unknown host.*getent hosts" \
		det nosuchhost.invalid:4000
	python3 -c 'import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 0)); s.listen(8); print(s.getsockname()[1], flush=True); time.sleep(60)' >"$TMP/mute.port" &
	mute=$!
	for _ in $(seq 50); do [ -s "$TMP/mute.port" ] && break; sleep 0.1; done
	reason "a port that is not a migration listener" \
		"not a migration endpoint" det "127.0.0.1:$(cat "$TMP/mute.port")"
	kill "$mute" 2>/dev/null
	port=$(recv_port det)
	reason "the time limit in the first pass names the next step" \
		"could not converge within 1500 ms.*runs on the source.*--timeout-ms" \
		--timeout-ms 1500 --bandwidth 2M det "127.0.0.1:$port"
	# The cancels above ended TLS connections without a close_notify:
	# not errors of the destination.
	n=$(grep -c "level=err.*unexpected eof" "$TMP/dst.log")
	[ "$n" = 0 ] && ok "no TLS error logged on the destination for a cancel" ||
		fail "$n TLS errors logged for cancels: $(grep -m2 "unexpected eof" "$TMP/dst.log")"
	# An armed receive says how to list and disarm it (on a terminal);
	# disarmed, its worker goes.
	nworkers() { pgrep -fc -- "migrated-vmm .*--state-dir $TMP/dst " || true; }
	w0=$(nworkers)
	"${PTY[@]}" 80 "$TMP/arm.tty" -- "$RECV" --socket "$DST" --name arm1 127.0.0.1:0
	[ "$(nworkers)" -gt "$w0" ] || fail "armed, but no worker more than $w0"
	id=$(tr -d '\r' <"$TMP/arm.tty" | sed -nE 's/.*migration ([0-9]+) armed on .*/\1/p')
	if [ -n "$id" ] && grep -q "migratectl migration cancel $id" "$TMP/arm.tty"; then
		ok "migrate-recv says how to list and disarm migration $id"
	else
		fail "migrate-recv on a terminal: $(cat "$TMP/arm.tty")"
	fi
	ph=$(SOCK=$DST ctl --json migration list | jq -r --argjson id "${id:-0}" \
		'.migrations[] | select(.id == $id) | .progress.phase')
	[ "$ph" = MIG_PHASE_SETUP ] && ok "migration list shows it armed ($ph)" ||
		fail "armed migration $id in the list: '$ph'"
	SOCK=$DST expect_rc 0 "disarm it: migration cancel $id" ctl migration cancel "$id"
	wait_until '[ "$(nworkers)" -le "$w0" ]' 10
	[ "$(nworkers)" -le "$w0" ] && ok "disarmed: its worker is gone ($(nworkers) left)" ||
		fail "disarmed, but $(nworkers) workers (was $w0)"
	arm_timeout_check
	eta_check
fi
finish
