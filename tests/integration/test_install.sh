#!/bin/bash
# What `cmake --install` and the Debian package put on a machine works
# from where it lands (cmake/Install.cmake, docs/install.md):
#   - an install into a temporary prefix: the installed daemon --version,
#     finds its worker in libexec (not the build tree) and runs a
#     soft-accelerator VM that the installed migratectl creates, checks
#     (page stamps) and destroys;
#   - the man pages render without a warning (groff -ww, man --warnings);
#   - the bash completion offers the subcommands migratectl --help lists;
#   - the systemd unit rates <= 3.0 in systemd-analyze security (offline)
#     and its ExecStart names the daemon where --prefix put it;
#   - the tools reach the system daemon's /run/migrated/control.sock with
#     no --socket, and a member of the --socket-group reaches it without
#     root while another user is refused with the remedy (as root, in a
#     mount namespace with its own /run);
#   - the .deb of this build (cpack) holds the expected files, and the
#     daemon extracted from it (dpkg-deb -x) runs a VM too.
#
#   test_install.sh BUILD_DIR SOURCE_DIR
set -u
BUILD=$1
SRC=$2
TMP=$(mktemp -d /tmp/migd-inst.XXXXXX)
FAILS=0
DPIDS=()
ok() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	FAILS=$((FAILS + 1))
}
cleanup() {
	local p
	for p in "${DPIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${DPIDS[@]}"; do wait "$p" 2>/dev/null; done
	for p in $(pgrep -f -- "migrated-vmm .*--state-dir $TMP/" || true); do
		kill -KILL "$p" 2>/dev/null
	done
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

# run_vm ROOT SBIN BIN NAME: start ROOT's daemon, VM create/check/destroy
# with ROOT's migratectl; the worker must be ROOT's migrated-vmm.
run_vm() {
	local sbin=$1 bin=$2 name=$3 libexec=$4
	local st=$TMP/st-$name sock pid wpid exe
	sock=$st/control.sock
	"$sbin/migrated" --state-dir "$st" --accel soft --log-level info \
		>"$TMP/$name.log" 2>&1 &
	pid=$!
	DPIDS+=("$pid")
	for _ in $(seq 200); do
		[ -S "$sock" ] && break
		sleep 0.05
	done
	[ -S "$sock" ] || { fail "$name: daemon did not start: $(tail -5 "$TMP/$name.log")"; return; }
	if "$bin/migratectl" --socket "$sock" vm create v1 --mem 32M \
		--rate 2000 >/dev/null 2>"$TMP/$name.err"; then
		ok "$name: installed migratectl created a soft VM"
	else
		fail "$name: vm create: $(cat "$TMP/$name.err") $(tail -3 "$TMP/$name.log")"
		return
	fi
	wpid=$("$bin/migratectl" --socket "$sock" --json vm list |
		jq -r '.vms[0].pid // empty' 2>/dev/null)
	[ -z "$wpid" ] && wpid=$(pgrep -f -- "migrated-vmm .*--state-dir $st" | head -1)
	exe=$(readlink "/proc/$wpid/exe" 2>/dev/null)
	[ "$exe" = "$libexec/migrated-vmm" ] &&
		ok "$name: the worker runs the installed $exe" ||
		fail "$name: worker pid '$wpid' runs '$exe', not $libexec/migrated-vmm"
	sleep 0.3
	"$bin/migratectl" --socket "$sock" vm check v1 >"$TMP/$name.chk" 2>&1 &&
		ok "$name: vm check: $(head -1 "$TMP/$name.chk")" ||
		fail "$name: vm check: $(cat "$TMP/$name.chk")"
	"$bin/migratectl" --socket "$sock" vm destroy v1 >/dev/null 2>&1 &&
		ok "$name: VM destroyed" || fail "$name: vm destroy"
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null
	[ $? = 0 ] && ok "$name: daemon exited 0 on SIGTERM" ||
		fail "$name: daemon exit status on SIGTERM"
}

# --- cmake --install into a temporary prefix ------------------------------
P=$TMP/prefix
cmake --install "$BUILD" --prefix "$P" >"$TMP/install.log" 2>&1 ||
	{ fail "cmake --install: $(tail -5 "$TMP/install.log")"; exit 1; }
for f in sbin/migrated libexec/migrated/migrated-vmm bin/migratectl \
	bin/migrate-send bin/migrate-recv bin/dirtyrate bin/hvbench \
	etc/migrated/migrated.conf lib/systemd/system/migrated.service \
	share/man/man8/migrated.8 share/man/man5/migrated.conf.5 \
	share/man/man1/migratectl.1 share/man/man1/migrate-send.1 \
	share/man/man1/migrate-recv.1 share/man/man1/dirtyrate.1 \
	share/man/man1/hvbench.1 share/doc/migrated/LICENSE \
	share/doc/migrated/api.md share/doc/migrated/install.md \
	share/bash-completion/completions/migratectl; do
	[ -e "$P/$f" ] || fail "not installed: $f"
done
[ "$FAILS" = 0 ] && ok "cmake --install: binaries, config, unit, man pages, docs, completion"
[ -e "$P/sbin/migrated-vmm" ] && fail "migrated-vmm also in sbin (should be libexec only)"
V=$("$P/sbin/migrated" --version 2>&1)
[[ $V == "migrated "* ]] && ok "installed daemon: $V" || fail "--version: $V"
# The config file the package ships parses (a key error would stop the
# daemon at start): --help after --config only prints if it did.
"$P/sbin/migrated" --config "$P/etc/migrated/migrated.conf" --help >/dev/null 2>"$TMP/conf.err" &&
	ok "shipped migrated.conf parses" || fail "migrated.conf: $(cat "$TMP/conf.err")"
run_vm "$P/sbin" "$P/bin" prefix "$P/libexec/migrated"

# --- the unit names the installed daemon ---------------------------------
grep -qx "ExecStart=$P/sbin/migrated --config $P/etc/migrated/migrated.conf" \
	"$P/lib/systemd/system/migrated.service" &&
	ok "unit: ExecStart=$P/sbin/migrated (the --prefix of the install)" ||
	fail "unit: $(grep ExecStart "$P/lib/systemd/system/migrated.service")"

# --- the system daemon, found by default, open to its operator group -----
# As root only (setpriv to another user, a private /run): the daemon
# listens on /run/migrated/control.sock of a mount namespace of its own.
if [ "$(id -u)" = 0 ] && getent group users >/dev/null &&
	unshare -m true 2>/dev/null; then
	chmod 0711 "$TMP"
	P=$P TMP=$TMP unshare -m bash -s >"$TMP/sys.out" 2>&1 <<-'SH'
	mount -t tmpfs tmpfs /run || exit 1
	"$P/sbin/migrated" --state-dir /run/migrated --socket-group users \
		--accel soft >"$TMP/sys.log" 2>&1 &
	d=$!
	for _ in $(seq 200); do [ -S /run/migrated/control.sock ] && break; sleep 0.05; done
	echo "modes: $(stat -c '%a %G' /run/migrated) $(stat -c '%a %G' /run/migrated/control.sock)"
	unset MIGRATED_SOCKET MIGRATED_STATE_DIR
	ctl=$P/bin/migratectl
	"$ctl" ping >/dev/null 2>&1 && echo "default: ok"
	setpriv --reuid=nobody --regid=nogroup --groups=users "$ctl" ping \
		>/dev/null 2>&1 && echo "member: ok"
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$ctl" ping 2>&1
	echo "other: rc $?"
	kill -TERM $d
	wait $d
	SH
	out=$(cat "$TMP/sys.out")
	grep -q "^modes: 710 users 660 users$" <<<"$out" &&
		ok "--socket-group users: state dir 0710, socket 0660 in the group" ||
		fail "socket group modes: $out $(tail -3 "$TMP/sys.log")"
	grep -q "^default: ok" <<<"$out" &&
		ok "migratectl without --socket reaches /run/migrated/control.sock" ||
		fail "default socket: $out"
	grep -q "^member: ok" <<<"$out" &&
		ok "a member of the socket group (not root) uses the daemon" ||
		fail "group member refused: $out"
	grep -q "^other: rc 5" <<<"$out" && grep -q "Permission denied.*adduser" <<<"$out" &&
		ok "another user is refused, told to join the group" ||
		fail "non-member: $out"
else
	echo "note: not root or no mount namespaces: system socket not tested"
fi

# --- man pages ------------------------------------------------------------
for m in "$P"/share/man/man*/*; do
	w=$(groff -ww -man -z "$m" 2>&1)
	[ -z "$w" ] || fail "groff warnings in $(basename "$m"): $w"
	if command -v man >/dev/null; then
		w=$(MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null)
		[ -z "$w" ] || fail "man warnings in $(basename "$m"): $w"
	fi
done
ok "man pages: $(ls "$P"/share/man/man*/* | wc -l) checked with groff -ww"

# --- bash completion ------------------------------------------------------
# complete WORDS...: what the completion offers after them.
complete_words() {
	PATH=$P/bin:$PATH bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
		_migratectl; printf "%s\n" "${COMPREPLY[@]}"' _ \
		"$P/share/bash-completion/completions/migratectl" "$@"
}
HELP=$("$P/bin/migratectl" --help 2>&1)
top=$(complete_words migratectl "" | sort | tr '\n' ' ')
vm=$(complete_words migratectl vm "" | sort | tr '\n' ' ')
mig=$(complete_words migratectl migration "" | sort | tr '\n' ' ')
missing=
for w in $top; do grep -qE "(^| )$w( |$)" <<<"$HELP" || missing+=" $w"; done
for w in $vm; do grep -qE "vm $w" <<<"$HELP" || missing+=" vm:$w"; done
for w in $mig; do grep -qE "migration $w" <<<"$HELP" || missing+=" migration:$w"; done
# ...and every subcommand of --help is offered.
for w in $(grep -oE '\bvm [a-z-]+' <<<"$HELP" | awk '{print $2}' | sort -u); do
	grep -qw -- "$w" <<<"$vm" || missing+=" not-offered:vm:$w"
done
for w in $(grep -oE '\bmigration [a-z-]+' <<<"$HELP" | awk '{print $2}' | sort -u); do
	[ "$w" = resolve ] || [ "$w" = status ] || [ "$w" = list ] ||
		[ "$w" = watch ] || [ "$w" = cancel ] || [ "$w" = tune ] ||
		continue
	grep -qw -- "$w" <<<"$mig" || missing+=" not-offered:migration:$w"
done
[ -z "$missing" ] && [ -n "$vm" ] &&
	ok "completion matches --help: [$top] vm [$vm] migration [$mig]" ||
	fail "completion and --help differ:$missing (top: $top; vm: $vm)"
# The other tools: their own --help's options, hvbench's commands.
tool_words() {
	local t=$1
	shift
	PATH=$P/bin:$P/sbin:$PATH bash -c 'source "$1"; shift; COMP_WORDS=("$@");
		COMP_CWORD=$(($# - 1)); _migd_tool; printf "%s\n" "${COMPREPLY[@]}"' _ \
		"$P/share/bash-completion/completions/$t" "$t" "$@"
}
w=$(tool_words migrate-send --det)
w2=$(tool_words migrated --socket-g)
w3=$(tool_words migrate-recv --acc)
w4=$(tool_words dirtyrate --int)
w5=$(tool_words hvbench dirty-)
if [ "$w" = --detach ] && [ "$w2" = --socket-group ] && [ "$w3" = --accel ] &&
	[ "$w4" = --interval ] && [ "$w5" = dirty-log ]; then
	ok "completion of migrated, migrate-send, migrate-recv, dirtyrate, hvbench from their --help"
else
	fail "tool completion: '$w' '$w2' '$w3' '$w4' '$w5'"
fi
for t in migrated migrate-send migrate-recv dirtyrate hvbench; do
	[ -e "$P/share/bash-completion/completions/$t" ] || fail "no completion installed for $t"
done
opts=$(complete_words migratectl vm create v --)
grep -qw -- --backing <<<"$opts" && grep -qw -- --prefill <<<"$opts" &&
	ok "completion offers vm create options" || fail "vm create options: $opts"
vals=$(complete_words migratectl vm create v --backing "" | tr '\n' ' ')
names=$(complete_words migratectl vm update -- | tr '\n' ' ')
[ "$vals" = "anon memfd memfd-thp hugetlb " ] && [ -z "${names// /}" ] &&
	ok "completion: --backing's values from --help, none of a description's options" ||
	fail "completion values: '$vals', vm update options: '$names'"
# The completion holds no list of its own: a migratectl whose --help has
# a command more gets it completed, subcommand, options and values.
mkdir -p "$TMP/fakebin"
cat >"$TMP/fakebin/migratectl" <<'FAKE'
#!/bin/sh
printf 'usage: migratectl [--frobsock PATH] COMMAND ...\n\n'
printf '  frob zap NAME [--zing N] [--zest a|b]\n          [--zoom]\n'
printf '  ping\n'
FAKE
chmod +x "$TMP/fakebin/migratectl"
fake_words() {
	PATH=$TMP/fakebin:$PATH bash -c 'source "$1"; shift; COMP_WORDS=("$@");
		COMP_CWORD=$(($# - 1)); _migratectl; printf "%s " "${COMPREPLY[@]}"' _ \
		"$P/share/bash-completion/completions/migratectl" "$@"
}
f1=$(fake_words migratectl "")
f2=$(fake_words migratectl frob "")
f3=$(fake_words migratectl frob zap x --)
f4=$(fake_words migratectl frob zap x --zest "")
f5=$(fake_words migratectl --f)
if [ "$f1" = "frob ping " ] && [ "$f2" = "zap " ] &&
	[ "$f3" = "--zest --zing --zoom " ] && [ "$f4" = "a b " ] &&
	[ "$f5" = "--frobsock " ]; then
	ok "completion is made from --help alone (a new command completes with no change)"
else
	fail "completion from a new --help: '$f1' '$f2' '$f3' '$f4' '$f5'"
fi

# --- systemd unit ---------------------------------------------------------
UNIT=$P/lib/systemd/system/migrated.service
if command -v systemd-analyze >/dev/null; then
	out=$(systemd-analyze security --offline=true --no-pager "$UNIT" 2>&1)
	score=$(sed -nE 's/.*Overall exposure level for .*: ([0-9.]+) .*/\1/p' <<<"$out")
	if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }'; then
		ok "systemd-analyze security (offline): exposure $score <= 3.0"
	else
		fail "exposure '${score}' > 3.0 or unreadable: $(tail -3 <<<"$out")"
	fi
	grep -q '^User=migrated' "$UNIT" && grep -q '^DevicePolicy=closed' "$UNIT" &&
		grep -q '^RuntimeDirectoryPreserve=yes' "$UNIT" &&
		grep -q '^Group=migrated' "$UNIT" &&
		grep -q '^SupplementaryGroups=kvm' "$UNIT" &&
		grep -q '^RuntimeDirectoryMode=0710' "$UNIT" &&
		grep -q '^socket-group = migrated' "$P/etc/migrated/migrated.conf" &&
		ok "unit: non-root user in group migrated (+kvm), runtime dir 0710 kept for workers, closed device policy" ||
		fail "unit lost User=, DevicePolicy= or RuntimeDirectoryPreserve="
else
	echo "note: no systemd-analyze: unit not rated"
fi

# --- Debian package of this build -----------------------------------------
if command -v cpack >/dev/null && command -v dpkg-deb >/dev/null &&
	command -v dpkg-shlibdeps >/dev/null; then
	(cd "$TMP" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" \
		-B "$TMP/pkg" >"$TMP/cpack.log" 2>&1) ||
		fail "cpack: $(tail -5 "$TMP/cpack.log")"
	DEB=$(ls "$TMP"/pkg/migrated_*.deb 2>/dev/null | head -1)
	if [ -n "$DEB" ]; then
		ok "package built: $(basename "$DEB")"
		dpkg-deb -c "$DEB" >"$TMP/contents"
		# The package's prefix is the build's (/usr from package.sh,
		# /usr/local from a default test build).
		pfx=$(sed -nE 's|.* \.(/.*)/sbin/migrated$|\1|p' "$TMP/contents")
		[ -n "$pfx" ] || fail "package lacks sbin/migrated"
		for f in sbin/migrated libexec/migrated/migrated-vmm \
			bin/migratectl lib/systemd/system/migrated.service \
			share/man/man8/migrated.8 \
			share/bash-completion/completions/migratectl; do
			grep -q " \.$pfx/$f\$" "$TMP/contents" ||
				fail "package lacks $pfx/$f"
		done
		ok "dpkg-deb -c: $(wc -l <"$TMP/contents") entries, binaries, unit, man, completion"
		ctl=$(dpkg-deb -I "$DEB")
		grep -q '^ Depends:.*libc6' <<<"$ctl" &&
			grep -q '^ Depends:.*adduser' <<<"$ctl" &&
			ok "Depends from dpkg-shlibdeps: $(sed -n 's/^ Depends: //p' <<<"$ctl")" ||
			fail "Depends: $(grep Depends <<<"$ctl")"
		dpkg-deb -e "$DEB" "$TMP/ctrl"
		grep -q 'addgroup --system migrated' "$TMP/ctrl/postinst" &&
			grep -q 'adduser --system --ingroup migrated' "$TMP/ctrl/postinst" &&
			grep -q 'adduser --quiet migrated kvm' "$TMP/ctrl/postinst" &&
			grep -q '/migrated/migrated.conf' "$TMP/ctrl/conffiles" &&
			ok "postinst makes the operator group and the system user (in kvm); config is a conffile" ||
			fail "control files: $(ls "$TMP/ctrl")"
		sh -n "$TMP/ctrl/postinst" && sh -n "$TMP/ctrl/postrm" &&
			sh -n "$TMP/ctrl/prerm" || fail "maintainer scripts do not parse"
		R=$TMP/root
		dpkg-deb -x "$DEB" "$R"
		run_vm "$R$pfx/sbin" "$R$pfx/bin" deb "$R$pfx/libexec/migrated"
	else
		fail "no .deb: $(tail -5 "$TMP/cpack.log")"
	fi
else
	echo "note: cpack, dpkg-deb or dpkg-shlibdeps missing: package not built"
fi

if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all checks passed"
