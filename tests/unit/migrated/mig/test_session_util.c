// SPDX-License-Identifier: MIT
/* Helpers of the session tests (session_util.h); no suite of its own. */
#include "tests/unit/migrated/mig/session_util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvcore/vcpu.h"
#include "migrated/mig/devca.h"
#include "tests/harness/hv_test.h"

static char su_dir[64];
static struct mig_devca su_ca;
static struct mig_tls_cfg su_tls_srv, su_tls_cli;

int su_init(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (su_dir[0])
		return 0;
	strcpy(su_dir, "/tmp/mig-sess-XXXXXX");
	if (!mkdtemp(su_dir))
		return 1;
	if (mig_devca_ensure(su_dir, &su_ca))
		return 1;
	su_tls_srv = (struct mig_tls_cfg){ su_ca.ca_cert, su_ca.host_cert,
					   su_ca.host_key, true, NULL };
	su_tls_cli = (struct mig_tls_cfg){ su_ca.ca_cert, su_ca.host_cert,
					   su_ca.host_key, false,
					   "127.0.0.1" };
	return 0;
}

int su_clean(void)
{
	return 0; /* the CA dir is shared by the suites; tiny, left in /tmp */
}

void su_opts(struct mig_opts *o, bool server)
{
	memset(o, 0, sizeof(*o));
	o->tls = server ? &su_tls_srv : &su_tls_cli;
	o->nr_channels = 2;
	o->io_timeout_ms = 5000;
	o->timeout_ms = 30000;
}

struct hv_vm *su_vm(enum hv_accel_kind accel, uint32_t nr, uint64_t rate,
		    bool *skip)
{
	return su_vm_content(accel, nr, rate, HV_WL_CONTENT_STAMP, skip);
}

struct hv_vm *su_vm_content(enum hv_accel_kind accel, uint32_t nr,
			    uint64_t rate, uint32_t content, bool *skip)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	int ret;

	*skip = false;
	hv_vm_cfg_init(&cfg, accel, SU_MEM, nr);
	for (uint32_t i = 0; i < nr; i++) {
		cfg.wl[i].heartbeat_us = 2000;
		cfg.wl[i].content = content;
		if (rate == UINT64_MAX)
			cfg.wl[i].pattern = HV_WL_PATTERN_IDLE;
		else
			cfg.wl[i].rate_pages = rate;
	}
	ret = hv_vm_create(&cfg, &vm);
	if (ret == -ENODEV || ret == -EOPNOTSUPP) {
		*skip = true;
		return NULL;
	}
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL_FATAL(hv_vm_start(vm), 0);
	usleep(30000);
	return vm;
}

static void progress_of(struct hv_vm *vm, uint64_t *v)
{
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct hv_vcpu_stats st;

		hv_vm_vcpu_stats(vm, i, &st);
		v[i] = hv_vm_wl_status(vm, i)->seq + st.heartbeats;
	}
}

bool su_vm_progresses(struct hv_vm *vm, unsigned ms)
{
	uint64_t a[HV_WL_MAX_VCPUS], b[HV_WL_MAX_VCPUS];

	if (hv_vm_get_state(vm) != HV_VM_RUNNING)
		return false;
	progress_of(vm, a);
	for (unsigned t = 0; t < ms; t += 10) {
		bool all = true;

		usleep(10000);
		progress_of(vm, b);
		for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++)
			all &= b[i] > a[i];
		if (all)
			return true;
	}
	return false;
}

bool su_logging_off(struct hv_vm *vm)
{
	enum hv_dirty_mode m = vm->cfg.accel == HV_ACCEL_KVM ? HV_DIRTY_BITMAP
							     : HV_DIRTY_WP;

	if (hv_vm_dirty_log_start(vm, m))
		return false;
	hv_vm_dirty_log_stop(vm);
	return true;
}

static uint8_t *snapshot(struct hv_vm *vm)
{
	uint8_t *p = malloc(vm->cfg.mem_bytes);

	if (p)
		memcpy(p, hv_vm_gpa_to_hva(vm, 0, vm->cfg.mem_bytes),
		       vm->cfg.mem_bytes);
	return p;
}

static void hook_src(void *arg, struct hv_vm *vm)
{
	struct su_run *r = arg;

	free(r->src_snap);
	r->src_snap = snapshot(vm);
	r->snap_bytes = vm->cfg.mem_bytes;
}

static void hook_dst(void *arg, struct hv_vm *vm)
{
	struct su_run *r = arg;

	free(r->dst_snap);
	r->dst_snap = snapshot(vm);
}

static void progress_cb(void *arg, const struct mig_progress *p)
{
	struct su_run *r = arg;

	r->cb_calls++;
	if (p->throttle_pct > r->max_throttle)
		r->max_throttle = p->throttle_pct;
	if ((unsigned)p->phase < MIG_PHASE_COUNT)
		r->phases_seen[p->phase] = true;
}

/*
 * mig_dest_wait() into r->dst_vm, checking its contract on the way: on
 * failure *vm_out is untouched (a sentinel stays), so a NULL in dst_vm
 * after a failed wait is the test's, not one the API could only give.
 */
static int dest_wait(struct mig_dest *dst, struct su_run *r)
{
	struct hv_vm *const untouched = (struct hv_vm *)r;
	struct hv_vm *vm = untouched;
	int ret = mig_dest_wait(dst, &vm, &r->dst_final);

	if (ret) {
		CU_ASSERT_PTR_EQUAL(vm, untouched);
		r->dst_vm = NULL;
	} else {
		CU_ASSERT_PTR_NOT_NULL(vm);
		CU_ASSERT_PTR_NOT_EQUAL(vm, untouched);
		r->dst_vm = vm;
	}
	return ret;
}

void su_migrate(struct hv_vm *vm, struct su_run *r)
{
	struct mig_hooks hooks = { hook_src, hook_dst, r };
	struct mig_source *src = NULL;
	struct mig_dest *dst = NULL;
	int ret;

	if (!r->src_opts.tls && !r->src_opts.insecure)
		su_opts(&r->src_opts, false);
	if (!r->dst_opts.tls && !r->dst_opts.insecure)
		su_opts(&r->dst_opts, true);
	r->src_opts.hooks = &hooks;
	r->dst_opts.hooks = &hooks;
	ret = mig_dest_start("127.0.0.1", 0, &r->dst_opts, NULL, NULL, NULL,
			     &dst);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	ret = mig_source_start(vm, "127.0.0.1", mig_dest_port(dst),
			       &r->src_opts, progress_cb, r, &src);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	if (r->cancel_src || r->destroy_dst) {
		usleep(r->act_after_ms * 1000);
		if (r->cancel_src)
			CU_ASSERT_EQUAL(mig_source_cancel(src), 0);
		if (r->destroy_dst) {
			r->dst_ret = mig_dest_cancel(dst);
			r->dst_ret = dest_wait(dst, r);
			mig_dest_destroy(dst);
			dst = NULL;
		}
	}
	r->src_ret = mig_source_wait(src, &r->src_final);
	if (dst)
		r->dst_ret = dest_wait(dst, r);
	mig_source_destroy(src);
	mig_dest_destroy(dst);
	r->src_opts.hooks = NULL;
	r->dst_opts.hooks = NULL;
}

void su_run_free(struct su_run *r)
{
	free(r->src_snap);
	free(r->dst_snap);
	hv_vm_destroy(r->dst_vm);
	r->src_snap = r->dst_snap = NULL;
	r->dst_vm = NULL;
}

uint64_t su_compare(const struct su_run *r)
{
	uint64_t diff = 0;

	if (!r->src_snap || !r->dst_snap)
		return UINT64_MAX;
	for (uint64_t off = 0; off < r->snap_bytes; off += HV_PAGE_SIZE) {
		if (!memcmp(r->src_snap + off, r->dst_snap + off, HV_PAGE_SIZE))
			continue;
		if (!diff)
			printf("\n    first differing page: gfn 0x%llx\n",
			       (unsigned long long)(off >> HV_PAGE_SHIFT));
		diff++;
	}
	return diff;
}

bool su_stamps_ok(const uint8_t *snap, const struct hv_vm_cfg *cfg,
		  uint64_t *stamped)
{
	const struct hv_wl_status *st =
		(const struct hv_wl_status *)(snap + HV_WL_STATUS_GPA);

	*stamped = 0;
	for (uint32_t v = 0; v < cfg->nr_vcpus; v++) {
		const struct hv_wl_vcpu_params *w = &cfg->wl[v];
		uint64_t max = 0;

		if (w->pattern == HV_WL_PATTERN_IDLE)
			continue;
		for (uint64_t p = 0; p < w->region_pages; p++) {
			struct hv_wl_stamp s;

			memcpy(&s, snap + w->region_gpa + p * HV_PAGE_SIZE,
			       sizeof(s));
			if (!s.magic && !s.seq)
				continue;
			/* A vCPU paused mid-batch has stamped up to a batch
			 * beyond its published seq. */
			if (s.magic != HV_WL_STAMP_MAGIC || s.vcpu != v ||
			    !s.seq || s.seq > st[v].seq + HV_WL_BATCH)
				return false;
			max = s.seq > max ? s.seq : max;
			(*stamped)++;
		}
		/* The guest counts a write once it made it: its last write
		 * must be in memory. */
		if (st[v].seq && max < st[v].seq)
			return false;
	}
	return true;
}

void su_print(const char *what, const struct su_run *r)
{
	const struct mig_progress *p = &r->src_final;
	const struct mig_downtime *d = &p->downtime;

	printf("\n    %s: ret=%d total=%.1fms iters=%u pages=%llu zero=%llu "
	       "zstd=%llu raw=%llu wire=%lluKiB ratio=%.1f throttle_max=%u\n"
	       "      downtime=%.2fms [pause %.2f harvest %.2f send %.2f "
	       "state %.2f digest %.2f load %.2f resume %.2f] "
	       "dst[verify %.2f load %.2f start %.2f] guest_seen=%.2fms "
	       "cb=%u\n",
	       what, r->src_ret, (double)p->elapsed_ns / 1e6, p->iteration,
	       (unsigned long long)p->pages_sent,
	       (unsigned long long)p->pages_zero,
	       (unsigned long long)p->pages_compressed,
	       (unsigned long long)p->pages_raw,
	       (unsigned long long)(p->bytes_wire >> 10), p->compression_ratio,
	       r->max_throttle, (double)d->total_ns / 1e6,
	       (double)d->pause_ns / 1e6, (double)d->final_harvest_ns / 1e6,
	       (double)d->final_send_ns / 1e6, (double)d->state_ns / 1e6,
	       (double)d->digest_ns / 1e6, (double)d->load_ns / 1e6,
	       (double)d->resume_ns / 1e6, (double)d->dst_verify_ns / 1e6,
	       (double)d->dst_load_ns / 1e6, (double)d->dst_resume_ns / 1e6,
	       (double)p->guest_downtime_ns / 1e6, r->cb_calls);
	printf("      holes=%llu verify: %llu pages, %llu mismatches, "
	       "%.2f ms\n",
	       (unsigned long long)p->pages_hole,
	       (unsigned long long)p->verify_pages,
	       (unsigned long long)p->verify_mismatches,
	       (double)p->verify_ns / 1e6);
	if (p->message[0])
		printf("      message: %s\n", p->message);
	fflush(stdout);
}
