// SPDX-License-Identifier: MIT
/*
 * Local live update, the workers' side (worker.h, handover.h):
 *   old worker: WorkerHandover -> offer the VM (cfg + memfd; the new
 *               worker creates its VM over the memfd while the guest
 *               still runs), pause, commit (state, Go), then drop its
 *               hv_vm (the memory lives on in the new worker) and exit;
 *   new worker: started with --takeover-fd, a thread accepts the old
 *               worker, receives the VM and starts it; the loop then
 *               enters it in the registry and publishes VM_STATE.
 * The VM's registry record (name, workload, creation time, origin, the
 * number of updates) travels as the handover's metadata, a packed
 * VmInspectResult: the new binary may lay out its structs differently.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/guest_mem.h"
#include "hvcore/log.h"
#include "hvcore/time.h"
#include "migrated/vmm/vm_info.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/monitor.h"
#include "migrated/vmm/registry.h"
#include "migrated/rpc/server.h"
#include "migrated/vmm/handover.h"
#include "migrated/vmm/worker.h"

#define COMP "vmm.update"
#define HANDOVER_TIMEOUT_MS 5000u
#define ACCEPT_TIMEOUT_MS 10000

/* ---- the record as metadata -------------------------------------------- */

static int meta_pack(struct migd_vm *v, uint8_t **out, size_t *len)
{
	Migd__VmInspectResult r = MIGD__VM_INSPECT_RESULT__INIT;
	Migd__VmInfo info;
	Migd__Workload w = MIGD__WORKLOAD__INIT;

	migd_vm_info_fill(&info, v);
	info.updates = v->updates;
	w.pattern = (Migd__WlPattern)v->wl.pattern;
	w.content = (Migd__WlContent)v->wl.content;
	w.rate_pages = v->wl.rate_pages;
	w.region_offset = v->wl.region_offset;
	w.region_bytes = v->wl.region_bytes;
	w.write_pct = v->wl.write_pct;
	w.hot_pct = v->wl.hot_pct;
	w.hot_share_pct = v->wl.hot_share_pct;
	w.heartbeat_us = v->wl.heartbeat_us;
	w.seed = v->wl.seed;
	r.info = &info;
	r.workload = &w;
	*len = migd__vm_inspect_result__get_packed_size(&r);
	*out = malloc(*len ? *len : 1);
	if (!*out)
		return -ENOMEM;
	migd__vm_inspect_result__pack(&r, *out);
	return 0;
}

/* ---- old worker -------------------------------------------------------- */

static int connect_path(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

void migd_call_worker_handover(struct migd_call *call)
{
	const Migd__WorkerHandoverRequest *r = call->req->worker_handover;
	struct migd_vmm *d = migd_vmm_of(call);
	struct migd_vm *v = d->reg.head;
	struct migd_handover_times t = { 0 };
	unsigned timeout = r->timeout_ms ? r->timeout_ms : HANDOVER_TIMEOUT_MS;
	Migd__VmUpdateResult *res;
	uint8_t *meta = NULL;
	size_t meta_len = 0;
	bool paused = false;
	int fd, ret;

	if (!v) {
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "this worker runs no VM");
		return;
	}
	if (v->mig_id || migd_vm_api_state(v) != MIGD__VM_STATE__VM_STATE_RUNNING) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' is not running on its own (a migration "
			       "owns it, or it is paused or stopped): update it "
			       "when it runs",
			       v->name);
		return;
	}
	/* The update hands the guest's memfd to the new worker; private
	 * anonymous RAM has none and cannot leave this process. */
	if (hv_vm_mem_fd(v->vm) < 0) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' has backing %s, whose guest RAM cannot "
			       "be handed to a new worker: a local live update "
			       "needs a VM created with --backing memfd (or "
			       "hugetlb); migrate it instead",
			       v->name,
			       hv_mem_backing_name(v->vm->cfg.backing));
		return;
	}
	if (!r->path || !*r->path) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "handover path missing");
		return;
	}
	if (meta_pack(v, &meta, &meta_len)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "out of memory");
		return;
	}
	fd = connect_path(r->path);
	if (fd < 0) {
		free(meta);
		/* The new worker is gone already: it did not take the VM. */
		migd_call_fail(call, MIGD__STATUS__STATUS_ABORTED,
			       "cannot reach the new worker at %s (%s); VM '%s' "
			       "keeps running in the old one",
			       r->path, strerror(-fd), v->name);
		return;
	}
	/* The monitor harvests the dirty log: the handover needs it off.
	 * Offer first: the new worker builds its VM while the guest runs. */
	migd_monitor_detach(v);
	ret = migd_handover_offer(fd, v->vm, meta, meta_len, timeout, &t);
	free(meta);
	if (!ret) {
		t.paused_at_ns = hv_now_ns();
		ret = hv_vm_pause(v->vm);
		paused = !ret;
		if (!ret)
			ret = migd_handover_commit(fd, v->vm, timeout, &t);
		else
			snprintf(t.error, sizeof(t.error), "pause: %s",
				 strerror(-ret));
	}
	close(fd);
	if (ret < 0) {
		/* The new worker does not have the guest: it runs here on
		 * (resume fails harmlessly when the pause did not happen). */
		int rr = paused ? hv_vm_resume(v->vm) : 0;

		migd_monitor_attach(d, v);
		hv_warn(COMP, "event=update_failed vm=%s err=%d why=\"%s\" "
			      "resumed=%s",
			v->name, ret, t.error, rr ? "no" : "yes");
		migd_call_fail(call, MIGD__STATUS__STATUS_ABORTED,
			       "the new worker did not take VM '%s' (%s); it "
			       "keeps running in the old one",
			       v->name, t.error[0] ? t.error : strerror(-ret));
		return;
	}
	if (ret == MIGD_HANDOVER_UNCONFIRMED) {
		/* Maybe running there, maybe nowhere: never here as well. */
		hv_err(COMP, "event=update_unconfirmed vm=%s why=\"%s\"",
		       v->name, t.error);
		migd_call_fail(call, MIGD__STATUS__STATUS_INTERNAL,
			       "the new worker did not confirm it runs VM '%s' "
			       "(%s); it stays paused here",
			       v->name, t.error);
		return;
	}
	hv_info(COMP, "event=updated vm=%s pause_us=%llu save_us=%llu "
		      "create_us=%llu restore_us=%llu state_bytes=%llu",
		v->name, (unsigned long long)(t.pause_ns / 1000),
		(unsigned long long)(t.save_ns / 1000),
		(unsigned long long)(t.create_ns / 1000),
		(unsigned long long)(t.restore_ns / 1000),
		(unsigned long long)t.state_bytes);
	res = migd_call_alloc(call, sizeof(*res));
	if (!res)
		return;
	migd__vm_update_result__init(res);
	res->old_pid = (uint64_t)getpid();
	res->pause_ns = t.pause_ns;
	res->save_ns = t.save_ns;
	res->restore_ns = t.create_ns + t.restore_ns;
	call->resp->result_case = MIGD__RESPONSE__RESULT_VM_UPDATE;
	call->resp->vm_update = res;
	/* The guest runs in the new worker: drop ours without a VM_STATE
	 * "destroyed" (the VM lives on); this worker then exits idle. */
	migd_registry_remove(&d->reg, v);
}

/* ---- new worker -------------------------------------------------------- */

struct migd_handover_in {
	struct migd_vmm *d;
	int lfd;
	uv_thread_t thread;
	uv_async_t async;
	/* set by the thread before async_send */
	int result;
	struct hv_vm *vm;
	void *meta;
	size_t meta_len;
};

static void takeover_main(void *arg)
{
	struct migd_handover_in *in = arg;
	struct pollfd p = { .fd = in->lfd, .events = POLLIN };
	int fd, r;

	do
		r = poll(&p, 1, ACCEPT_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		in->result = r ? -errno : -ETIMEDOUT;
		uv_async_send(&in->async);
		return;
	}
	fd = accept4(in->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		in->result = -errno;
		uv_async_send(&in->async);
		return;
	}
	in->result = migd_handover_recv(fd, HANDOVER_TIMEOUT_MS, &in->vm,
					&in->meta, &in->meta_len, true);
	close(fd);
	uv_async_send(&in->async);
}

static void async_closed(uv_handle_t *h)
{
	struct migd_handover_in *in = h->data;
	struct migd_vmm *d = in->d;

	free(in);
	migd_worker_check_idle(d);
}

static void wl_from_msg(const Migd__Workload *w, struct migd_wl *wl)
{
	memset(wl, 0, sizeof(*wl));
	if (!w)
		return;
	wl->pattern = (uint32_t)w->pattern;
	wl->content = (uint32_t)w->content;
	wl->rate_pages = w->rate_pages;
	wl->region_offset = w->region_offset;
	wl->region_bytes = w->region_bytes;
	wl->write_pct = w->write_pct;
	wl->hot_pct = w->hot_pct;
	wl->hot_share_pct = w->hot_share_pct;
	wl->heartbeat_us = w->heartbeat_us;
	wl->seed = w->seed;
}

static void takeover_done(uv_async_t *a)
{
	struct migd_handover_in *in = a->data;
	struct migd_vmm *d = in->d;
	Migd__VmInspectResult *m = NULL;
	struct migd_vm *v;
	struct migd_wl wl;
	int ret;

	/* The join orders the thread's writes before these reads. */
	uv_thread_join(&in->thread);
	ret = in->result;
	close(in->lfd);
	if (!ret) {
		m = migd__vm_inspect_result__unpack(NULL, in->meta_len,
						    in->meta);
		if (!m || !m->info || !m->info->name)
			ret = -EPROTO;
	}
	if (!ret) {
		wl_from_msg(m->workload, &wl);
		ret = migd_registry_add(&d->reg, m->info->name, in->vm, &wl,
					!strcmp(m->info->origin, "migrated"),
					&v);
	}
	if (ret) {
		hv_err(COMP, "event=takeover_failed err=%d (%s)", ret,
		       strerror(-ret));
		if (in->vm)
			hv_vm_destroy(in->vm);
	} else {
		v->created_unix_ms = m->info->created_unix_ms;
		v->updates = m->info->updates + 1;
		migd_monitor_attach(d, v);
		hv_info(COMP, "event=took_over vm=%s updates=%u", v->name,
			v->updates);
		migd_publish_vm_state(d, v, MIGD__VM_STATE__VM_STATE_INVALID,
				      false);
	}
	if (m)
		migd__vm_inspect_result__free_unpacked(m, NULL);
	free(in->meta);
	d->had_work = true;
	d->takeover = NULL;
	uv_close((uv_handle_t *)&in->async, async_closed);
}

int migd_worker_takeover_start(struct migd_vmm *d)
{
	struct migd_handover_in *in;
	int ret;

	if (d->cfg.takeover_fd < 0)
		return 0;
	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->d = d;
	in->lfd = d->cfg.takeover_fd;
	ret = uv_async_init(d->loop, &in->async, takeover_done);
	if (ret) {
		free(in);
		return ret;
	}
	in->async.data = in;
	ret = uv_thread_create(&in->thread, takeover_main, in);
	if (ret) {
		uv_close((uv_handle_t *)&in->async, NULL);
		free(in);
		return ret;
	}
	d->takeover = in;
	return 0;
}
