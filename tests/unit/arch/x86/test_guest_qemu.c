// SPDX-License-Identifier: MIT
/*
 * The guest image is a real PVH kernel: QEMU boots the same ELF
 * (-M microvm -kernel guest.elf). Without our VMM's params page the guest
 * runs its self-test workload in ring 3, checks its stamps, prints the
 * verdict on COM1 and leaves through isa-debug-exit (exit status
 * (code << 1) | 1, so 1 means pass).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/hv_test.h"

static bool have_qemu(void)
{
	return system("command -v qemu-system-x86_64 >/dev/null 2>&1") == 0;
}

static void test_same_elf_boots_under_qemu_microvm(void)
{
	char cmd[1024], out[4096] = "";
	size_t n = 0;
	FILE *p;
	int st;

	if (!have_qemu()) {
		hv_test_skip(__func__, "qemu-system-x86_64 is not installed");
		return;
	}
	HV_TEST_REQUIRE_KVM();
	snprintf(cmd, sizeof(cmd),
		 "timeout 60 qemu-system-x86_64 "
		 "-M microvm,x-option-roms=off,rtc=off -enable-kvm -cpu qemu64 "
		 "-m 256M -kernel %s -nographic -no-reboot -monitor none "
		 "-serial stdio -device isa-debug-exit,iobase=0xf4,iosize=4 "
		 "2>&1",
		 HV_GUEST_ELF_PATH);
	p = popen(cmd, "r");
	CU_ASSERT_FATAL(p != NULL);
	while (n < sizeof(out) - 1) {
		size_t got = fread(out + n, 1, sizeof(out) - 1 - n, p);

		if (!got)
			break;
		n += got;
	}
	out[n] = 0;
	st = pclose(p);
	printf("\n%s", out);
	CU_ASSERT(strstr(out, "hvguest: booted (PVH)") != NULL);
	CU_ASSERT(strstr(out, "hvguest: selftest OK writes=5120") != NULL);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
}

/* Needs /dev/kvm: the ctest test labelled "kvm" runs these. */
static CU_TestInfo kvm_tests[] = {
	{"same_elf_boots_under_qemu_microvm",
	 test_same_elf_boots_under_qemu_microvm},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE_KVM("arch/x86/guest_qemu", NULL, NULL, kvm_tests);
