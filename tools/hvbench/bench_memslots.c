// SPDX-License-Identifier: MIT
/*
 * hvbench memslots: memslot-set scaling, the measurement behind KVM's
 * scalable-memslots work, run side by side in one process on
 *  - hash:  hv_memslots (id hash, sorted ranges + bucket index, two
 *           snapshots, RCU);
 *  - array: a baseline shaped like KVM before 5.17: one plain array of
 *           slots, linear-search lookups, every update copies the whole
 *           array, publishes the copy and waits for a grace period;
 *  - kvm:   the kernel's own KVM_SET_USER_MEMORY_REGION on a VM with no
 *           vCPUs (where /dev/kvm opens), so our overhead is visible as a
 *           fraction of the kernel's time.
 * Every slot is one page; slot i sits at gfn BASE + 2i, so there is a one
 * page gap after each slot for the add measurement.
 */
#include "tools/hvbench/hvbench.h"
#include "hvcore/memslots.h"
#include "hvcore/rcu.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define BASE_GFN 0x100000ULL /* 4 GiB */
#define MAX_SIZES 16
#define LOOKUP_BATCH 256

enum op {
	OP_ADD,
	OP_TOGGLE,
	OP_MOVE,
	OP_DELETE,
	OP_ID,
	OP_GFN_RND,
	OP_GFN_SEQ,
	NR_OPS,
};

enum impl { IMPL_HASH, IMPL_ARRAY, IMPL_KVM, NR_IMPLS };

static const char *const op_names[NR_OPS] = {
	[OP_ADD] = "add (us)",
	[OP_TOGGLE] = "flags toggle (us)",
	[OP_MOVE] = "move (us)",
	[OP_DELETE] = "delete (us)",
	[OP_ID] = "id lookup (ns)",
	[OP_GFN_RND] = "gfn lookup rnd (ns)",
	[OP_GFN_SEQ] = "gfn lookup seq (ns)",
};

static const char *const impl_names[NR_IMPLS] = { "hash", "array", "kvm" };

struct memslots_bench {
	unsigned sizes[MAX_SIZES];
	unsigned nr_sizes;
	unsigned reps;
	bool use_kvm;
	int kvm_fd;
	int kvm_max_slots;
	uint64_t rng;
	/* medians; NAN where not measured */
	double res[NR_OPS][NR_IMPLS][MAX_SIZES];
};

static uint64_t rnd(struct memslots_bench *b)
{
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	return b->rng;
}

static gfn_t slot_gfn(unsigned i)
{
	return BASE_GFN + 2 * (gfn_t)i;
}

/* ---- the three implementations behind one table ---------------------- */

struct impl_ops {
	int (*add)(void *ctx, uint32_t id, gfn_t base, hva_t hva);
	int (*set_flags)(void *ctx, uint32_t id, uint32_t flags);
	int (*move)(void *ctx, uint32_t id, gfn_t base);
	int (*del)(void *ctx, uint32_t id);
};

static int hash_add(void *ctx, uint32_t id, gfn_t base, hva_t hva)
{
	struct hv_memslot_desc d = {
		.id = id, .base_gfn = base, .npages = 1, .hva = hva,
	};

	return hv_memslots_add(ctx, &d);
}

static int hash_set_flags(void *ctx, uint32_t id, uint32_t flags)
{
	return hv_memslots_set_flags(ctx, id, flags);
}

static int hash_move(void *ctx, uint32_t id, gfn_t base)
{
	return hv_memslots_move(ctx, id, base);
}

static int hash_del(void *ctx, uint32_t id)
{
	return hv_memslots_delete(ctx, id);
}

static const struct impl_ops hash_ops = {
	hash_add, hash_set_flags, hash_move, hash_del,
};

/*
 * The array baseline. Deliberately simple, as KVM's memslots were before
 * 5.17: a copy of the whole array per update (KVM: kvm_dup_memslots),
 * publish, grace period, free. Lookups scan linearly (KVM had an id index
 * and a binary search by then; this baseline is the plain-array case).
 */
struct arr_slot {
	uint32_t id;
	uint32_t flags;
	gfn_t base_gfn;
	uint64_t npages;
	hva_t hva;
	struct hv_dirty_bitmap *dirty;
};

struct arr_snap {
	unsigned n;
	struct arr_slot s[];
};

struct arr_set {
	struct hv_rcu *rcu;
	struct arr_snap *_Atomic cur;
};

static struct arr_snap *arr_dup(const struct arr_snap *old, unsigned extra)
{
	struct arr_snap *s = malloc(sizeof(*s) +
				    (old->n + extra) * sizeof(s->s[0]));

	if (!s)
		return NULL;
	s->n = old->n;
	memcpy(s->s, old->s, old->n * sizeof(s->s[0]));
	return s;
}

static void arr_publish(struct arr_set *a, struct arr_snap *s,
			struct hv_dirty_bitmap *retire)
{
	struct arr_snap *old = atomic_load(&a->cur);

	atomic_store(&a->cur, s);
	hv_rcu_synchronize(a->rcu);
	hv_dirty_bitmap_destroy(retire);
	free(old);
}

static int arr_index(const struct arr_snap *s, uint32_t id)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->s[i].id == id)
			return (int)i;
	return -1;
}

static const struct arr_slot *arr_by_id(const struct arr_snap *s, uint32_t id)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->s[i].id == id)
			return &s->s[i];
	return NULL;
}

static const struct arr_slot *arr_by_gfn(const struct arr_snap *s, gfn_t gfn)
{
	for (unsigned i = 0; i < s->n; i++)
		if (gfn - s->s[i].base_gfn < s->s[i].npages)
			return &s->s[i];
	return NULL;
}

static bool arr_overlaps(const struct arr_snap *s, int skip, gfn_t base,
			 uint64_t npages)
{
	for (unsigned i = 0; i < s->n; i++)
		if ((int)i != skip &&
		    base < s->s[i].base_gfn + s->s[i].npages &&
		    s->s[i].base_gfn < base + npages)
			return true;
	return false;
}

static int arr_add(void *ctx, uint32_t id, gfn_t base, hva_t hva)
{
	struct arr_set *a = ctx;
	struct arr_snap *cur = atomic_load(&a->cur), *s;

	if (arr_index(cur, id) >= 0 || arr_overlaps(cur, -1, base, 1))
		return -EEXIST;
	s = arr_dup(cur, 1);
	if (!s)
		return -ENOMEM;
	s->s[s->n++] = (struct arr_slot){ id, 0, base, 1, hva, NULL };
	arr_publish(a, s, NULL);
	return 0;
}

static int arr_set_flags(void *ctx, uint32_t id, uint32_t flags)
{
	struct arr_set *a = ctx;
	struct arr_snap *cur = atomic_load(&a->cur), *s;
	struct hv_dirty_bitmap *retire = NULL;
	struct arr_slot *slot;
	int i = arr_index(cur, id);

	if (i < 0)
		return -ENOENT;
	s = arr_dup(cur, 0);
	if (!s)
		return -ENOMEM;
	slot = &s->s[i];
	if ((flags & HV_MEMSLOT_F_DIRTY_LOG) && !slot->dirty) {
		if (hv_dirty_bitmap_create(slot->npages, &slot->dirty)) {
			free(s);
			return -ENOMEM;
		}
	} else if (!(flags & HV_MEMSLOT_F_DIRTY_LOG)) {
		retire = slot->dirty;
		slot->dirty = NULL;
	}
	slot->flags = flags;
	arr_publish(a, s, retire);
	return 0;
}

static int arr_move(void *ctx, uint32_t id, gfn_t base)
{
	struct arr_set *a = ctx;
	struct arr_snap *cur = atomic_load(&a->cur), *s;
	int i = arr_index(cur, id);

	if (i < 0)
		return -ENOENT;
	if (arr_overlaps(cur, i, base, cur->s[i].npages))
		return -EEXIST;
	s = arr_dup(cur, 0);
	if (!s)
		return -ENOMEM;
	s->s[i].base_gfn = base;
	arr_publish(a, s, NULL);
	return 0;
}

static int arr_del(void *ctx, uint32_t id)
{
	struct arr_set *a = ctx;
	struct arr_snap *cur = atomic_load(&a->cur), *s;
	struct hv_dirty_bitmap *retire;
	int i = arr_index(cur, id);

	if (i < 0)
		return -ENOENT;
	s = arr_dup(cur, 0);
	if (!s)
		return -ENOMEM;
	retire = s->s[i].dirty;
	s->s[i] = s->s[--s->n];
	arr_publish(a, s, retire);
	return 0;
}

static const struct impl_ops arr_ops = {
	arr_add, arr_set_flags, arr_move, arr_del,
};

/* Bulk load (setup is not what is measured; one add each would be O(n^2)). */
static int arr_create(unsigned n, hva_t hva0, struct arr_set *a)
{
	struct arr_snap *s = malloc(sizeof(*s) + n * sizeof(s->s[0]));

	if (!s)
		return -ENOMEM;
	if (hv_rcu_create(&a->rcu)) {
		free(s);
		return -ENOMEM;
	}
	s->n = n;
	for (unsigned i = 0; i < n; i++)
		s->s[i] = (struct arr_slot){ i, 0, slot_gfn(i), 1,
					     hva0 + i * HV_PAGE_SIZE, NULL };
	atomic_init(&a->cur, s);
	return 0;
}

static void arr_destroy(struct arr_set *a)
{
	struct arr_snap *s = atomic_load(&a->cur);

	for (unsigned i = 0; i < s->n; i++)
		hv_dirty_bitmap_destroy(s->s[i].dirty);
	free(s);
	hv_rcu_destroy(a->rcu);
}

/* KVM: the same operations as KVM_SET_USER_MEMORY_REGION calls. */
struct kvm_ctx {
	int vm_fd;
	struct kvm_userspace_memory_region *shadow; /* by slot id */
};

static int kvm_set(struct kvm_ctx *k, struct kvm_userspace_memory_region *r)
{
	return ioctl(k->vm_fd, KVM_SET_USER_MEMORY_REGION, r) ? -errno : 0;
}

static int kvm_add(void *ctx, uint32_t id, gfn_t base, hva_t hva)
{
	struct kvm_ctx *k = ctx;
	struct kvm_userspace_memory_region r = {
		.slot = id,
		.guest_phys_addr = hv_gfn_to_gpa(base),
		.memory_size = HV_PAGE_SIZE,
		.userspace_addr = hva,
	};
	int ret = kvm_set(k, &r);

	if (!ret)
		k->shadow[id] = r;
	return ret;
}

static int kvm_set_flags(void *ctx, uint32_t id, uint32_t flags)
{
	struct kvm_ctx *k = ctx;
	struct kvm_userspace_memory_region r = k->shadow[id];
	int ret;

	r.flags = flags & HV_MEMSLOT_F_DIRTY_LOG ? KVM_MEM_LOG_DIRTY_PAGES : 0;
	ret = kvm_set(k, &r);
	if (!ret)
		k->shadow[id] = r;
	return ret;
}

static int kvm_move(void *ctx, uint32_t id, gfn_t base)
{
	struct kvm_ctx *k = ctx;
	struct kvm_userspace_memory_region r = k->shadow[id];
	int ret;

	r.guest_phys_addr = hv_gfn_to_gpa(base);
	ret = kvm_set(k, &r);
	if (!ret)
		k->shadow[id] = r;
	return ret;
}

static int kvm_del(void *ctx, uint32_t id)
{
	struct kvm_ctx *k = ctx;
	struct kvm_userspace_memory_region r = k->shadow[id];

	r.memory_size = 0;
	return kvm_set(k, &r);
}

static const struct impl_ops kvm_ops = {
	kvm_add, kvm_set_flags, kvm_move, kvm_del,
};

/* ---- measurements ----------------------------------------------------- */

/* Time @expr into @dst (us); on failure leave through the out label. */
#define TIMED(expr, dst)                                                     \
	do {                                                                 \
		uint64_t t0_ = hvbench_now_ns();                             \
		ret = (expr);                                                \
		(dst) = (hvbench_now_ns() - t0_) / 1e3;                      \
		if (ret)                                                     \
			goto out;                                            \
	} while (0)

/* Medians of add, toggle, move and delete on a set of @n slots. */
static int measure_updates(struct memslots_bench *b, const struct impl_ops *o,
			   void *ctx, unsigned n, hva_t hva0, unsigned col,
			   enum impl impl)
{
	unsigned reps = b->reps;
	double *v[4];
	int ret = -ENOMEM;

	for (int i = 0; i < 4; i++)
		v[i] = calloc(2 * reps, sizeof(double));
	if (!v[0] || !v[1] || !v[2] || !v[3])
		goto out;
	for (unsigned r = 0; r < reps; r++) {
		unsigned k = rnd(b) % n;

		/* Into the gap after slot k, then out again (untimed). */
		TIMED(o->add(ctx, n, slot_gfn(k) + 1, hva0 + n * HV_PAGE_SIZE),
		      v[0][r]);
		if ((ret = o->del(ctx, n)))
			goto out;
		TIMED(o->set_flags(ctx, k, HV_MEMSLOT_F_DIRTY_LOG),
		      v[1][2 * r]);
		TIMED(o->set_flags(ctx, k, 0), v[1][2 * r + 1]);
		/* Past the last slot and back. */
		TIMED(o->move(ctx, k, slot_gfn(n + 1)), v[2][2 * r]);
		TIMED(o->move(ctx, k, slot_gfn(k)), v[2][2 * r + 1]);
		TIMED(o->del(ctx, k), v[3][r]);
		if ((ret = o->add(ctx, k, slot_gfn(k),
				  hva0 + k * HV_PAGE_SIZE)))
			goto out;
	}
	b->res[OP_ADD][impl][col] = hvbench_median(v[0], reps);
	b->res[OP_TOGGLE][impl][col] = hvbench_median(v[1], 2 * reps);
	b->res[OP_MOVE][impl][col] = hvbench_median(v[2], 2 * reps);
	b->res[OP_DELETE][impl][col] = hvbench_median(v[3], reps);
	ret = 0;
out:
	for (int i = 0; i < 4; i++)
		free(v[i]);
	return ret;
}

/* Keep a value alive without a store the compiler could drop. */
#define SINK(x) __asm__ volatile("" : : "r"(x))

struct lookup_keys {
	uint32_t ids[LOOKUP_BATCH];
	gfn_t rnd[LOOKUP_BATCH];
	gfn_t seq[LOOKUP_BATCH];
};

static void lookup_keys_fill(struct memslots_bench *b, unsigned n,
			     struct lookup_keys *k)
{
	unsigned start = rnd(b) % n;

	for (unsigned i = 0; i < LOOKUP_BATCH; i++) {
		k->ids[i] = rnd(b) % n;
		k->rnd[i] = slot_gfn(rnd(b) % n);
		k->seq[i] = slot_gfn((start + i) % n);
	}
}

static double per_lookup_ns(uint64_t t0)
{
	return (double)(hvbench_now_ns() - t0) / LOOKUP_BATCH;
}

/*
 * Lookups run in a steady state: one untimed sweep over every slot first,
 * and each implementation measured on its own, so neither pays for the
 * cache lines the other one evicted. Keys are drawn fresh for each batch.
 */
static int lookups_hash(struct memslots_bench *b, struct hv_memslots *set,
			unsigned n, double **v)
{
	const struct hv_memslots_snap *s = hv_memslots_read_lock(set);
	struct lookup_keys k;
	unsigned bad = 0;

	for (unsigned i = 0; i < n; i++)
		bad += hv_memslots_by_gfn(s, slot_gfn(i)) !=
		       hv_memslots_by_id(s, i);
	for (unsigned r = 0; r < b->reps; r++) {
		uint64_t t0;

		lookup_keys_fill(b, n, &k);
		t0 = hvbench_now_ns();
		for (unsigned i = 0; i < LOOKUP_BATCH; i++)
			SINK(hv_memslots_by_id(s, k.ids[i]));
		v[0][r] = per_lookup_ns(t0);
		t0 = hvbench_now_ns();
		for (unsigned i = 0; i < LOOKUP_BATCH; i++)
			SINK(hv_memslots_by_gfn(s, k.rnd[i]));
		v[1][r] = per_lookup_ns(t0);
		t0 = hvbench_now_ns();
		for (unsigned i = 0; i < LOOKUP_BATCH; i++)
			SINK(hv_memslots_by_gfn(s, k.seq[i]));
		v[2][r] = per_lookup_ns(t0);
		/* Untimed: the lookups found the right slots. */
		bad += !hv_memslots_by_gfn(s, k.rnd[0]) ||
		       hv_memslots_by_id(s, k.ids[0])->id != k.ids[0];
	}
	hv_memslots_read_unlock(set);
	return bad ? -EIO : 0;
}

static int lookups_array(struct memslots_bench *b, struct arr_set *arr,
			 unsigned n, double **v)
{
	const struct arr_snap *as;
	struct lookup_keys k;
	unsigned bad = 0;

	hv_rcu_read_lock(arr->rcu);
	as = atomic_load(&arr->cur);
	for (unsigned i = 0; i < n; i += 64)
		bad += !arr_by_gfn(as, slot_gfn(i));
	for (unsigned r = 0; r < b->reps; r++) {
		uint64_t t0;

		lookup_keys_fill(b, n, &k);
		t0 = hvbench_now_ns();
		for (unsigned i = 0; i < LOOKUP_BATCH; i++)
			SINK(arr_by_id(as, k.ids[i]));
		v[0][r] = per_lookup_ns(t0);
		t0 = hvbench_now_ns();
		for (unsigned i = 0; i < LOOKUP_BATCH; i++)
			SINK(arr_by_gfn(as, k.rnd[i]));
		v[1][r] = per_lookup_ns(t0);
		t0 = hvbench_now_ns();
		for (unsigned i = 0; i < LOOKUP_BATCH; i++)
			SINK(arr_by_gfn(as, k.seq[i]));
		v[2][r] = per_lookup_ns(t0);
		bad += !arr_by_gfn(as, k.rnd[0]);
	}
	hv_rcu_read_unlock(arr->rcu);
	return bad ? -EIO : 0;
}

static int measure_lookups(struct memslots_bench *b, struct hv_memslots *set,
			   struct arr_set *arr, unsigned n, unsigned col)
{
	double *v[6];
	int ret = -ENOMEM;

	for (int i = 0; i < 6; i++)
		v[i] = calloc(b->reps, sizeof(double));
	if (!v[0] || !v[1] || !v[2] || !v[3] || !v[4] || !v[5])
		goto out;
	ret = lookups_hash(b, set, n, v);
	if (!ret)
		ret = lookups_array(b, arr, n, v + 3);
	if (ret)
		goto out;
	for (int i = 0; i < 3; i++) {
		b->res[OP_ID + i][IMPL_HASH][col] =
			hvbench_median(v[i], b->reps);
		b->res[OP_ID + i][IMPL_ARRAY][col] =
			hvbench_median(v[3 + i], b->reps);
	}
out:
	for (int i = 0; i < 6; i++)
		free(v[i]);
	return ret;
}

/* KVM at size @n: a fresh VM, n slots, then the update measurements. */
static int measure_kvm(struct memslots_bench *b, unsigned n, hva_t hva0,
		       unsigned col)
{
	struct kvm_ctx k = { .vm_fd = -1 };
	int ret;

	if ((int)n + 2 > b->kvm_max_slots)
		return 0; /* reported as "-" */
	k.shadow = calloc(n + 1, sizeof(*k.shadow));
	if (!k.shadow)
		return -ENOMEM;
	k.vm_fd = ioctl(b->kvm_fd, KVM_CREATE_VM, 0);
	if (k.vm_fd < 0) {
		ret = -errno;
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		ret = kvm_add(&k, i, slot_gfn(i), hva0 + i * HV_PAGE_SIZE);
		if (ret)
			goto out;
	}
	ret = measure_updates(b, &kvm_ops, &k, n, hva0, col, IMPL_KVM);
out:
	if (k.vm_fd >= 0)
		close(k.vm_fd);
	free(k.shadow);
	return ret;
}

static int measure_size(struct memslots_bench *b, unsigned col)
{
	unsigned n = b->sizes[col];
	size_t len = (n + 2) * HV_PAGE_SIZE;
	struct hv_memslots *set = NULL;
	struct arr_set arr;
	hva_t hva0;
	void *mem;
	int ret;

	/* Host memory is reserved (KVM checks the range), never touched. */
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	hva0 = (uintptr_t)mem;
	ret = hv_memslots_create(&set);
	if (ret)
		goto out_unmap;
	for (unsigned i = 0; i < n && !ret; i++)
		ret = hash_add(set, i, slot_gfn(i), hva0 + i * HV_PAGE_SIZE);
	if (ret)
		goto out_set;
	ret = arr_create(n, hva0, &arr);
	if (ret)
		goto out_set;
	ret = measure_lookups(b, set, &arr, n, col);
	if (!ret)
		ret = measure_updates(b, &hash_ops, set, n, hva0, col,
				      IMPL_HASH);
	if (!ret)
		ret = measure_updates(b, &arr_ops, &arr, n, hva0, col,
				      IMPL_ARRAY);
	if (!ret && b->use_kvm)
		ret = measure_kvm(b, n, hva0, col);
	arr_destroy(&arr);
out_set:
	hv_memslots_destroy(set);
out_unmap:
	munmap(mem, len);
	return ret;
}

/* ---- output and options ---------------------------------------------- */

static void print_cell(double v)
{
	if (isnan(v))
		printf(" %8s", "-");
	else if (v >= 1000)
		printf(" %8.0f", v);
	else if (v >= 10)
		printf(" %8.1f", v);
	else
		printf(" %8.2f", v);
}

static void print_table(const struct memslots_bench *b)
{
	unsigned last = b->nr_sizes - 1;

	printf("\n%-20s %-6s", "operation", "impl");
	for (unsigned c = 0; c < b->nr_sizes; c++)
		printf(" %8u", b->sizes[c]);
	printf(" %9s\n", "last/1st");
	for (int op = 0; op < NR_OPS; op++) {
		bool first = true;

		for (int im = 0; im < NR_IMPLS; im++) {
			const double *r = b->res[op][im];
			bool any = false;

			for (unsigned c = 0; c < b->nr_sizes; c++)
				any |= !isnan(r[c]);
			if (!any)
				continue;
			printf("%-20s %-6s", first ? op_names[op] : "",
			       impl_names[im]);
			first = false;
			for (unsigned c = 0; c < b->nr_sizes; c++)
				print_cell(r[c]);
			if (isnan(r[0]) || isnan(r[last]) || !r[0])
				printf(" %9s\n", "-");
			else
				printf(" %8.2fx\n", r[last] / r[0]);
		}
	}
	if (!b->use_kvm)
		return;
	printf("\nuserspace overhead: hash time / kernel time\n");
	for (int op = OP_ADD; op <= OP_DELETE; op++) {
		printf("%-20s %-6s", op_names[op], "");
		for (unsigned c = 0; c < b->nr_sizes; c++) {
			double h = b->res[op][IMPL_HASH][c];
			double k = b->res[op][IMPL_KVM][c];

			print_cell(isnan(k) || !k ? NAN : h / k);
		}
		printf("\n");
	}
}

static int parse_sizes(struct memslots_bench *b, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	b->nr_sizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || !v || v > HV_MEMSLOT_MAX - 2 ||
		    b->nr_sizes == MAX_SIZES) {
			ret = -EINVAL;
			break;
		}
		b->sizes[b->nr_sizes++] = v;
	}
	free(copy);
	return ret || !b->nr_sizes ? -EINVAL : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hvbench memslots [--sizes=N,N,...] [--reps=R] "
		"[--no-kvm]\n"
		"  --sizes  slot counts (default 10,100,509,2048,4096,32000; "
		"max %u)\n"
		"  --reps   repetitions per measurement, medians reported "
		"(default 25)\n"
		"  --no-kvm do not time KVM_SET_USER_MEMORY_REGION\n",
		HV_MEMSLOT_MAX - 2);
}

static int parse_args(struct memslots_bench *b, int argc, char **argv)
{
	static const unsigned defaults[] = { 10, 100, 509, 2048, 4096, 32000 };

	memcpy(b->sizes, defaults, sizeof(defaults));
	b->nr_sizes = HV_ARRAY_SIZE(defaults);
	b->reps = 25;
	b->use_kvm = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;

		if (!strncmp(a, "--sizes", 7) || !strncmp(a, "--reps", 6)) {
			val = strchr(a, '=');
			if (val)
				val++;
			else if (i + 1 < argc)
				val = argv[++i];
			else
				return -EINVAL;
		}
		if (!strcmp(a, "--no-kvm")) {
			b->use_kvm = false;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		} else if (!strncmp(a, "--sizes", 7)) {
			if (parse_sizes(b, val))
				return -EINVAL;
		} else if (!strncmp(a, "--reps", 6)) {
			b->reps = strtoul(val, NULL, 10);
			if (!b->reps || b->reps > 100000)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

static void kvm_open(struct memslots_bench *b)
{
	b->kvm_fd = -1;
	if (!b->use_kvm)
		return;
	b->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (b->kvm_fd < 0) {
		printf("kvm: /dev/kvm does not open (%s): kernel column "
		       "skipped\n",
		       strerror(errno));
		b->use_kvm = false;
		return;
	}
	b->kvm_max_slots =
		ioctl(b->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_NR_MEMSLOTS);
	printf("kvm: KVM_CAP_NR_MEMSLOTS = %d (sizes above %d are not run "
	       "on KVM)\n",
	       b->kvm_max_slots, b->kvm_max_slots - 2);
}

static int bench_memslots(int argc, char **argv)
{
	struct memslots_bench *b = calloc(1, sizeof(*b));
	int ret;

	if (!b)
		return 1;
	ret = parse_args(b, argc, argv);
	if (ret) {
		if (ret < 0)
			usage(stderr);
		free(b);
		return ret < 0 ? 2 : 0;
	}
	for (int op = 0; op < NR_OPS; op++)
		for (int im = 0; im < NR_IMPLS; im++)
			for (unsigned c = 0; c < MAX_SIZES; c++)
				b->res[op][im][c] = NAN;
	b->rng = 0x2545f4914f6cdd1dULL;
	kvm_open(b);
	printf("memslots: one-page slots, %u reps, medians; updates in us "
	       "(each includes the grace period), lookups in ns\n",
	       b->reps);
	for (unsigned c = 0; c < b->nr_sizes; c++) {
		fprintf(stderr, "memslots: measuring %u slots\n", b->sizes[c]);
		ret = measure_size(b, c);
		if (ret) {
			fprintf(stderr, "memslots: %u slots: %s\n",
				b->sizes[c], strerror(-ret));
			break;
		}
	}
	if (!ret)
		print_table(b);
	if (b->kvm_fd >= 0)
		close(b->kvm_fd);
	free(b);
	return ret ? 1 : 0;
}

HVBENCH_CMD("memslots", "memslot set scaling: hash vs array vs KVM",
	    bench_memslots);
