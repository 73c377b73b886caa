// SPDX-License-Identifier: MIT
/*
 * The guest's workload mode under plain QEMU (qemu_mode.h).
 *
 * Command line (the PVH cmdline, `-append`), words separated by spaces;
 * the first must be "hvwl", the rest are key=value, all optional except
 * tsc_khz:
 *   pattern=sweep|random|hotset|idle   (sweep)
 *   content=stamp|text|random          (stamp)
 *   rate=N            page writes/s, 0 = flat out (0)
 *   heartbeat_us=N    0 = none (10000, our VMM's default)
 *   prefill=0|1       write the whole region once first (0)
 *   tsc_khz=N         the guest's TSC rate: under -cpu qemu64 the host's
 *   region_off_mib=N  region start (8, as under our VMM)
 *   region_mib=N      region size (0 = up to the end of that RAM range)
 *   write_pct=N hot_pct=N hot_share=N seed=N max_writes=N
 * The defaults are those of `migratectl vm create`, so that the same
 * words describe the same workload on both sides.
 *
 * Ring 0 only. Freestanding: no libc.
 */
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/guest/layout.h"
#include "arch/x86/guest/qemu_mode.h"
#include "hvcore/workload.h"

/* struct hvm_start_info / hvm_memmap_table_entry (Xen's PVH ABI). */
#define PVH_MAGIC 0x336ec578u
#define PVH_CMDLINE_OFF 24
#define PVH_MEMMAP_OFF 40
#define PVH_MEMMAP_N_OFF 48
#define PVH_RAM 1u

#define MIB (1ULL << 20)
#define CMDLINE_MAX 1024
#define QEMU_EXIT_PORT QEMU_DEBUG_EXIT_PORT

extern uint8_t hv_guest_kstack[];

/* Set by CPU 0 in ring 0 before any CPU enters ring 3; lives in guest
 * memory, so it migrates with the guest. */
static volatile int wl_mode;
/* Per vCPU: heartbeats sent, and whether "prefill done" went out. */
static uint64_t hb_count[MAX_CPUS];
static uint8_t prefill_said[MAX_CPUS];

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port) : "memory");
}

static void put(uint16_t port, const char *s)
{
	while (*s)
		outb(port, (uint8_t)*s++);
}

/* One string instruction: one exit under KVM for the whole line. */
static void put_line(const char *s, size_t n)
{
	__asm__ volatile("rep outsb"
			 : "+S"(s), "+c"(n)
			 : "d"((uint16_t)HV_QEMU_DEBUGCON_PORT)
			 : "memory");
}

static size_t fmt_u64(char *buf, uint64_t v)
{
	char tmp[24];
	size_t n = 0, i = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		buf[i++] = tmp[--n];
	return i;
}

static void put_u64(uint16_t port, uint64_t v)
{
	char buf[24];
	size_t n = fmt_u64(buf, v);

	for (size_t i = 0; i < n; i++)
		outb(port, (uint8_t)buf[i]);
}

static void die(const char *what, const char *word) __attribute__((noreturn));
static void die(const char *what, const char *word)
{
	put(COM1_PORT, "hvguest: bad command line: ");
	put(COM1_PORT, what);
	if (word) {
		put(COM1_PORT, " '");
		put(COM1_PORT, word);
		put(COM1_PORT, "'");
	}
	put(COM1_PORT, "\n");
	outl(QEMU_EXIT_PORT, 1);
	for (;;)
		__asm__ volatile("cli; hlt");
}

static int streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static uint64_t parse_u64(const char *key, const char *s)
{
	uint64_t v = 0;

	if (!*s)
		die("empty value of", key);
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			die("not a number: value of", key);
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v;
}

static uint32_t lookup(const char *key, const char *s,
		       const char *const *names, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		if (streq(names[i], s))
			return i;
	die("unknown value of", key);
}

static const char *const patterns[] = { "", "sweep", "random", "hotset",
					"idle" };
static const char *const contents[] = { "", "stamp", "text", "random" };

struct qcfg {
	struct hv_wl_vcpu_params v;
	uint64_t tsc_khz;
	uint64_t region_off, region_bytes;
};

/* One key=value word (NUL-terminated, '=' replaced by NUL at @val - 1). */
static void set_key(struct qcfg *c, const char *k, const char *val)
{
	if (streq(k, "pattern"))
		c->v.pattern = lookup(k, val, patterns, HV_WL_PATTERN_COUNT);
	else if (streq(k, "content"))
		c->v.content = lookup(k, val, contents, HV_WL_CONTENT_COUNT);
	else if (streq(k, "rate"))
		c->v.rate_pages = parse_u64(k, val);
	else if (streq(k, "heartbeat_us"))
		c->v.heartbeat_us = (uint32_t)parse_u64(k, val);
	else if (streq(k, "prefill"))
		c->v.prefill = parse_u64(k, val) != 0;
	else if (streq(k, "tsc_khz"))
		c->tsc_khz = parse_u64(k, val);
	else if (streq(k, "region_off_mib"))
		c->region_off = parse_u64(k, val) * MIB;
	else if (streq(k, "region_mib"))
		c->region_bytes = parse_u64(k, val) * MIB;
	else if (streq(k, "write_pct"))
		c->v.write_pct = (uint32_t)parse_u64(k, val);
	else if (streq(k, "hot_pct"))
		c->v.hot_pct = (uint32_t)parse_u64(k, val);
	else if (streq(k, "hot_share"))
		c->v.hot_share_pct = (uint32_t)parse_u64(k, val);
	else if (streq(k, "seed"))
		c->v.seed = parse_u64(k, val);
	else if (streq(k, "max_writes"))
		c->v.max_writes = parse_u64(k, val);
	else
		die("unknown key", k);
}

/* The end of the RAM range of the PVH memory map holding @gpa, 0 if none. */
static uint64_t ram_end(uint64_t start_info, uint64_t gpa)
{
	const volatile uint8_t *si = (const volatile uint8_t *)start_info;
	uint64_t map = *(const volatile uint64_t *)(si + PVH_MEMMAP_OFF);
	uint32_t n = *(const volatile uint32_t *)(si + PVH_MEMMAP_N_OFF);

	for (uint32_t i = 0; map && i < n; i++) {
		const volatile uint64_t *e =
			(const volatile uint64_t *)(uintptr_t)(map + i * 24);
		uint32_t type = *(const volatile uint32_t *)(e + 2);

		if (type == PVH_RAM && gpa >= e[0] && gpa - e[0] < e[1])
			return e[0] + e[1];
	}
	return 0;
}

static void write_params(const struct qcfg *c)
{
	volatile struct hv_wl_params *p =
		(volatile struct hv_wl_params *)(uintptr_t)HV_WL_PARAMS_GPA;
	volatile uint8_t *b = (volatile uint8_t *)p;

	/* Fresh RAM is zero, but a reset guest's is not. */
	for (size_t i = 0; i < sizeof(*p); i++)
		b[i] = 0;
	p->version = HV_WL_VERSION;
	p->nr_vcpus = 1;
	p->tsc_khz = c->tsc_khz;
	p->vcpu[0].pattern = c->v.pattern;
	p->vcpu[0].content = c->v.content;
	p->vcpu[0].region_gpa = c->v.region_gpa;
	p->vcpu[0].region_pages = c->v.region_pages;
	p->vcpu[0].rate_pages = c->v.rate_pages;
	p->vcpu[0].write_pct = c->v.write_pct;
	p->vcpu[0].hot_pct = c->v.hot_pct;
	p->vcpu[0].hot_share_pct = c->v.hot_share_pct;
	p->vcpu[0].heartbeat_us = c->v.heartbeat_us;
	p->vcpu[0].seed = c->v.seed;
	p->vcpu[0].max_writes = c->v.max_writes;
	p->vcpu[0].prefill = c->v.prefill;
	/* The magic last: the page is a workload once it is complete. */
	p->magic = HV_WL_MAGIC;
}

/*
 * The next space-separated word at @s, NUL-terminated in place, or NULL at
 * the end. *val: what follows its first '=' (that '=' becomes a NUL), or
 * NULL. *next: where to look for the word after it.
 */
static char *next_word(char *s, char **next, char **val)
{
	char *w, *e;

	while (*s == ' ')
		s++;
	if (!*s)
		return NULL;
	w = s;
	*val = NULL;
	for (e = w; *e && *e != ' '; e++) {
		if (*e == '=' && !*val) {
			*e = 0;
			*val = e + 1;
		}
	}
	*next = *e ? e + 1 : e;
	*e = 0;
	return w;
}

/* The RAM ranges on COM1: a host that dumps guest RAM reads them here. */
static void print_ram(uint64_t start_info)
{
	const volatile uint8_t *si = (const volatile uint8_t *)start_info;
	uint64_t map = *(const volatile uint64_t *)(si + PVH_MEMMAP_OFF);
	uint32_t n = *(const volatile uint32_t *)(si + PVH_MEMMAP_N_OFF);

	for (uint32_t i = 0; map && i < n; i++) {
		const volatile uint64_t *e =
			(const volatile uint64_t *)(uintptr_t)(map + i * 24);

		if (*(const volatile uint32_t *)(e + 2) != PVH_RAM)
			continue;
		put(COM1_PORT, "hvguest: ram ");
		put_u64(COM1_PORT, e[0]);
		put(COM1_PORT, " ");
		put_u64(COM1_PORT, e[1]);
		put(COM1_PORT, "\n");
	}
}

int hv_guest_qemu_boot(uint64_t start_info)
{
	static char buf[CMDLINE_MAX];
	const volatile char *cl;
	struct qcfg c = { 0 };
	uint64_t end;
	size_t n = 0;
	char *w, *next, *val;

	if (!start_info ||
	    *(const volatile uint32_t *)(uintptr_t)start_info != PVH_MAGIC)
		return 0;
	cl = (const volatile char *)(uintptr_t)*(const volatile uint64_t *)(
		(uintptr_t)start_info + PVH_CMDLINE_OFF);
	if (!cl)
		return 0;
	while (cl[n] && n < CMDLINE_MAX - 1) {
		buf[n] = cl[n];
		n++;
	}
	if (cl[n])
		die("longer than 1023 characters", NULL);
	buf[n] = 0;

	c.v.pattern = HV_WL_PATTERN_SWEEP;
	c.v.content = HV_WL_CONTENT_STAMP;
	c.v.write_pct = 100;
	c.v.heartbeat_us = 10000;
	c.v.seed = 0x5eed0000u;
	c.region_off = 8 * MIB;
	/* Words, in place: the first must be "hvwl", the rest key=value. */
	w = next_word(buf, &next, &val);
	if (!w || !streq(w, "hvwl") || val)
		return 0;
	while ((w = next_word(next, &next, &val))) {
		if (!val)
			die("not key=value", w);
		set_key(&c, w, val);
	}
	if (!c.tsc_khz)
		die("tsc_khz=N is required (the host's TSC rate)", NULL);
	if (c.region_off % 4096 || c.region_off < 8 * MIB)
		die("region_off_mib must be 8 or more", NULL);
	end = ram_end(start_info, c.region_off);
	if (!end)
		die("region_off_mib is not in RAM", NULL);
	if (!c.region_bytes)
		c.region_bytes = end - c.region_off;
	if (c.region_bytes > end - c.region_off)
		die("region_mib goes past the end of its RAM range", NULL);
	/* The boot page tables map the first 4 GiB. */
	if (c.region_off + c.region_bytes > (4ULL << 30))
		die("region beyond 4 GiB", NULL);
	c.v.region_gpa = c.region_off;
	c.v.region_pages = c.region_bytes / 4096;
	write_params(&c);
	if (hv_wl_check((const struct hv_wl_params *)(uintptr_t)
				HV_WL_PARAMS_GPA,
			0))
		die("invalid workload (e.g. hotset needs hot_pct)", NULL);
	wl_mode = 1;
	print_ram(start_info);
	put(COM1_PORT, "hvguest: workload from the command line, region ");
	put_u64(COM1_PORT, c.region_off >> 20);
	put(COM1_PORT, " MiB + ");
	put_u64(COM1_PORT, c.region_bytes >> 20);
	put(COM1_PORT, " MiB\n");
	return 1;
}

static uint64_t cur_cpu(void)
{
	uint64_t rsp;

	__asm__ volatile("mov %%rsp, %0" : "=r"(rsp));
	rsp = (rsp - (uint64_t)(uintptr_t)hv_guest_kstack) >> KSTACK_SHIFT;
	return rsp < MAX_CPUS ? rsp : 0;
}

static void heartbeat(uint64_t cpu, uint64_t seq)
{
	const volatile struct hv_wl_params *p =
		(const volatile struct hv_wl_params *)(uintptr_t)
			HV_WL_PARAMS_GPA;
	const volatile struct hv_wl_status *st =
		(const volatile struct hv_wl_status *)(uintptr_t)
			HV_WL_STATUS_GPA;
	char line[72] = "hb ";
	size_t n = 3;

	n += fmt_u64(line + n, cpu);
	line[n++] = ' ';
	n += fmt_u64(line + n, ++hb_count[cpu]);
	line[n++] = ' ';
	n += fmt_u64(line + n, seq);
	line[n++] = '\n';
	put_line(line, n);
	if (!prefill_said[cpu] && p->vcpu[cpu].prefill &&
	    hv_wl_prefilled(&p->vcpu[cpu], &st[cpu])) {
		static const char done[] = "prefill done\n";

		prefill_said[cpu] = 1;
		put_line(done, sizeof(done) - 1);
		put(COM1_PORT, "hvguest: prefill done\n");
	}
}

static void finish(const struct hv_ucall *uc) __attribute__((noreturn));
static void finish(const struct hv_ucall *uc)
{
	int fail = uc->cmd == HV_UCALL_ASSERT || uc->args[0];

	if (uc->cmd == HV_UCALL_ASSERT) {
		put(COM1_PORT, "hvguest: ASSERT ");
		put(COM1_PORT, uc->file);
		put(COM1_PORT, ":");
		put_u64(COM1_PORT, uc->line);
	} else {
		put(COM1_PORT, "hvguest: workload returned ");
		put_u64(COM1_PORT, uc->args[0]);
		put(COM1_PORT, " after ");
		put_u64(COM1_PORT, uc->args[1]);
		put(COM1_PORT, " writes");
	}
	put(COM1_PORT, "\n");
	put(HV_QEMU_DEBUGCON_PORT, fail ? "fail\n" : "done\n");
	outl(QEMU_EXIT_PORT, fail ? 1 : 0);
	for (;;)
		__asm__ volatile("cli; hlt");
}

int hv_guest_qemu_ucall(const struct hv_ucall *uc)
{
	if (!wl_mode)
		return 0;
	switch (uc->cmd) {
	case HV_UCALL_HEARTBEAT:
		heartbeat(cur_cpu(), uc->args[0]);
		return 1;
	case HV_UCALL_DONE:
	case HV_UCALL_ASSERT:
		finish(uc);
	default:
		return 1;
	}
}
