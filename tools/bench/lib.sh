# Shared helpers of the benchmark scripts in tools/bench (sourced, not run).
#
#   bench_init NAME      TMP (a fresh /tmp/NAME.XXXXXX), PIDS, and an EXIT
#                        trap that stops every started process and removes
#                        TMP; a script with its own cleanup calls
#                        bench_cleanup from it.
#   bench_start_daemon NAME [PREFIX...]
#                        one migrated daemon with state in TMP/NAME and its
#                        log in TMP/NAME.log, run under PREFIX (env
#                        assignments as `env A=B`, or `ip netns exec NS`);
#                        sets DPID. Uses MIGRATED, ACCEL (default soft) and
#                        DAEMON_ARGS (extra options, an array, may be unset).
#                        Start daemons one after the other: the first one
#                        makes the development CA in TMP/tls.
#   median               the median of the numbers on stdin, one per line
#   cpu_ticks PID        utime + stime of PID in clock ticks ("" when gone)

bench_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
	[ -n "${TMP:-}" ] && rm -rf "$TMP"
}

bench_init() { # name
	TMP=$(mktemp -d "/tmp/$1.XXXXXX")
	PIDS=()
	trap bench_cleanup EXIT
}

bench_start_daemon() { # name, prefix... -> DPID
	local name=$1
	shift
	"$@" "$MIGRATED" --state-dir "$TMP/$name" --dev-tls \
		--tls-dir "$TMP/tls" --accel "${ACCEL:-soft}" --log-level info \
		--stop-vms ${DAEMON_ARGS+"${DAEMON_ARGS[@]}"} \
		>"$TMP/$name.log" 2>&1 &
	DPID=$!
	PIDS+=("$DPID")
	for _ in $(seq 200); do
		[ -S "$TMP/$name/control.sock" ] && return 0
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.05
	done
	echo "${ME:-$(basename "$0")}: daemon $name did not start" >&2
	cat "$TMP/$name.log" >&2
	exit 1
}

median() {
	sort -n | awk '{ a[NR] = $1 } END {
		if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

cpu_ticks() { # pid
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || true
}
