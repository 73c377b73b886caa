#!/usr/bin/env bash
# Install what the build needs (Debian packages only), configure and build.
#
#   tools/setup.sh [release|asan|tsan|fuzz|deps] [cmake --build args...]
#
# deps: install the packages and stop (tools/package.sh).
#
# Idempotent: packages already installed are not touched, an existing build
# tree is reused. Builds into build/<variant>. The fuzz variant is clang
# with ASan+UBSan and libFuzzer (docs/fuzzing.md); it builds only the fuzz
# targets (target hv_fuzz) unless other build args are given.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
variant=${1:-release}
shift || true

# Build and test dependencies. Each is a Debian 12 package.
pkgs=(
	build-essential cmake pkg-config
	libuv1-dev libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev
	libzstd-dev
	libssl-dev libcunit1-dev libcurl4-openssl-dev libjson-c-dev
	etcd-server etcd-client
	openssl iproute2 python3 python3-protobuf protobuf-compiler
	qemu-system-x86 librsvg2-bin jq curl bc
	prometheus python3-prometheus-client
	dpkg-dev groff-base man-db clang-format
)
# libFuzzer comes with clang's runtime libraries; llvm-14 has llvm-cov
# for tools/fuzz_cov.sh.
[ "$variant" = fuzz ] && pkgs+=(clang libclang-rt-14-dev llvm-14)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: missing packages and not root; run as root or" \
			"install: ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# tools/package.sh: the packages only, no build here.
[ "$variant" = deps ] && exit 0

case "$variant" in
release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
asan) flags=(-DCMAKE_BUILD_TYPE=Debug -DHV_SANITIZE=address) ;;
tsan) flags=(-DCMAKE_BUILD_TYPE=Debug -DHV_SANITIZE=thread) ;;
fuzz)
	# -O1: fast enough to fuzz, still readable stack traces.
	flags=(-DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug
		"-DCMAKE_C_FLAGS_DEBUG=-O1 -g" -DHV_SANITIZE=address
		-DHV_FUZZ=ON)
	[ $# -gt 0 ] || set -- --target hv_fuzz
	;;
*) echo "setup: unknown variant '$variant' (release, asan, tsan, fuzz)" >&2
	exit 2 ;;
esac

bdir="$top/build/$variant"
if [ ! -f "$bdir/CMakeCache.txt" ]; then
	cmake -S "$top" -B "$bdir" "${flags[@]}" >/dev/null
fi
cmake --build "$bdir" -j"$(nproc)" "$@"
