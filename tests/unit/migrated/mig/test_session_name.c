// SPDX-License-Identifier: MIT
/*
 * The VM's name travels with the migration (VmLayout.name, mig_opts
 * vm_name / dst_name_check, mig_dest_vm_name): the name rule, the refusal
 * of a bad or unwanted name before anything is created, and the wire
 * compatibility of the added field with peers that do not know it.
 */
#include <errno.h>
#include <string.h>

#include "migrated/mig/layout.h"
#include "tests/harness/hv_test.h"
#include "tests/unit/migrated/mig/session_util.h"

static void test_name_rule_is_the_daemons(void)
{
	static const char *const good[] = { "a", "vm-1", "web_2.prod", "A.",
					    "x-", "0" };
	static const char *const bad[] = { "", ".", "..", "-x", "a b",
					   "a/b", "../etc", "\xc3\xa9", "a\n",
					   "a:b" };
	char longest[MIG_VM_NAME_MAX + 2];

	for (size_t i = 0; i < HV_ARRAY_SIZE(good); i++)
		CU_ASSERT(mig_vm_name_valid(good[i]));
	for (size_t i = 0; i < HV_ARRAY_SIZE(bad); i++)
		CU_ASSERT(!mig_vm_name_valid(bad[i]));
	CU_ASSERT(!mig_vm_name_valid(NULL));
	memset(longest, 'n', sizeof(longest));
	longest[MIG_VM_NAME_MAX] = '\0';
	CU_ASSERT(mig_vm_name_valid(longest));
	longest[MIG_VM_NAME_MAX] = 'n';
	longest[MIG_VM_NAME_MAX + 1] = '\0';
	CU_ASSERT(!mig_vm_name_valid(longest));
}

/* One 64 MiB slot, one vCPU, soft: a layout mig_layout_to_cfg accepts. */
static Mig__Memslot slot0 = MIG__MEMSLOT__INIT;
static Mig__Memslot *slots[] = { &slot0 };

static void layout_init(Mig__VmLayout *l, const char *name)
{
	mig__vm_layout__init(l);
	slot0.npages = SU_MEM >> HV_PAGE_SHIFT;
	l->n_slots = 1;
	l->slots = slots;
	l->nr_vcpus = 1;
	l->accel = (char *)"soft";
	l->page_size = HV_PAGE_SIZE;
	if (name)
		l->name = (char *)name;
}

static void test_bad_offered_name_refused_with_refuse_name(void)
{
	struct hv_vm_cfg cfg;
	Mig__VmLayout l;
	char why[160];

	layout_init(&l, "../../etc/passwd");
	CU_ASSERT_EQUAL(mig_layout_to_cfg(&l, NULL, &cfg, why, sizeof(why)),
			MIG__REFUSE_REASON__REFUSE_NAME);
	CU_ASSERT(strstr(why, "invalid VM name") != NULL);
	layout_init(&l, "-rf");
	CU_ASSERT_EQUAL(mig_layout_to_cfg(&l, NULL, &cfg, why, sizeof(why)),
			MIG__REFUSE_REASON__REFUSE_NAME);
	/* No name (an older source) and a good one are both fine. */
	layout_init(&l, NULL);
	CU_ASSERT_EQUAL(mig_layout_to_cfg(&l, NULL, &cfg, why, sizeof(why)), 0);
	layout_init(&l, "db-7");
	CU_ASSERT_EQUAL(mig_layout_to_cfg(&l, NULL, &cfg, why, sizeof(why)), 0);
}

/*
 * Golden vector of VmLayout with the name (field 6, added without a
 * stream version bump). Without a name the encoding is byte for byte what
 * it was before the field existed; an older peer's layout decodes with
 * an empty name, and the new bytes are the old ones plus one trailing
 * field, which an older destination skips as unknown.
 */
static const uint8_t golden_layout_named[] = {
	0x0a, 0x04, 0x18, 0x80, 0x80, 0x01, /* slots: npages 16384 */
	0x10, 0x01,			    /* nr_vcpus 1 */
	0x1a, 0x04, 's', 'o', 'f', 't',	    /* accel */
	0x28, 0x80, 0x20,		    /* page_size 4096 */
	0x32, 0x03, 'v', 'm', '1',	    /* name "vm1" */
};
#define GOLDEN_OLD_LEN (sizeof(golden_layout_named) - 5)

static void test_layout_name_is_wire_compatible(void)
{
	uint8_t buf[64];
	Mig__VmLayout l, *dec;
	size_t n;

	layout_init(&l, "vm1");
	n = mig__vm_layout__pack(&l, buf);
	CU_ASSERT_EQUAL_FATAL(n, sizeof(golden_layout_named));
	CU_ASSERT(!memcmp(buf, golden_layout_named, n));
	layout_init(&l, NULL);
	n = mig__vm_layout__pack(&l, buf);
	CU_ASSERT_EQUAL(n, GOLDEN_OLD_LEN);
	CU_ASSERT(!memcmp(buf, golden_layout_named, GOLDEN_OLD_LEN));

	/* An older source's bytes: no name. */
	dec = mig__vm_layout__unpack(NULL, GOLDEN_OLD_LEN, golden_layout_named);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dec);
	CU_ASSERT_STRING_EQUAL(dec->name, "");
	CU_ASSERT_EQUAL(dec->nr_vcpus, 1);
	mig__vm_layout__free_unpacked(dec, NULL);
	dec = mig__vm_layout__unpack(NULL, sizeof(golden_layout_named),
				     golden_layout_named);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dec);
	CU_ASSERT_STRING_EQUAL(dec->name, "vm1");
	mig__vm_layout__free_unpacked(dec, NULL);
}

static void test_source_refuses_an_invalid_name_to_offer(void)
{
	struct mig_opts o;
	/* Never dereferenced: a failed start leaves *out as it was. */
	struct mig_source *src = (struct mig_source *)&o;
	struct hv_vm *vm;
	bool skip;

	vm = su_vm(HV_ACCEL_SOFT, 1, UINT64_MAX, &skip);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vm);
	su_opts(&o, false);
	o.vm_name = "bad name";
	CU_ASSERT_EQUAL(mig_source_start(vm, "127.0.0.1", 1, &o, NULL, NULL,
					 &src),
			-EINVAL);
	CU_ASSERT_PTR_EQUAL(src, (struct mig_source *)&o);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_RUNNING);
	hv_vm_destroy(vm);
}

/* What the destination's name check saw, and what it answers. */
struct check {
	char seen[MIG_VM_NAME_MAX + 8];
	unsigned calls;
	int answer;
};

static int name_check(void *arg, const char *name, char *why, size_t len)
{
	struct check *c = arg;

	snprintf(c->seen, sizeof(c->seen), "%s", name);
	c->calls++;
	if (c->answer)
		snprintf(why, len, "a VM named '%s' already exists here",
			 name);
	return c->answer;
}

struct named_run {
	int src_ret, dst_ret;
	struct mig_progress src_final, dst_final;
	char dst_name[MIG_VM_NAME_MAX + 8]; /* mig_dest_vm_name, or "(null)" */
	struct hv_vm *dst_vm;
};

/* Migrate @vm offering @offer; the destination checks with @c. */
static void migrate_named(struct hv_vm *vm, const char *offer,
			  struct check *c, struct named_run *r)
{
	struct mig_opts so, dop;
	struct mig_source *src;
	struct mig_dest *dst;
	const char *n;

	su_opts(&so, false);
	su_opts(&dop, true);
	so.vm_name = offer;
	dop.dst_name_check = name_check;
	dop.dst_name_arg = c;
	CU_ASSERT_EQUAL_FATAL(mig_dest_start("127.0.0.1", 0, &dop, NULL, NULL,
					     NULL, &dst),
			      0);
	CU_ASSERT_PTR_NULL(mig_dest_vm_name(dst)); /* before setup */
	CU_ASSERT_EQUAL_FATAL(mig_source_start(vm, "127.0.0.1",
					       mig_dest_port(dst), &so, NULL,
					       NULL, &src),
			      0);
	r->src_ret = mig_source_wait(src, &r->src_final);
	r->dst_ret = mig_dest_wait(dst, &r->dst_vm, &r->dst_final);
	n = mig_dest_vm_name(dst);
	snprintf(r->dst_name, sizeof(r->dst_name), "%s", n ? n : "(null)");
	mig_source_destroy(src);
	mig_dest_destroy(dst);
}

static void test_offered_name_arrives_with_the_vm(void)
{
	struct check c = { .answer = 0 };
	struct named_run r = { 0 };
	struct hv_vm *vm;
	bool skip;

	vm = su_vm(HV_ACCEL_SOFT, 1, UINT64_MAX, &skip);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vm);
	migrate_named(vm, "web-1", &c, &r);
	CU_ASSERT_EQUAL(r.src_ret, 0);
	CU_ASSERT_EQUAL(r.dst_ret, 0);
	CU_ASSERT_EQUAL(c.calls, 1);
	CU_ASSERT_STRING_EQUAL(c.seen, "web-1");
	CU_ASSERT_STRING_EQUAL(r.dst_name, "web-1");
	CU_ASSERT_PTR_NOT_NULL(r.dst_vm);
	hv_vm_destroy(r.dst_vm);
	hv_vm_destroy(vm);
}

static void test_no_name_offered_reads_as_none(void)
{
	struct check c = { .answer = 0 };
	struct named_run r = { 0 };
	struct hv_vm *vm;
	bool skip;

	vm = su_vm(HV_ACCEL_SOFT, 1, UINT64_MAX, &skip);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vm);
	migrate_named(vm, NULL, &c, &r);
	CU_ASSERT_EQUAL(r.src_ret, 0);
	CU_ASSERT_EQUAL(r.dst_ret, 0);
	CU_ASSERT_EQUAL(c.calls, 1);
	CU_ASSERT_STRING_EQUAL(c.seen, "");
	CU_ASSERT_STRING_EQUAL(r.dst_name, "(null)");
	hv_vm_destroy(r.dst_vm);
	hv_vm_destroy(vm);
}

static void test_refused_name_keeps_vm_on_source_and_nothing_on_dest(void)
{
	struct check c = { .answer = -EEXIST };
	struct named_run r = { 0 };
	struct hv_vm *vm;
	bool skip;

	vm = su_vm(HV_ACCEL_SOFT, 1, 2000, &skip);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vm);
	migrate_named(vm, "taken", &c, &r);
	CU_ASSERT_EQUAL(r.src_ret, -EEXIST);
	CU_ASSERT_EQUAL(r.src_final.phase, MIG_PHASE_FAILED);
	/* The operator reads why, in the destination's words. */
	CU_ASSERT(strstr(r.src_final.message, "REFUSE_NAME") != NULL);
	CU_ASSERT(strstr(r.src_final.message,
			 "a VM named 'taken' already exists here") != NULL);
	/* su_migrate() checked that the failed wait kept no VM. */
	CU_ASSERT(r.dst_ret < 0);
	CU_ASSERT_STRING_EQUAL(r.dst_name, "(null)");
	/* Refused in setup: logging never started, the guest runs on. */
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_RUNNING);
	CU_ASSERT(su_logging_off(vm));
	CU_ASSERT(su_vm_progresses(vm, 2000));
	hv_vm_destroy(vm);
}

static CU_TestInfo tests[] = {
	{ "name_rule_is_the_daemons", test_name_rule_is_the_daemons },
	{ "bad_offered_name_refused_with_refuse_name",
	  test_bad_offered_name_refused_with_refuse_name },
	{ "layout_name_is_wire_compatible",
	  test_layout_name_is_wire_compatible },
	{ "source_refuses_an_invalid_name_to_offer",
	  test_source_refuses_an_invalid_name_to_offer },
	{ "offered_name_arrives_with_the_vm",
	  test_offered_name_arrives_with_the_vm },
	{ "no_name_offered_reads_as_none", test_no_name_offered_reads_as_none },
	{ "refused_name_keeps_vm_on_source_and_nothing_on_dest",
	  test_refused_name_keeps_vm_on_source_and_nothing_on_dest },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/session_name", su_init, su_clean, tests);
