#!/usr/bin/env bash
# Source-based line and branch coverage of each fuzz target's decoder,
# reached by the corpus of the last tools/fuzz.sh run (build/fuzz/run/
# <target>/corpus), or by the kept corpus (tests/fuzz/corpus) when there
# is none. Builds the targets once more with clang's coverage mapping into
# build/fuzzcov, replays every corpus input (-runs=0) and prints
# llvm-cov's report for the decoder's own sources (docs/fuzzing.md).
#
#   tools/fuzz_cov.sh [TARGET...]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
all=(frame batch hello layout vmstate ctl_frame metrics_http)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
# Per target: its decoder's sources, and the decoding functions in them
# (static ones as llvm-cov names them, without their "file.c:" prefix).
declare -A srcs=(
	[frame]="migrated/mig/frame.c"
	[batch]="migrated/mig/batch.c migrated/mig/compress_raw.c migrated/mig/compress_zstd.c"
	[hello]="migrated/mig/handshake.c migrated/mig/conn.c"
	[layout]="migrated/mig/layout.c"
	[vmstate]="hvcore/vm.c hvcore/soft/soft_accel.c hvcore/soft/soft_accel_vcpu.c arch/x86/x86_state.c"
	[ctl_frame]="migrated/rpc/ctl_frame.c"
	[metrics_http]="migrated/rpc/http_head.c"
)
declare -A funcs=(
	[frame]="type_get mig_frame_hdr_decode mig_frame_unpack mig_frame_decode"
	[batch]="mig_batch_check mig_batch_decode runs_add mig_page_is_zero raw_decompress zstd_decompress"
	[hello]="mig_hello_recv hello_check mig_version_negotiate mig_conn_recv mig_conn_read"
	[layout]="mig_layout_to_cfg mig_vm_name_valid accel_by_name"
	[vmstate]="hv_vm_state_restore state_digest soft_vm_state_restore hv_soft_accel_vcpu_restore x86_vm_state_restore x86_vcpu_state_restore check_vcpu_msg"
	[ctl_frame]="migd_frame_get_len migd_framer_feed migd_framer_next migd_framer_pending"
	[metrics_http]="migd_http_head_parse starts_with"
)

"$top/tools/setup.sh" fuzz >/dev/null # packages, and build/fuzz's seeds
b="$top/build/fuzzcov"
if [ ! -f "$b/CMakeCache.txt" ]; then
	cmake -S "$top" -B "$b" -DCMAKE_C_COMPILER=clang \
		-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" \
		"-DCMAKE_C_FLAGS=-fprofile-instr-generate -fcoverage-mapping" \
		"-DCMAKE_EXE_LINKER_FLAGS=-fprofile-instr-generate" \
		-DHV_SANITIZE=address -DHV_FUZZ=ON >/dev/null
fi
cmake --build "$b" -j"$(nproc)" --target hv_fuzz >/dev/null
out="$b/profiles"
rm -rf "$out"
mkdir -p "$out"
for t in "${targets[@]}"; do
	corpus="$top/build/fuzz/run/$t/corpus"
	[ -d "$corpus" ] || corpus="$top/tests/fuzz/corpus/$t"
	LLVM_PROFILE_FILE="$out/$t.profraw" \
		"$b/tests/fuzz/fuzz_$t" -runs=0 "$corpus" >"$out/$t.log" 2>&1 ||
		{ echo "fuzz_cov: $t failed on its corpus ($out/$t.log)" >&2; exit 1; }
	llvm-profdata-14 merge -sparse "$out/$t.profraw" -o "$out/$t.profdata"
	files=()
	for s in ${srcs[$t]}; do files+=("$top/$s"); done
	echo "== $t: $(ls "$corpus" | wc -l) corpus inputs from ${corpus#$top/}"
	llvm-cov-14 report -show-functions "$b/tests/fuzz/fuzz_$t" \
		-instr-profile="$out/$t.profdata" "${files[@]}" |
		awk -v want="${funcs[$t]}" '
		BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) keep[w[i]] = 1 }
		{ name = $1; sub(/^.*:/, "", name) }
		name in keep && NF == 10 {
			printf "  %-28s lines %4d/%-4d branches %3d/%d\n",
				name, $5 - $6, $5, $8 - $9, $8
			found[name] = 1
		}
		END { for (f in keep) if (!(f in found))
			printf "  %-28s (inlined or not built)\n", f }'
done
