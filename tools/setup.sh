#!/usr/bin/env bash
# Install what the build needs (Debian packages only), configure and build.
#
#   tools/setup.sh [release|asan|tsan] [cmake --build args...]
#
# Idempotent: packages already installed are not touched, an existing build
# tree is reused. Builds into build/<variant>.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
variant=${1:-release}
shift || true

# Build and test dependencies. Each is a Debian 12 package.
pkgs=(
	build-essential cmake pkg-config
	libuv1-dev libprotobuf-c-dev protobuf-c-compiler libzstd-dev
	libssl-dev libcunit1-dev
	openssl iproute2 python3 python3-protobuf protobuf-compiler
	qemu-system-x86 librsvg2-bin jq curl bc
)

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

case "$variant" in
release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
asan) flags=(-DCMAKE_BUILD_TYPE=Debug -DHV_SANITIZE=address) ;;
tsan) flags=(-DCMAKE_BUILD_TYPE=Debug -DHV_SANITIZE=thread) ;;
*) echo "setup: unknown variant '$variant' (release, asan, tsan)" >&2; exit 2 ;;
esac

bdir="$top/build/$variant"
if [ ! -f "$bdir/CMakeCache.txt" ]; then
	cmake -S "$top" -B "$bdir" "${flags[@]}" >/dev/null
fi
cmake --build "$bdir" -j"$(nproc)" "$@"
