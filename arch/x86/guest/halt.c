// SPDX-License-Identifier: MIT
/*
 * The guest image's halt (arch/x86/guest/halt.h): an HV_UCALL_HALT from
 * ring 3, slept by our VMM's host thread or, under plain QEMU, by the
 * local APIC timer and HLT in ring 0. Freestanding, like guest.c.
 */
#include <stdint.h>

#include "arch/x86/guest/halt.h"
#include "arch/x86/guest/layout.h"

/* xAPIC registers (MMIO, identity-mapped by the boot page tables). */
#define LAPIC_BASE 0xfee00000ULL
#define LAPIC_ID 0x20
#define LAPIC_EOI 0xb0
#define LAPIC_SVR 0xf0
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_TIMER_ICR 0x380
#define LAPIC_TIMER_CCR 0x390
#define LAPIC_TIMER_DCR 0x3e0
#define SVR_ENABLE 0x100u
#define LVT_MASKED 0x10000u
#define LVT_ONESHOT 0x0u
#define LVT_TSC_DEADLINE 0x40000u
#define DCR_DIV1 0xbu
#define MSR_TSC_DEADLINE 0x6e0
#define CPUID1_ECX_TSC_DEADLINE (1u << 24)
/* LAPIC ticks counted per round while calibrating against the TSC
 * (about 0.26 ms at QEMU's 1 GHz APIC clock), and rounds. */
#define CALIB_TICKS (1u << 18)
#define CALIB_ROUNDS 5

/* Ring 0 state. Every CPU computes the same values: benign races. */
static volatile uint64_t lapic_per_tsc_fp; /* 32.32 LAPIC ticks per TSC */
static volatile int tsc_deadline_mode;	   /* 1: yes, -1: no, 0: unknown */
static volatile uint8_t lapic_ready[MAX_CPUS];

/* Ring 3: set when the host left a HALT unacknowledged. */
static volatile int host_deaf;

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static inline uint32_t lapic_read(uint32_t reg)
{
	return *(volatile uint32_t *)(uintptr_t)(LAPIC_BASE + reg);
}

static inline void lapic_write(uint32_t reg, uint32_t v)
{
	*(volatile uint32_t *)(uintptr_t)(LAPIC_BASE + reg) = v;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr"
			 :
			 : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32))
			 : "memory");
}

__attribute__((interrupt)) void hv_guest_halt_timer_isr(struct hv_int_frame *f)
{
	(void)f;
	lapic_write(LAPIC_EOI, 0);
}

/* A spurious interrupt takes no EOI. */
__attribute__((interrupt)) void
hv_guest_halt_spurious_isr(struct hv_int_frame *f)
{
	(void)f;
}

static int have_tsc_deadline(void)
{
	uint32_t a = 1, b, c = 0, d;

	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	return (c & CPUID1_ECX_TSC_DEADLINE) ? 1 : -1;
}

/*
 * One-shot mode counts at a rate we are not told: measure it against the
 * TSC. A measurement the host preempted counts too many TSC ticks and
 * gives a low rate (timers that fire early, halts that take many calls),
 * so the highest of a few short ones wins.
 */
static void calibrate(void)
{
	uint64_t best = 0;

	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | HV_HALT_TIMER_VECTOR);
	for (int i = 0; i < CALIB_ROUNDS; i++) {
		uint64_t t0, t1, fp;

		lapic_write(LAPIC_TIMER_ICR, 0xffffffffu);
		t0 = rdtsc();
		while (0xffffffffu - lapic_read(LAPIC_TIMER_CCR) < CALIB_TICKS)
			__asm__ volatile("pause");
		t1 = rdtsc();
		fp = ((uint64_t)CALIB_TICKS << 32) / (t1 - t0 ? t1 - t0 : 1);
		if (fp > best)
			best = fp;
	}
	lapic_write(LAPIC_TIMER_ICR, 0);
	lapic_per_tsc_fp = best;
}

static void lapic_setup(void)
{
	uint32_t id = lapic_read(LAPIC_ID) >> 24;

	if (id < MAX_CPUS && lapic_ready[id])
		return;
	lapic_write(LAPIC_SVR, SVR_ENABLE | HV_HALT_SPURIOUS_VECTOR);
	lapic_write(LAPIC_TIMER_DCR, DCR_DIV1);
	if (!tsc_deadline_mode)
		tsc_deadline_mode = have_tsc_deadline();
	if (tsc_deadline_mode < 0 && !lapic_per_tsc_fp)
		calibrate();
	if (id < MAX_CPUS)
		lapic_ready[id] = 1;
}

/* Halt until the TSC reaches @deadline or the timer fires early. */
static void lapic_halt_until(uint64_t deadline)
{
	uint64_t now = rdtsc(), count;

	if ((int64_t)(deadline - now) <= 0)
		return;
	lapic_setup();
	if (tsc_deadline_mode > 0) {
		lapic_write(LAPIC_LVT_TIMER,
			    LVT_TSC_DEADLINE | HV_HALT_TIMER_VECTOR);
		wrmsr(MSR_TSC_DEADLINE, deadline);
	} else {
		count = (uint64_t)(((unsigned __int128)(deadline - now) *
				    lapic_per_tsc_fp) >>
				   32);
		if (count > 0xffffffffu)
			count = 0xffffffffu;
		if (!count)
			count = 1;
		lapic_write(LAPIC_LVT_TIMER,
			    LVT_ONESHOT | HV_HALT_TIMER_VECTOR);
		lapic_write(LAPIC_TIMER_ICR, (uint32_t)count);
	}
	/* A timer that fired before the sti is taken right after it: sti
	 * opens interrupts only after the next instruction, the hlt. */
	__asm__ volatile("sti; hlt; cli" : : : "memory");
	if (tsc_deadline_mode > 0)
		wrmsr(MSR_TSC_DEADLINE, 0);
	else
		lapic_write(LAPIC_TIMER_ICR, 0);
}

void hv_guest_halt_deliver(struct hv_ucall *uc, int vmm)
{
	if (vmm)
		return; /* the host slept through the OUT and acknowledged */
	lapic_halt_until(uc->args[0]);
	uc->args[2] = HV_UCALL_HALT_ACK;
}

int hv_guest_halt_until(uint64_t tsc_deadline)
{
	volatile struct hv_ucall uc;

	if (host_deaf)
		return 0;
	uc.cmd = HV_UCALL_HALT;
	uc.line = 0;
	uc.args[0] = tsc_deadline;
	uc.args[1] = rdtsc();
	uc.args[2] = 0;
	uc.args[3] = 0;
	uc.file[0] = 0;
	__asm__ volatile("ud2" : : "D"(&uc) : "memory");
	if (uc.args[2] != HV_UCALL_HALT_ACK) {
		host_deaf = 1;
		return 0;
	}
	return 1;
}
