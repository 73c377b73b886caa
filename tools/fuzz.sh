#!/usr/bin/env bash
# Run every libFuzzer target of tests/fuzz (docs/fuzzing.md) for SECONDS
# each (default 20), one after the other, one process each (-jobs=1): the
# machine is shared. Builds build/fuzz first (tools/setup.sh fuzz).
#
#   tools/fuzz.sh [SECONDS] [TARGET...]   e.g. tools/fuzz.sh 600 hello batch
#
# Each target runs on a copy of its corpus -- the seeds the generator
# writes now from real messages plus tests/fuzz/corpus/<target>/ (earlier
# seeds and the regression inputs) -- in build/fuzz/run/<target>/; a crash,
# leak, timeout or out-of-memory leaves its input in .../artifacts/ and
# fails the run. Prints one line per target: seconds it ran, executions,
# coverage (edges and features; after the slash, the edges instrumented in
# the binary), corpus size, result. Exit status 1 when any target failed.
#
# FUZZ_COV=1 adds a line per target: the edges covered by the final
# corpus in the decoder's own source files, over the edges of the
# functions of those files the corpus reached (libFuzzer -print_coverage).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-20}
shift || true
all=(frame batch hello layout vmstate ctl_frame metrics_http etcd_json
	virtqueue devstate)
# The decoder sources of each target, for FUZZ_COV (path prefixes).
declare -A srcs=(
	[frame]="migrated/mig/frame.c"
	[batch]="migrated/mig/batch.c migrated/mig/compress_"
	[hello]="migrated/mig/handshake.c migrated/mig/conn.c"
	[layout]="migrated/mig/layout.c"
	[vmstate]="hvcore/vm.c hvcore/soft/soft_accel arch/x86/x86_state.c"
	[ctl_frame]="migrated/rpc/ctl_frame.c"
	[metrics_http]="migrated/rpc/http_head.c"
	[etcd_json]="migrated/fleet/etcd_json.c"
	[virtqueue]="hvcore/devices/virtqueue.c"
	[devstate]="hvcore/kvm/kvm_devstate.c"
)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
case "$secs" in
'' | *[!0-9]*) echo "fuzz: SECONDS must be a number, not '$secs'" >&2; exit 2 ;;
esac

"$top/tools/setup.sh" fuzz >/dev/null
bin="$top/build/fuzz/tests/fuzz"
run="$top/build/fuzz/run"
rm -rf "$run/seeds"
mkdir -p "$run"
"$bin/fuzz_seedgen" "$run/seeds" >/dev/null

rc=0
for t in "${targets[@]}"; do
	if [ ! -x "$bin/fuzz_$t" ]; then
		echo "fuzz: no target '$t' (${all[*]})" >&2
		rc=1
		continue
	fi
	d="$run/$t"
	rm -rf "$d"
	mkdir -p "$d/corpus" "$d/artifacts"
	[ -d "$run/seeds/$t" ] && cp "$run/seeds/$t"/* "$d/corpus/"
	[ -d "$top/tests/fuzz/corpus/$t" ] &&
		cp "$top/tests/fuzz/corpus/$t"/* "$d/corpus/"
	# -timeout: one input may take 10 s (a hung decoder is a failure);
	# the corpus directory grows with what the run finds.
	set +e
	t0=$SECONDS
	(cd "$d" && "$bin/fuzz_$t" -max_total_time="$secs" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$d/artifacts/" corpus >"$d/log" 2>&1)
	st=$?
	el=$((SECONDS - t0))
	set -e
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$d/log")
	last=$(grep -E '^#[0-9]+' "$d/log" | tail -1 || true)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
	edges=$(sed -n 's/.*Loaded 1 modules *(\([0-9]*\) inline.*/\1/p' \
		"$d/log" | head -1)
	found=$(ls "$d/artifacts" | wc -l)
	if [ "$st" -eq 0 ] && [ "$found" -eq 0 ] && [ -n "$execs" ]; then
		res=ok
	else
		res="FAIL (exit $st, $found artifacts; see $d/log)"
		rc=1
	fi
	printf 'fuzz: %-12s %4ss execs=%-9s cov=%s/%s ft=%s corpus=%s %s\n' \
		"$t" "$el" "${execs:-?}" "${cov:-?}" "${edges:-?}" \
		"${ft:-?}" "${corp:-?}" "$res"
	if [ "${FUZZ_COV:-0}" = 1 ]; then
		(cd "$d" && "$bin/fuzz_$t" -runs=0 -print_coverage=1 corpus \
			>"$d/cov.log" 2>&1) || true
		for src in ${srcs[$t]}; do
			grep "^COVERED_FUNC: .* $top/$src" "$d/cov.log" || true
		done | awk -v t="$t" -v s="${srcs[$t]}" '
			{ split($5, e, "/"); c += e[1]; n += e[2]; f++ }
			END { printf "fuzz: %-12s src-cov=%d/%d edges in %d " \
				"functions reached of %s\n", t, c, n, f, s }'
	fi
	if [ "$res" != ok ]; then
		grep -E 'ERROR|SUMMARY|check failed|runtime error' "$d/log" |
			head -5 | sed 's/^/fuzz:   /' || true
	fi
done
exit $rc
