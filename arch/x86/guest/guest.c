// SPDX-License-Identifier: MIT
/*
 * The guest image's C side: per-CPU GDT/TSS/IDT set-up in ring 0, the ucall
 * (ring 3 -> ud2 -> ring-0 #UD handler -> port I/O), and the ring-3 main
 * that runs the shared workload (hvcore/workload.c) on identity-mapped
 * memory.
 *
 * Two modes, chosen by CPU 0 at boot from the params page:
 *  - under our VMM the params page holds HV_WL_MAGIC: every vCPU runs
 *    hv_wl_run() and reports through ucalls;
 *  - under plain QEMU (no params) with "hvwl ..." on the PVH command line,
 *    CPU 0 writes the params page from it and runs like under our VMM;
 *    its ucalls go to the debug console (qemu_mode.c);
 *  - under plain QEMU (no params, no "hvwl") CPU 0 runs a built-in
 *    self-test workload, checks the stamps it wrote, prints the result on
 *    COM1 and leaves through isa-debug-exit (status 0 = pass, 1 = fail).
 *
 * Everything here is freestanding: no libc; gcc may still emit calls to
 * memset/memcpy, which are defined at the end.
 */
#include <stdint.h>
#include <stddef.h>

#include "arch/x86/guest/halt.h"
#include "arch/x86/guest/layout.h"
#include "arch/x86/guest/qemu_mode.h"
#include "arch/x86/guest/ucall.h"
#include "hvcore/workload.h"

_Static_assert(VMM_PT_GPA == HV_X86_AP_PT_GPA, "entry.S and the VMM agree");

struct hv_trap_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;
};

struct tss64 {
	uint32_t rsv0;
	uint64_t rsp[3];
	uint64_t rsv1;
	uint64_t ist[7];
	uint64_t rsv2;
	uint16_t rsv3;
	uint16_t iomap;
} __attribute__((packed));

struct idt_gate {
	uint16_t off0;
	uint16_t sel;
	uint8_t ist;
	uint8_t type;
	uint16_t off1;
	uint32_t off2;
	uint32_t rsv;
} __attribute__((packed));

struct desc_ptr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

/* Referenced from entry.S. */
void hv_guest_cpu_main(uint64_t cpu, uint64_t start_info);
void hv_guest_trap(struct hv_trap_frame *f);
void hv_guest_enter_user(void (*rip)(uint64_t), uint64_t rsp, uint64_t arg)
	__attribute__((noreturn));
extern const uint64_t hv_guest_trap_stubs[32];
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);

__attribute__((aligned(16))) uint64_t hv_guest_gdt[GDT_BYTES / 8] = {
	0,
	0x00af9a000000ffffULL, /* kernel code64 */
	0x00cf92000000ffffULL, /* kernel data */
	0x00cff2000000ffffULL, /* user data, DPL 3 */
	0x00affa000000ffffULL, /* user code64, DPL 3 */
};
__attribute__((aligned(4096))) uint8_t hv_guest_kstack[MAX_CPUS * KSTACK_SIZE];
static __attribute__((aligned(4096))) uint8_t ustack[MAX_CPUS][USTACK_SIZE];
static __attribute__((aligned(64))) struct tss64 tss[MAX_CPUS];
static __attribute__((aligned(16))) struct idt_gate idt[256];
/* Written by CPU 0 in ring 0 before any CPU enters ring 3. */
static volatile int qemu_mode;

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port) : "memory");
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* ---- ring 0 ---------------------------------------------------------- */

static void serial_puts(const char *s)
{
	while (*s)
		outb(COM1_PORT, (uint8_t)*s++);
}

static void serial_putu(uint64_t v)
{
	char buf[24];
	int i = 23;

	buf[i] = 0;
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v && i > 0);
	serial_puts(&buf[i]);
}

static void qemu_exit(uint32_t status)
{
	/* isa-debug-exit: QEMU exits with (status << 1) | 1. */
	outl(QEMU_DEBUG_EXIT_PORT, status);
}

static void ucall_deliver(const struct hv_ucall *uc)
{
	if (hv_guest_qemu_ucall(uc))
		return;
	outl(HV_UCALL_PORT, (uint32_t)(uintptr_t)uc);
	if (uc->cmd == HV_UCALL_HALT) {
		hv_guest_halt_deliver((struct hv_ucall *)uc, !qemu_mode);
		return;
	}
	if (!qemu_mode)
		return;
	if (uc->cmd == HV_UCALL_ASSERT) {
		serial_puts("hvguest: ASSERT ");
		serial_puts(uc->file);
		serial_puts(":");
		serial_putu(uc->line);
		serial_puts(" arg0=");
		serial_putu(uc->args[0]);
		serial_puts(" arg1=");
		serial_putu(uc->args[1]);
		serial_puts("\n");
		qemu_exit(1);
	} else if (uc->cmd == HV_UCALL_SYNC) {
		serial_puts("hvguest: sync ");
		serial_puts(uc->file);
		for (int i = 0; i < HV_UCALL_MAX_ARGS; i++) {
			serial_puts(" ");
			serial_putu(uc->args[i]);
		}
		serial_puts("\n");
	} else if (uc->cmd == HV_UCALL_DONE) {
		serial_puts(uc->args[0] ? "hvguest: selftest FAIL"
					: "hvguest: selftest OK");
		serial_puts(" writes=");
		serial_putu(uc->args[1]);
		serial_puts(" passes=");
		serial_putu(uc->args[2]);
		serial_puts("\n");
		qemu_exit(uc->args[0] ? 1 : 0);
	}
}

static uint64_t cur_cpu(void)
{
	uint64_t rsp;

	__asm__ volatile("mov %%rsp, %0" : "=r"(rsp));
	return (rsp - (uint64_t)(uintptr_t)hv_guest_kstack) >> KSTACK_SHIFT;
}

/* A per-CPU ucall block for ring-0 reports (unexpected exceptions). */
static struct hv_ucall kernel_uc[MAX_CPUS];

void hv_guest_trap(struct hv_trap_frame *f)
{
	static const char exc_file[] = "arch/x86/guest exception";
	struct hv_ucall *uc;
	uint64_t cpu, cr2;

	if (f->vector == 6 && (f->cs & 3) == 3 &&
	    *(const volatile uint16_t *)(uintptr_t)f->rip == 0x0b0f) {
		ucall_deliver((const struct hv_ucall *)(uintptr_t)f->rdi);
		f->rip += 2;
		return;
	}
	/* Anything else is fatal: report vector, error code, rip, cr2. */
	cpu = cur_cpu();
	if (cpu >= MAX_CPUS)
		cpu = 0;
	__asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
	uc = &kernel_uc[cpu];
	uc->cmd = HV_UCALL_ASSERT;
	uc->line = (uint32_t)f->vector;
	uc->args[0] = f->vector;
	uc->args[1] = f->error;
	uc->args[2] = f->rip;
	uc->args[3] = cr2;
	for (unsigned i = 0; i < sizeof(exc_file); i++)
		uc->file[i] = exc_file[i];
	ucall_deliver(uc);
	for (;;)
		__asm__ volatile("cli; hlt");
}

static void user_main(uint64_t cpu) __attribute__((noreturn));

static void set_gate(unsigned v, uint64_t a)
{
	idt[v].off0 = (uint16_t)a;
	idt[v].sel = SEL_KCODE;
	idt[v].ist = 0;
	idt[v].type = 0x8e; /* present, DPL 0, interrupt gate */
	idt[v].off1 = (uint16_t)(a >> 16);
	idt[v].off2 = (uint32_t)(a >> 32);
	idt[v].rsv = 0;
}

void hv_guest_cpu_main(uint64_t cpu, uint64_t start_info)
{
	uint64_t base = (uint64_t)(uintptr_t)&tss[cpu];
	uint64_t lim = sizeof(struct tss64) - 1;
	unsigned slot = (SEL_TSS0 >> 3) + 2 * (unsigned)cpu;
	struct desc_ptr gdtp = {GDT_BYTES - 1,
				(uint64_t)(uintptr_t)hv_guest_gdt};
	struct desc_ptr idtp = {sizeof(idt) - 1, (uint64_t)(uintptr_t)idt};
	uint16_t tr = (uint16_t)(SEL_TSS0 + 16 * cpu);

	tss[cpu].rsp[0] =
		(uint64_t)(uintptr_t)hv_guest_kstack + (cpu + 1) * KSTACK_SIZE;
	tss[cpu].iomap = sizeof(struct tss64); /* no I/O bitmap */
	hv_guest_gdt[slot] = (lim & 0xffff) | (base & 0xffffff) << 16 |
			     0x89ULL << 40 | ((lim >> 16) & 0xf) << 48 |
			     ((base >> 24) & 0xff) << 56;
	hv_guest_gdt[slot + 1] = base >> 32;

	/* Every CPU writes the same gates: a benign, idempotent race. */
	for (unsigned v = 0; v < 32; v++)
		set_gate(v, hv_guest_trap_stubs[v]);
	/* The halt's LAPIC timer (halt.h); nothing else interrupts. */
	set_gate(HV_HALT_TIMER_VECTOR,
		 (uint64_t)(uintptr_t)hv_guest_halt_timer_isr);
	set_gate(HV_HALT_SPURIOUS_VECTOR,
		 (uint64_t)(uintptr_t)hv_guest_halt_spurious_isr);
	__asm__ volatile("lgdt %0" : : "m"(gdtp));
	__asm__ volatile("lidt %0" : : "m"(idtp));
	__asm__ volatile("ltr %0" : : "r"(tr));

	if (cpu == 0) {
		const volatile struct hv_wl_params *p =
			(const volatile struct hv_wl_params *)(uintptr_t)
				HV_WL_PARAMS_GPA;

		qemu_mode = p->magic != HV_WL_MAGIC &&
			    !hv_guest_qemu_boot(start_info);
		if (qemu_mode)
			serial_puts("hvguest: booted (PVH), no VMM params: "
				    "self-test\n");
	}
	hv_guest_enter_user(
		user_main, (uint64_t)(uintptr_t)&ustack[cpu][USTACK_SIZE], cpu);
}

/* ---- ring 3 ---------------------------------------------------------- */

static void ucall(uint32_t cmd, const char *file, uint32_t line, uint64_t a0,
		  uint64_t a1, uint64_t a2, uint64_t a3)
{
	struct hv_ucall uc;
	unsigned i = 0;

	uc.cmd = cmd;
	uc.line = line;
	uc.args[0] = a0;
	uc.args[1] = a1;
	uc.args[2] = a2;
	uc.args[3] = a3;
	if (file)
		for (; file[i] && i < HV_UCALL_FILE_LEN - 1; i++)
			uc.file[i] = file[i];
	uc.file[i] = 0;
	__asm__ volatile("ud2" : : "D"(&uc) : "memory");
}

#define GUEST_ASSERT2(cond, a, b)                                            \
	do {                                                                 \
		if (!(cond))                                                 \
			ucall(HV_UCALL_ASSERT, __FILE__, __LINE__, (a), (b), \
			      0, 0);                                         \
	} while (0)

static uint8_t *env_page_for_write(void *ctx, uint64_t gpa)
{
	(void)ctx;
	return (uint8_t *)(uintptr_t)gpa;
}

static const uint8_t *env_page_for_read(void *ctx, uint64_t gpa)
{
	(void)ctx;
	return (const uint8_t *)(uintptr_t)gpa;
}

static uint64_t env_now_tsc(void *ctx)
{
	(void)ctx;
	return rdtsc();
}

static void env_heartbeat(void *ctx, const struct hv_wl_status *st)
{
	(void)ctx;
	ucall(HV_UCALL_HEARTBEAT, 0, 0, st->seq, rdtsc(), 0, 0);
}

static void env_relax(void *ctx)
{
	(void)ctx;
	__asm__ volatile("pause");
}

/* Halt until the deadline (halt.h); spin when nobody halts us. */
static void env_wait_until(void *ctx, uint64_t tsc_deadline)
{
	if (!hv_guest_halt_until(tsc_deadline))
		env_relax(ctx);
}

static const struct hv_wl_env guest_env = {
	.page_for_write = env_page_for_write,
	.page_for_read = env_page_for_read,
	.now_tsc = env_now_tsc,
	.heartbeat = env_heartbeat,
	.relax = env_relax,
	.wait_until = env_wait_until,
};

/* QEMU self-test: 2048 pages at 8 MiB, two and a half passes. */
#define ST_REGION_GPA (8ULL << 20)
#define ST_PAGES 2048u
#define ST_WRITES (ST_PAGES * 5 / 2)

/*
 * QEMU self-test of the halt (halt.h): ST_HALT_N sleeps of ST_HALT_TICKS
 * TSC ticks (about 8 ms each at 2 GHz) must each last that long, take few
 * calls, and not overshoot much; then a spin of the same length. The sync
 * lines on COM1 (halt-begin, halt-end, spin-end) let a host compare the
 * CPU time QEMU used in each (tools/bench/guest-halt.sh).
 */
#define ST_HALT_N 50u
#define ST_HALT_TICKS 16000000ULL

static void halt_selftest(void)
{
	uint64_t t0, total, worst = 0, calls = 0;

	ucall(HV_UCALL_SYNC, "halt-begin", 0, ST_HALT_N, ST_HALT_TICKS, 0, 0);
	t0 = rdtsc();
	for (unsigned i = 0; i < ST_HALT_N; i++) {
		uint64_t d = rdtsc() + ST_HALT_TICKS;

		while ((int64_t)(d - rdtsc()) > 0) {
			GUEST_ASSERT2(hv_guest_halt_until(d), i, calls);
			calls++;
		}
		if (rdtsc() - d > worst)
			worst = rdtsc() - d;
	}
	total = rdtsc() - t0;
	ucall(HV_UCALL_SYNC, "halt-end", 0, total, worst, calls, 0);
	t0 = rdtsc();
	while (rdtsc() - t0 < total)
		__asm__ volatile("pause");
	ucall(HV_UCALL_SYNC, "spin-end", 0, rdtsc() - t0, 0, 0, 0);
	/* A timer that fires at once (bad calibration) takes many calls; a
	 * halt that overshoots badly doubles the time. */
	GUEST_ASSERT2(calls <= 3 * ST_HALT_N, calls, ST_HALT_N);
	GUEST_ASSERT2(total < 2 * ST_HALT_N * ST_HALT_TICKS, total,
		      ST_HALT_N * ST_HALT_TICKS);
}

static uint64_t selftest(void)
{
	volatile struct hv_wl_params *p =
		(volatile struct hv_wl_params *)(uintptr_t)HV_WL_PARAMS_GPA;
	volatile struct hv_wl_status *st =
		(volatile struct hv_wl_status *)(uintptr_t)HV_WL_STATUS_GPA;
	uint64_t bad = 0;
	int ret;

	p->version = HV_WL_VERSION;
	p->nr_vcpus = 1;
	p->tsc_khz = 1000000; /* no pacing: only the value's validity */
	p->vcpu[0].pattern = HV_WL_PATTERN_SWEEP;
	p->vcpu[0].content = HV_WL_CONTENT_TEXT;
	p->vcpu[0].region_gpa = ST_REGION_GPA;
	p->vcpu[0].region_pages = ST_PAGES;
	p->vcpu[0].write_pct = 100;
	p->vcpu[0].max_writes = ST_WRITES;
	p->magic = HV_WL_MAGIC;
	ret = hv_wl_run(p, &st[0], 0, &guest_env);
	GUEST_ASSERT2(ret == 0, (uint64_t)(int64_t)ret, 0);
	GUEST_ASSERT2(st[0].seq == ST_WRITES, st[0].seq, ST_WRITES);
	/* A sweep writes page i with seq i + 1 + k * pages for the last k. */
	for (uint64_t i = 0; i < ST_PAGES; i++) {
		const volatile struct hv_wl_stamp *s =
			(const volatile struct hv_wl_stamp
				 *)(uintptr_t)(ST_REGION_GPA + i * 4096);
		uint64_t want = i + 1 + 2 * (uint64_t)ST_PAGES;

		if (want > ST_WRITES)
			want -= ST_PAGES;
		if (s->magic != HV_WL_STAMP_MAGIC || s->vcpu != 0 ||
		    s->seq != want)
			bad++;
	}
	return bad;
}

static void user_main(uint64_t cpu)
{
	const volatile struct hv_wl_params *p =
		(const volatile struct hv_wl_params *)(uintptr_t)
			HV_WL_PARAMS_GPA;
	volatile struct hv_wl_status *st =
		(volatile struct hv_wl_status *)(uintptr_t)HV_WL_STATUS_GPA;
	int ret;

	if (qemu_mode) {
		uint64_t bad;

		halt_selftest();
		bad = selftest();

		for (;;)
			ucall(HV_UCALL_DONE, 0, 0, bad, st[0].seq, st[0].passes,
			      0);
	}
	GUEST_ASSERT2(cpu < p->nr_vcpus, cpu, p->nr_vcpus);
	ret = hv_wl_run(p, &st[cpu], (uint32_t)cpu, &guest_env);
	for (;;)
		ucall(HV_UCALL_DONE, 0, 0, (uint64_t)(int64_t)ret, st[cpu].seq,
		      st[cpu].passes, 0);
}

void *memset(void *d, int c, size_t n)
{
	uint8_t *p = d;

	while (n--)
		*p++ = (uint8_t)c;
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	uint8_t *p = d;
	const uint8_t *q = s;

	while (n--)
		*p++ = *q++;
	return d;
}
