#!/usr/bin/env bash
# Dirty-rate monitor end to end: a VM whose workload changes its rate
# halfway (migratectl vm set-rate), watched by `dirtyrate --plot`: the SVG
# must show both levels; `migratectl dirty` and `estimate` answer; the
# Prometheus endpoint is scraped and every line parsed.
# Usage: test_dirtyrate.sh MIGRATED MIGRATECTL DIRTYRATE
DR=$3
source "$(dirname "$0")/lib.sh" "$1" "$2"
PY=/usr/bin/python3

start_daemon a --metrics-listen 127.0.0.1:0 --dirty-interval-ms 100
MPORT=$(sed -n 's/.*comp=migd.metrics event=listening addr=[^:]*:\([0-9]*\).*/\1/p' "$TMP/a.log" | head -1)
[ -n "$MPORT" ] && ok "metrics port $MPORT" || fail "no metrics port in log"

accel=soft
have_kvm && accel=kvm
# 2 vCPUs x 2500 pages/s = 19.5 MiB/s, then x 10000 = 78 MiB/s.
expect_rc 0 "create VM" ctl vm create w --mem 512M --vcpus 2 \
	--accel $accel --rate 2500
"$DR" --socket "$SOCK" w --interval 250 --duration 9 \
	--plot "$TMP/w.svg" >"$TMP/dr.out" 2>&1 &
DRPID=$!
sleep 4.5
expect_rc 0 "set-rate halfway" ctl vm set-rate w 10000
# 3 s: the 1 s working set is the last *completed* second of the page
# history and the daemon's copy of a sample can be an event period (1 s)
# old, so only 2 s after the change is that second wholly at the new rate
# (after 1.5 s it could still be the old rate's: 9867 pages vs 19858
# pages/s, seen once).
sleep 3
expect_rc 0 "migratectl dirty" ctl --json dirty w
echo "$LAST_OUT" | jq -e '.source == "monitor" and (.windows | length) == 3' \
	>/dev/null && ok "dirty: monitor with 3 windows" ||
	fail "dirty: $LAST_OUT"
expect_rc 0 "estimate" ctl --json estimate w --bandwidth 1G --downtime 300
echo "$LAST_OUT" | jq -e '.converges == true' >/dev/null &&
	ok "estimate: converges at 1 GiB/s" || fail "estimate: $LAST_OUT"
expect_rc 0 "estimate at a link slower than the guest" \
	ctl --json estimate w --bandwidth 8M --downtime 50 --throttle 10
echo "$LAST_OUT" | jq -e '.converges == false' >/dev/null &&
	ok "estimate: 8 MiB/s with 10% throttle does not converge" ||
	fail "estimate (slow link): $LAST_OUT"
expect_rc 2 "set-rate on a bad vCPU" ctl vm set-rate w 100 --vcpu 9

# Scrape while it runs: every line a sample, a # HELP or a # TYPE.
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics.txt" &&
	ok "scraped /metrics" || fail "scrape failed"
"$PY" - "$TMP/metrics.txt" <<'PYEOF' && ok "metrics parse" || fail "metrics parse"
import re, sys
name = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
lab = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
sample = re.compile(r'^(%s)(\{%s(?:,%s)*\})? (-?[0-9.e+\-]+|NaN|[+-]Inf)$' % (name, lab, lab))
typed, seen_fams, cur = {}, set(), None
need = {"migd_vms", "migd_vm_dirty_pages_per_second",
        "migd_vcpu_dirty_pages_per_second", "migd_vm_working_set_pages",
        "migd_rpc_requests_total", "migd_migration_errors_total",
        "migd_workers", "migd_vm_worker_info", "migd_vm_crashes_total",
        "migd_workers_adopted_total", "migd_workers_spawned_total"}
lines = open(sys.argv[1]).read().splitlines()
for i, l in enumerate(lines, 1):
    if l.startswith("# HELP "):
        continue
    if l.startswith("# TYPE "):
        _, _, n, t = l.split(" ", 3)
        assert t in ("gauge", "counter", "histogram"), l
        assert n not in typed, "family typed twice: " + n
        typed[n] = t
        cur = n
        continue
    m = sample.match(l)
    assert m, "line %d not a sample: %r" % (i, l)
    fam = m.group(1)
    if typed.get(cur) == "histogram":
        fam = re.sub(r'_(bucket|sum|count)$', '', fam)
    assert fam == cur, "line %d: %s outside its family" % (i, m.group(1))
    seen_fams.add(fam)
    float(m.group(3))
missing = need - seen_fams
assert not missing, missing
vals = [l for l in lines if l.startswith('migd_vm_dirty_pages_per_second{vm="w",window="1s"')]
assert vals and float(vals[0].rsplit(" ", 1)[1]) > 0, vals
print("  %d lines, %d families" % (len(lines), len(typed)))
PYEOF
# The values: the VM's dirty rates come from its worker (the daemon runs
# no VM), per window and per vCPU, and the worker is the one vm list names.
expect_rc 0 "vm list" ctl --json vm list
WPID=$(echo "$LAST_OUT" | jq -r '.vms[] | select(.name == "w") | .worker_pid')
WID=$(echo "$LAST_OUT" | jq -r '.vms[] | select(.name == "w") | .worker_id')
"$PY" - "$TMP/metrics.txt" "$WPID" "$WID" <<'PYEOF' && ok "metrics values" || fail "metrics values"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
pid, wid = sys.argv[2], sys.argv[3]
def series(name):
    out = {}
    for l in lines:
        m = re.match(r'^%s(\{(.*)\})? (\S+)$' % re.escape(name), l)
        if m:
            labs = dict(re.findall(r'([a-z_]+)="([^"]*)"', m.group(2) or ""))
            out[tuple(sorted(labs.items()))] = float(m.group(3))
    return out
def get(name, **labs):
    return series(name).get(tuple(sorted(labs.items())))
assert get("migd_workers") == 1, series("migd_workers")
assert get("migd_workers_spawned_total") == 1
assert get("migd_workers_adopted_total") == 0
assert get("migd_vm_crashes_total") == 0
assert get("migd_vms", state="running") == 1, series("migd_vms")
assert get("migd_vm_worker_info", vm="w", pid=pid, worker=wid) == 1, \
    (pid, wid, series("migd_vm_worker_info"))
# 2 vCPUs at 2500 pages/s, 10000 since set-rate 3 s before the scrape.
for win in ("1s", "10s", "60s"):
    pg = get("migd_vm_dirty_pages_per_second", vm="w", window=win,
             source="monitor")
    by = get("migd_vm_dirty_bytes_per_second", vm="w", window=win,
             source="monitor")
    ws = get("migd_vm_working_set_pages", vm="w", window=win)
    assert pg is not None and by is not None and ws is not None, win
    assert 2500 <= pg <= 30000, (win, pg)
    assert abs(by - pg * 4096) <= 0.1 * 4096 + 1, (win, pg, by)
    assert ws >= pg * 0.5, (win, ws, pg)
    vc = [v for k, v in series("migd_vcpu_dirty_pages_per_second").items()
          if ("vm", "w") in k and ("window", win) in k]
    assert len(vc) == 2 and all(v > 0 for v in vc), (win, vc)
    assert abs(sum(vc) - pg) <= 0.1 * pg + 1, (win, vc, pg)
pg1 = get("migd_vm_dirty_pages_per_second", vm="w", window="1s",
          source="monitor")
pg60 = get("migd_vm_dirty_pages_per_second", vm="w", window="60s",
           source="monitor")
# The 1 s window saw the faster rate; the 60 s one mostly the slower.
assert pg1 > 1.3 * pg60, (pg1, pg60)
print("  worker pid %s, 1s %.0f pages/s, 60s %.0f pages/s" % (pid, pg1, pg60))
PYEOF
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/nope")
[ "$code" = 404 ] && ok "other paths: 404" || fail "other path gave $code"

wait $DRPID
[ -s "$TMP/w.svg" ] && ok "dirtyrate wrote the SVG" || fail "no SVG: $(cat "$TMP/dr.out")"
# Both levels visible: the measured line's late points are about 4x
# the early ones (first and last quarters, skipping the 1 s window's
# transition).
"$PY" - "$TMP/w.svg" <<'PYEOF' && ok "SVG shows both rates" || fail "SVG levels"
import re, sys
svg = open(sys.argv[1]).read()
assert svg.startswith("<?xml") and svg.rstrip().endswith("</svg>")
lines = re.findall(r"<polyline fill='none' stroke='#1f77b4' stroke-width='2' points='([^']*)'", svg)
pts = [tuple(map(float, p.split(","))) for p in lines[0].split()]
ys = [y for _, y in pts]
n = len(ys)
early = sorted(ys[n // 8: 3 * n // 8])[len(ys[n // 8: 3 * n // 8]) // 2]
late = sorted(ys[6 * n // 8:])[len(ys[6 * n // 8:]) // 2]
# y grows downwards: the late (faster) rate sits higher (smaller y).
# Plot area bottom is the axis baseline: compare heights above it.
base = max(float(v) for v in re.findall(r"<rect x='80.0' y='60.0' width='[0-9.]*' height='([0-9.]*)'", svg)) + 60.0
ratio = (base - late) / (base - early)
print("  %d points, early %.1f px, late %.1f px above the axis: x%.2f" % (n, base - early, base - late, ratio))
assert 1.8 < ratio < 6, ratio
PYEOF
if command -v rsvg-convert >/dev/null; then
	rsvg-convert -o "$TMP/w.png" "$TMP/w.svg" && ok "rsvg-convert renders it" ||
		fail "rsvg-convert failed"
	[ -n "${DIRTYRATE_PNG:-}" ] && cp "$TMP/w.png" "$DIRTYRATE_PNG"
fi
[ -n "${DIRTYRATE_SVG:-}" ] && cp "$TMP/w.svg" "$DIRTYRATE_SVG"

# A pace above what a vCPU can do is warned: a flat-out VM is measured
# (its write ceiling) within a few seconds; set-rate far above it warns,
# a pace below it does not.
expect_rc 0 "create a flat-out VM" ctl vm create f --mem 64M --accel $accel
ceil=0
for _ in $(seq 100); do
	ceil=$(ctl --json vm inspect f | jq '[.vcpus[].writeCeiling // .vcpus[].write_ceiling // 0 | tonumber] | min')
	[ "${ceil:-0}" -gt 0 ] && break
	sleep 0.2
done
[ "${ceil:-0}" -gt 0 ] && ok "flat-out vCPU measured at $ceil writes/s" ||
	fail "no write ceiling measured: $(ctl vm inspect f)"
expect_rc 0 "set-rate far above the ceiling" ctl vm set-rate f 100000000
echo "$LAST_OUT" | grep -q "warning: vCPU 0: 100000000 page writes/s asked, but it reached" &&
	ok "set-rate above the ceiling warns" || fail "no warning: $LAST_OUT"
expect_rc 0 "inspect a VM paced above its ceiling" ctl vm inspect f
echo "$LAST_OUT" | grep -q "note: vCPU 0 reached .* flat out, below its pace" &&
	ok "inspect notes the unreachable pace" || fail "inspect: $LAST_OUT"
expect_rc 0 "set-rate below the ceiling" ctl vm set-rate f 10
echo "$LAST_OUT" | grep -q "warning" && fail "warned at 10/s: $LAST_OUT" ||
	ok "set-rate below the ceiling: no warning"
wr=$(ctl --json vm inspect w | jq '[.vcpus[].writeRate // .vcpus[].write_rate // 0 | tonumber] | min')
[ "${wr:-0}" -gt 0 ] && ok "paced vCPU writes/s measured: $wr" ||
	fail "no write rate for w"
finish
