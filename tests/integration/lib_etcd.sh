# A 3-member etcd cluster on loopback for the fleet tests (sourced after
# lib.sh, bash). Each member has its own data dir under $TMP/etcd; its
# pid goes into PIDS, so lib.sh's cleanup stops it with the daemons.
#
#   etcd_need           exit 77 (skip, visibly) without etcd installed
#   etcd_start [N]      start N members (3), wait until healthy; sets
#                       ETCD_ENDPOINTS (comma-separated client URLs)
#   etcd_stop I / etcd_kill I / etcd_restart I   member I (1..N)
#   etcd_wait_healthy   every running member answers /health
#   ectl ARGS...        etcdctl against the cluster
#   etcd_get KEY        the value of KEY ("" when none)
#   etcd_history PREFIX every write under PREFIX (JSON, a line each)
#   etcd_owner_is VM OWNER GEN  vms/VM (under $P, default /migrated/)
#                       names OWNER at generation GEN
#   wait_for SECONDS DESC CMD...  poll CMD until it succeeds: ok/fail DESC
#
# ETCD_TLS=DIR (set before etcd_start): the members serve clients over
# TLS with DIR/host.pem and DIR/host.key and want a client certificate
# issued by DIR/ca.pem (mkca in lib.sh makes such a DIR); ETCD_ENDPOINTS
# are https URLs then, and ectl and the health checks present
# DIR/client.pem. Peers stay plain http.

ETCD=${ETCD:-etcd}
ETCDCTL=${ETCDCTL:-etcdctl}
ETCD_N=0
ETCD_PID=()
ETCD_CPORT=()
ETCD_PPORT=()
ETCD_ENDPOINTS=
ETCD_TLS=${ETCD_TLS:-}

etcd_need() {
	if ! command -v "$ETCD" >/dev/null || ! command -v "$ETCDCTL" >/dev/null
	then
		echo "SKIP etcd/etcdctl not installed (tools/setup.sh installs" \
			"etcd-server etcd-client)"
		exit 77
	fi
}

# A loopback port nobody listens on (other helpers and tests run at the
# same time, so no fixed ports).
etcd_free_port() {
	local p
	while :; do
		# Below the kernel's ephemeral range (32768 and up by
		# default), where every outgoing connection and every
		# listener bound to port 0 takes its port: a port picked there
		# could be taken before etcd binds it ("address already in
		# use" seen in CI). Any socket on it, not only a listener.
		p=$((20000 + RANDOM % 12000))
		ss -Htan "sport = :$p" 2>/dev/null | grep -q . && continue
		case " ${ETCD_CPORT[*]} ${ETCD_PPORT[*]} " in
		*" $p "*) continue ;;
		esac
		echo "$p"
		return
	done
}

# The client URL scheme, and what a client presents (curl's options).
etcd_scheme() { [ -n "$ETCD_TLS" ] && echo https || echo http; }
etcd_curl_tls() {
	[ -n "$ETCD_TLS" ] && echo "--cacert $ETCD_TLS/ca.pem" \
		"--cert $ETCD_TLS/client.pem --key $ETCD_TLS/client.key"
}

etcd_member_start() {
	local i=$1 cluster=$2 tls=() s
	s=$(etcd_scheme)
	[ -n "$ETCD_TLS" ] && tls=(--cert-file "$ETCD_TLS/host.pem"
		--key-file "$ETCD_TLS/host.key" --client-cert-auth
		--trusted-ca-file "$ETCD_TLS/ca.pem")
	"$ETCD" --name "m$i" --data-dir "$TMP/etcd/m$i" \
		--listen-client-urls "$s://127.0.0.1:${ETCD_CPORT[$i]}" \
		--advertise-client-urls "$s://127.0.0.1:${ETCD_CPORT[$i]}" "${tls[@]}" \
		--listen-peer-urls "http://127.0.0.1:${ETCD_PPORT[$i]}" \
		--initial-advertise-peer-urls \
		"http://127.0.0.1:${ETCD_PPORT[$i]}" \
		--initial-cluster "$cluster" --initial-cluster-state new \
		--initial-cluster-token "migd-it-$$" \
		--heartbeat-interval 100 --election-timeout 1000 \
		--logger zap --log-level warn \
		>>"$TMP/etcd-m$i.out" 2>&1 &
	ETCD_PID[$i]=$!
	PIDS+=("$!")
}

etcd_start() {
	local n=${1:-3} i cluster=
	mkdir -p "$TMP/etcd"
	ETCD_N=$n
	for i in $(seq "$n"); do
		ETCD_CPORT[$i]=$(etcd_free_port)
		ETCD_PPORT[$i]=$(etcd_free_port)
		cluster+="${cluster:+,}m$i=http://127.0.0.1:${ETCD_PPORT[$i]}"
	done
	ETCD_CLUSTER=$cluster
	ETCD_ENDPOINTS=
	for i in $(seq "$n"); do
		ETCD_ENDPOINTS+="${ETCD_ENDPOINTS:+,}$(etcd_scheme)://127.0.0.1:${ETCD_CPORT[$i]}"
		etcd_member_start "$i" "$cluster"
	done
	etcd_wait_healthy && etcd_wait_gateway || {
		echo "etcd cluster did not become healthy:"
		tail -n 20 "$TMP"/etcd-m*.out
		exit 1
	}
}

# Up to 30 s: every member's JSON gateway answers a read. /health does
# not go through it, and its first request (over TLS: the gateway's own
# connection to the member) can outlast a daemon's 2 s timeout on a
# loaded machine.
etcd_wait_gateway() {
	local i up
	for _ in $(seq 150); do
		up=0
		for i in $(seq "$ETCD_N"); do
			# shellcheck disable=SC2046
			curl -s -m 2 $(etcd_curl_tls) -X POST -d '{"key":"AA=="}' \
				"$(etcd_scheme)://127.0.0.1:${ETCD_CPORT[$i]}/v3/kv/range" |
				grep -q '"header"' && up=$((up + 1))
		done
		[ "$up" -eq "$ETCD_N" ] && return 0
		sleep 0.2
	done
	return 1
}

# Up to 30 s: three members electing a leader on two loaded cores.
etcd_wait_healthy() {
	local i up
	for _ in $(seq 300); do
		up=0
		for i in $(seq "$ETCD_N"); do
			kill -0 "${ETCD_PID[$i]}" 2>/dev/null || { up=$((up + 1)); continue; }
			# shellcheck disable=SC2046
			curl -s -m 1 $(etcd_curl_tls) \
				"$(etcd_scheme)://127.0.0.1:${ETCD_CPORT[$i]}/health" |
				grep -q '"health":"true"' && up=$((up + 1))
		done
		[ "$up" -eq "$ETCD_N" ] && return 0
		sleep 0.1
	done
	return 1
}

etcd_stop() { kill -TERM "${ETCD_PID[$1]}" 2>/dev/null; wait "${ETCD_PID[$1]}" 2>/dev/null; }
etcd_kill() { kill -KILL "${ETCD_PID[$1]}" 2>/dev/null; wait "${ETCD_PID[$1]}" 2>/dev/null; }
# The member rejoins with its data dir (the cluster flags are ignored
# then).
etcd_restart() { etcd_member_start "$1" "$ETCD_CLUSTER"; }

# ECTL_ENDPOINTS (default all) lets a test leave out a stopped member.
ectl() {
	local tls=()
	[ -n "$ETCD_TLS" ] && tls=(--cacert "$ETCD_TLS/ca.pem"
		--cert "$ETCD_TLS/client.pem" --key "$ETCD_TLS/client.key")
	# shellcheck disable=SC2086
	ETCDCTL_API=3 ${ECTL_TIMEOUT:+timeout $ECTL_TIMEOUT} "$ETCDCTL" \
		--endpoints "${ECTL_ENDPOINTS:-$ETCD_ENDPOINTS}" \
		"${tls[@]}" --dial-timeout 2s --command-timeout 5s "$@"
}
etcd_get() { ectl get --print-value-only "$1"; }
# jq -e (1.6) succeeds on empty input: a missing key must fail by itself.
etcd_owner_is() {
	local v
	v=$(etcd_get "${P:-/migrated/}vms/$1") && [ -n "$v" ] &&
		jq -e ".owner == \"$2\" and .generation == $3" <<<"$v" >/dev/null
}
# Every write under PREFIX since revision 1 (nothing compacts in the
# tests), one JSON watch response per line: a watch replays them, then
# waits; 5 s is plenty for the replay.
etcd_history() { ECTL_TIMEOUT=5 ectl watch --prefix "$1" --rev 1 -w json; }

# wait_for SECONDS DESC CMD...: poll CMD (0.1 s) until it succeeds; ok or
# fail DESC (lib.sh), and 0 or 1.
wait_for() {
	local s=$1 desc=$2 wf_cmd
	shift 2
	printf -v wf_cmd '%q ' "$@"
	wait_until "$wf_cmd" "$s" && { ok "$desc"; return 0; }
	fail "$desc (not within $s s)"
	return 1
}
