#!/bin/bash
# Debian's kernel (the KVM rig's own package) boots on migrated's KVM
# accelerator with the project's initramfs (tools/guest), through
# `hvbench boot`, with 1 and 2 vCPUs: the console shows the kernel's
# banner, nproc equals the vCPU count, the workload's start line, the
# in-guest check passes after 10 s of writing, and the guest's reboot
# ends the VM with reason reboot. The 1-vCPU guest boots the bzImage
# (the boot protocol's 64-bit entry), the 2-vCPU one the same kernel's
# ELF vmlinux (unpacked by mkinitramfs.sh) through its PVH entry; both
# must find the MP table and the RAM of our e820 map.
# Labelled kvm: fails without /dev/kvm.
#
#   test_linux_boot.sh HVBENCH HVGUEST
set -uo pipefail

hvbench=$1
hvguest=$2
top=$(cd "$(dirname "$0")/../.." && pwd -P)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/linux_boot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Kernel and initramfs are kept next to hvguest in the build tree:
# mkinitramfs.sh rebuilds them only when an input changed (unpacking the
# kernel package nested under TCG takes minutes).
img=$(dirname "$hvguest")
fails=0

ok() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

[ -c /dev/kvm ] || { echo "FAIL no /dev/kvm (run in the KVM rig)"; exit 1; }
"$top/tools/guest/mkinitramfs.sh" --hvguest "$hvguest" \
	--out "$img/initramfs.cpio.gz" --kernel-out "$img/vmlinuz" ||
	{ echo "FAIL cannot build the guest initramfs"; exit 1; }

for run in "1 vmlinuz bzimage" "2 vmlinux pvh"; do
	read -r n kfile entry <<<"$run"
	log=$tmp/boot$n.log
	"$hvbench" boot --kernel "$img/$kfile" \
		--initrd "$img/initramfs.cpio.gz" \
		--cmdline "hv.size=32 hv.duration=10" --mem 512M --vcpus "$n" \
		--timeout 200 --until "hvguest: start" >"$log.raw" 2>&1
	rc=$?
	# The guest's tty ends lines with CR LF.
	tr -d '\r' <"$log.raw" >"$log"
	check() { # check DESCRIPTION PATTERN
		if grep -q -- "$2" "$log"; then
			ok "vcpus=$n $1"
		else
			fail "vcpus=$n $1 (no '$2' on the console)"
		fi
	}
	check "kernel banner" "^\[ *[0-9.]*\] Linux version "
	check "MP table found" "found SMP MP-table"
	check "nproc = vCPUs" "^hvguest: nproc=$n\$"
	check "workload start line" "^hvguest: start vcpus=$n "
	check "in-guest check passes" "^hvguest: check ok pages="
	check "ends as reboot" "hvbench boot: exit=reboot "
	check "booted through the $entry entry" "hvbench boot: exit=.* entry=$entry "
	check "RAM above 1 MiB in the e820 map" "BIOS-e820: \[mem 0x0000000000100000-0x000000001fffffff\] usable"
	[ $rc = 0 ] && ok "vcpus=$n hvbench status 0" ||
		fail "vcpus=$n hvbench status $rc"
	grep "hvbench boot:" "$log"
	if [ $fails -gt 0 ]; then
		echo "---- last console lines (vcpus=$n)"
		tail -40 "$log"
	fi
done
[ $fails = 0 ] && echo "PASS test_linux_boot" && exit 0
echo "FAILED test_linux_boot: $fails"
exit 1
