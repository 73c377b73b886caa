#!/usr/bin/env bash
# What a vCPU that paces itself or idles costs the host, before vs after
# the halt (docs/benchmarks.md, "vCPU waits: sleep instead of spin").
#
#   tools/bench/vcpu-wait.sh [BASE_REF] [ROUNDS] [SECONDS]
#
# Part 1: one soft vCPU at idle, 12800 and 51200 pages/s (50 and
# 200 MiB/s): share of one CPU and achieved rate, for this tree and for
# BASE_REF (default main, exported read-only with git archive into /tmp
# and built there), alternating A/B ROUNDS times (default 3), medians.
# Part 2: the guest image under plain QEMU with TCG: QEMU's CPU while the
# guest's self-test halts on the LAPIC timer vs while it spins as long.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
source "$top/tools/bench/lib.sh"
base_ref=${1:-main}
rounds=${2:-3}
secs=${3:-2}
work=${VCPU_WAIT_DIR:-/tmp/vcpu-wait-bench}
mkdir -p "$work"

# Build the hvcore libraries of a source tree and link the bench program
# (tools/bench/vcpu_wait_cpu.c of THIS tree: it uses the public API only).
build() { # src bld out
	local src=$1 bld=$2 out=$3
	[ -f "$bld/CMakeCache.txt" ] ||
		cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build "$bld" -j2 --target hvcore_vm hvcore_soft hvcore_kvm \
		hv_arch_x86 hv_arch_x86_ept hv_arch_arm64 hv_proto >/dev/null
	gcc -O2 -I"$src" -I"$bld" -I"$bld/proto" -o "$out" \
		"$top/tools/bench/vcpu_wait_cpu.c" \
		-Wl,--start-group $(find "$bld/" -name '*.a') -Wl,--end-group \
		$(pkg-config --libs libuv libzstd libprotobuf-c openssl) -lpthread
}

base_src=$work/base-src
if [ ! -d "$base_src" ]; then
	mkdir -p "$base_src"
	git -C "$top" archive "$base_ref" | tar -x -C "$base_src"
fi
build "$base_src" "$work/base-build" "$work/vwc-base"
build "$top" "$top/build/release" "$work/vwc-new"


echo "## one soft vCPU: $rounds rounds of ${secs}s, A/B alternating, medians"
echo
echo "| workload | $base_ref: rate | $base_ref: CPU | new: rate | new: CPU |"
echo "|---|---|---|---|---|"
for w in idle 12800 51200; do
	: >"$work/base.$w"
	: >"$work/new.$w"
	for r in $(seq "$rounds"); do
		for v in base new; do
			"$work/vwc-$v" "$w" "$secs" 2>/dev/null >>"$work/$v.$w"
		done
	done
	row="| $w"
	[ "$w" = idle ] || row="| $w pages/s"
	for v in base new; do
		rate=$(sed 's/.*rate=\([0-9.]*\).*/\1/' "$work/$v.$w" | median)
		cpu=$(sed 's/.*cpu=\([0-9.]*\).*/\1/' "$work/$v.$w" | median)
		row="$row | $rate | $cpu%"
	done
	echo "$row |"
done

echo
echo "## guest image under QEMU TCG: QEMU's CPU, guest halting vs spinning"
echo
python3 - "$top/build/release/arch/x86/guest/guest.elf" "$rounds" <<'PY'
import os, subprocess, sys, time
elf, rounds = sys.argv[1], int(sys.argv[2])
hz = os.sysconf("SC_CLK_TCK")
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / hz
halts, spins = [], []
for _ in range(rounds):
    p = subprocess.Popen(["qemu-system-x86_64", "-M",
        "microvm,x-option-roms=off,rtc=off", "-accel", "tcg", "-cpu",
        "qemu64", "-m", "256M", "-kernel", elf, "-nographic",
        "-no-reboot", "-monitor", "none", "-serial", "stdio", "-device",
        "isa-debug-exit,iobase=0xf4,iosize=4"], stdout=subprocess.PIPE,
        text=True)
    marks = {}
    for line in p.stdout:
        for m in ("halt-begin", "halt-end", "spin-end"):
            if "sync " + m in line:
                marks[m] = (cpu(p.pid), time.monotonic())
    p.wait()
    if len(marks) == 3:
        (c0, t0), (c1, t1), (c2, t2) = (marks[m] for m in
            ("halt-begin", "halt-end", "spin-end"))
        halts.append(100 * (c1 - c0) / (t1 - t0))
        spins.append(100 * (c2 - c1) / (t2 - t1))
med = lambda a: sorted(a)[len(a) // 2] if a else float("nan")
print("| guest waits by | QEMU CPU (median of %d) |" % len(halts))
print("|---|---|")
print("| HLT on the LAPIC timer (halt.c) | %.0f%% |" % med(halts))
print("| pause spin | %.0f%% |" % med(spins))
PY
