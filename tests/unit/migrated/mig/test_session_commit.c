// SPDX-License-Identifier: MIT
/*
 * The commit handshake (migrated/mig/source.c commit(), dest.c on_digest /
 * wait_commit / on_commit): for each message lost and each side failing at
 * each step, the VM runs on exactly one side afterwards, or on none with
 * the source's copy paused, intact and the migration UNRESOLVED; never on
 * two. Steps are hit exactly with fault points (faultpoint.h); both
 * engines run in this process on the soft accelerator, so this runs
 * everywhere.
 *
 * Oracles: the source's memory at switchover (hook) against the
 * destination's after load, page by page, and against the source's own
 * memory while UNRESOLVED (intact); which side's vCPUs make progress.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migrated/mig/faultpoint.h"
#include "tests/harness/hv_test.h"
#include "tests/unit/migrated/mig/session_util.h"

/* The waits for a lost message last half of it (the destination gives up
 * on the Commit then, dest.c); shorter, and a TSan build's verification of
 * 64 MiB on a loaded host outlasts the source's wait for the Ack. */
#define CM_IO_MS 3000u
/* Small: the digest, the verification and the snapshots scale with it. */
#define CM_MEM HV_VM_MIN_MEM
/* A page the hooks change: the VM is paused (source) or not started yet
 * (destination) then, so any page of its memory does. */
#define CM_POKE_GPA (CM_MEM / 2)

struct cm_run {
	/* in */
	const char *faults;	/* MIGRATED_FAULTPOINTS spec */
	bool poke_src_after_ack; /* src_acked hook changes a page */
	unsigned cancel_dst_after_ms; /* 0: never */
	/* out */
	int src_ret, dst_ret;
	struct mig_progress src_final, dst_final;
	struct hv_vm *dst_vm;
	uint8_t *src_snap, *dst_snap;
	uint64_t bytes;
};

static uint8_t *snapshot(struct hv_vm *vm)
{
	uint8_t *p = malloc(vm->cfg.mem_bytes);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memcpy(p, hv_vm_gpa_to_hva(vm, 0, vm->cfg.mem_bytes),
	       vm->cfg.mem_bytes);
	return p;
}

static void hook_src(void *arg, struct hv_vm *vm)
{
	struct cm_run *r = arg;

	r->src_snap = snapshot(vm);
	r->bytes = vm->cfg.mem_bytes;
}

static void hook_dst(void *arg, struct hv_vm *vm)
{
	struct cm_run *r = arg;

	r->dst_snap = snapshot(vm);
}

static void poke(struct hv_vm *vm)
{
	uint64_t v = 0x5eedfacecafef00dull;
	uint64_t old;

	hv_vm_read_guest(vm, CM_POKE_GPA, &old, sizeof(old));
	v ^= old;
	CU_ASSERT_EQUAL(hv_vm_write_guest(vm, CM_POKE_GPA, &v, sizeof(v)), 0);
}

static void hook_acked(void *arg, struct hv_vm *vm)
{
	if (((struct cm_run *)arg)->poke_src_after_ack)
		poke(vm);
}

/* Pages of @vm's memory now that differ from @snap. */
static uint64_t diff_pages(const uint8_t *a, const uint8_t *b, uint64_t bytes)
{
	uint64_t n = 0;

	if (!a || !b)
		return UINT64_MAX;
	for (uint64_t off = 0; off < bytes; off += HV_PAGE_SIZE)
		n += memcmp(a + off, b + off, HV_PAGE_SIZE) != 0;
	return n;
}

/* Migrate @vm with r->faults armed; *@src_out stays for resolve. */
static void cm_migrate(struct hv_vm *vm, struct cm_run *r,
		       struct mig_source **src_out)
{
	struct mig_hooks hooks = { .src_switchover = hook_src,
				   .dst_loaded = hook_dst,
				   .arg = r,
				   .src_acked = hook_acked };
	struct mig_opts so, dop;
	struct mig_source *src = NULL;
	struct mig_dest *dst = NULL;

	su_opts(&so, false);
	su_opts(&dop, true);
	so.io_timeout_ms = dop.io_timeout_ms = CM_IO_MS;
	so.hooks = dop.hooks = &hooks;
	CU_ASSERT_EQUAL_FATAL(mig_faultpoints_set(r->faults), 0);
	CU_ASSERT_EQUAL_FATAL(mig_dest_start("127.0.0.1", 0, &dop, NULL, NULL,
					     NULL, &dst),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_source_start(vm, "127.0.0.1",
					       mig_dest_port(dst), &so, NULL,
					       NULL, &src),
			      0);
	if (r->cancel_dst_after_ms) {
		/* Only once the destination is past its Ack: cancelling
		 * earlier is an ordinary failure before the commit. */
		struct mig_progress p;

		do {
			usleep(10000);
			mig_dest_get_progress(dst, &p);
		} while (p.phase != MIG_PHASE_COMMIT &&
			 p.phase < MIG_PHASE_COMPLETED);
		usleep(r->cancel_dst_after_ms * 1000);
		mig_dest_cancel(dst);
	}
	r->src_ret = mig_source_wait(src, &r->src_final);
	r->dst_ret = mig_dest_wait(dst, &r->dst_vm, &r->dst_final);
	mig_dest_destroy(dst);
	mig_faultpoints_set(NULL);
	*src_out = src;
	printf("\n    [%s] src %s err=%d \"%s\" | dst %s err=%d \"%s\"\n",
	       r->faults ? r->faults : "-",
	       mig_phase_name(r->src_final.phase), r->src_ret,
	       r->src_final.message, mig_phase_name(r->dst_final.phase),
	       r->dst_ret, r->dst_final.message);
}

static void cm_free(struct cm_run *r)
{
	free(r->src_snap);
	free(r->dst_snap);
	hv_vm_destroy(r->dst_vm);
}

/* One vCPU writing 5000 pages/s, heartbeats every 2 ms, soft MMU. */
static struct hv_vm *cm_vm(void)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;

	hv_vm_cfg_init(&cfg, HV_ACCEL_SOFT, CM_MEM, 1);
	cfg.wl[0].heartbeat_us = 2000;
	cfg.wl[0].rate_pages = 5000;
	CU_ASSERT_EQUAL_FATAL(hv_vm_create(&cfg, &vm), 0);
	CU_ASSERT_EQUAL_FATAL(hv_vm_start(vm), 0);
	CU_ASSERT_FATAL(su_vm_progresses(vm, 5000));
	return vm;
}

/* The VM runs on the source only: rolled back, destination holds none. */
static void check_on_source(struct hv_vm *vm, const struct cm_run *r,
			    const char *why)
{
	CU_ASSERT(r->src_ret < 0 && r->src_ret != -EINPROGRESS);
	CU_ASSERT_EQUAL(r->src_final.phase, MIG_PHASE_FAILED);
	CU_ASSERT(r->src_final.message[0] != 0);
	if (why)
		CU_ASSERT_PTR_NOT_NULL(strstr(r->src_final.message, why));
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_RUNNING);
	CU_ASSERT(su_vm_progresses(vm, 2000));
	CU_ASSERT(su_logging_off(vm));
	CU_ASSERT(r->dst_ret < 0);
	CU_ASSERT_PTR_NULL(r->dst_vm);
}

/* The VM runs on the destination with the source's final memory. */
static void check_dst_runs(const struct cm_run *r)
{
	CU_ASSERT_EQUAL(r->dst_ret, 0);
	CU_ASSERT_EQUAL(r->dst_final.phase, MIG_PHASE_COMPLETED);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r->dst_vm);
	CU_ASSERT_EQUAL(diff_pages(r->src_snap, r->dst_snap, r->bytes), 0);
	CU_ASSERT(su_vm_progresses(r->dst_vm, 2000));
}

/* UNRESOLVED: paused on the source, exactly the memory at switchover. */
static void check_unresolved(struct hv_vm *vm, const struct cm_run *r)
{
	uint8_t *now;

	CU_ASSERT_EQUAL(r->src_ret, -EINPROGRESS);
	CU_ASSERT_EQUAL(r->src_final.phase, MIG_PHASE_UNRESOLVED);
	CU_ASSERT_PTR_NOT_NULL(strstr(r->src_final.message, "unresolved"));
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_PAUSED);
	CU_ASSERT(!su_vm_progresses(vm, 200));
	now = snapshot(vm);
	CU_ASSERT_EQUAL(diff_pages(r->src_snap, now, r->bytes), 0);
	free(now);
}

static void test_ack_lost_keeps_vm_on_source(void)
{
	struct cm_run r = { .faults = MIG_FP_DST_ACK_SEND "=drop" };
	struct hv_vm *vm = cm_vm();
	struct mig_source *src;

	cm_migrate(vm, &r, &src);
	/* Either the destination gave up on the Commit and said so, or the
	 * source's own wait for the Ack ended first (it began before the
	 * destination's verification): both roll back. */
	check_on_source(vm, &r, NULL);
	mig_source_destroy(src);
	cm_free(&r);
	hv_vm_destroy(vm);
}

static void test_source_failing_before_commit_keeps_vm_on_source(void)
{
	struct cm_run r = { .faults = MIG_FP_SRC_ACKED "=fail" };
	struct hv_vm *vm = cm_vm();
	struct mig_source *src;

	cm_migrate(vm, &r, &src);
	check_on_source(vm, &r, MIG_FP_SRC_ACKED);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.dst_final.message, "source aborted"));
	mig_source_destroy(src);
	cm_free(&r);
	hv_vm_destroy(vm);
}

static void test_commit_lost_destination_gives_up_source_resumes(void)
{
	struct cm_run r = { .faults = MIG_FP_SRC_COMMIT_SEND "=drop" };
	struct hv_vm *vm = cm_vm();
	struct mig_source *src;

	cm_migrate(vm, &r, &src);
	check_on_source(vm, &r, "no commit within");
	CU_ASSERT_EQUAL(r.dst_ret, -ETIMEDOUT);
	/* Given up once: resolve has nothing to settle. */
	CU_ASSERT_EQUAL(mig_source_resolve(src, MIG_RESOLVE_RESUME_SOURCE,
					   NULL),
			-EALREADY);
	mig_source_destroy(src);
	cm_free(&r);
	hv_vm_destroy(vm);
}

static void test_destination_failing_at_commit_never_resumes(void)
{
	struct cm_run r = { .faults = MIG_FP_DST_COMMIT "=fail" };
	struct hv_vm *vm = cm_vm();
	struct mig_source *src;

	cm_migrate(vm, &r, &src);
	/* Its Abort after the Commit is the positive "not running". */
	check_on_source(vm, &r, "destination aborted");
	mig_source_destroy(src);
	cm_free(&r);
	hv_vm_destroy(vm);
}

static void test_destination_cancelled_after_commit_source_resumes(void)
{
	/*
	 * Stalled between Commit and resume, then cancelled there: it never
	 * starts the VM and tells the source so (its Cancel on the control
	 * channel), which is the positive "not running" the source needs to
	 * resume. A destination that dies there says nothing: that case is
	 * source_losing_channel_after_commit_is_unresolved here and the
	 * kill at dst.commit in test_migration_commit.sh.
	 */
	struct cm_run r = { .faults = MIG_FP_DST_COMMIT "=sleep:1500",
			    .cancel_dst_after_ms = 300 };
	struct hv_vm *vm = cm_vm();
	struct mig_source *src;

	cm_migrate(vm, &r, &src);
	CU_ASSERT_EQUAL(r.src_ret, -ECANCELED);
	CU_ASSERT_EQUAL(r.src_final.phase, MIG_PHASE_CANCELLED);
	CU_ASSERT_PTR_NOT_NULL(
		strstr(r.src_final.message, "cancelled by the peer"));
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_RUNNING);
	CU_ASSERT(su_vm_progresses(vm, 2000));
	CU_ASSERT(su_logging_off(vm));
	CU_ASSERT_EQUAL(r.dst_ret, -ECANCELED);
	CU_ASSERT_PTR_NULL(r.dst_vm);
	CU_ASSERT_EQUAL(mig_source_resolve(src, MIG_RESOLVE_RESUME_SOURCE,
					   NULL),
			-EALREADY);
	mig_source_destroy(src);
	cm_free(&r);
	hv_vm_destroy(vm);
}

static void test_resumed_lost_is_unresolved_until_confirmed(void)
{
	struct cm_run r = { .faults = MIG_FP_DST_RESUMED_SEND "=drop" };
	struct hv_vm *vm = cm_vm();
	struct mig_progress fin;
	struct mig_source *src;

	cm_migrate(vm, &r, &src);
	check_dst_runs(&r);
	check_unresolved(vm, &r);
	CU_ASSERT(su_logging_off(vm));
	CU_ASSERT_EQUAL(mig_source_resolve(src, MIG_RESOLVE_INVALID, NULL),
			-EINVAL);
	CU_ASSERT_EQUAL(mig_source_resolve(src,
					   MIG_RESOLVE_CONFIRM_DESTINATION,
					   &fin),
			0);
	CU_ASSERT_EQUAL(fin.phase, MIG_PHASE_COMPLETED);
	CU_ASSERT(fin.verify_pages > 0);
	CU_ASSERT_EQUAL(fin.verify_mismatches, 0);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_STOPPED);
	mig_source_destroy(src);
	cm_free(&r);
	hv_vm_destroy(vm);
}

static void test_source_losing_channel_after_commit_is_unresolved(void)
{
	struct cm_run r = { .faults = MIG_FP_SRC_COMMITTED "=fail" };
	struct hv_vm *vm = cm_vm();
	struct mig_source *src;

	cm_migrate(vm, &r, &src);
	check_dst_runs(&r);
	check_unresolved(vm, &r);
	/* Destroyed unresolved: the caller's VM stays paused, intact. */
	mig_source_destroy(src);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_PAUSED);
	cm_free(&r);
	hv_vm_destroy(vm);
}

static void test_page_changed_after_ack_is_a_verification_error(void)
{
	struct cm_run r = { .poke_src_after_ack = true };
	struct hv_vm *vm = cm_vm();
	struct mig_source *src;

	cm_migrate(vm, &r, &src);
	check_dst_runs(&r);
	CU_ASSERT_EQUAL(r.src_ret, -EBADE);
	CU_ASSERT_EQUAL(r.src_final.phase, MIG_PHASE_COMPLETED);
	CU_ASSERT_EQUAL(r.src_final.error, -EBADE);
	CU_ASSERT_EQUAL(r.src_final.verify_mismatches, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.src_final.message, "1 of"));
	mig_source_destroy(src);
	cm_free(&r);
	hv_vm_destroy(vm);
}

static void test_clean_commit_verifies_without_error(void)
{
	struct cm_run r = { 0 };
	struct hv_vm *vm = cm_vm();
	struct mig_source *src;

	cm_migrate(vm, &r, &src);
	check_dst_runs(&r);
	CU_ASSERT_EQUAL(r.src_ret, 0);
	CU_ASSERT_EQUAL(r.src_final.phase, MIG_PHASE_COMPLETED);
	CU_ASSERT_EQUAL(r.src_final.error, 0);
	CU_ASSERT(r.src_final.verify_pages > 0);
	CU_ASSERT_EQUAL(r.src_final.verify_mismatches, 0);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_STOPPED);
	mig_source_destroy(src);
	cm_free(&r);
	hv_vm_destroy(vm);
}

/*
 * Pages lost after the wire: every batch is read and counted as applied
 * but never written into memory (dst.batch=drop). The destination's
 * digest, taken from the pages as decoded, must differ from the source's.
 */
static void test_failed_verification_on_destination_never_resumes(void)
{
	struct cm_run r = { .faults = MIG_FP_DST_BATCH "=drop" };
	struct hv_vm *vm = cm_vm();
	struct mig_source *src;

	cm_migrate(vm, &r, &src);
	CU_ASSERT_EQUAL(r.dst_ret, -EBADE);
	CU_ASSERT_PTR_NULL(r.dst_snap); /* never reached "loaded" */
	check_on_source(vm, &r, "digest mismatch");
	mig_source_destroy(src);
	cm_free(&r);
	hv_vm_destroy(vm);
}

static void test_failed_load_on_destination_never_resumes(void)
{
	struct cm_run r = { .faults = MIG_FP_DST_LOADED "=fail" };
	struct hv_vm *vm = cm_vm();
	struct mig_source *src;

	cm_migrate(vm, &r, &src);
	CU_ASSERT_EQUAL(r.dst_ret, -EIO);
	check_on_source(vm, &r, "destination aborted");
	mig_source_destroy(src);
	cm_free(&r);
	hv_vm_destroy(vm);
}

static CU_TestInfo tests[] = {
	{ "ack_lost_keeps_vm_on_source", test_ack_lost_keeps_vm_on_source },
	{ "source_failing_before_commit_keeps_vm_on_source",
	  test_source_failing_before_commit_keeps_vm_on_source },
	{ "commit_lost_destination_gives_up_source_resumes",
	  test_commit_lost_destination_gives_up_source_resumes },
	{ "destination_failing_at_commit_never_resumes",
	  test_destination_failing_at_commit_never_resumes },
	{ "destination_cancelled_after_commit_source_resumes",
	  test_destination_cancelled_after_commit_source_resumes },
	{ "resumed_lost_is_unresolved_until_confirmed",
	  test_resumed_lost_is_unresolved_until_confirmed },
	{ "source_losing_channel_after_commit_is_unresolved",
	  test_source_losing_channel_after_commit_is_unresolved },
	{ "page_changed_after_ack_is_a_verification_error",
	  test_page_changed_after_ack_is_a_verification_error },
	{ "clean_commit_verifies_without_error",
	  test_clean_commit_verifies_without_error },
	{ "failed_verification_on_destination_never_resumes",
	  test_failed_verification_on_destination_never_resumes },
	{ "failed_load_on_destination_never_resumes",
	  test_failed_load_on_destination_never_resumes },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/session_commit", su_init, su_clean, tests);
