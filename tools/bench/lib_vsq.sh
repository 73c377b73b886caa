# shellcheck shell=bash disable=SC2034,SC2154
# (globals set here are used by the sourcing script, which sets top, B,
# ME and the cell variables used here.)
# Shell functions shared by the benchmarks that run migrated and QEMU 7.2
# side by side on the same guest image (tools/bench/vs-qemu.sh,
# tools/bench/postcopy-vs-qemu.sh). Sourced, not run. The caller sets
# ME (its name, for messages), top (the repository) and B (the build
# directory) and the cell variables it uses (ACCEL, LINKS, HB_US), then
# calls vsq_init; it may set QEXTRA_DST (an array of extra arguments of
# the destination QEMU) before qemu_boot.
#
# Globals after vsq_init: the tools' paths (MIGRATED CTL SEND RECV HVBENCH
# GUEST PY), QACCEL, TMP (removed at exit unless KEEP is set), HZ,
# TSC_KHZ; link_up sets SRC_IP DST_IP and the netns prefixes NSX_S NSX_D;
# bench_start_daemon (lib.sh) sets DPID; qemu_boot sets QSP and QDP (source's and
# destination's QEMU pids).

# shellcheck source=tools/bench/lib.sh
. "$top/tools/bench/lib.sh"

# ---- setup ---------------------------------------------------------------

# Check the accelerator, the tools and the links, install missing Debian
# packages (as root), make TMP and set the exit trap.
vsq_init() {
	if [ -z "${ACCEL:-}" ]; then
		ACCEL=soft
		[ -r /dev/kvm ] && [ -w /dev/kvm ] && ACCEL=kvm
	fi
	MIGRATED=$B/migrated/daemon/migrated
	CTL=$B/tools/migratectl/migratectl
	SEND=$B/tools/migrate-send/migrate-send
	RECV=$B/tools/migrate-recv/migrate-recv
	HVBENCH=$B/tools/hvbench
	GUEST=$B/arch/x86/guest/guest.elf
	PY="python3 $top/tools/bench/vsqemu.py"
	case $ACCEL in
	kvm) QACCEL=kvm ;;
	soft) QACCEL=tcg ;;
	*) echo "$ME: ACCEL must be kvm or soft" >&2; exit 2 ;;
	esac
	if [ "$ACCEL" = kvm ] && ! [ -w /dev/kvm ]; then
		echo "$ME: ACCEL=kvm needs /dev/kvm (ACCEL=soft runs ours on" \
			"the soft accelerator against QEMU TCG)" >&2
		exit 2
	fi
	local t l need=()
	for t in "$MIGRATED" "$CTL" "$SEND" "$RECV" "$HVBENCH" "$GUEST"; do
		[ -e "$t" ] || { echo "$ME: missing $t (tools/setup.sh" \
			"release first)" >&2; exit 1; }
	done
	command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
	command -v jq >/dev/null || need+=(jq)
	command -v bc >/dev/null || need+=(bc)
	command -v tc >/dev/null || need+=(iproute2)
	command -v python3 >/dev/null || need+=(python3)
	if [ ${#need[@]} -gt 0 ]; then
		[ "$(id -u)" = 0 ] || { echo "$ME: needs ${need[*]} (apt-get" \
			"install as root)" >&2; exit 1; }
		echo "$ME: installing ${need[*]}" >&2
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends "${need[@]}" >/dev/null
	fi
	for l in $LINKS; do
		case $l in
		lo) ;;
		1g|10g) [ "$(id -u)" = 0 ] || { echo "$ME: link $l needs" \
			"root (network namespaces)" >&2; exit 1; } ;;
		*) echo "$ME: unknown link '$l' (lo, 1g, 10g)" >&2; exit 2 ;;
		esac
	done
	TMP=$(mktemp -d "/tmp/$ME.XXXXXX")
	NS_SRC=vsq-src-$$
	NS_DST=vsq-dst-$$
	PIDS=()  # daemons
	QPIDS=() # qemu processes and heartbeat readers of the current run
	QEXTRA_DST=()
	HZ=$(getconf CLK_TCK)
	TSC_KHZ=$("$HVBENCH" tsc-khz)
	trap vsq_cleanup EXIT
	trap 'exit 130' INT TERM
	case " $LINKS " in
	*" 1g "*|*" 10g "*) vsq_tls "$TMP/tls" ;;
	esac
}

# The daemons' --dev-tls host certificate names localhost and 127.0.0.1
# only, so a migration to a veth address would fail its check: make the
# CA and a host certificate that also names the link's addresses first
# (--dev-tls keeps the files it finds and adds its client certificate).
vsq_tls() { # dir
	local d=$1
	mkdir -p "$d"
	chmod 700 "$d"
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-nodes -keyout "$d/ca.key" -out "$d/ca.pem" -days 2 \
		-subj "/O=migrated dev/CN=migrated dev CA" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$d/host.key" -out "$d/host.csr" \
		-subj "/O=migrated dev/CN=localhost" 2>/dev/null
	printf '%s\n' "basicConstraints=critical,CA:FALSE" \
		"keyUsage=critical,digitalSignature" \
		"extendedKeyUsage=serverAuth,clientAuth" \
		"subjectAltName=DNS:localhost,IP:127.0.0.1,IP:10.199.0.1,IP:10.199.0.2" \
		>"$d/host.ext"
	openssl x509 -req -in "$d/host.csr" -CA "$d/ca.pem" \
		-CAkey "$d/ca.key" -CAcreateserial -days 2 \
		-extfile "$d/host.ext" -out "$d/host.pem" 2>/dev/null
	chmod 600 "$d/ca.key" "$d/host.key"
}

# What runs against what, for a table's header; @note follows "no
# /dev/kvm:" on the soft accelerator.
vsq_what() { # note
	local qver
	qver=$(qemu-system-x86_64 --version | head -1 |
		sed 's/.*version \([^ ]*\).*/\1/')
	if [ "$ACCEL" = kvm ]; then
		echo "ours on KVM vs QEMU $qver -accel kvm"
	else
		echo "ours on the SOFT accelerator vs QEMU $qver TCG (no" \
			"/dev/kvm: $1)"
	fi
}

stop_run_procs() {
	local p
	for p in "${QPIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${QPIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	QPIDS=()
}
stop_daemons() {
	# --stop-vms: a daemon's SIGTERM takes its VMs' workers along.
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
}
link_down() {
	ip netns del "$NS_SRC" 2>/dev/null || true
	ip netns del "$NS_DST" 2>/dev/null || true
}
vsq_cleanup() {
	stop_run_procs
	stop_daemons
	link_down
	if [ -n "${KEEP:-}" ]; then
		echo "$ME: logs kept in $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}

# ---- links ---------------------------------------------------------------

# The link's addresses and the command prefix of each side.
link_up() { # lo|1g|10g
	SRC_IP=127.0.0.1 DST_IP=127.0.0.1 NSX_S=() NSX_D=()
	[ "$1" = lo ] && return 0
	local rate=${1%g}gbit burst n
	burst=$(( ${1%g} * 1024 ))kb # ~8 ms at the rate: > a jiffy's worth
	link_down
	ip netns add "$NS_SRC"
	ip netns add "$NS_DST"
	ip link add vsq0 netns "$NS_SRC" type veth peer name vsq1 \
		netns "$NS_DST"
	ip -n "$NS_SRC" addr add 10.199.0.1/24 dev vsq0
	ip -n "$NS_DST" addr add 10.199.0.2/24 dev vsq1
	for n in "$NS_SRC:vsq0" "$NS_DST:vsq1"; do
		ip -n "${n%%:*}" link set lo up
		ip -n "${n%%:*}" link set "${n#*:}" up
		tc -n "${n%%:*}" qdisc add dev "${n#*:}" root tbf rate "$rate" \
			burst "$burst" latency 20ms
	done
	SRC_IP=10.199.0.1 DST_IP=10.199.0.2
	NSX_S=(ip netns exec "$NS_SRC")
	NSX_D=(ip netns exec "$NS_DST")
}

# ---- our side ------------------------------------------------------------

# Wait until @vm's prefill is done (every page of its region written
# once); 1 (and the VM destroyed) if not within 900 s.
ours_wait_prefill() { # socket vm
	local t0
	t0=$(date +%s)
	until "$CTL" --socket "$1" --json vm inspect "$2" |
		jq -e '.prefill_done == true' >/dev/null; do
		if [ $(($(date +%s) - t0)) -gt 900 ]; then
			echo "$ME: $2: prefill not done in 900 s" >&2
			"$CTL" --socket "$1" vm destroy "$2" >/dev/null || true
			return 1
		fi
		sleep 0.2
	done
}

# Our workload flags for a cell's rate (idle|max|MiB/s).
ours_wl() { # rate -> words
	case $1 in
	idle) echo "--pattern idle" ;;
	max) echo "--pattern $PATTERN" ;;
	*) echo "--pattern $PATTERN --rate $(rate_pages "$1")" ;;
	esac
}

# Sample the CPU time of @pid every 20 ms into @file until it exits or
# @stopfile appears: the source's worker exits once its VM left.
cpu_follow() { # pid file stopfile
	local v
	while [ ! -e "$3" ]; do
		v=$(cpu_ticks "$1")
		[ -n "$v" ] || break
		echo "$v" >"$2"
		sleep 0.02
	done
}

secs() { echo "scale=2; ($2 - $1) / $HZ" | bc | sed 's/^\./0./'; }

# pages/s of a cell's rate (0: idle or unthrottled).
rate_pages() { # idle|max|MiB/s
	case $1 in
	idle|max) echo 0 ;;
	*) echo $(($1 * 256)) ;;
	esac
}

# ---- QEMU's side ---------------------------------------------------------

qemu_start() { # tag mem cmdline netns-prefix... -> QPID
	local tag=$1 mem=$2 cmdline=$3 extra=()
	shift 3
	[ -n "${QINCOMING:-}" ] && extra=(-incoming defer "${QEXTRA_DST[@]}")
	"$@" qemu-system-x86_64 -M microvm -accel "$QACCEL" -cpu qemu64 \
		-m "$mem" -smp 1 -kernel "$GUEST" -append "$cmdline" \
		-display none -monitor none -serial "file:$TMP/$tag.serial" \
		-no-reboot -device isa-debug-exit,iobase=0xf4,iosize=4 \
		-chardev "socket,id=hb,path=$TMP/$tag.hb" \
		-device isa-debugcon,iobase=0x402,chardev=hb \
		-qmp "unix:$TMP/$tag.qmp,server=on,wait=off" \
		"${extra[@]}" >"$TMP/$tag.qemu.log" 2>&1 &
	QPID=$!
	QPIDS+=("$QPID")
}

# Start the heartbeat reader and both QEMUs of a run (the destination
# with -incoming defer and QEXTRA_DST) with the cell's workload, and wait
# until the source's prefill is done. QSP, QDP: their pids. 1 (and the
# run's processes stopped) if the guest did not prefill in 900 s.
qemu_boot() { # mem content rate
	local mem=$1 content=$2 rate=$3 cl pat t0
	rm -f "$TMP"/{src,dst}.{hb,qmp,serial} "$TMP/hb.log"
	case $rate in
	idle) pat=idle ;;
	*) pat=$PATTERN ;;
	esac
	cl="hvwl pattern=$pat content=$content rate=$(rate_pages "$rate")"
	cl+=" heartbeat_us=$HB_US prefill=1 tsc_khz=$TSC_KHZ"
	$PY hb "$TMP/hb.log" "$TMP/src.hb" "$TMP/dst.hb" &
	QPIDS+=("$!")
	for _ in $(seq 100); do
		[ -S "$TMP/dst.hb" ] && break
		sleep 0.02
	done
	QINCOMING='' qemu_start src "$mem" "$cl" "${NSX_S[@]}"
	QSP=$QPID
	QINCOMING=1 qemu_start dst "$mem" "$cl" "${NSX_D[@]}"
	QDP=$QPID
	t0=$(date +%s)
	until grep -q '^[0-9]* src prefill done' "$TMP/hb.log" 2>/dev/null; do
		if ! kill -0 "$QSP" 2>/dev/null ||
			[ $(($(date +%s) - t0)) -gt 900 ]; then
			echo "$ME: QEMU guest did not prefill:" \
				"$(cat "$TMP/src.serial" "$TMP/src.qemu.log")" >&2
			stop_run_procs
			return 1
		fi
		sleep 0.2
	done
}

# Quit both QEMUs of a run and stop its processes.
qemu_end() {
	$PY qmp "$TMP/src.qmp" quit >/dev/null 2>&1 || true
	$PY qmp "$TMP/dst.qmp" quit >/dev/null 2>&1 || true
	stop_run_procs
}

# The guest's RAM below 4 GiB and above (microvm), from its COM1 report,
# dumped with pmemsave and checked page by page.
qemu_check() { # qmp serial -> "ok/PAGES" or "BAD/..."
	local args=() a s n=0 out
	while read -r a s; do
		[ "$s" -gt $((1 << 20)) ] || continue
		n=$((n + 1))
		if [ "$a" -lt $((1 << 32)) ]; then
			# Low RAM from 0: the params and status pages too.
			$PY qmp "$1" pmemsave "{\"val\": 0, \"size\": $((a + s)),
				\"filename\": \"$TMP/ram$n.bin\"}" >/dev/null
			args+=("$TMP/ram$n.bin")
		else
			$PY qmp "$1" pmemsave "{\"val\": $a, \"size\": $s,
				\"filename\": \"$TMP/ram$n.bin\"}" >/dev/null
			args+=("$TMP/ram$n.bin@$a")
		fi
	done < <(sed -n 's/^hvguest: ram \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$2")
	if out=$("$HVBENCH" wlcheck "${args[@]}" 2>&1); then
		echo "ok/$(echo "$out" | sed -n 's/.* \([0-9]*\) pages checked.*/\1/p')"
	else
		echo "$out" >>"$TMP/qemu-check-failures"
		echo "BAD/$(echo "$out" | sed -n 's/.*, \([0-9]*\) bad.*/\1/p')"
	fi
	rm -f "$TMP"/ram*.bin
}

# An awk function for tables: med(s), the median of the space-separated
# numbers in s ("-" if none).
VSQ_AWK_MED='
function med(s,   n, a, i, j, x) {
	n = split(s, a, " ")
	if (!n) return "-"
	for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}'
