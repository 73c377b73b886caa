# Helpers of the load and fault scripts (sourced, bash), on top of lib.sh:
# where a VM is, and whether its pages are intact (migratectl vm check,
# the page-stamp oracle of hvcore/wl_verify.h).
# Usage: source lib_faults.sh "$@"  with argv as for lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

# vm_state SOCK NAME: the VM's API state (VM_STATE_...), or "absent".
vm_state() {
	local s
	s=$("$CTL" --socket "$1" --json vm inspect "$2" 2>/dev/null |
		jq -r '.info.state // empty' 2>/dev/null)
	echo "${s:-absent}"
}

# wait_state SOCK NAME STATE [TENTHS]: wait (default 10 s) until NAME is
# in STATE ("absent" works too); 0 when it got there.
wait_state() {
	local sock=$1 name=$2 state=$3 n=${4:-100}
	wait_until '[ "$(vm_state "$sock" "$name")" = "$state" ]' \
		"$((n / 10)).$((n % 10))"
}

# vm_check SOCK NAME: run the oracle; CHECK_RC and CHECK_JSON are set and
# CHECK_TXT is a short summary ("clean 63488p" or "BAD ...").
vm_check() {
	CHECK_JSON=$("$CTL" --socket "$1" --timeout 60000 --json vm check "$2" 2>&1)
	CHECK_RC=$?
	if [ "$CHECK_RC" = 0 ]; then
		CHECK_TXT="clean $(echo "$CHECK_JSON" | jq -r .pages)p"
	elif [ "$CHECK_RC" = 1 ] && echo "$CHECK_JSON" | jq -e .pages >/dev/null 2>&1; then
		CHECK_TXT=$(echo "$CHECK_JSON" | jq -r '"BAD \(.bad)/\(.pages) stamp=\(.bad_stamp) content=\(.bad_content) stale=\(.stale) lost=\(.lost_vcpus) gfns=\(.bad_gfns|map(tostring)|join(","))"')
	else
		CHECK_TXT="check failed: $(echo "$CHECK_JSON" | tail -1)"
	fi
	return "$CHECK_RC"
}

# expect_intact DESC SOCK NAME: a check that the VM is there and clean.
expect_intact() {
	if vm_check "$2" "$3"; then
		ok "$1: $CHECK_TXT"
	else
		fail "$1: $CHECK_TXT"
	fi
}

# seq_total SOCK NAME: the sum of the VM's vCPU write counters.
seq_total() { SOCK=$1 seq_sum "$2"; }

# wait_log FILE REGEX [TENTHS]: wait (default 20 s) until FILE has a line
# matching REGEX (e.g. a fault point firing).
wait_log() {
	local file=$1 re=$2 n=${3:-200}
	wait_until 'grep -qE "$re" "$file"' "$((n / 10)).$((n % 10))"
}

# send_verified OUTFILE: migrate-send's report says the post-commit
# verification ran and found 0 differing pages.
send_verified() { grep -qE 'verified: +[1-9][0-9]* pages.*: 0 differ' "$1"; }

# in_parallel FUNC ARG...: run "FUNC ARG" for every ARG at once (each in
# a subshell), then print their ok/FAIL lines in ARG order and count the
# FAILs. For checks whose time is mostly waiting on busy daemons.
in_parallel() {
	local fn=$1 a pids=()
	shift
	for a in "$@"; do
		"$fn" "$a" >"$TMP/par.$a.txt" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	for a in "$@"; do
		cat "$TMP/par.$a.txt"
		FAILS=$((FAILS + $(grep -c '^FAIL' "$TMP/par.$a.txt")))
	done
}
