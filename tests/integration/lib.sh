# Shared helpers of the integration scripts (sourced, bash).
# Usage: source lib.sh "$@"  with argv = migrated migratectl [send recv]
set -u
MIGRATED=$1
CTL=$2
SEND=${3:-}
RECV=${4:-}
TMP=$(mktemp -d /tmp/migd-it.XXXXXX)
[ -n "${KEEP_TMP:-}" ] && echo "tmp: $TMP"
PIDS=()
FAILS=0

# A sanitizer report in a daemon's log fails the test whatever the checks
# said: the daemons run the ASan+UBSan or TSan build in tools/test.sh.
SAN_RE='WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer|runtime error:'

cleanup() {
	local rc=$?

	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	stop_workers
	if grep -qE "$SAN_RE" "$TMP"/*.log 2>/dev/null; then
		echo "FAIL sanitizer report in a daemon log:"
		grep -hE -A14 "$SAN_RE" "$TMP"/*.log | head -80
		rc=1
	fi
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT

# The worker processes (migrated-vmm, one per VM) of every daemon of this
# test: they outlive their daemon by design. SIGTERM (each destroys its
# VM and exits, so the sanitizers check it), then SIGKILL what is left.
worker_pids() {
	pgrep -f -- "migrated-vmm .*--state-dir $TMP/" 2>/dev/null || true
}
stop_workers() {
	local p
	for p in $(worker_pids); do kill -TERM "$p" 2>/dev/null; done
	wait_until '[ -z "$(worker_pids)" ]' 5 && return 0
	for p in $(worker_pids); do kill -KILL "$p" 2>/dev/null; done
}

# start_daemon NAME [extra args]: state dir $TMP/NAME, log $TMP/NAME.log;
# sets DPID and SOCK.
start_daemon() {
	local name=$1
	shift
	SOCK=$TMP/$name/control.sock
	# A host KVM the tests leave alone (have_kvm): the daemon's default
	# accelerator (auto) would still pick it.
	if ! have_kvm && [ -e /dev/kvm ] && [[ " $* " != *" --accel "* ]]; then
		set -- "$@" --accel soft
	fi
	"$MIGRATED" --state-dir "$TMP/$name" --log-level debug "$@" \
		>"$TMP/$name.log" 2>&1 &
	DPID=$!
	PIDS+=("$DPID")
	# Up to 10 s: ASan builds on two shared cores start slowly.
	for _ in $(seq 200); do
		[ -S "$SOCK" ] && return 0
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.05
	done
	echo "daemon $name did not start (state dir $TMP/$name):"
	cat "$TMP/$name.log" || echo "(no log: was $TMP removed?)"
	exit 1
}

ctl() { "$CTL" --socket "$SOCK" "$@"; }

# wait_until COND TIMEOUT: run the shell command COND (a string, eval'ed:
# quote it as a command line) every 0.1 s until it succeeds, for at most
# TIMEOUT seconds (decimals allowed: 0.5). 0 when it succeeded, 1 when
# the time ran out; COND's output is discarded. The deadline is wall
# time: on a loaded machine COND runs fewer times, not for longer. COND
# sees the caller's variables (a function's locals too, but for the two
# named _wu_*), not its positional parameters: copy those into locals.
# Use it instead of a fixed sleep wherever the awaited state can be asked.
wait_until() {
	local _wu_cond=$1 _wu_end
	_wu_end=$(($(date +%s%N) / 1000000 +
		$(awk -v t="$2" 'BEGIN { printf "%d", t * 1000 }')))
	while :; do
		eval "$_wu_cond" >/dev/null 2>&1 && return 0
		[ $(($(date +%s%N) / 1000000)) -ge "$_wu_end" ] && return 1
		sleep 0.1
	done
}

# free_port: a loopback TCP port that nobody uses now (the kernel picks
# it; it may be taken again before it is bound, as ports 0 would not be).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# seq_sum NAME: the sum of VM NAME's vCPU write counters at the daemon of
# $SOCK (0 when it has none; empty when the call fails).
seq_sum() { ctl --json vm inspect "$1" 2>/dev/null | jq '[.vcpus[].seq] | add // 0'; }

# mkca DIR CN: in DIR, a CA, a host certificate (server and client use: what
# daemons present to each other and to RPC clients) and an RPC client
# certificate, EC P-256, with the openssl CLI.
mkca() {
	local d=$1 cn=$2
	mkdir -p "$d"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$d/ca.key" -out "$d/ca.pem" -days 2 -subj "/CN=$cn" \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null || return 1
	issue "$d" host "localhost" \
		"subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth,clientAuth" || return 1
	issue "$d" client "client-$cn" "extendedKeyUsage=clientAuth"
}
issue() {
	local d=$1 name=$2 cn=$3 ext=$4
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$d/$name.key" -out "$d/$name.csr" -subj "/CN=$cn" \
		2>/dev/null &&
		openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.pem" \
			-CAkey "$d/ca.key" -CAcreateserial -days 2 \
			-out "$d/$name.pem" -extfile <(echo "$ext") 2>/dev/null
}

ok() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	FAILS=$((FAILS + 1))
}

# expect_rc RC DESC CMD...: run CMD, check its exit code.
expect_rc() {
	local want=$1 desc=$2
	shift 2
	local out rc
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ]; then
		ok "$desc (rc=$rc)"
	else
		fail "$desc: rc=$rc, wanted $want: $out"
	fi
	LAST_OUT=$out
	LAST_RC=$rc
}

# assert_verified_zero FILE [DESC]: FILE holds migrate-send's report of a
# completed migration (its plain-text output). After the commit the source
# re-hashes its frozen memory against the hashes of what it sent: the
# report must show that check ("verified: N pages ... : M differ") with
# N > 0 and M = 0. A report without the line fails too: a migration that
# completed without being verified proves nothing about the memory.
assert_verified_zero() {
	local file=$1 desc=${2:-migration} line n bad
	line=$(grep -E '^ *verified: ' "$file" | tail -1)
	n=$(sed -nE 's/^ *verified: +([0-9]+) pages .*/\1/p' <<<"$line")
	bad=$(sed -nE 's/.*: ([0-9]+) differ$/\1/p' <<<"$line")
	if [ -z "$n" ] || [ -z "$bad" ]; then
		fail "$desc: no post-commit verification in the report:" \
			"$(tail -4 "$file")"
		return 1
	fi
	if [ "$n" -gt 0 ] && [ "$bad" = 0 ]; then
		ok "$desc: $n pages verified after commit, 0 differ"
		return 0
	fi
	fail "$desc: $n pages verified after commit, $bad differ"
	return 1
}

# json_get JSON FILTER (jq) -> value
json_get() { echo "$1" | jq -r "$2"; }

# MIGD_TEST_HOST_KVM=0 (tools/test.sh sets it on a host whose /dev/kvm
# boots no stock Linux guest: kvm_pvm) makes the host's tests run as if
# it had none; the rig runs the label kvm.
have_kvm() {
	[ "${MIGD_TEST_HOST_KVM:-1}" != 0 ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]
}

# need_kvm: a test that needs KVM fails without it, it never skips. ctest
# runs the tests labelled "kvm" only where /dev/kvm is, or inside the KVM
# rig (tools/kvmrig/run.sh) on a host without it (tools/test.sh does).
need_kvm() {
	have_kvm && return 0
	echo "FAIL: this test needs /dev/kvm (label kvm: run it where KVM is," \
		"e.g. tools/kvmrig/run.sh -- ctest -L kvm)"
	exit 1
}

# it_accel: the accelerator of a test that runs on either. MIGD_IT_ACCEL
# (kvm or soft) chooses it: ctest gives soft to the plain tests and kvm to
# their "kvm"-labelled twins; unset, KVM where /dev/kvm is.
it_accel() {
	case "${MIGD_IT_ACCEL:-}" in
	kvm) need_kvm; echo kvm ;;
	soft) echo soft ;;
	"") have_kvm && echo kvm || echo soft ;;
	*) echo "FAIL: MIGD_IT_ACCEL=$MIGD_IT_ACCEL (kvm or soft)" >&2; exit 1 ;;
	esac
}

finish() {
	if [ "$FAILS" -ne 0 ]; then
		echo "$FAILS check(s) failed"
		exit 1
	fi
	echo "all checks passed"
	exit 0
}
