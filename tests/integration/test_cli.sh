#!/usr/bin/env bash
# The command-line tools explain themselves: every tool answers --version
# and --help on stdout with exit 0; every migratectl and hvbench
# subcommand answers COMMAND --help the same way; every long option of
# migrated, migrate-send and migrate-recv is in its --help; bad input is
# refused with exit 2 and a message that names the option and what it
# accepts (sizes with binary suffixes, ranges; a sign is refused, not
# wrapped); --json turns client-side errors into one JSON line on stdout;
# a TLS file that does not load is named with the reason. One daemon
# runs, with --log-format json: every line it and its worker log is one
# JSON object.
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

# ---- bad input -----------------------------------------------------------
SIZE_RE="KiB.*MiB.*GiB"
refused "--mem 12XB names the suffixes" 2 "--mem '12XB'.*$SIZE_RE" \
	"$CTL" --socket "$NOSOCK" vm create x --mem 12XB
refused "--mem -1 refused" 2 "--mem '-1'" \
	"$CTL" --socket "$NOSOCK" vm create x --mem -1
refused "--vcpus -1 refused, not wrapped" 2 "--vcpus '-1'.*1\.\.1024" \
	"$CTL" --socket "$NOSOCK" vm create x --vcpus -1
refused "--vcpus 0 names the range" 2 "--vcpus '0'.*1\.\.1024" \
	"$CTL" --socket "$NOSOCK" vm create x --vcpus 0
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
refused "dirtyrate --interval 5" 2 "--interval '5'.*50\.\.60000" \
	"$DR" --socket "$NOSOCK" --interval 5 vm1
refused "migrated --dirty-interval-ms 5" 2 "dirty-interval-ms.*20\.\.1000" \
	"$MIGRATED" --state-dir "$TMP/never" --dirty-interval-ms 5

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
finish
