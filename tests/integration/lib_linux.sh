# SPDX-License-Identifier: MIT
# The Linux guest's part of the integration tests (sourced after lib.sh):
# the project's guest (tools/guest) made from MIGD_GUEST_HVGUEST's folder,
# its boot on a daemon's console, and the in-guest checks that a guest
# which moved (a live migration, a local live update) went on intact.
#
# MIGD_GUEST_HVGUEST: the hvguest binary (hvblk beside it);
# MIGD_GUEST_BOOT_S: how long a boot may take (default 300: KVM nested
# under TCG is slow).

# linux_guest: check the guest's programs and make its kernel and
# initramfs. Sets HVG, GUEST_IMG (their folder), HVBLK, BOOT_S.
linux_guest() {
	HVG=${MIGD_GUEST_HVGUEST:-}
	[ -x "$HVG" ] && [ -x "$(dirname "$HVG")/hvblk" ] ||
		{ echo "FAIL: MIGD_GUEST_HVGUEST names no hvguest with hvblk beside it"; exit 1; }
	GUEST_IMG=$(dirname "$HVG")
	HVBLK=$GUEST_IMG/hvblk
	"$(dirname "${BASH_SOURCE[0]}")/../../tools/guest/mkinitramfs.sh" \
		--hvguest "$HVG" --out "$GUEST_IMG/initramfs.cpio.gz" \
		--kernel-out "$GUEST_IMG/vmlinuz" ||
		{ echo "FAIL: cannot build the guest initramfs"; exit 1; }
	BOOT_S=${MIGD_GUEST_BOOT_S:-300}
}

# linux_boot_wait SOCK VM: wait for the guest's shell on its console;
# $TMP/boot.txt holds the console. Ends the test when no shell came.
linux_boot_wait() {
	local sock=$1 vm=$2 t0 rc
	t0=$(date +%s)
	timeout "$BOOT_S" "$CTL" --socket "$sock" vm console "$vm" --from-start \
		--until "hvguest: shell" >"$TMP/boot.out" 2>&1
	rc=$?
	tr -d '\r' <"$TMP/boot.out" >"$TMP/boot.txt"
	[ "$rc" = 0 ] && ok "the guest booted in $(($(date +%s) - t0)) s" ||
		{ fail "no shell within $BOOT_S s (rc=$rc): $(tail -c 3000 "$TMP/boot.txt")"
		  SOCK=$sock ctl vm console "$vm" --from-start | tail -c 3000; finish; }
}

# linux_workload_start SOCK VM DUR: the stamp workload in the guest's
# background for DUR s (checking its region at the end), then the
# kernel log's length and the uptime. Sets LX_NLOG, LX_UP0, LX_W0.
linux_workload_start() {
	local sock=$1 vm=$2 dur=$3
	# The markers are computed: the echo of the typed line cannot match.
	printf '%s\n' "hvguest hv.size=32 hv.rate=4000 hv.duration=$dur hv.check=1 >/tmp/wl.out 2>&1 &" \
		'sleep 2; echo "pre""mark $(dmesg | wc -l) $(cut -d" " -f1 /proc/uptime)"' >"$TMP/in1"
	SOCK=$sock expect_rc 0 "workload started" ctl vm console "$vm" --input "$TMP/in1"
	timeout 60 "$CTL" --socket "$sock" vm console "$vm" --until "premark " >/dev/null 2>&1
	sleep 1
	SOCK=$sock ctl vm console "$vm" | tr -d '\r' >"$TMP/pre.txt"
	read -r _ LX_NLOG LX_UP0 <<<"$(grep -E "^premark [0-9]+ [0-9.]+$" "$TMP/pre.txt" | tail -1)"
	[ -n "$LX_UP0" ] && ok "before: $LX_NLOG kernel log lines, uptime $LX_UP0 s" ||
		{ fail "no premark line: $(tail -c 1000 "$TMP/pre.txt")"; finish; }
	LX_W0=$(date +%s)
}

# linux_after_checks SOCK VM DUR MIB SEED: in the guest (after it moved):
# the workload's verdict over its whole region, no new kernel log line,
# the uptime went on (not back, not ahead of the wall clock), and the
# disk's checksummed blocks read back from /dev/vda, caches dropped.
linux_after_checks() {
	local sock=$1 vm=$2 dur=$3 mib=$4 seed=$5 w1 nlog1 up1 new
	cat >"$TMP/in2" <<IN
wait; cat /tmp/wl.out; echo "post""mark \$(dmesg | wc -l) \$(cut -d" " -f1 /proc/uptime)"
dmesg | tail -n +$((LX_NLOG + 1)) | sed 's/^/newlog: /'
echo 3 >/proc/sys/vm/drop_caches; hvblk --verify hv.blk=/dev/vda hv.blk_mib=$mib hv.blk_seed=$seed; echo "end""mark \$?"
IN
	SOCK=$sock expect_rc 0 "commands typed into the guest" ctl vm console "$vm" --input "$TMP/in2"
	timeout $((dur + 120)) "$CTL" --socket "$sock" vm console "$vm" --from-start \
		--until "endmark " >/dev/null 2>&1 || fail "no endmark on the console"
	sleep 1
	w1=$(date +%s)
	SOCK=$sock ctl vm console "$vm" --from-start | tr -d '\r' >"$TMP/post.txt"
	grep -E "^(hvguest|hvblk|postmark|endmark|newlog)" "$TMP/post.txt"
	grep -q "^hvguest: check ok pages=" "$TMP/post.txt" &&
		ok "after: the workload's check passed over its whole region" ||
		fail "workload: $(grep -E '^hvguest' "$TMP/post.txt")"
	read -r _ nlog1 up1 <<<"$(grep -E "^postmark [0-9]+ [0-9.]+$" "$TMP/post.txt" | tail -1)"
	# One line is allowed: the kernel's once-a-boot note that a timer
	# interrupt ran long ("hrtimer: interrupt took 28762718 ns", seen
	# during a migration nested under TCG, where the host's two cores
	# also run the rig, both daemons and the copy). Any other fails.
	grep '^newlog: ' "$TMP/post.txt" | grep -v 'hrtimer: interrupt took [0-9]* ns$' >"$TMP/newlog" || true
	new=$(wc -l <"$TMP/newlog")
	[ -n "$nlog1" ] && [ "$new" = 0 ] &&
		ok "after: the kernel logged nothing new ($LX_NLOG lines before, $nlog1 after)" ||
		fail "the kernel logged $((${nlog1:-0} - LX_NLOG)) new lines: $(cat "$TMP/newlog")"
	awk -v a="$LX_UP0" -v b="${up1:-0}" -v w=$((w1 - LX_W0 + 2)) \
		'BEGIN { exit !(b > a && b - a <= w) }' &&
		ok "after: uptime continued ($LX_UP0 s -> $up1 s, wall $((w1 - LX_W0)) s)" ||
		fail "uptime $LX_UP0 -> ${up1:-?} over $((w1 - LX_W0)) s of wall clock"
	grep -q "^hvblk: ok dev=/dev/vda mib=$mib seed=$seed " "$TMP/post.txt" &&
		grep -q "^endmark 0$" "$TMP/post.txt" &&
		ok "after: the disk's blocks read back from the device in the guest" ||
		fail "hvblk --verify in the guest: $(grep -E '^(hvblk|endmark)' "$TMP/post.txt")"
}

# linux_hold_start SOCK VM MIB SEED HOLD_MIB [RATE]: device DMA the guest
# keeps (tools/guest/hvblk.c, --hold): in the guest's background, the MIB
# MiB of blocks hvblk wrote at boot are read over and over with O_DIRECT
# into a buffer of HOLD_MIB MiB (at most RATE MiB/s; 0: no cap), each
# chunk checked before it is read again. Waits for the first pass. Sets
# LX_HOLD (on).
linux_hold_start() {
	local sock=$1 vm=$2 mib=$3 seed=$4 hold=$5 rate=${6:-0}
	printf '%s\n' "hvblk --hold hv.blk=/dev/vda hv.blk_mib=$mib hv.blk_seed=$seed hv.hold_mib=$hold hv.hold_rate=$rate & HOLDPID=\$!" >"$TMP/in_hold"
	SOCK=$sock expect_rc 0 "device reads started" ctl vm console "$vm" --input "$TMP/in_hold"
	if timeout 120 "$CTL" --socket "$sock" vm console "$vm" --from-start \
		--until "hvblk: hold reading" >/dev/null 2>&1; then
		ok "the guest reads $hold MiB of its disk into memory, over and over (at most ${rate:-0} MiB/s)"
	else
		fail "no 'hvblk: hold reading' in 120 s: $(SOCK=$sock ctl vm console "$vm" | tr -d '\r' | grep hvblk | tail -3)"
	fi
	LX_HOLD=1
}

# linux_hold_stop SOCK VM: end the reads started by linux_hold_start (the
# guest on this daemon, after it moved) and take their verdict: every
# check before a chunk was read again, and the whole buffer checked at
# the end, against the blocks each read brought.
linux_hold_stop() {
	local sock=$1 vm=$2
	printf '%s\n' 'touch /tmp/hold.stop; wait $HOLDPID; echo "hold""end $?"' >"$TMP/in_hstop"
	SOCK=$sock expect_rc 0 "device reads told to stop" ctl vm console "$vm" --input "$TMP/in_hstop"
	timeout 180 "$CTL" --socket "$sock" vm console "$vm" --from-start \
		--until "holdend " >/dev/null 2>&1 || fail "no holdend on the console"
	sleep 1
	SOCK=$sock ctl vm console "$vm" --from-start | tr -d '\r' >"$TMP/hold.txt"
	grep -E "^hvblk: hold (ok|FAILED)" "$TMP/hold.txt"
	grep -q "^hvblk: hold ok " "$TMP/hold.txt" && grep -q "^holdend 0$" "$TMP/hold.txt" &&
		ok "after: every block the device read into the guest's memory is there, checked in the guest" ||
		fail "device reads: $(grep -E '^(hvblk: hold|holdend)' "$TMP/hold.txt" | tail -3)"
}
