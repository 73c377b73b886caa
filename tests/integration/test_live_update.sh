#!/bin/bash
# Local live update (migratectl vm update): a fresh worker process takes a
# running VM over -- guest memory handed over as a memfd, not copied -- on
# KVM when it works and on the soft accelerator, while the guest writes
# stamps. After each update: a new worker pid, the VM RUNNING and writing,
# every page's stamp intact (vm check), the pause measured; the updated VM
# then migrates and verifies. A new worker that cannot start its takeover
# leaves the VM running, intact, in the old one. A VM on private
# anonymous RAM (--backing anon, no memfd) is refused with
# FAILED_PRECONDITION naming --backing memfd, and runs on untouched.
source "$(dirname "$0")/lib.sh" "$@"

[ -n "$SEND" ] && [ -n "$RECV" ] || { echo "SKIP: tools not built"; exit 77; }
VMM=$(dirname "$MIGRATED")/migrated-vmm
[ -x "$VMM" ] || { echo "SKIP: migrated-vmm not built"; exit 77; }

# The daemon starts workers through this wrapper: with $TMP/failvmm
# present, a worker started for a takeover exits at once.
cat >"$TMP/vmm.sh" <<EOS
#!/bin/sh
if [ -e "$TMP/failvmm" ]; then
	case "\$*" in *--takeover-fd*) exit 3 ;; esac
fi
exec "$VMM" "\$@"
EOS
chmod +x "$TMP/vmm.sh"

start_daemon src --dev-tls --tls-dir "$TMP/tls" --vmm "$TMP/vmm.sh"
SRC=$SOCK
start_daemon dst --dev-tls --tls-dir "$TMP/tls"
DST=$SOCK

# MIGD_IT_ACCEL=kvm (the "kvm"-labelled twin): KVM only, and the soft-only
# failure cases below are left to the plain test.
case "${MIGD_IT_ACCEL:-}" in
kvm) need_kvm; accels=(kvm) ;;
soft) accels=(soft) ;;
*) accels=(soft); have_kvm && accels=(kvm soft) ;;
esac
pid_of() { SOCK=$SRC ctl --json vm inspect "$1" | jq -r .info.worker_pid; }

check_clean() { # NAME DESC
	local out
	out=$(SOCK=$SRC ctl vm check "$1" 2>&1)
	if [ $? -eq 0 ] && grep -q " 0 bad" <<<"$out" &&
		grep -q " 0 vCPU(s) lost" <<<"$out"; then
		ok "$2: every stamp intact ($(grep -o '[0-9]* written' <<<"$out"))"
	else
		fail "$2: vm check: $out"
	fi
}

for acc in "${accels[@]}"; do
	vm=lu-$acc
	SOCK=$SRC expect_rc 0 "create $vm ($acc, 2 vCPUs, sweep)" ctl vm create \
		"$vm" --accel "$acc" --mem 128M --vcpus 2 --rate 4000 \
		--heartbeat-us 2000 --backing memfd
	sleep 0.5
	for i in 1 2 3; do
		p0=$(pid_of "$vm")
		s0=$(SOCK=$SRC seq_sum "$vm")
		out=$(SOCK=$SRC ctl --json vm update "$vm" 2>&1)
		rc=$?
		p1=$(pid_of "$vm")
		pause=$(jq -r '.pause_ns // 0' <<<"$out" 2>/dev/null)
		if [ $rc -eq 0 ] && [ "$p1" != "$p0" ] &&
			[ "$(jq -r .new_pid <<<"$out")" = "$p1" ]; then
			ok "$vm update $i: worker $p0 -> $p1, paused $((pause / 1000)) us"
		else
			fail "$vm update $i: rc=$rc pids $p0 -> $p1: $out"
		fi
		kill -0 "$p0" 2>/dev/null && sleep 0.5
		kill -0 "$p0" 2>/dev/null && fail "  ... old worker $p0 still runs" ||
			ok "  ... old worker $p0 exited"
		sleep 0.3
		s1=$(SOCK=$SRC seq_sum "$vm")
		st=$(SOCK=$SRC ctl --json vm inspect "$vm" | jq -r .info.state)
		[ "$st" = VM_STATE_RUNNING ] && [ "${s1:-0}" -gt "${s0:-0}" ] &&
			ok "  ... RUNNING, guest writes on ($s0 -> $s1)" ||
			fail "  ... state $st, seq $s0 -> $s1"
		check_clean "$vm" "  ... $vm after update $i"
	done
	u=$(SOCK=$SRC ctl --json vm inspect "$vm" | jq -r .info.updates)
	[ "$u" = 3 ] && ok "$vm: 3 updates counted" || fail "$vm: updates=$u"
done

# The updated VM migrates (dirty logging and state work in the new worker).
vm=lu-${accels[0]}
port=$("$RECV" --socket "$DST" --name "$vm" 127.0.0.1:0)
"$SEND" --socket "$SRC" "$vm" "127.0.0.1:$port" >"$TMP/mig.out" 2>&1 &&
	ok "$vm: migrated after its updates" ||
	fail "$vm: migration: $(tail -5 "$TMP/mig.out")"
assert_verified_zero "$TMP/mig.out" "$vm after updates"
SOCK=$DST ctl vm check "$vm" | grep -q " 0 bad" &&
	ok "$vm: stamps intact on the destination" || fail "$vm: dst check"

# The destination daemon was left to pick (auto: kvm here); a VM that ran
# on the soft accelerator is received into soft all the same (its state
# loads only there), without migrate-recv --accel.
if have_kvm; then
	vm=lu-into-auto
	SOCK=$SRC expect_rc 0 "create $vm (soft, on a host with KVM)" \
		ctl vm create "$vm" --accel soft --mem 64M --rate 4000
	port=$("$RECV" --socket "$DST" --name "$vm" 127.0.0.1:0)
	"$SEND" --socket "$SRC" "$vm" "127.0.0.1:$port" >"$TMP/auto.out" 2>&1 &&
		ok "$vm: migrated to the auto daemon" ||
		fail "$vm: migration: $(tail -3 "$TMP/auto.out")"
	acc=$(SOCK=$DST ctl --json vm inspect "$vm" | jq -r .info.accel)
	[ "$acc" = soft ] && ok "  ... received into the source's soft" ||
		fail "  ... received into '$acc'"
	SOCK=$DST ctl vm check "$vm" | grep -q " 0 bad" &&
		ok "  ... stamps intact" || fail "  ... dst check"
	SOCK=$DST expect_rc 0 "  ... destroyed" ctl vm destroy "$vm"
fi
[ "${MIGD_IT_ACCEL:-}" = kvm ] && finish

# A new worker that cannot take over: the VM runs on in the old one.
vm=lu-fail
SOCK=$SRC expect_rc 0 "create $vm" ctl vm create "$vm" --accel soft \
	--mem 64M --rate 4000 --backing memfd
sleep 0.3
p0=$(pid_of "$vm")
touch "$TMP/failvmm"
SOCK=$SRC expect_rc 1 "update with a failing new worker fails" \
	ctl vm update "$vm"
grep -qiE "new worker|exited" <<<"$LAST_OUT" && ok "  ... and says why: $LAST_OUT" ||
	fail "  ... message: $LAST_OUT"
rm -f "$TMP/failvmm"
[ "$(pid_of "$vm")" = "$p0" ] && ok "  ... the VM stays in worker $p0" ||
	fail "  ... worker is now $(pid_of "$vm")"
s0=$(SOCK=$SRC seq_sum "$vm")
sleep 0.3
s1=$(SOCK=$SRC seq_sum "$vm")
[ "${s1:-0}" -gt "${s0:-0}" ] && ok "  ... and keeps writing ($s0 -> $s1)" ||
	fail "  ... no progress: $s0 -> $s1"
check_clean "$vm" "  ... $vm"
SOCK=$SRC expect_rc 0 "a later update works" ctl vm update "$vm"
check_clean "$vm" "  ... $vm after it"
SOCK=$SRC expect_rc 3 "update of a missing VM: not found" ctl vm update nosuch

# Private anonymous guest RAM has no fd to hand over: refused, clearly.
vm=lu-anon
SOCK=$SRC expect_rc 0 "create $vm (--backing anon)" ctl vm create "$vm" \
	--accel soft --mem 64M --rate 4000 --backing anon
SOCK=$SRC ctl vm inspect "$vm" | grep -q "^backing: *anon" &&
	ok "  ... vm inspect shows backing anon" ||
	fail "  ... vm inspect: $(SOCK=$SRC ctl vm inspect "$vm")"
sleep 0.3
p0=$(pid_of "$vm")
SOCK=$SRC expect_rc 1 "update of an anon VM is refused" ctl vm update "$vm"
grep -qi "failed precondition" <<<"$LAST_OUT" &&
	grep -q -- "--backing memfd" <<<"$LAST_OUT" &&
	ok "  ... FAILED_PRECONDITION naming --backing memfd" ||
	fail "  ... message: $LAST_OUT"
[ "$(pid_of "$vm")" = "$p0" ] && ok "  ... the VM stays in worker $p0" ||
	fail "  ... worker is now $(pid_of "$vm")"
s0=$(SOCK=$SRC seq_sum "$vm")
sleep 0.3
s1=$(SOCK=$SRC seq_sum "$vm")
[ "${s1:-0}" -gt "${s0:-0}" ] && ok "  ... and keeps writing ($s0 -> $s1)" ||
	fail "  ... no progress: $s0 -> $s1"
check_clean "$vm" "  ... $vm"
finish
