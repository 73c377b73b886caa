// SPDX-License-Identifier: MIT
/*
 * The guest image's halt (arch/x86/guest/halt.c) under plain QEMU with
 * TCG (no /dev/kvm needed): the self-test halts 50 times on the LAPIC
 * timer, checks each halt's length on the TSC itself (an ASSERT fails the
 * boot), then spins as long. QEMU's CPU time is read at the sync lines
 * the guest prints, so the halt's cost is compared with the spin's in the
 * same run.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/hv_test.h"

static bool have_qemu(void)
{
	return system("command -v qemu-system-x86_64 >/dev/null 2>&1") == 0;
}

/* utime + stime of @pid in clock ticks, or 0. */
static unsigned long long proc_cpu(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%llu %llu",
			 &ut, &st) != 2)
		return 0;
	return ut + st;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_guest_halts_on_the_lapic_timer_under_qemu_tcg(void)
{
	char line[512];
	unsigned long long c_begin = 0, c_halt = 0, c_spin = 0;
	double w_begin = 0, w_halt = 0, w_spin = 0, hz = sysconf(_SC_CLK_TCK);
	bool ok = false, saw_halt = false;
	int fds[2], st;
	pid_t pid;
	FILE *out;

	if (!have_qemu()) {
		hv_test_skip(__func__, "qemu-system-x86_64 is not installed");
		return;
	}
	CU_ASSERT_FATAL(pipe(fds) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		alarm(120);
		execlp("qemu-system-x86_64", "qemu-system-x86_64", "-M",
		       "microvm,x-option-roms=off,rtc=off", "-accel", "tcg",
		       "-cpu", "qemu64", "-m", "256M", "-kernel",
		       HV_GUEST_ELF_PATH, "-nographic", "-no-reboot",
		       "-monitor", "none", "-serial", "stdio", "-device",
		       "isa-debug-exit,iobase=0xf4,iosize=4", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	CU_ASSERT_FATAL(out != NULL);
	while (fgets(line, sizeof(line), out)) {
		printf("\n    %s", line);
		if (strstr(line, "sync halt-begin")) {
			c_begin = proc_cpu(pid);
			w_begin = mono_s();
		} else if (strstr(line, "sync halt-end")) {
			c_halt = proc_cpu(pid);
			w_halt = mono_s();
			saw_halt = true;
		} else if (strstr(line, "sync spin-end")) {
			c_spin = proc_cpu(pid);
			w_spin = mono_s();
		} else if (strstr(line, "hvguest: selftest OK")) {
			ok = true;
		}
	}
	fclose(out);
	waitpid(pid, &st, 0);
	CU_ASSERT(saw_halt);
	CU_ASSERT(ok);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	if (saw_halt && w_spin > w_halt && w_halt > w_begin) {
		double halt = (c_halt - c_begin) / hz / (w_halt - w_begin);
		double spin = (c_spin - c_halt) / hz / (w_spin - w_halt);

		printf("    QEMU CPU while the guest halts %.0f%%, spins "
		       "%.0f%%\n",
		       halt * 100, spin * 100);
		/* The spin takes what it can get of a CPU (half of one on
		 * a loaded two-core host); the halt a fraction of that. */
		CU_ASSERT(halt < spin * 0.5);
	}
}

static CU_TestInfo tests[] = {
	{"guest_halts_on_the_lapic_timer_under_qemu_tcg",
	 test_guest_halts_on_the_lapic_timer_under_qemu_tcg},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("arch/x86/guest_halt", NULL, NULL, tests);
