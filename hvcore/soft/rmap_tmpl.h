/* SPDX-License-Identifier: MIT */
/*
 * One rmap instance, generated per width and layout (see rmap.h). Included
 * by rmap.c only, with RT_W (entries per descriptor), RT_LAYOUT (an enum
 * hv_soft_rmap_layout value) and RT_SFX (a name suffix) defined; rmap.c
 * provides desc_alloc() and desc_free(). No include guard: included once
 * per instance.
 */
#define RT_CAT2(a, b) a##b
#define RT_CAT(a, b) RT_CAT2(a, b)
#define RT(name) RT_CAT(name, RT_SFX)

#if RT_LAYOUT == 2 /* HV_SOFT_RMAP_NO_COUNT: KVM before 5.14 */
struct RT(desc) {
	uint64_t *sptes[RT_W];
	struct RT(desc) *more;
};

/* Without a count, a descriptor is full when its last slot is used, and
 * its entries are the slots before the first empty one. */
static inline uint32_t RT(cnt)(const struct RT(desc) *d)
{
	uint32_t n = 0;

	while (n < RT_W && d->sptes[n])
		n++;
	return n;
}

static inline bool RT(full)(const struct RT(desc) *d)
{
	return d->sptes[RT_W - 1] != NULL;
}

static inline void RT(set_cnt)(struct RT(desc) *d, uint32_t n)
{
	(void)d;
	(void)n;
}
#else
struct RT(desc) {
	struct RT(desc) *more;
#if RT_LAYOUT == 1 /* HV_SOFT_RMAP_COUNT_FIRST */
	uint32_t count;
#endif
	uint64_t *sptes[RT_W];
#if RT_LAYOUT == 0 /* HV_SOFT_RMAP_COUNT_LAST */
	uint32_t count;
#endif
};

static inline uint32_t RT(cnt)(const struct RT(desc) *d)
{
	return d->count;
}

static inline bool RT(full)(const struct RT(desc) *d)
{
	return d->count == RT_W;
}

static inline void RT(set_cnt)(struct RT(desc) *d, uint32_t n)
{
	d->count = n;
}
#endif

static inline struct RT(desc) *RT(desc_of)(uintptr_t val)
{
	return (struct RT(desc) *)(val & ~(uintptr_t)1);
}

static int RT(add)(struct hv_soft_rmap *r, struct hv_soft_rmap_head *head,
		   uint64_t *spte)
{
	struct RT(desc) *desc, *d;
	uint32_t i;
	int n = 0;

	if (!head->val) {
		head->val = (uintptr_t)spte;
		return 0;
	}
	if (!(head->val & 1)) {
		/* 1 -> many: the inline entry moves into a descriptor. */
		desc = desc_alloc(r);
		if (!desc)
			return -ENOMEM;
		desc->sptes[0] = (uint64_t *)head->val;
		RT(set_cnt)(desc, 1);
		head->val = (uintptr_t)desc | 1;
	}
	desc = RT(desc_of)(head->val);
	/* The walk the descriptor width shortens. */
	while (RT(full)(desc)) {
		n += RT_W;
		if (!desc->more) {
			d = desc_alloc(r);
			if (!d)
				return -ENOMEM;
			desc->more = d;
			desc = d;
			break;
		}
		desc = desc->more;
	}
	i = RT(cnt)(desc);
	n += i;
	desc->sptes[i] = spte;
	RT(set_cnt)(desc, i + 1);
	return n;
}

static bool RT(remove)(struct hv_soft_rmap *r, struct hv_soft_rmap_head *head,
		       uint64_t *spte)
{
	struct RT(desc) *desc, *prev = NULL;

	if (!head->val)
		return false;
	if (!(head->val & 1)) {
		if ((uint64_t *)head->val != spte)
			return false;
		head->val = 0;
		return true;
	}
	for (desc = RT(desc_of)(head->val); desc;
	     prev = desc, desc = desc->more) {
		uint32_t n = RT(cnt)(desc);

		for (uint32_t i = 0; i < n; i++) {
			uint32_t last;

			if (desc->sptes[i] != spte)
				continue;
			/* Fill the hole with this descriptor's last entry. */
			last = n - 1;
			RT(set_cnt)(desc, last);
			desc->sptes[i] = desc->sptes[last];
			desc->sptes[last] = NULL;
			if (last)
				return true;
			if (prev)
				prev->more = desc->more;
			else if (desc->more)
				head->val = (uintptr_t)desc->more | 1;
			else
				head->val = 0;
			desc_free(r, desc);
			return true;
		}
	}
	return false;
}

static unsigned RT(count)(const struct hv_soft_rmap_head *head)
{
	const struct RT(desc) *desc;
	unsigned n = 0;

	if (!head->val)
		return 0;
	if (!(head->val & 1))
		return 1;
	for (desc = RT(desc_of)(head->val); desc; desc = desc->more)
		n += RT(cnt)(desc);
	return n;
}

static void RT(for_each)(const struct hv_soft_rmap_head *head,
			 hv_soft_rmap_fn fn, void *arg)
{
	const struct RT(desc) *desc;

	if (!head->val)
		return;
	if (!(head->val & 1)) {
		fn((uint64_t *)head->val, arg);
		return;
	}
	for (desc = RT(desc_of)(head->val); desc; desc = desc->more)
		for (uint32_t i = 0, n = RT(cnt)(desc); i < n; i++)
			fn(desc->sptes[i], arg);
}

static void RT(drain)(struct hv_soft_rmap *r, struct hv_soft_rmap_head *head,
		      hv_soft_rmap_fn fn, void *arg)
{
	struct RT(desc) *desc, *next;

	if (head->val && !(head->val & 1)) {
		fn((uint64_t *)head->val, arg);
	} else if (head->val) {
		for (desc = RT(desc_of)(head->val); desc; desc = next) {
			for (uint32_t i = 0, n = RT(cnt)(desc); i < n; i++)
				fn(desc->sptes[i], arg);
			next = desc->more;
			desc_free(r, desc);
		}
	}
	head->val = 0;
}

static const struct rmap_ops RT(ops) = {
	.width = RT_W,
	.layout = RT_LAYOUT,
	.desc_size = sizeof(struct RT(desc)),
	.add = RT(add),
	.remove = RT(remove),
	.count = RT(count),
	.for_each = RT(for_each),
	.drain = RT(drain),
};

#undef RT
#undef RT_CAT
#undef RT_CAT2
#undef RT_W
#undef RT_LAYOUT
#undef RT_SFX
