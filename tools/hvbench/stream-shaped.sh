#!/usr/bin/env bash
# hvbench stream over a shaped link: two network namespaces joined by a
# veth pair, each end shaped with tc tbf to RATE, made here and removed on
# exit (addresses exist only inside the namespaces). Needs root.
#
#   tools/hvbench/stream-shaped.sh [RATE] [hvbench stream args...]
#   tools/hvbench/stream-shaped.sh 1gbit --mib 256 --channels 2 --reps 3
#
# HVBENCH names the binary (default build/release/tools/hvbench).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
rate=${1:-1gbit}
shift || true
hvbench=${HVBENCH:-$top/build/release/tools/hvbench}
a=hvs-src-$$
b=hvs-dst-$$

cleanup() {
	ip netns del "$a" 2>/dev/null || true
	ip netns del "$b" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

ip netns add "$a"
ip netns add "$b"
ip -n "$a" link add veth-s type veth peer name veth-d netns "$b"
ip -n "$a" addr add 10.211.0.1/24 dev veth-s
ip -n "$b" addr add 10.211.0.2/24 dev veth-d
for ns in "$a" "$b"; do
	ip -n "$ns" link set lo up
done
ip -n "$a" link set veth-s up
ip -n "$b" link set veth-d up
# The burst holds a few 64 KiB GSO segments; the latency bounds the queue.
ip netns exec "$a" tc qdisc add dev veth-s root tbf rate "$rate" \
	burst 256kb latency 20ms
ip netns exec "$b" tc qdisc add dev veth-d root tbf rate "$rate" \
	burst 256kb latency 20ms
echo "# link: veth between namespaces, tbf $rate each way"
"$hvbench" stream --netns "$a,$b" --addr 10.211.0.2 "$@"
