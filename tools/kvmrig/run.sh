#!/usr/bin/env bash
# Run a command on a real KVM, on a machine without /dev/kvm: boot Debian's
# own kernel under QEMU TCG with an emulated AMD CPU (SVM + nested paging),
# load kvm-amd there and run the command inside (docs/testing.md).
#
#   tools/kvmrig/run.sh [OPTIONS] -- COMMAND [ARGS...]
#
#   -c, --cpus N        vCPUs of the rig (default: the host's CPUs, at most 4)
#   -m, --mem SIZE      RAM of the rig, QEMU syntax (default 6G; untouched
#                       RAM costs the host nothing)
#   -t, --timeout SECS  whole run, boot included (default 1800); on expiry
#                       the rig is killed and the status is 124
#       --cpu MODEL     QEMU -cpu (default qemu64,+svm,+npt,+pdpe1gb)
#       --tcg-thread single|multi
#                       TCG's vCPU threads (default multi, or
#                       $KVMRIG_TCG_THREAD). The rig's kernel has lost IPIs
#                       and hung under multi now and then; under single a
#                       2-vCPU Linux guest never brings up its second CPU
#                       (docs/testing.md)
#   -v, --verbose       copy the rig's kernel console to stderr
#
# One rig runs at a time on a machine: a second run.sh waits for the first
# (flock on $KVMRIG_LOCK, default /tmp/kvmrig.lock; KVMRIG_LOCK=none runs
# at once). Two nested machines on a small host each run much slower and
# their kernels hang far more often (docs/testing.md).
#
# The host's root filesystem is the rig's, read-only (9p); the repository
# (this script's ../..) is writable at the same absolute path, so the build
# trees under it are too; /tmp, /run, /var/tmp are the rig's own tmpfs. The
# command runs as root in the caller's directory with the caller's
# environment; its stdout and stderr come back here; the exit status is the
# command's. The rig itself failing (no QEMU, no kernel package, kvm-amd
# refusing) exits 125 with a message saying which.
#
# Downloads (apt-get download of the kernel that linux-image-amd64 depends
# on, and busybox-static) and the initramfs built from them are cached in
# $KVMRIG_CACHE (default build/kvmrig), keyed by package version.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd -P)
here=$top/tools/kvmrig
cache=${KVMRIG_CACHE:-$top/build/kvmrig}
ncpu=$(nproc)
cpus=$((ncpu > 4 ? 4 : ncpu))
mem=6G
tmo=1800
cpu_model=qemu64,+svm,+npt,+pdpe1gb
verbose=0
tcg_thread=${KVMRIG_TCG_THREAD:-multi}

die() {
	echo "kvmrig: $*" >&2
	exit 125
}
usage() {
	sed -n '/^#   tools/,/^#   -v/p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	-c | --cpus) cpus=$2; shift 2 ;;
	-m | --mem) mem=$2; shift 2 ;;
	-t | --timeout) tmo=$2; shift 2 ;;
	--cpu) cpu_model=$2; shift 2 ;;
	--tcg-thread) tcg_thread=$2; shift 2 ;;
	-v | --verbose) verbose=1; shift ;;
	--) shift; break ;;
	-h | --help) usage ;;
	*) echo "kvmrig: unknown option '$1'" >&2; usage ;;
	esac
done
[ $# -gt 0 ] || usage
case "$tcg_thread" in
single | multi) ;;
*) echo "kvmrig: --tcg-thread is single or multi, not '$tcg_thread'" >&2; exit 2 ;;
esac

# /tmp, /run and /var/tmp are the rig's own tmpfs: the repository is
# mounted on top of it (a clone in /tmp works), but another working
# directory there is not what the rig sees. Refused as a usage error
# (2), not as a rig failure (125), which the test command reports
# without failing.
cwd=$(pwd -P)
case "$cwd/" in
"$top"/*) ;;
/tmp/* | /run/* | /var/tmp/*)
	echo "kvmrig: the working directory $cwd is under /tmp, /run or" \
		"/var/tmp, which the rig replaces with its own tmpfs: cd into" \
		"the repository or elsewhere" >&2
	exit 2 ;;
esac

lock=${KVMRIG_LOCK:-/tmp/kvmrig.lock}
if [ "$lock" != none ]; then
	exec 9>>"$lock" || die "cannot open the lock $lock"
	if ! flock -n 9; then
		echo "kvmrig: another rig runs on this machine; waiting for it ($lock)" >&2
		flock 9
	fi
fi

qemu=$(command -v qemu-system-x86_64) ||
	die "qemu-system-x86_64 not found: install the Debian package" \
		"qemu-system-x86 (tools/setup.sh deps does)"

# ---- 1. the packages, by version
mkdir -p "$cache/debs"
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	awk '/Depends: linux-image-[0-9]/{print $2; exit}') || true
[ -n "$kpkg" ] || die "apt-cache knows no linux-image-amd64 (apt-get update?)"
kver=${kpkg#linux-image-}
fetch() { # fetch PACKAGE: echo the cached .deb of its candidate version
	local pkg=$1 ver deb
	ver=$(apt-cache policy "$pkg" 2>/dev/null |
		awk '/Candidate:/{print $2; exit}')
	[ -n "$ver" ] && [ "$ver" != "(none)" ] ||
		die "apt-cache has no candidate for $pkg (apt-get update?)"
	deb=$(ls "$cache/debs/${pkg}_"*"${ver#*:}_amd64.deb" 2>/dev/null |
		head -1) || true
	if [ -z "$deb" ]; then
		echo "kvmrig: apt-get download $pkg=$ver" >&2
		(cd "$cache/debs" && apt-get download -q "$pkg=$ver" \
			>/dev/null 2>"$cache/debs/apt.err") ||
			die "apt-get download $pkg=$ver failed:" \
				"$(tail -3 "$cache/debs/apt.err")"
		deb=$(ls "$cache/debs/${pkg}_"*"${ver#*:}_amd64.deb" | head -1)
	fi
	echo "$deb"
}
kdeb=$(fetch "$kpkg")
bbdeb=$(fetch busybox-static)

# ---- 2. kernel and initramfs, rebuilt only when an input changes
mods=(irqbypass kvm ccp kvm-amd virtio_ring virtio virtio_pci_modern_dev
	virtio_pci_legacy_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p
	veth)
# Bump image_rev when the way the image is built below changes.
image_rev=1
key=$( (basename "$kdeb"; basename "$bbdeb"; echo "$image_rev ${mods[*]}";
	cat "$here/init") | sha256sum | cut -c1-16)
img=$cache/img-$kver-$key
if [ ! -f "$img/initrd.gz" ]; then
	echo "kvmrig: building the rig's image ($kver)" >&2
	rm -rf "$img.tmp"
	mkdir -p "$img.tmp/x" "$img.tmp/root/lib/modules"
	mkdir -p "$img.tmp/root/"{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp}
	dpkg-deb -x "$kdeb" "$img.tmp/x" || die "cannot unpack $kdeb"
	dpkg-deb -x "$bbdeb" "$img.tmp/x" || die "cannot unpack $bbdeb"
	cp "$img.tmp/x/boot/vmlinuz-$kver" "$img.tmp/vmlinuz"
	kmod=$img.tmp/x/lib/modules/$kver/kernel
	# The package has no modules.dep: order the modules so that each
	# comes after those it depends on (the .modinfo "depends=" field).
	declare -A done_mod=()
	order=()
	add_mod() {
		local m=$1 f d
		[ -z "${done_mod[$m]:-}" ] || return 0
		done_mod[$m]=1
		f=$(find "$kmod" -name "$m.ko" | head -1)
		[ -n "$f" ] || die "$kpkg has no module $m"
		for d in $(strings -a "$f" | sed -n 's/^depends=//p' |
			tr , ' '); do
			add_mod "$d"
		done
		cp "$f" "$img.tmp/root/lib/modules/"
		order+=("$m")
	}
	for m in "${mods[@]}"; do add_mod "$m"; done
	printf '%s\n' "${order[@]}" >"$img.tmp/root/lib/modules/order"
	cp "$img.tmp/x/bin/busybox" "$img.tmp/root/bin/busybox"
	ln -s busybox "$img.tmp/root/bin/sh"
	cp "$here/init" "$img.tmp/root/init"
	chmod 755 "$img.tmp/root/init"
	# Reproducible: sorted names, fixed owner and times, no gzip name.
	find "$img.tmp/root" -exec touch -h -d @0 {} +
	(cd "$img.tmp/root" && find . | LC_ALL=C sort |
		"$img.tmp/x/bin/busybox" cpio -o -H newc -R 0:0 2>/dev/null) |
		gzip -n -6 >"$img.tmp/initrd.gz"
	rm -rf "$img.tmp/x" "$img.tmp/root"
	rm -rf "$img"
	mv "$img.tmp" "$img"
fi

# ---- 3. the job: the command, its directory and environment
mkdir -p "$cache/jobs"
job=$(mktemp -d "$cache/jobs/job.XXXXXX")
qpid=
cleanup() {
	[ -z "$qpid" ] || kill "$qpid" 2>/dev/null || true
	rm -rf "$job"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
{
	echo "# written by tools/kvmrig/run.sh"
	export -p | grep -vE '^declare -x (BASH_[A-Z_]*|SHLVL|OLDPWD|PWD|_|TMPDIR|XDG_RUNTIME_DIR|SSH_[A-Z_]*|DISPLAY|TERM)='
	echo "export KVMRIG=1 TERM=dumb"
	# KVM's static keys held on before the command (kvmhold.py says why):
	# a rig whose kernel rewrites __schedule at every first and last VM
	# has hung under TCG. KVMRIG_HOLD=0 leaves them to the tests.
	if [ "${KVMRIG_HOLD:-1}" = 1 ]; then
		printf 'python3 %q >/run/kvmhold.log 2>&1 &\n' "$here/kvmhold.py"
		echo 'for i in $(seq 100); do grep -q "^kvmhold: ready" /run/kvmhold.log && break; kill -0 $! 2>/dev/null || break; sleep 0.1; done'
		echo 'grep -q "^kvmhold: ready" /run/kvmhold.log || echo "kvmrig: static keys not held: $(cat /run/kvmhold.log)" >&2'
	fi
	printf 'cd %q || exit 125\n' "$(pwd -P)"
	printf 'exec'
	printf ' %q' "$@"
	echo
} >"$job/cmd.sh"

# ---- 4. boot
# loglevel=5: a lockup's backtrace (printed at the default level) lands in
# the console log, which is a file; boot stays quiet enough.
# panic=10: a panicking kernel waits 10 s in panic(), on the panicking
# task's stack, before the reboot that ends QEMU (-no-reboot); the loop
# below reads that stack's end meanwhile (regs.py --stack-end).
append="console=ttyS0 panic=10 quiet loglevel=5 mitigations=off nokaslr"
append+=" kvmrig.repo=$top ${KVMRIG_APPEND:-}"
# The rig kernel's text symbols (Debian's System.map is a placeholder):
# the first boot of an image writes /proc/kallsyms into the job folder,
# kept in the image's folder to name a hung rig's vCPUs (regs.py).
syms=$img/kallsyms
[ -s "$syms" ] || append+=" kvmrig.kallsyms=1"
keep_syms() {
	if [ ! -s "$syms" ] && [ -s "$job/kallsyms" ]; then
		cp "$job/kallsyms" "$syms.tmp" && mv "$syms.tmp" "$syms" || true
	fi
}
console=$job/console.log
: >"$console"
# The command's stdout and stderr: the rig's ttyS1 and ttyS2, through
# FIFOs (QEMU's "pipe" chardev writes NAME.out, reads NAME.in).
mkfifo "$job/out.in" "$job/out.out" "$job/err.in" "$job/err.out"
"$qemu" -accel "tcg,thread=$tcg_thread" -cpu "$cpu_model" -m "$mem" -smp "$cpus" \
	-nodefaults -no-user-config -display none -no-reboot \
	-kernel "$img/vmlinuz" -initrd "$img/initrd.gz" -append "$append" \
	-chardev file,id=con,path="$console" -serial chardev:con \
	-chardev pipe,id=out,path="$job/out" -serial chardev:out \
	-chardev pipe,id=err,path="$job/err" -serial chardev:err \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs local,path="$top",mount_tag=repo,security_model=none,multidevs=remap \
	-virtfs local,path="$job",mount_tag=job,security_model=none \
	-monitor unix:"$job/mon.sock",server=on,wait=off \
	</dev/null >"$job/qemu.log" 2>&1 &
qpid=$!
# The readers end when QEMU closes the pipes' write ends (it exits). The
# command's stdout is kept too, to say what ran when the rig hung.
tee "$job/stdout.log" <"$job/out.out" &
cat "$job/err.out" >&2 &
[ "$verbose" = 0 ] || tail -n +1 -f --pid="$qpid" "$console" >&2 &
# hung WHY: the rig is killed; say what the command was doing (its last
# lines: ctest's "Start N: test" names the test) and the console's tail.
cmdline="$*"
hung() {
	# Where the rig's vCPUs are, twice 2 s apart (a loop or a stop), from
	# QEMU's monitor, named by the kernel's symbols.
	keep_syms
	python3 "$here/regs.py" "$job/mon.sock" "$syms" \
		>"$cache/last-registers.txt" 2>&1 || true
	kill "$qpid" 2>/dev/null || true
	wait "$qpid" 2>/dev/null || true
	qpid=
	cp "$console" "$cache/last-console.log" 2>/dev/null || true
	echo "kvmrig: $1: '$cmdline' killed with the rig" >&2
	echo "kvmrig: the command's last output lines:" >&2
	tail -5 "$job/stdout.log" 2>/dev/null | sed 's/^/  | /' >&2
	echo "kvmrig: console's tail ($cache/last-console.log has it all):" >&2
	tail -25 "$console" >&2
	echo "kvmrig: the rig's vCPUs ($cache/last-registers.txt):" >&2
	grep '^cpu' "$cache/last-registers.txt" >&2 || true
	exit 124
}
# A soft lockup of the rig's kernel that lasts this long is a hung rig
# (seen: both vCPUs stuck for minutes, nothing inside could end it); the
# watchdog reports it every ~30 s, so it is found well before -t.
lockup=${KVMRIG_LOCKUP_SECS:-90}
# A command silent this long is a hung rig too (seen: both vCPUs idle in
# HLT for 40 minutes, tasks blocked, no lockup reported). ctest prints a
# line at each test's start and end and ends a test after its TIMEOUT
# (600 s at most), so the default leaves it a minute more. 0: no limit.
silence=${KVMRIG_SILENCE_SECS:-660}
# A kernel panic: what lies at each vCPU's stack end, while the panicking
# one waits (a "corrupted stack end detected inside scheduler" panic names
# no culprit; the bytes found there may).
panic_dump() {
	keep_syms
	python3 "$here/regs.py" "$job/mon.sock" "$syms" --stack-end \
		>"$cache/last-panic.txt" 2>&1 || true
	echo "kvmrig: the rig's kernel panicked; each vCPU's stack end" \
		"($cache/last-panic.txt):" >&2
	sed 's/^/  | /' "$cache/last-panic.txt" >&2
}
panicked=0
start=$SECONDS
heard=$SECONDS
size=0
n=0
while kill -0 "$qpid" 2>/dev/null; do
	[ $((SECONDS - start)) -lt "$tmo" ] || hung "timed out after ${tmo}s"
	if [ "$panicked" = 0 ] && [ $((n % 2)) = 0 ] &&
		grep -q "Kernel panic - not syncing" "$console"; then
		panicked=1
		panic_dump
	fi
	if [ $((++n % 10)) = 0 ]; then
		if grep -qE "soft lockup - CPU#[0-9]+ stuck for ([0-9]{3,}|[$((lockup / 10))-9][0-9])s" "$console"; then
			hung "the rig's kernel locked up (soft lockup over ${lockup}s)"
		fi
		now=$(stat -c %s "$job/stdout.log" 2>/dev/null || echo 0)
		[ "$now" = "$size" ] || { size=$now; heard=$SECONDS; }
		if [ "$silence" != 0 ] && [ $((SECONDS - heard)) -ge "$silence" ]; then
			hung "the command printed nothing for ${silence}s"
		fi
	fi
	sleep 0.5
done
wait "$qpid" && qrc=0 || qrc=$?
qpid=
wait
keep_syms
# The rig's kernel console of the last run, kept for a post-mortem.
cp "$console" "$cache/last-console.log" 2>/dev/null || true
status=$(cat "$job/status" 2>/dev/null || true)
case "$status" in
[0-9]*) exit "$status" ;;
rig-error:*)
	echo "kvmrig: ${status#rig-error: }" >&2
	tail -15 "$console" >&2
	exit 125 ;;
*)
	echo "kvmrig: the rig stopped without the command's status (QEMU" \
		"exit $qrc); QEMU said: $(tail -3 "$job/qemu.log")" >&2
	echo "kvmrig: console's tail ($cache/last-console.log has it all):" >&2
	tail -40 "$console" >&2
	exit 125 ;;
esac
