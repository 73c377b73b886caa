#!/usr/bin/env bash
# Run every test: the unit and integration tests in the ASan+UBSan build,
# then the concurrent ones (label "tsan": hvcore, the soft MMU, the
# monitor, the migration library, the daemon and the integration tests
# with their real daemons) again under ThreadSanitizer. A sanitizer report
# in a daemon's log fails its integration test (tests/integration/lib.sh).
# The tests that need KVM (ctest label "kvm") run where /dev/kvm is: on
# this host when it has one (in the ASan pass), else inside the KVM rig
# (tools/kvmrig/run.sh: KVM nested under QEMU TCG), from the release build
# (ASan under TCG is too slow; docs/testing.md has the figures).
# KVMRIG_BUILD=asan runs them from the ASan build instead.
# Last, every fuzz target runs for FUZZ_SECONDS (default 10) on its corpus
# (tools/fuzz.sh, docs/fuzzing.md), so a decoder regression that one of the
# corpus inputs or a short run finds fails the tests.
# Installs and builds what it needs first (tools/setup.sh).
#
#   tools/test.sh            everything
#   tools/test.sh -R memslot only tests whose name matches (ctest -R); no
#                            fuzzing
set -euo pipefail
TSAN_OPTIONS_EXTRA=${TSAN_OPTIONS:-}

top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tools/setup.sh" asan
"$top/tools/setup.sh" tsan
# The release build is what the demo and the benchmarks use; optimisation
# brings warnings (-Werror) the debug builds do not, so build it here too.
"$top/tools/setup.sh" release

rc=0
# Without /dev/kvm the host passes leave the kvm label out; the rig runs it.
nokvm=()
[ -r /dev/kvm ] && [ -w /dev/kvm ] || nokvm=(-LE kvm)
# A PVM-based KVM (module kvm_pvm; seen on these machines, nested in a
# Firecracker VM) runs the freestanding guest but boots no stock Linux
# kernel (a Linux guest prints nothing in 300 s): the tests leave it
# alone (MIGD_TEST_HOST_KVM=0: lib.sh's have_kvm, the C harness, the
# daemons' default accelerator) and the rig runs the label kvm.
if [ ${#nokvm[@]} = 0 ] && [ -d /sys/module/kvm_pvm ]; then
	echo "== /dev/kvm here is PVM (kvm_pvm): it boots no stock Linux" \
		"guest; the tests leave it alone and the KVM rig runs label kvm"
	export MIGD_TEST_HOST_KVM=0
	nokvm=(-LE kvm)
fi
echo "== tests: ASan + UBSan build${nokvm:+ (label kvm: in the KVM rig below)}"
(cd "$top/build/asan" && ctest --output-on-failure "${nokvm[@]}" "$@") || rc=1
echo "== tests: ThreadSanitizer build (label tsan)"
(cd "$top/build/tsan" &&
	TSAN_OPTIONS="suppressions=$top/tests/tsan.supp history_size=7 halt_on_error=0 $TSAN_OPTIONS_EXTRA" \
	ctest --output-on-failure -L tsan "${nokvm[@]}" "$@") || rc=1
if [ ${#nokvm[@]} -gt 0 ]; then
	kb=${KVMRIG_BUILD:-release}
	# Gating (KVMRIG_GATE=0 reports without failing; a rig whose own
	# kernel fails twice is reported, not failed, unless
	# KVMRIG_GATE=strict). The rig's own
	# kernel hung under TCG when KVM rewrote __schedule at every first
	# and last VM; run.sh now holds KVM's static keys on for the whole
	# run (tools/kvmrig/kvmhold.py, docs/testing.md). A test that fails
	# is run once more (timing bounds nested under TCG); a rig that
	# stops answering (124) or dies (125) is booted once more.
	echo "== tests: label kvm in the KVM rig (no /dev/kvm here; build/$kb)"
	t0=$SECONDS
	rrc=0
	# Every test has its own TIMEOUT; --timeout bounds one that has
	# none. A rig whose kernel locks up is ended by run.sh (status 124,
	# naming the test that ran and the console's tail).
	# The KVM twins of the integration tests (label kvm_twin: KVM-to-KVM
	# migration, postcopy, live update, concurrent, commit, flood) run
	# too: about 7 minutes nested under TCG once the rig stopped hanging
	# (docs/testing.md). KVMRIG_TWINS=0 leaves them out.
	# The Linux guest's kernel and initramfs are made here on the host
	# (tools/guest/mkinitramfs.sh): unpacking the kernel package nested
	# under TCG takes minutes; the tests find them up to date.
	hvg=$top/build/$kb/tools/guest/hvguest
	if [ -x "$hvg" ]; then
		"$top/tools/guest/mkinitramfs.sh" --hvguest "$hvg" \
			--out "$(dirname "$hvg")/initramfs.cpio.gz" \
			--kernel-out "$(dirname "$hvg")/vmlinuz" ||
			echo "== guest initramfs not made; the rig's Linux tests will fail"
	fi
	twins=()
	tmo=${KVMRIG_TIMEOUT:-2400}
	if [ "${KVMRIG_TWINS:-1}" = 0 ]; then
		twins=(-LE kvm_twin)
		tmo=${KVMRIG_TIMEOUT:-1200}
	fi
	# A rig that stopped answering (124) or died (125) is tried once
	# more if at least 600 s of the budget are left; a failing test
	# fails at once. Both tries together stay within the budget.
	for try in 1 2; do
		rrc=0
		left=$((tmo - (SECONDS - t0)))
		env -u MIGD_TEST_HOST_KVM "$top/tools/kvmrig/run.sh" -t "$left" -- \
			sh -c 'cd "$1" && shift && ctest --output-on-failure --timeout 300 --repeat until-pass:2 -L kvm "$@"' \
			sh "$top/build/$kb" "${twins[@]}" "$@" || rrc=$?
		{ [ "$rrc" = 124 ] || [ "$rrc" = 125 ]; } && [ "$try" = 1 ] &&
			[ $((tmo - (SECONDS - t0))) -ge 600 ] || break
		echo "== KVM rig: the rig itself failed (status $rrc); once more"
	done
	if [ "$rrc" = 0 ]; then
		echo "== KVM rig: every kvm test passed ($((SECONDS - t0)) s)"
	elif { [ "$rrc" = 124 ] || [ "$rrc" = 125 ]; } &&
		[ "${KVMRIG_GATE:-1}" != strict ]; then
		# The rig's own kernel failed (after the retry above), not a
		# test: nested under TCG it has panicked ("corrupted stack
		# end" on a thread's exit) with no test failing. Said loudly;
		# KVMRIG_GATE=strict fails on it.
		echo "== KVM rig: BROKEN, status $rrc ($((SECONDS - t0)) s):" \
			"the rig's kernel died or hung, no kvm test verdict;" \
			"not counted as a test failure (KVMRIG_GATE=strict counts it)"
	elif [ "${KVMRIG_GATE:-1}" != 0 ]; then
		echo "== KVM rig: FAILED, status $rrc ($((SECONDS - t0)) s)"
		rc=1
	else
		echo "== KVM rig: FAILED, status $rrc ($((SECONDS - t0)) s);" \
			"not gating (KVMRIG_GATE=0)"
	fi
fi
if [ $# -eq 0 ]; then
	echo "== fuzz: every target for ${FUZZ_SECONDS:-10} s (tools/fuzz.sh)"
	"$top/tools/fuzz.sh" "${FUZZ_SECONDS:-10}" || rc=1
else
	echo "== fuzz: not run (tests filtered by $*)"
fi
exit $rc
