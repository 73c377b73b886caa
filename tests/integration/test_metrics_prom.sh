#!/usr/bin/env bash
# The metrics endpoint read by real Prometheus tooling (Debian packages
# prometheus and python3-prometheus-client): `promtool check metrics`
# finds nothing to say, prometheus_client's parser reads every family the
# exposition declares, HEAD answers the GET's headers without a body, and
# a Prometheus server started here (loopback, scrape every 1 s, its own
# storage) returns both daemons' series through its query API while a
# migration runs and the lifetime totals after it.
# Usage: test_metrics_prom.sh MIGRATED MIGRATECTL SEND RECV
source "$(dirname "$0")/lib.sh" "$@"
PY=/usr/bin/python3
[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
for t in promtool prometheus curl; do
	command -v $t >/dev/null || { echo "SKIP: no $t (tools/setup.sh)"; exit 77; }
done
"$PY" -c 'import prometheus_client' 2>/dev/null ||
	{ echo "SKIP: no python3-prometheus-client"; exit 77; }

metrics_port() {
	sed -n 's/.*comp=migd.metrics event=listening addr=[^:]*:\([0-9]*\).*/\1/p' \
		"$TMP/$1.log" | head -1
}
start_daemon dst --accel soft --metrics-listen 127.0.0.1:0
DST=$SOCK
DPORT=$(metrics_port dst)
start_daemon src --accel soft --metrics-listen 127.0.0.1:0
SRC=$SOCK
SPORT=$(metrics_port src)
[ -n "$SPORT" ] && [ -n "$DPORT" ] && ok "metrics ports $SPORT $DPORT" ||
	fail "no metrics port in the logs"

# check_exposition FILE DESC: promtool silent, every family parsed.
check_exposition() {
	local out
	if out=$(promtool check metrics <"$1" 2>&1) && [ -z "$out" ]; then
		ok "$2: promtool check metrics prints nothing"
	else
		fail "$2: promtool check metrics: $out"
	fi
	"$PY" - "$1" <<'PYEOF' && ok "$2: prometheus_client reads every family" ||
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
declared = {l.split()[2]: l.split()[3] for l in text.splitlines()
            if l.startswith("# TYPE ")}
fams = {}
for f in text_string_to_metric_families(text):
    # The client strips _total from a counter's family name.
    fams[f.name + ("_total" if f.type == "counter" else "")] = f
missing = set(declared) - set(fams)
assert not missing, "families the parser did not read: %s" % missing
for n, t in declared.items():
    assert fams[n].type == t, (n, t, fams[n].type)
hist = fams["migd_migration_duration_seconds"]
assert {s.name for s in hist.samples} >= {
    "migd_migration_duration_seconds_bucket",
    "migd_migration_duration_seconds_sum",
    "migd_migration_duration_seconds_count"}, hist.samples
print("  %d families" % len(fams))
PYEOF
		fail "$2: prometheus_client"
}

curl -sf "http://127.0.0.1:$SPORT/metrics" >"$TMP/idle.txt" &&
	ok "scraped the idle source" || fail "scrape failed"
check_exposition "$TMP/idle.txt" "idle"
# HEAD: the GET's headers, Content-Length included, no body.
curl -sf -I "http://127.0.0.1:$SPORT/metrics" -o "$TMP/head.txt" &&
	grep -qi '^content-length: [1-9]' "$TMP/head.txt" &&
	ok "HEAD /metrics: 200 with a Content-Length" ||
	fail "HEAD: $(cat "$TMP/head.txt")"
len=$(curl -s -X HEAD -m 3 "http://127.0.0.1:$SPORT/metrics" 2>/dev/null | wc -c)
[ "$len" = 0 ] && ok "HEAD has no body" || fail "HEAD sent $len body bytes"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST \
	"http://127.0.0.1:$SPORT/metrics")
[ "$code" = 405 ] && ok "POST: 405" || fail "POST: $code"

# A Prometheus server of our own: loopback, a free port, tmp storage.
PPORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: migd
    static_configs:
      - targets: ['127.0.0.1:$SPORT']
        labels: {host: src}
      - targets: ['127.0.0.1:$DPORT']
        labels: {host: dst}
EOF
prometheus --config.file="$TMP/prometheus.yml" \
	--storage.tsdb.path="$TMP/prom-data" \
	--web.listen-address="127.0.0.1:$PPORT" >"$TMP/prometheus.out" 2>&1 &
PIDS+=($!)
PROM=http://127.0.0.1:$PPORT
for _ in $(seq 100); do
	curl -sf "$PROM/-/ready" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -sf "$PROM/-/ready" >/dev/null && ok "prometheus ready on $PPORT" ||
	{ fail "prometheus did not start: $(tail -5 "$TMP/prometheus.out")"; finish; }

# query EXPR: the number of series of an instant query.
query() {
	curl -sf "$PROM/api/v1/query" --data-urlencode "query=$1" |
		jq -r 'if .status == "success" then (.data.result | length)
		       else -1 end'
}
# wait_query EXPR SECONDS: until it has a series.
wait_query() {
	local expr=$1 n
	wait_until 'n=$(query "$expr"); [ "${n:-0}" -gt 0 ]' "$2"
}
wait_query 'migd_up{host="src"} == 1 and on() migd_up{host="dst"} == 1' 15 &&
	ok "prometheus scrapes both daemons" ||
	fail "no migd_up from both: $(curl -s "$PROM/api/v1/targets" | head -c 600)"

# A migration slow enough to be seen: 64 MiB of incompressible pages
# (every one written before it starts) at 8 MiB/s, some 8 s.
SOCK=$SRC expect_rc 0 "create p1" ctl vm create p1 --mem 64M --vcpus 2 \
	--accel soft --content random --prefill --rate 100 --heartbeat-us 2000
port=$("$RECV" --socket "$DST" --name p1 --insecure 127.0.0.1:0) ||
	fail "migrate-recv: $port"
"$SEND" --socket "$SRC" --insecure --bandwidth 8MiB/s --compress off p1 \
	"127.0.0.1:$port" >"$TMP/send.out" 2>&1 &
SENDPID=$!
wait_query 'migd_migration_phase{host="src",vm="p1",direction="outgoing",phase="iterate"} == 1' 20 &&
	ok "query API: the source's migration phase during the migration" ||
	fail "no outgoing phase series for p1"
wait_query 'migd_migration_progress_ratio{host="src",vm="p1"} > 0 and migd_migration_progress_ratio{host="src",vm="p1"} < 1' 10 &&
	ok "query API: progress between 0 and 1" || fail "no progress series"
wait_query 'migd_migration_phase{host="dst",direction="incoming",phase="iterate"} == 1' 10 &&
	ok "query API: the destination's incoming migration" ||
	fail "no incoming phase series"
curl -sf "http://127.0.0.1:$SPORT/metrics" >"$TMP/busy.txt"
check_exposition "$TMP/busy.txt" "during a migration"
wait "$SENDPID"
rc=$?
[ "$rc" = 0 ] && ok "migration completed" ||
	fail "migrate-send rc $rc: $(tail -5 "$TMP/send.out")"
wait_query 'migd_migrations_total{host="src",direction="outgoing",result="completed"} == 1' 10 &&
	ok "query API: migd_migrations_total outgoing completed 1" ||
	fail "no outgoing completed count"
wait_query 'migd_migration_duration_seconds_count{host="dst",direction="incoming"} == 1' 10 &&
	ok "query API: the incoming duration histogram counted it" ||
	fail "no incoming duration count"
wait_query 'migd_migration_downtime_seconds_count{host="src",direction="outgoing"} == 1' 10 &&
	ok "query API: the outgoing downtime histogram counted it" ||
	fail "no outgoing downtime count"
# Settled: the migration's series are gone from the exposition.
curl -sf "http://127.0.0.1:$SPORT/metrics" >"$TMP/after.txt"
grep -q '^migd_migration_phase{' "$TMP/after.txt" &&
	fail "a settled migration still has phase series" ||
	ok "a settled migration leaves the in-flight families"
check_exposition "$TMP/after.txt" "after a migration"

# A failed migration: the source's subscribers hear FAILED before the
# VM's state change back to running; the human lines carry timestamps.
SOCK=$SRC expect_rc 0 "create p2" ctl vm create p2 --mem 64M --pattern idle
SOCK=$SRC "$CTL" --socket "$SRC" events --kind vm --kind phase \
	>"$TMP/events.txt" 2>&1 &
EVPID=$!
SOCK=$SRC "$CTL" --socket "$SRC" --json events --kind vm --kind phase \
	>"$TMP/events.json" 2>&1 &
EVJPID=$!
sleep 1
expect_rc 1 "migrate p2 to a closed port fails" \
	"$SEND" --socket "$SRC" --insecure p2 127.0.0.1:1
sleep 1
kill "$EVPID" "$EVJPID" 2>/dev/null
wait "$EVPID" "$EVJPID" 2>/dev/null
order=$(jq -r 'if .migration then "mig:" + .migration.migration.progress.phase
	elif .vm_state then "vm:" + .vm_state.vm.state else empty end' \
	"$TMP/events.json" | grep -E 'MIG_PHASE_FAILED|vm:VM_STATE_RUNNING' |
	uniq | tr '\n' ' ')
case "$order" in
"mig:MIG_PHASE_FAILED vm:VM_STATE_RUNNING ")
	ok "FAILED arrives before the VM runs again ($order)" ;;
*) fail "event order: '$order'" ;;
esac
grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z vm p2: migrating -> running$' \
	"$TMP/events.txt" && ok "human events carry timestamps" ||
	fail "events: $(cat "$TMP/events.txt")"

# The logs of both daemons and their workers: VMs by name, never an
# address; the workload by name; the migration's effective settings.
if grep -hE '(^| )vm=(0x[0-9a-f]+|\(nil\))' "$TMP"/*.log; then
	fail "a log line names a VM by address"
else
	ok "no log line names a VM by address"
fi
grep -q 'event=vm_created vm=p1 .*pattern=sweep content=random' "$TMP/src.log" &&
	ok "vm_created names the workload" ||
	fail "vm_created: $(grep event=vm_created "$TMP/src.log")"
grep -q 'event=migration_started .*vm=p1 .*channels=2 .*downtime_ms=300' \
	"$TMP/src.log" && ok "migration_started logs the effective channels and downtime" ||
	fail "migration_started: $(grep event=migration_started "$TMP/src.log")"
finish
