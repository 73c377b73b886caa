#!/usr/bin/env bash
# Do the daemon and its workers stay inside the unit's SystemCallFilter?
# (@system-service minus @privileged; tools/systemd/migrated.service.in)
#
#   tools/systemd/syscall-audit.sh BUILD_DIR
#
# Runs two daemons of BUILD_DIR under strace -f (workers included), on the
# soft accelerator: a VM with memfd backing, its local live update (fd
# passing to a new worker), a migration to the other daemon over TLS, a
# page-stamp check, destroy. Then lists every system call made and which
# of them the unit's filter would refuse. Exit 1 if any would be.
# systemd's own view of the groups comes from systemd-analyze.
set -euo pipefail
B=$(cd "$1" && pwd)
T=$(mktemp -d /tmp/migd-sysaudit.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM $(pgrep -P "$p") "$p" 2>/dev/null || true; done;
      sleep 1; rm -rf "$T"' EXIT

# expand GROUP...: the system calls of the groups, nested groups expanded.
expand() {
	local g
	for g in "$@"; do
		systemd-analyze syscall-filter "$g" | sed -n '2,$p' |
			sed -E 's/^ +//; /^#/d; /^$/d' | while read -r s; do
			if [[ $s == @* ]]; then expand "$s"; else echo "$s"; fi
		done
	done
}
expand @system-service | sort -u >"$T/allowed"
expand @privileged | sort -u >"$T/privileged"
comm -23 "$T/allowed" "$T/privileged" >"$T/filter"

M=$B/migrated/daemon/migrated
CTL=$B/tools/migratectl/migratectl
for n in a b; do
	strace -f -qq -c -o "$T/$n.strace" "$M" --state-dir "$T/$n" \
		--tls-dir "$T/tls" --dev-tls --accel soft --backing memfd \
		--log-level warn >"$T/$n.log" 2>&1 &
	pids+=($!)
done
for n in a b; do
	for _ in $(seq 200); do [ -S "$T/$n/control.sock" ] && break; sleep 0.05; done
done
A="$CTL --socket $T/a/control.sock"
Bc="$CTL --socket $T/b/control.sock"
$A vm create v1 --mem 64M --rate 3000 >/dev/null
sleep 0.5
$A vm update v1 >/dev/null
port=$("$B/tools/migrate-recv/migrate-recv" --socket "$T/b/control.sock" 127.0.0.1:0)
"$B/tools/migrate-send/migrate-send" --socket "$T/a/control.sock" v1 \
	"127.0.0.1:$port" >"$T/send.log"
$Bc vm check v1
$Bc vm destroy v1 >/dev/null
# SIGTERM to the daemons (strace's children), not to strace, which would
# detach and leave them running; strace writes its summary when they end.
for p in "${pids[@]}"; do kill -TERM $(pgrep -P "$p") 2>/dev/null || true; done
wait "${pids[@]}" 2>/dev/null || true
pids=()

cat "$T"/a.strace "$T"/b.strace |
	awk '$NF ~ /^[a-z_0-9]+$/ && $1 ~ /^[0-9.]+$/ { print $NF }' |
	grep -v '^total$' | sort -u >"$T/used"
echo "system calls made by the daemons and their workers: $(wc -l <"$T/used")"
tr '\n' ' ' <"$T/used"
echo
bad=$(comm -23 "$T/used" "$T/filter" | tr '\n' ' ')
if [ -n "$bad" ]; then
	echo "REFUSED by SystemCallFilter=@system-service ~@privileged: $bad"
	exit 1
fi
echo "every one is allowed by SystemCallFilter=@system-service ~@privileged"
