// SPDX-License-Identifier: MIT
/*
 * kvm-ring-repro: an independent check of the KVM dirty ring on this
 * machine, with raw ioctls only (no hvcore code), in the style of the
 * kernel's tools/testing/selftests/kvm/dirty_log_test.c.
 *
 * One VM, one memslot at GPA 0 with KVM_MEM_LOG_DIRTY_PAGES from the
 * start, 1 or 2 vCPUs in 64-bit mode running a few bytes of guest code
 * that sweeps its own region and stamps every page with a global sequence
 * number (at offset 8). The guest runs at CPL 0 or CPL 3 (-c): on the
 * nested PVM host, CPL 0 code is largely emulated by the host kernel.
 *
 * Ring protocol followed exactly as in KVM's api.rst
 * ("KVM_CAP_DIRTY_LOG_RING"): load-acquire flags, read slot/offset, record
 * the page, store-release KVM_DIRTY_GFN_F_RESET, then KVM_RESET_DIRTY_RINGS.
 * The vCPU thread handles KVM_EXIT_DIRTY_RING_FULL (collect its own ring,
 * reset, re-enter); the main thread harvests every ring each round.
 * A per-ring mutex serialises the two collectors of one ring.
 *
 * Checks:
 *  - desync: our fetch entry is not DIRTY while a later entry of the lap is
 *    (read in that order, so a concurrent push cannot fake it);
 *  - lap: one collection found a whole ring of DIRTY entries (impossible
 *    unless the kernel pushed past the ring's size);
 *  - empty full exit: KVM_EXIT_DIRTY_RING_FULL with nothing to collect
 *    (normal once in a while when the other thread just collected, but
 *    a run of them means the kernel's reset index is stuck);
 *  - oracle (dirty_log_test): a page whose stamp changed between the
 *    snapshots of rounds i-1 and i must be reported in round i or i+1;
 *    after the vCPUs stop, in the final round. Otherwise it is a miss.
 *  - the kernel's warn_count (/sys/kernel/warn_count) before and after.
 *
 * Build: gcc -O2 -pthread -o kvm-ring-repro tools/kvm-ring-repro/repro.c
 * Usage: kvm-ring-repro [-r entries] [-v vcpus] [-c 0|3] [-i round_us]
 *                       [-t seconds] [-p region_pages] [-o pages] [-s]
 *   -o N: the guest does an OUT (userspace exit) every N pages written.
 *   -s: on a desync, skip our fetch index forward to the next DIRTY entry
 *       (what hvcore did); default: follow the protocol and never skip.
 * Exit status: 0 clean, 1 misses or desyncs seen, 2 setup error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef KVM_CAP_DIRTY_LOG_RING_ACQ_REL
#define KVM_CAP_DIRTY_LOG_RING_ACQ_REL 223
#endif

#define PAGE 4096ULL
#define GDT_GPA 0x1000ULL
#define PML4_GPA 0x2000ULL
#define PDPT_GPA 0x3000ULL
#define PD_GPA 0x4000ULL
#define TSS_GPA 0x5000ULL
#define CODE_GPA 0x8000ULL
#define DATA_GPA 0x200000ULL
#define MAX_VCPUS 2

/*
 * Guest: rdi = region base, rsi = pages, rax = first stamp; r9 != 0: an
 * OUT to port 0xe9 (a userspace exit, like hvcore's ucalls) whenever
 * (rcx & r8) == 0.
 *   for (;;) for (rcx = 0; rcx < rsi; rcx++) {
 *     *(rdi + rcx * 4096 + 8) = rax++;
 *     if (r9 && !(rcx & r8)) outb(0xe9, al);
 *   }
 * Position independent; no stack, no interrupts, no exits of its own.
 */
extern const uint8_t guest_code[], guest_code_end[];
__asm__(".pushsection .rodata\n"
	".globl guest_code\n"
	".globl guest_code_end\n"
	"guest_code:\n"
	".code64\n"
	"1: xor %ecx, %ecx\n"
	"2: mov %rcx, %rdx\n"
	"   shl $12, %rdx\n"
	"   mov %rax, 8(%rdi,%rdx)\n"
	"   inc %rax\n"
	"   test %r9, %r9\n"
	"   jz 3f\n"
	"   test %r8, %rcx\n"
	"   jnz 3f\n"
	"   mov $0xe9, %dx\n"
	"   out %al, (%dx)\n"
	"3: inc %rcx\n"
	"   cmp %rsi, %rcx\n"
	"   jb 2b\n"
	"   jmp 1b\n"
	"guest_code_end:\n"
	".popsection\n");

struct vcpu {
	int id;
	int fd;
	struct kvm_run *run;
	struct kvm_dirty_gfn *ring;
	uint32_t fetch;
	pthread_mutex_t lock;
	pthread_t thread;
	uint64_t io_exits;
	uint64_t full_exits, empty_full, max_empty_run, empty_run;
	int err;
};

static struct {
	int sys_fd, vm_fd;
	uint32_t entries;
	bool acq_rel;
	int nr_vcpus, cpl;
	uint64_t region_pages, mem_bytes, npages;
	uint8_t *mem;
	struct vcpu v[MAX_VCPUS];
	uint64_t *reported; /* pages collected, not yet taken by a round */
	bool skip;
	uint64_t out_every; /* pages between OUTs, power of two; 0: none */
	volatile bool stop;
	/* counters (atomics) */
	uint64_t entries_seen, desyncs, laps, bad, resets, skipped;
	uint64_t max_desync_dist;
} g;

static void die(const char *what)
{
	fprintf(stderr, "kvm-ring-repro: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static long warn_count(void)
{
	FILE *f = fopen("/sys/kernel/warn_count", "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

static void atomic_max(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, false,
						       __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

/*
 * Collect one ring (caller holds c->lock). Returns entries collected.
 * The page's bit is set before the entry is handed back, so the reset
 * cannot re-protect a page we have not recorded yet.
 */
static uint32_t collect(struct vcpu *c)
{
	uint32_t mask = g.entries - 1, n = 0;

	while (n < g.entries) {
		struct kvm_dirty_gfn *e = &c->ring[c->fetch & mask];
		uint32_t flags = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE);
		uint32_t slot;
		uint64_t off;

		if (!(flags & KVM_DIRTY_GFN_F_DIRTY))
			break;
		slot = e->slot;
		off = e->offset;
		if (slot == 0 && off < g.npages)
			__atomic_fetch_or(&g.reported[off / 64],
					  1ULL << (off % 64), __ATOMIC_RELEASE);
		else
			__atomic_fetch_add(&g.bad, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&e->flags, KVM_DIRTY_GFN_F_RESET,
				 __ATOMIC_RELEASE);
		c->fetch++;
		n++;
	}
	if (n == g.entries)
		__atomic_fetch_add(&g.laps, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&g.entries_seen, n, __ATOMIC_RELAXED);
	if (n == g.entries)
		return n;
	/* Desync check: a later entry DIRTY, then ours still not. */
	for (uint32_t i = 1; i < g.entries; i++) {
		struct kvm_dirty_gfn *e = &c->ring[(c->fetch + i) & mask];

		if (!(__atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) &
		      KVM_DIRTY_GFN_F_DIRTY))
			continue;
		if (__atomic_load_n(&c->ring[c->fetch & mask].flags,
				    __ATOMIC_ACQUIRE) &
		    KVM_DIRTY_GFN_F_DIRTY)
			break; /* a push landed meanwhile: in step */
		__atomic_fetch_add(&g.desyncs, 1, __ATOMIC_RELAXED);
		atomic_max(&g.max_desync_dist, i);
		if (g.skip) {
			c->fetch += i;
			__atomic_fetch_add(&g.skipped, i, __ATOMIC_RELAXED);
			n += collect(c);
		}
		break;
	}
	return n;
}

static void reset_rings(void)
{
	if (ioctl(g.vm_fd, KVM_RESET_DIRTY_RINGS, 0) < 0)
		die("KVM_RESET_DIRTY_RINGS");
	__atomic_fetch_add(&g.resets, 1, __ATOMIC_RELAXED);
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *c = arg;

	while (!g.stop) {
		uint32_t n;

		if (ioctl(c->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			c->err = errno;
			fprintf(stderr, "vcpu%d: KVM_RUN: %s\n", c->id,
				strerror(errno));
			break;
		}
		if (c->run->exit_reason == KVM_EXIT_IO &&
		    c->run->io.port == 0xe9) {
			c->io_exits++;
			continue;
		}
		if (c->run->exit_reason != KVM_EXIT_DIRTY_RING_FULL) {
			fprintf(stderr, "vcpu%d: unexpected exit %u\n", c->id,
				c->run->exit_reason);
			c->err = EIO;
			break;
		}
		c->full_exits++;
		pthread_mutex_lock(&c->lock);
		n = collect(c);
		pthread_mutex_unlock(&c->lock);
		if (!n) {
			c->empty_full++;
			if (++c->empty_run > c->max_empty_run)
				c->max_empty_run = c->empty_run;
		} else {
			c->empty_run = 0;
		}
		reset_rings();
	}
	return NULL;
}

static void kick_handler(int sig)
{
	(void)sig;
}

static void setup_guest_memory(void)
{
	uint64_t *pml4 = (uint64_t *)(g.mem + PML4_GPA);
	uint64_t *pdpt = (uint64_t *)(g.mem + PDPT_GPA);
	uint64_t *pd = (uint64_t *)(g.mem + PD_GPA);
	uint64_t *gdt = (uint64_t *)(g.mem + GDT_GPA);
	uint64_t u = g.cpl ? 4 : 0; /* U/S bit */

	pml4[0] = PDPT_GPA | 3 | u;
	pdpt[0] = PD_GPA | 3 | u;
	for (int i = 0; i < 512; i++)
		pd[i] = ((uint64_t)i << 21) | 0x83 | u; /* 2 MiB, P W PS */
	gdt[1] = 0x00af9b000000ffffULL; /* 0x08 code64 DPL 0 */
	gdt[2] = 0x00cf93000000ffffULL; /* 0x10 data DPL 0 */
	gdt[3] = 0x00cff3000000ffffULL; /* 0x18 data DPL 3 */
	gdt[4] = 0x00affb000000ffffULL; /* 0x20 code64 DPL 3 */
	gdt[5] = 0x00008b0000000067ULL | ((TSS_GPA & 0xffffff) << 16);
	gdt[6] = 0;
	memcpy(g.mem + CODE_GPA, guest_code,
	       (size_t)(guest_code_end - guest_code));
}

static void seg(struct kvm_segment *s, uint16_t sel, uint8_t type,
		uint8_t dpl, bool code)
{
	memset(s, 0, sizeof(*s));
	s->selector = sel;
	s->limit = 0xffffffff;
	s->type = type;
	s->present = 1;
	s->dpl = dpl;
	s->s = 1;
	s->l = code;
	s->db = !code;
	s->g = 1;
}

static void setup_vcpu(struct vcpu *c, int id)
{
	struct kvm_sregs sr;
	struct kvm_regs r;
	uint8_t dpl = (uint8_t)g.cpl;
	size_t run_size = (size_t)ioctl(g.sys_fd, KVM_GET_VCPU_MMAP_SIZE, 0);

	c->id = id;
	pthread_mutex_init(&c->lock, NULL);
	c->fd = ioctl(g.vm_fd, KVM_CREATE_VCPU, id);
	if (c->fd < 0)
		die("KVM_CREATE_VCPU");
	c->run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      c->fd, 0);
	if (c->run == MAP_FAILED)
		die("mmap kvm_run");
	c->ring = mmap(NULL, g.entries * sizeof(struct kvm_dirty_gfn),
		       PROT_READ | PROT_WRITE, MAP_SHARED, c->fd,
		       KVM_DIRTY_LOG_PAGE_OFFSET * PAGE);
	if (c->ring == MAP_FAILED)
		die("mmap dirty ring");
	{
		struct {
			struct kvm_cpuid2 h;
			struct kvm_cpuid_entry2 e[256];
		} cpuid = {.h.nent = 256};

		if (ioctl(g.sys_fd, KVM_GET_SUPPORTED_CPUID, &cpuid) < 0)
			die("KVM_GET_SUPPORTED_CPUID");
		if (ioctl(c->fd, KVM_SET_CPUID2, &cpuid) < 0)
			die("KVM_SET_CPUID2");
	}
	if (ioctl(c->fd, KVM_GET_SREGS, &sr) < 0)
		die("KVM_GET_SREGS");
	seg(&sr.cs, g.cpl ? 0x23 : 0x08, 0xb, dpl, true);
	seg(&sr.ds, g.cpl ? 0x1b : 0x10, 0x3, dpl, false);
	sr.es = sr.fs = sr.gs = sr.ss = sr.ds;
	memset(&sr.tr, 0, sizeof(sr.tr));
	sr.tr.selector = 0x28;
	sr.tr.base = TSS_GPA;
	sr.tr.limit = 0x67;
	sr.tr.type = 11;
	sr.tr.present = 1;
	sr.gdt.base = GDT_GPA;
	sr.gdt.limit = 7 * 8 - 1;
	sr.cr0 = 0x80010031; /* PG WP NE ET PE */
	sr.cr3 = PML4_GPA;
	sr.cr4 = 0x20; /* PAE */
	sr.efer = 0x500; /* LME LMA */
	if (ioctl(c->fd, KVM_SET_SREGS, &sr) < 0)
		die("KVM_SET_SREGS");
	memset(&r, 0, sizeof(r));
	r.rip = CODE_GPA;
	r.rdi = DATA_GPA + (uint64_t)id * g.region_pages * PAGE;
	r.rsi = g.region_pages;
	r.rax = ((uint64_t)id + 1) << 48;
	r.r8 = g.out_every ? g.out_every - 1 : 0;
	r.r9 = g.out_every != 0;
	r.rflags = 0x3002; /* IOPL 3: OUT allowed at CPL 3 */
	if (ioctl(c->fd, KVM_SET_REGS, &r) < 0)
		die("KVM_SET_REGS");
}

static void setup_vm(void)
{
	struct kvm_enable_cap cap = {0};
	struct kvm_userspace_memory_region mr = {0};
	int max;

	g.sys_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (g.sys_fd < 0)
		die("open /dev/kvm");
	g.vm_fd = ioctl(g.sys_fd, KVM_CREATE_VM, 0);
	if (g.vm_fd < 0)
		die("KVM_CREATE_VM");
	g.acq_rel = ioctl(g.vm_fd, KVM_CHECK_EXTENSION,
			  KVM_CAP_DIRTY_LOG_RING_ACQ_REL) > 0;
	cap.cap = g.acq_rel ? KVM_CAP_DIRTY_LOG_RING_ACQ_REL
			    : KVM_CAP_DIRTY_LOG_RING;
	max = ioctl(g.vm_fd, KVM_CHECK_EXTENSION, cap.cap);
	if (max <= 0) {
		fprintf(stderr, "kvm-ring-repro: no dirty ring\n");
		exit(2);
	}
	/* Before any vCPU exists, as api.rst requires. */
	cap.args[0] = g.entries * sizeof(struct kvm_dirty_gfn);
	if (ioctl(g.vm_fd, KVM_ENABLE_CAP, &cap) < 0) {
		fprintf(stderr,
			"kvm-ring-repro: enable ring of %u entries "
			"(%llu bytes, max %d): %s\n",
			g.entries, (unsigned long long)cap.args[0], max,
			strerror(errno));
		exit(2);
	}
	g.mem_bytes = DATA_GPA + g.nr_vcpus * g.region_pages * PAGE;
	g.mem_bytes = (g.mem_bytes + (2ULL << 20) - 1) & ~((2ULL << 20) - 1);
	g.npages = g.mem_bytes / PAGE;
	g.mem = mmap(NULL, g.mem_bytes, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (g.mem == MAP_FAILED)
		die("mmap guest memory");
	setup_guest_memory();
	mr.slot = 0;
	mr.flags = KVM_MEM_LOG_DIRTY_PAGES; /* before the guest runs */
	mr.guest_phys_addr = 0;
	mr.memory_size = g.mem_bytes;
	mr.userspace_addr = (uint64_t)(uintptr_t)g.mem;
	if (ioctl(g.vm_fd, KVM_SET_USER_MEMORY_REGION, &mr) < 0)
		die("KVM_SET_USER_MEMORY_REGION");
	g.reported = calloc((g.npages + 63) / 64, 8);
	for (int i = 0; i < g.nr_vcpus; i++)
		setup_vcpu(&g.v[i], i);
}

/* ---- the oracle (dirty_log_test style) --------------------------------- */

struct oracle {
	uint64_t pages; /* region pages of all vCPUs, from DATA_GPA */
	uint64_t *prev, *cur;
	uint64_t *d;
	uint64_t *pending;
	uint64_t changed, reported, misses;
};

static void take_reported(struct oracle *o)
{
	uint64_t first = DATA_GPA / PAGE;

	/* DATA_GPA is 64-page aligned: word w of the region is word
	 * first / 64 + w of the slot. */
	for (uint64_t w = 0; w < (o->pages + 63) / 64; w++)
		o->d[w] = __atomic_exchange_n(&g.reported[first / 64 + w], 0,
					      __ATOMIC_ACQ_REL);
}

static void snapshot(struct oracle *o)
{
	uint64_t *t = o->prev;

	o->prev = o->cur;
	o->cur = t;
	for (uint64_t p = 0; p < o->pages; p++)
		o->cur[p] = __atomic_load_n(
			(uint64_t *)(g.mem + DATA_GPA + p * PAGE + 8),
			__ATOMIC_ACQUIRE);
}

static void round_harvest(struct oracle *o)
{
	for (int i = 0; i < g.nr_vcpus; i++) {
		pthread_mutex_lock(&g.v[i].lock);
		collect(&g.v[i]);
		pthread_mutex_unlock(&g.v[i].lock);
	}
	reset_rings();
	take_reported(o);
	snapshot(o);
}

static void check(struct oracle *o, bool final)
{
	for (uint64_t p = 0; p < o->pages; p++) {
		bool in_d = o->d[p / 64] >> (p % 64) & 1;
		uint64_t bitm = 1ULL << (p % 64);

		o->reported += in_d;
		if ((o->pending[p / 64] & bitm) && !in_d) {
			if (o->misses < 5)
				fprintf(stderr, "  miss: page %llu\n",
					(unsigned long long)p);
			o->misses++;
		}
		o->pending[p / 64] &= ~bitm;
		if (o->cur[p] == o->prev[p])
			continue;
		o->changed++;
		if (in_d)
			continue;
		if (final) {
			if (o->misses < 5)
				fprintf(stderr, "  miss (final): page %llu\n",
					(unsigned long long)p);
			o->misses++;
		} else {
			o->pending[p / 64] |= bitm;
		}
	}
}

int main(int argc, char **argv)
{
	struct oracle o = {0};
	unsigned round_us = 4000;
	double seconds = 5;
	uint64_t t_end, rounds = 0, io = 0, full = 0, empty = 0, max_empty = 0;
	long w0, w1;
	struct sigaction sa;
	int opt, err = 0;

	g.entries = 4096;
	g.nr_vcpus = 1;
	g.cpl = 3;
	g.region_pages = 4096;
	while ((opt = getopt(argc, argv, "r:v:c:i:t:p:so:")) != -1) {
		switch (opt) {
		case 'r': g.entries = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'v': g.nr_vcpus = atoi(optarg); break;
		case 'c': g.cpl = atoi(optarg); break;
		case 'i': round_us = (unsigned)strtoul(optarg, NULL, 0); break;
		case 't': seconds = atof(optarg); break;
		case 'p': g.region_pages = strtoull(optarg, NULL, 0); break;
		case 's': g.skip = true; break;
		case 'o': g.out_every = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: see the file's header\n");
			return 2;
		}
	}
	if (g.nr_vcpus < 1 || g.nr_vcpus > MAX_VCPUS ||
	    (g.cpl != 0 && g.cpl != 3) || !g.entries ||
	    (g.entries & (g.entries - 1)) || g.region_pages % 64 ||
	    (g.out_every & (g.out_every - 1)))
		return 2;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kick_handler;
	sigaction(SIGUSR1, &sa, NULL);
	setup_vm();
	o.pages = (uint64_t)g.nr_vcpus * g.region_pages;
	o.prev = calloc(o.pages, 8);
	o.cur = calloc(o.pages, 8);
	o.d = calloc((o.pages + 63) / 64, 8);
	o.pending = calloc((o.pages + 63) / 64, 8);

	w0 = warn_count();
	for (int i = 0; i < g.nr_vcpus; i++)
		if (pthread_create(&g.v[i].thread, NULL, vcpu_thread, &g.v[i]))
			die("pthread_create");
	round_harvest(&o); /* round 0: everything the guest touched so far */
	t_end = now_ns() + (uint64_t)(seconds * 1e9);
	while (now_ns() < t_end) {
		usleep(round_us);
		round_harvest(&o);
		check(&o, false);
		rounds++;
	}
	g.stop = true;
	for (int i = 0; i < g.nr_vcpus; i++) {
		__atomic_store_n(&g.v[i].run->immediate_exit, 1,
				 __ATOMIC_SEQ_CST);
		pthread_kill(g.v[i].thread, SIGUSR1);
	}
	for (int i = 0; i < g.nr_vcpus; i++) {
		pthread_join(g.v[i].thread, NULL);
		full += g.v[i].full_exits;
		io += g.v[i].io_exits;
		empty += g.v[i].empty_full;
		if (g.v[i].max_empty_run > max_empty)
			max_empty = g.v[i].max_empty_run;
		err |= g.v[i].err;
	}
	/* vCPUs stopped: every write is logged by now. */
	round_harvest(&o);
	check(&o, true);
	w1 = warn_count();

	printf("ring=%u acq_rel=%d vcpus=%d cpl=%d round_us=%u rounds=%llu "
	       "out_every=%llu io_exits=%llu entries=%llu full_exits=%llu "
	       "empty_full=%llu max_empty_run=%llu laps=%llu desyncs=%llu max_desync_dist=%llu "
	       "skipped=%llu bad=%llu changed=%llu reported=%llu misses=%llu "
	       "kernel_warns=%ld err=%d\n",
	       g.entries, g.acq_rel, g.nr_vcpus, g.cpl, round_us,
	       (unsigned long long)rounds,
	       (unsigned long long)g.out_every, (unsigned long long)io,
	       (unsigned long long)g.entries_seen, (unsigned long long)full,
	       (unsigned long long)empty, (unsigned long long)max_empty,
	       (unsigned long long)g.laps, (unsigned long long)g.desyncs,
	       (unsigned long long)g.max_desync_dist,
	       (unsigned long long)g.skipped, (unsigned long long)g.bad,
	       (unsigned long long)o.changed, (unsigned long long)o.reported,
	       (unsigned long long)o.misses,
	       (w0 >= 0 && w1 >= 0) ? w1 - w0 : -1L, err);
	return (o.misses || g.desyncs || g.laps || err) ? 1 : 0;
}
