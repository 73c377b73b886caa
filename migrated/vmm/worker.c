// SPDX-License-Identifier: MIT
/*
 * The worker role: orphan handling, idle exit, worker calls (worker.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "migrated/vmm/calls.h"
#include "migrated/vmm/vm_info.h"
#include "migrated/rpc/ctl_frame.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/migration.h"
#include "migrated/vmm/monitor.h"
#include "migrated/rpc/server.h"
#include "migrated/vmm/worker.h"

#define COMP "vmm"
#define CLAIM_TIMEOUT_MS 5000

static bool busy(struct migd_vmm *d)
{
	/* (A name hold lives only as long as its migration runs.) */
	if (d->reg.count || d->takeover)
		return true;
	for (struct migd_mig *m = d->migs; m; m = m->next)
		if (!m->finished || m->unresolved)
			return true;
	return false;
}

/* Orphaned and exiting: what the migrations did, for the next daemon. */
static void write_outcome(struct migd_vmm *d)
{
	Migd__MigStatusResult res = MIGD__MIG_STATUS_RESULT__INIT;
	Migd__MigInfo infos[MIGD_MIG_HISTORY + 1], *ptrs[MIGD_MIG_HISTORY + 1];
	Migd__MigProgress prog[MIGD_MIG_HISTORY + 1];
	Migd__Downtime dt[MIGD_MIG_HISTORY + 1];
	char msg[MIGD_MIG_HISTORY + 1][MIGD_MIG_MSG_LEN];
	char path[PATH_MAX + 64];
	uint8_t *buf;
	size_t n = 0, len;
	FILE *f;

	for (struct migd_mig *m = d->migs; m && n <= MIGD_MIG_HISTORY;
	     m = m->next, n++) {
		migd_mig_info_fill(m, &infos[n], &prog[n], &dt[n], msg[n]);
		ptrs[n] = &infos[n];
	}
	if (!n)
		return;
	res.n_migrations = n;
	res.migrations = ptrs;
	len = migd__mig_status_result__get_packed_size(&res);
	buf = malloc(len ? len : 1);
	if (!buf)
		return;
	migd__mig_status_result__pack(&res, buf);
	snprintf(path, sizeof(path), "%.4000s/vms/%llu.outcome",
		 d->cfg.state_dir, (unsigned long long)d->cfg.worker_id);
	f = fopen(path, "we");
	if (f) {
		fwrite(buf, 1, len, f);
		fclose(f);
		hv_info(COMP, "event=outcome_written path=%s migrations=%zu",
			path, n);
	}
	free(buf);
}

static void signals_close(struct migd_vmm *d)
{
	uv_signal_stop(&d->sig_term);
	uv_signal_stop(&d->sig_int);
	if (!uv_is_closing((uv_handle_t *)&d->sig_term))
		uv_close((uv_handle_t *)&d->sig_term, NULL);
	if (!uv_is_closing((uv_handle_t *)&d->sig_int))
		uv_close((uv_handle_t *)&d->sig_int, NULL);
	uv_signal_stop(&d->sig_hup);
	if (!uv_is_closing((uv_handle_t *)&d->sig_hup))
		uv_close((uv_handle_t *)&d->sig_hup, NULL);
}

void migd_worker_check_idle(struct migd_vmm *d)
{
	if (d->stopping || !d->had_work || busy(d))
		return;
	d->stopping = true;
	hv_info(COMP, "event=worker_idle worker=%llu orphaned=%s",
		(unsigned long long)d->cfg.worker_id,
		d->orphaned ? "yes" : "no");
	if (d->orphaned)
		write_outcome(d);
	/* Finished records only: this frees them and closes their handles. */
	migd_mig_shutdown_all(d);
	migd_monitor_events_stop(d);
	/* What is queued to the daemon (the last response and events) is
	 * flushed before the connection closes; then the loop ends. */
	migd_server_drain(&d->srv);
	signals_close(d);
}

static void on_conns(void *owner, unsigned n)
{
	struct migd_vmm *d = owner;

	if (n) {
		if (d->orphaned)
			hv_info(COMP, "event=readopted worker=%llu",
				(unsigned long long)d->cfg.worker_id);
		d->orphaned = false;
		return;
	}
	d->orphaned = true;
	d->was_orphaned = true;
	hv_warn(COMP, "event=orphaned worker=%llu vms=%u "
		      "why=\"the daemon's connection closed\"",
		(unsigned long long)d->cfg.worker_id, d->reg.count);
	/* A migration cannot end well without its daemon (it reports the
	 * outcome, registers an arriving VM): end it now, where it still
	 * can be ended; past its commit point it runs to its end. */
	for (struct migd_mig *m = d->migs; m; m = m->next) {
		if (m->finished)
			continue;
		m->cancel_why = "its daemon went away (the worker cancelled "
				"it; the VM stays where it was)";
		if (migd_mig_cancel(m) == 0)
			hv_warn(COMP, "event=migration_cancelled mig=%llu "
				      "why=\"daemon gone\"",
				(unsigned long long)m->id);
	}
	migd_worker_check_idle(d);
}

static void after_call(void *owner, unsigned cs)
{
	struct migd_vmm *d = owner;

	/* A takeover starts once its daemon subscribed: the VM_STATE that
	 * announces the VM must find the subscription (update.c). */
	if (cs == MIGD__REQUEST__CALL_SUBSCRIBE && d->cfg.takeover_fd >= 0 &&
	    !d->takeover_started) {
		d->takeover_started = true;
		if (migd_worker_takeover_start(d))
			hv_err(COMP, "event=takeover_failed why=\"no thread\"");
	}
	switch (cs) {
	case MIGD__REQUEST__CALL_VM_CREATE:
	case MIGD__REQUEST__CALL_MIG_INCOMING:
	case MIGD__REQUEST__CALL_VM_DESTROY:
	case MIGD__REQUEST__CALL_MIG_START:
	case MIGD__REQUEST__CALL_MIG_RESOLVE:
	case MIGD__REQUEST__CALL_WORKER_HANDOVER:
		d->had_work = true;
		break;
	default:
		break;
	}
	migd_worker_check_idle(d);
}

const struct migd_server_ops migd_worker_server_ops = {
	.dispatch = migd_vmm_dispatch,
	.on_conns = on_conns,
	.after_call = after_call,
};

/* ---- calls ------------------------------------------------------------- */

void migd_call_worker_info(struct migd_call *call)
{
	struct migd_vmm *d = migd_vmm_of(call);
	Migd__WorkerInfo *wi = migd_call_alloc(call, sizeof(*wi));
	size_t n = 0, i = 0;

	if (!wi)
		return;
	migd__worker_info__init(wi);
	wi->worker_id = d->cfg.worker_id;
	wi->pid = (uint64_t)getpid();
	wi->version = (char *)MIGD_VERSION;
	wi->orphaned = d->was_orphaned;
	d->was_orphaned = false;
	if (d->reg.head) {
		wi->has_vm = true;
		wi->vm = migd_vm_info_new(call, d->reg.head);
		if (!wi->vm)
			return;
	}
	for (struct migd_mig *m = d->migs; m; m = m->next)
		n++;
	if (n) {
		wi->migrations = migd_call_alloc(call, n * sizeof(*wi->migrations));
		if (!wi->migrations)
			return;
		for (struct migd_mig *m = d->migs; m; m = m->next, i++) {
			Migd__MigInfo *info = migd_call_alloc(call, sizeof(*info));
			Migd__MigProgress *p = migd_call_alloc(call, sizeof(*p));
			Migd__Downtime *dt = migd_call_alloc(call, sizeof(*dt));
			char *msg = migd_call_alloc(call, MIGD_MIG_MSG_LEN);

			if (!info || !p || !dt || !msg)
				return;
			migd_mig_info_fill(m, info, p, dt, msg);
			wi->migrations[i] = info;
		}
		wi->n_migrations = n;
	}
	call->resp->result_case = MIGD__RESPONSE__RESULT_WORKER_INFO;
	call->resp->worker_info = wi;
}

/* ---- the name claim (engine thread) ------------------------------------ */

static int wait_fd(int fd, short ev, int ms)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int r;

	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	return r > 0 ? 0 : r == 0 ? -ETIMEDOUT : -errno;
}

int migd_worker_claim_name(struct migd_vmm *d, const char *name, char *why,
			   size_t why_len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__WorkerNameRequest wn = MIGD__WORKER_NAME_REQUEST__INIT;
	Migd__ServerMessage *sm = NULL;
	struct migd_framer fr;
	const uint8_t *msg;
	uint8_t *buf, rbuf[4096];
	uint32_t len;
	size_t blen, off = 0;
	int fd, ret;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->cfg.daemon_socket);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		snprintf(why, why_len, "cannot ask the daemon for the name "
				       "'%s': %s", name, strerror(-ret));
		close(fd);
		return ret;
	}
	wn.worker_id = d->cfg.worker_id;
	wn.name = (char *)name;
	req.id = 1;
	req.call_case = MIGD__REQUEST__CALL_WORKER_NAME;
	req.worker_name = &wn;
	ret = migd_frame_pack(&req.base, MIGD_FRAME_MAX, &buf, &blen);
	if (ret) {
		close(fd);
		return ret;
	}
	while (off < blen) {
		ssize_t n = send(fd, buf + off, blen - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = -errno;
			break;
		}
		off += (size_t)n;
	}
	free(buf);
	migd_framer_init(&fr, MIGD_FRAME_MAX);
	while (!ret) {
		ssize_t n;

		ret = wait_fd(fd, POLLIN, CLAIM_TIMEOUT_MS);
		if (ret)
			break;
		n = recv(fd, rbuf, sizeof(rbuf), 0);
		if (n <= 0) {
			ret = n ? -errno : -ECONNRESET;
			break;
		}
		ret = migd_framer_feed(&fr, rbuf, (size_t)n);
		if (!ret && migd_framer_next(&fr, &msg, &len) == 1) {
			sm = migd__server_message__unpack(NULL, len, msg);
			break;
		}
	}
	migd_framer_fini(&fr);
	close(fd);
	if (ret || !sm || sm->msg_case != MIGD__SERVER_MESSAGE__MSG_RESPONSE) {
		if (sm)
			migd__server_message__free_unpacked(sm, NULL);
		snprintf(why, why_len, "the daemon did not answer for the name "
				       "'%s': %s",
			 name, strerror(ret ? -ret : EPROTO));
		return ret ? ret : -EPROTO;
	}
	ret = 0;
	if (sm->response->error &&
	    sm->response->error->status != MIGD__STATUS__STATUS_OK) {
		ret = sm->response->error->status ==
				      MIGD__STATUS__STATUS_ALREADY_EXISTS
			      ? -EEXIST
			      : -EPERM;
		snprintf(why, why_len, "%s", sm->response->error->message);
	}
	migd__server_message__free_unpacked(sm, NULL);
	return ret;
}

