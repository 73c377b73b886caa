// SPDX-License-Identifier: MIT
/*
 * Local live update: hand a paused VM to another process over a Unix
 * socket, guest memfd by SCM_RIGHTS, state by hv_vm_state_save()
 * (handover.h has the exchange and why it never runs the guest twice).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/guest_mem.h"
#include "hvcore/kvm/kvm.h"
#include "hvcore/log.h"
#include "hvcore/time.h"
#include "hvcore/vm.h"
#include "migrated/mig/linux_boot.h"
#include "migrated/vmm/fdpass.h"
#include "migrated/vmm/handover.h"
#include "proto/handover.pb-c.h"

#define HANDOVER_MAGIC 0x52564f48u /* "HOVR" */
/* 1: the freestanding guest; 2: with a Linux guest's boot and console
 * (sent only for a Linux guest, so version 1 receivers keep taking the
 * others). */
#define HANDOVER_VERSION 1u
#define HANDOVER_VERSION_LINUX 2u
/* 3: a Linux guest with its device fds (disk images, tap) after the
 * memfd, so the receiver adopts them instead of opening them by name (a
 * tap is busy while the sender holds it). */
#define HANDOVER_VERSION_FDS 3u
/* The memfd, the disks', the tap's. */
#define HANDOVER_FDS_MAX (2u + HV_BOOT_DISKS_MAX)
#define STATE_MAGIC 0x54534f48u /* "HOST" */
#define GO_MAGIC 0x4f474f48u	/* "HOGO" */
/* The metadata and the cfg; the state blob (at most 8 MiB, hvcore/vm.c). */
#define HANDOVER_MSG_MAX (MIGD_HANDOVER_META_MAX + (64u << 10))
#define STATE_MSG_MAX ((8u << 20) + 4096u)
#define SMALL_MSG_MAX (4096u)
#define WHY_LEN 192

static void say(char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, WHY_LEN, fmt, ap);
	va_end(ap);
}

/* ---- message helpers ------------------------------------------------ */

static void wl_to_msg(const struct hv_wl_vcpu_params *w, Migh__WlVcpuParams *m)
{
	migh__wl_vcpu_params__init(m);
	m->pattern = w->pattern;
	m->content = w->content;
	m->region_gpa = w->region_gpa;
	m->region_pages = w->region_pages;
	m->rate_pages = w->rate_pages;
	m->write_pct = w->write_pct;
	m->hot_pct = w->hot_pct;
	m->hot_share_pct = w->hot_share_pct;
	m->heartbeat_us = w->heartbeat_us;
	m->seed = w->seed;
	m->max_writes = w->max_writes;
	m->throttle_pct = w->throttle_pct;
	m->stop = w->stop;
}

static void wl_from_msg(const Migh__WlVcpuParams *m,
			struct hv_wl_vcpu_params *w)
{
	w->pattern = m->pattern;
	w->content = m->content;
	w->region_gpa = m->region_gpa;
	w->region_pages = m->region_pages;
	w->rate_pages = m->rate_pages;
	w->write_pct = m->write_pct;
	w->hot_pct = m->hot_pct;
	w->hot_share_pct = m->hot_share_pct;
	w->heartbeat_us = m->heartbeat_us;
	w->seed = m->seed;
	w->max_writes = m->max_writes;
	w->throttle_pct = m->throttle_pct;
	w->stop = m->stop;
}

static Migh__Backing backing_to_msg(enum hv_mem_backing b)
{
	switch (b) {
	case HV_BACKING_ANON:
		return MIGH__BACKING__BACKING_ANON;
	case HV_BACKING_THP:
		return MIGH__BACKING__BACKING_THP;
	case HV_BACKING_HUGETLB:
		return MIGH__BACKING__BACKING_HUGETLB;
	default:
		return MIGH__BACKING__BACKING_INVALID;
	}
}

static enum hv_mem_backing backing_from_msg(Migh__Backing b)
{
	switch (b) {
	case MIGH__BACKING__BACKING_ANON:
		return HV_BACKING_ANON;
	case MIGH__BACKING__BACKING_THP:
		return HV_BACKING_THP;
	case MIGH__BACKING__BACKING_HUGETLB:
		return HV_BACKING_HUGETLB;
	default:
		return HV_BACKING_INVALID;
	}
}

/* Pack @msg (any protobuf-c message) and send it with @nfds fds. */
static int send_msg(int sock, const ProtobufCMessage *msg, const int *fds,
		    unsigned nfds, unsigned timeout_ms)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;
	int ret;

	/* An all-default message packs to nothing; frames are never empty,
	 * so every message here has a non-default field (magic, phase). */
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	len = protobuf_c_message_pack(msg, buf);
	ret = migd_fdpass_send(sock, buf, len, fds, nfds, timeout_ms);
	free(buf);
	return ret;
}

static int send_reply(int sock, Migh__Phase phase, int err, const char *why,
		      Migh__HandoverReply *r, unsigned timeout_ms)
{
	r->phase = phase;
	r->ok = err == 0;
	r->err = err;
	r->error = (char *)(err ? why : "");
	return send_msg(sock, &r->base, NULL, 0, timeout_ms);
}

/* ---- receiver ------------------------------------------------------- */

/*
 * The device fds of @m among the @nfds received (@fds[0] is the memfd)
 * into cfg->boot: they must be exactly the ones @m announces.
 */
static int fds_from_msg(const Migh__Handover *m, const int *fds, unsigned nfds,
			struct hv_vm_cfg *cfg, char *why)
{
	struct hv_boot_cfg *b = &cfg->boot;
	unsigned want = 1;

	if (m->version == HANDOVER_VERSION_FDS)
		want += m->disk_fds + (m->tap_fd ? 1u : 0u);
	if (m->version != HANDOVER_VERSION_FDS && (m->disk_fds || m->tap_fd)) {
		say(why, "Handover version %u announces device fds",
		    m->version);
		return -EPROTO;
	}
	if (m->disk_fds > b->nr_disks || (m->tap_fd && !b->net_tap[0]) ||
	    nfds != want) {
		say(why,
		    "Handover announces %u disk fds of %u disks, %s tap fd%s, "
		    "with %u fds (expected %u)",
		    m->disk_fds, b->nr_disks, m->tap_fd ? "a" : "no",
		    m->tap_fd && !b->net_tap[0] ? " without a tap" : "", nfds,
		    want);
		return -EPROTO;
	}
	b->adopt_fds = true;
	b->net_fd = m->tap_fd ? fds[1 + m->disk_fds] : -1;
	for (unsigned i = 0; i < HV_BOOT_DISKS_MAX; i++)
		b->disk_fd[i] = i < m->disk_fds ? fds[1 + i] : -1;
	return 0;
}

/* Check @m and turn it into a cfg adopting @fds: the memfd, then the
 * device fds @m announces. */
static int cfg_from_msg(const Migh__Handover *m, const int *fds, unsigned nfds,
			struct hv_vm_cfg *cfg, char *why)
{
	char bwhy[WHY_LEN / 2];

	if (m->magic != HANDOVER_MAGIC || m->version < HANDOVER_VERSION ||
	    m->version > HANDOVER_VERSION_FDS) {
		say(why, "Handover magic 0x%x version %u, expected 0x%x %u..%u",
		    m->magic, m->version, HANDOVER_MAGIC, HANDOVER_VERSION,
		    HANDOVER_VERSION_FDS);
		return -EPROTO;
	}
	if ((m->version >= HANDOVER_VERSION_LINUX) != (m->boot != NULL)) {
		say(why, "Handover version %u %s a Linux guest's boot",
		    m->version, m->boot ? "with" : "without");
		return -EPROTO;
	}
	if (m->accel != MIGH__ACCEL__ACCEL_KVM &&
	    m->accel != MIGH__ACCEL__ACCEL_SOFT) {
		say(why, "Handover names no accelerator (%d)", m->accel);
		return -EPROTO;
	}
	if (!m->nr_vcpus || m->nr_vcpus > HV_VM_MAX_VCPUS ||
	    m->n_wl != m->nr_vcpus) {
		say(why, "Handover has %u vCPUs and %zu workload entries",
		    m->nr_vcpus, m->n_wl);
		return -EPROTO;
	}
	if (m->meta.len > MIGD_HANDOVER_META_MAX) {
		say(why, "Handover metadata of %zu bytes exceeds %u",
		    m->meta.len, MIGD_HANDOVER_META_MAX);
		return -EPROTO;
	}
	hv_vm_cfg_init(cfg,
		       m->accel == MIGH__ACCEL__ACCEL_KVM ? HV_ACCEL_KVM
							  : HV_ACCEL_SOFT,
		       m->mem_bytes, m->nr_vcpus);
	cfg->slot_bytes = m->slot_bytes;
	cfg->backing = backing_from_msg(m->backing);
	cfg->dirty_ring_entries = m->dirty_ring_entries;
	cfg->clear_chunk_pages = m->clear_chunk_pages;
	memset(cfg->wl, 0, sizeof(cfg->wl));
	for (uint32_t i = 0; i < m->nr_vcpus; i++)
		wl_from_msg(m->wl[i], &cfg->wl[i]);
	if (m->boot) {
		if (mig_linux_boot_unpack(m->boot, &cfg->boot, bwhy,
					  sizeof(bwhy))) {
			say(why, "Handover's Linux guest: %s", bwhy);
			return -EPROTO;
		}
		if (m->console_log &&
		    strlen(m->console_log) >= sizeof(cfg->boot.console_log)) {
			say(why, "Handover's console log path is too long");
			return -EPROTO;
		}
		snprintf(cfg->boot.console_log, sizeof(cfg->boot.console_log),
			 "%s", m->console_log ? m->console_log : "");
	}
	if (fds_from_msg(m, fds, nfds, cfg, why))
		return -EPROTO;
	cfg->adopt_mem = true;
	cfg->mem_fd = fds[0];
	return 0;
}

/* Receive one small frame without fds; *buf malloc'd. */
static int recv_small(int sock, size_t max, unsigned timeout_ms, void **buf,
		      size_t *len)
{
	return migd_fdpass_recv(sock, buf, len, max, NULL, 0, timeout_ms);
}

/* The Go frame, or an error. */
static int wait_go(int sock, unsigned timeout_ms, char *why)
{
	Migh__HandoverGo *g;
	void *buf;
	size_t len;
	int ret;

	ret = recv_small(sock, SMALL_MSG_MAX, timeout_ms, &buf, &len);
	if (ret) {
		say(why, "no Go from the sender: %s", strerror(-ret));
		return ret;
	}
	g = migh__handover_go__unpack(NULL, len, buf);
	free(buf);
	if (!g || g->magic != GO_MAGIC) {
		say(why, "the sender's Go frame is malformed");
		if (g)
			migh__handover_go__free_unpacked(g, NULL);
		return -EPROTO;
	}
	migh__handover_go__free_unpacked(g, NULL);
	return 0;
}

/* The State frame restored into @vm, its threads parked when @start. */
static int recv_state(int sock, struct hv_vm *vm, bool start,
		      unsigned timeout_ms, uint64_t *took, char *why)
{
	Migh__HandoverState *m;
	void *buf;
	size_t len;
	int ret;

	ret = recv_small(sock, STATE_MSG_MAX, timeout_ms, &buf, &len);
	if (ret) {
		say(why, "no State frame from the sender: %s", strerror(-ret));
		return ret;
	}
	*took = hv_now_ns();
	m = migh__handover_state__unpack(NULL, len, buf);
	free(buf);
	if (!m || m->magic != STATE_MAGIC) {
		say(why, "the sender's State frame is malformed");
		if (m)
			migh__handover_state__free_unpacked(m, NULL);
		return -EPROTO;
	}
	{
		struct hv_blob b = {m->vm_state.data, m->vm_state.len};

		ret = hv_vm_state_restore(vm, &b);
	}
	if (ret)
		say(why, "restore VM state (%zu bytes): %s%s", m->vm_state.len,
		    strerror(-ret),
		    ret == -EINVAL ? " (malformed or mismatched state blob)"
				   : "");
	migh__handover_state__free_unpacked(m, NULL);
	if (!ret && start) {
		ret = hv_vm_start_paused(vm);
		if (ret)
			say(why, "start the vCPU threads: %s", strerror(-ret));
	}
	*took = hv_now_ns() - *took;
	return ret;
}

/* The Handover frame: a VM created over its memfd, and its metadata. */
static int recv_offer(int sock, unsigned timeout_ms, struct hv_vm **vm,
		      void **md, size_t *md_len, uint64_t *took, char *why)
{
	int fds[HANDOVER_FDS_MAX];
	Migh__Handover *m;
	struct hv_vm_cfg cfg;
	unsigned nfds = 0;
	void *buf;
	size_t len;
	int ret;

	ret = migd_fdpass_recv_upto(sock, &buf, &len, HANDOVER_MSG_MAX, fds, 1,
				    HANDOVER_FDS_MAX, &nfds, timeout_ms);
	if (ret) {
		say(why, "receive Handover frame with the guest memfd: %s",
		    strerror(-ret));
		return ret;
	}
	*took = hv_now_ns();
	m = migh__handover__unpack(NULL, len, buf);
	free(buf);
	if (!m) {
		ret = -EPROTO;
		say(why, "Handover frame of %zu bytes does not decode", len);
		goto out;
	}
	ret = cfg_from_msg(m, fds, nfds, &cfg, why);
	if (!ret && m->meta.len) {
		*md = malloc(m->meta.len);
		if (*md) {
			memcpy(*md, m->meta.data, m->meta.len);
			*md_len = m->meta.len;
		} else {
			ret = -ENOMEM;
			say(why, "no memory for %zu bytes of metadata",
			    m->meta.len);
		}
	}
	migh__handover__free_unpacked(m, NULL);
	if (!ret) {
		ret = hv_vm_create(&cfg, vm);
		if (ret)
			say(why, "create %s VM over the received memfd: %s",
			    hv_accel_kind_name(cfg.accel), strerror(-ret));
	}
out:
	/* The VM and its devices hold their own dups (or nothing on
	 * failure); the sender keeps its own. */
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	*took = hv_now_ns() - *took;
	return ret;
}

int migd_handover_recv(int sock, unsigned timeout_ms, struct hv_vm **out,
		       void **meta, size_t *meta_len, bool start)
{
	Migh__HandoverReply r = MIGH__HANDOVER_REPLY__INIT;
	Migh__Phase phase = MIGH__PHASE__PHASE_CREATED;
	struct hv_vm *vm = NULL;
	char why[WHY_LEN] = "";
	void *md = NULL;
	size_t md_len = 0;
	uint64_t t0, t1;
	int ret;

	*out = NULL;
	*meta = NULL;
	*meta_len = 0;
	ret = recv_offer(sock, timeout_ms, &vm, &md, &md_len, &r.create_ns,
			 why);
	if (ret)
		goto fail;
	ret = send_reply(sock, phase, 0, why, &r, timeout_ms);
	if (ret) {
		say(why, "send CREATED reply: %s", strerror(-ret));
		goto fail;
	}
	phase = MIGH__PHASE__PHASE_PREPARED;
	ret = recv_state(sock, vm, start, timeout_ms, &r.restore_ns, why);
	if (ret)
		goto fail;
	ret = send_reply(sock, phase, 0, why, &r, timeout_ms);
	if (ret) {
		say(why, "send PREPARED reply: %s", strerror(-ret));
		goto fail;
	}
	phase = MIGH__PHASE__PHASE_STARTED;
	ret = wait_go(sock, timeout_ms, why);
	if (ret)
		goto fail;
	/* Committed: from here on the guest is ours, nothing fails. */
	t0 = hv_now_ns();
	if (start)
		hv_vm_resume(vm);
	t1 = hv_now_ns();
	r.start_ns = t1 - t0;
	r.started_at_ns = start ? t1 : 0;
	ret = send_reply(sock, phase, 0, why, &r, timeout_ms);
	if (ret)
		hv_warn("handover",
			"op=recv vm=%s phase=started err=%d "
			"reason=reply_lost_guest_runs_here",
			hv_vm_name(vm), ret);
	hv_info("handover",
		"op=recv vm=%s create_us=%llu restore_us=%llu start_us=%llu",
		hv_vm_name(vm), (unsigned long long)(r.create_ns / 1000),
		(unsigned long long)(r.restore_ns / 1000),
		(unsigned long long)(r.start_ns / 1000));
	*out = vm;
	*meta = md;
	*meta_len = md_len;
	return 0;

fail:
	hv_err("handover", "op=recv phase=%s err=%d reason=\"%s\"",
	       phase == MIGH__PHASE__PHASE_CREATED    ? "create"
	       : phase == MIGH__PHASE__PHASE_PREPARED ? "prepare"
						      : "go",
	       ret, why);
	/* Tell the sender (it resumes its VM); a broken socket cannot. */
	if (ret != -ECONNRESET && ret != -EPIPE)
		send_reply(sock, phase, ret, why, &r, timeout_ms);
	hv_vm_destroy(vm);
	free(md);
	return ret;
}

/* ---- sender --------------------------------------------------------- */

static const char *phase_name(Migh__Phase phase)
{
	switch (phase) {
	case MIGH__PHASE__PHASE_CREATED:
		return "CREATED";
	case MIGH__PHASE__PHASE_PREPARED:
		return "PREPARED";
	default:
		return "STARTED";
	}
}

/*
 * Receive the reply of @phase. 0 with *out set, or an error in @why;
 * *remote tells whether the receiver itself reported it.
 */
static int wait_reply(int sock, Migh__Phase phase, unsigned timeout_ms,
		      Migh__HandoverReply **out, bool *remote, char *why)
{
	Migh__HandoverReply *r;
	void *buf;
	size_t len;
	int ret;

	*remote = false;
	ret = recv_small(sock, SMALL_MSG_MAX, timeout_ms, &buf, &len);
	if (ret) {
		say(why, "no %s reply from the receiver: %s", phase_name(phase),
		    strerror(-ret));
		return ret;
	}
	r = migh__handover_reply__unpack(NULL, len, buf);
	free(buf);
	if (!r || r->phase != phase) {
		say(why, "the receiver's %s reply is malformed",
		    phase_name(phase));
		if (r)
			migh__handover_reply__free_unpacked(r, NULL);
		return -EPROTO;
	}
	if (!r->ok) {
		say(why, "receiver: %s",
		    r->error && *r->error ? r->error : "failed, no reason");
		ret = r->err < 0 ? r->err : -EIO;
		*remote = true;
		migh__handover_reply__free_unpacked(r, NULL);
		return ret;
	}
	*out = r;
	return 0;
}

/*
 * A Linux guest's device fds into @fds (room for HANDOVER_FDS_MAX - 1):
 * its disk images in disk order, then its tap; @m announces them. The
 * count. Shared, not given away: this process keeps them (and its guest
 * keeps running on them) until the receiver runs.
 */
static unsigned dev_fds(struct hv_vm *vm, Migh__Handover *m, int *fds)
{
	struct hv_kvm_dev_info dev[HV_KVM_MAX_DEVS];
	unsigned n = hv_kvm_linux_devices(vm, dev, HV_KVM_MAX_DEVS);
	unsigned k = 0;
	bool gap = false; /* past a disk without fd: the rest by path */
	int tap = -1;

	for (unsigned i = 0; i < n; i++) {
		if (!strcmp(dev[i].kind, "virtio-blk")) {
			gap |= dev[i].fd < 0 || k >= vm->cfg.boot.nr_disks ||
			       k >= HV_BOOT_DISKS_MAX;
			if (!gap)
				fds[k++] = dev[i].fd;
		} else if (!strcmp(dev[i].kind, "virtio-net")) {
			tap = dev[i].fd;
		}
	}
	m->disk_fds = k;
	if (tap >= 0 && vm->cfg.boot.net_tap[0]) {
		fds[k++] = tap;
		m->tap_fd = true;
	}
	return k;
}

static void finish(struct hv_vm *vm, const char *op, int ret,
		   struct migd_handover_times *t, const char *why)
{
	if (ret) {
		snprintf(t->error, sizeof(t->error), "%s", why);
		hv_err("handover", "op=%s vm=%s err=%d reason=\"%s\"", op,
		       hv_vm_name(vm), ret, why);
	}
}

int migd_handover_offer(int sock, struct hv_vm *vm, const void *meta,
			size_t meta_len, unsigned timeout_ms,
			struct migd_handover_times *t)
{
	Migh__Handover m = MIGH__HANDOVER__INIT;
	Migh__WlVcpuParams wl[HV_WL_MAX_VCPUS];
	Migh__WlVcpuParams *wlp[HV_WL_MAX_VCPUS];
	const struct hv_vm_cfg *c = &vm->cfg;
	struct migd_handover_times local;
	Migh__HandoverReply *r = NULL;
	char why[WHY_LEN] = "";
	int fd = hv_vm_mem_fd(vm);
	int fds[HANDOVER_FDS_MAX];
	unsigned nfds = 1;
	bool remote;
	uint64_t t0 = hv_now_ns(), paused_at;
	int ret;

	if (!t)
		t = &local;
	paused_at = t->paused_at_ns;
	memset(t, 0, sizeof(*t));
	t->paused_at_ns = paused_at;
	if (fd < 0) { /* HV_BACKING_PRIVATE: nothing to hand over */
		ret = -EOPNOTSUPP;
		say(why,
		    "backing %s has no memfd to hand over (needs "
		    "--backing memfd)",
		    hv_mem_backing_name(c->backing));
		goto out;
	}
	if (meta_len > MIGD_HANDOVER_META_MAX || (meta_len && !meta)) {
		ret = -EINVAL;
		say(why, "metadata of %zu bytes (at most %u)", meta_len,
		    MIGD_HANDOVER_META_MAX);
		goto out;
	}
	m.magic = HANDOVER_MAGIC;
	m.version = HANDOVER_VERSION;
	m.accel = c->accel == HV_ACCEL_KVM ? MIGH__ACCEL__ACCEL_KVM
					   : MIGH__ACCEL__ACCEL_SOFT;
	m.mem_bytes = c->mem_bytes;
	m.slot_bytes = c->slot_bytes;
	m.nr_vcpus = c->nr_vcpus;
	m.backing = backing_to_msg(c->backing);
	m.dirty_ring_entries = c->dirty_ring_entries;
	m.clear_chunk_pages = c->clear_chunk_pages;
	for (uint32_t i = 0; i < c->nr_vcpus; i++) {
		wl_to_msg(&c->wl[i], &wl[i]);
		wlp[i] = &wl[i];
	}
	m.n_wl = c->nr_vcpus;
	m.wl = wlp;
	m.meta.data = (uint8_t *)meta;
	m.meta.len = meta_len;
	fds[0] = fd;
	if (hv_vm_is_linux(vm)) {
		ret = mig_linux_boot_pack(&c->boot, &m.boot);
		if (ret) {
			say(why, "out of memory");
			goto out;
		}
		m.version = HANDOVER_VERSION_FDS;
		m.console_log = (char *)c->boot.console_log;
		nfds += dev_fds(vm, &m, fds + 1);
	}
	ret = send_msg(sock, &m.base, fds, nfds, timeout_ms);
	free(m.boot); /* mig_linux_boot_pack()'s one allocation */
	if (ret) {
		say(why, "send Handover frame with the guest memfd: %s",
		    strerror(-ret));
		goto out;
	}
	ret = wait_reply(sock, MIGH__PHASE__PHASE_CREATED, timeout_ms, &r,
			 &remote, why);
	if (ret)
		goto out;
	t->create_ns = r->create_ns;
	t->offer_ns = hv_now_ns() - t0;
	migh__handover_reply__free_unpacked(r, NULL);
out:
	finish(vm, "offer", ret, t, why);
	return ret;
}

int migd_handover_commit(int sock, struct hv_vm *vm, unsigned timeout_ms,
			 struct migd_handover_times *t)
{
	Migh__HandoverState ms = MIGH__HANDOVER_STATE__INIT;
	Migh__HandoverGo go = MIGH__HANDOVER_GO__INIT;
	struct migd_handover_times local = {0};
	Migh__HandoverReply *r = NULL;
	struct hv_blob state = {0};
	enum hv_vm_state st;
	enum hv_dirty_mode dm;
	char why[WHY_LEN] = "";
	bool remote = false;
	uint64_t paused_at, t0 = hv_now_ns();
	int ret;

	if (!t)
		t = &local;
	t->error[0] = 0;
	paused_at = t->paused_at_ns ? t->paused_at_ns : t0;
	st = hv_vm_get_state(vm);
	dm = hv_vm_dirty_mode(vm);
	if (st != HV_VM_PAUSED) {
		ret = -EBUSY;
		say(why, "the VM is not paused (state %d)", st);
		goto out;
	}
	if (dm != HV_DIRTY_INVALID) {
		ret = -EBUSY;
		say(why, "dirty logging is on (mode %s): stop it first",
		    hv_dirty_mode_name(dm));
		goto out;
	}
	ret = hv_vm_state_save(vm, &state);
	if (ret) {
		say(why, "save VM state: %s", strerror(-ret));
		goto out;
	}
	t->save_ns = hv_now_ns() - t0;
	t->state_bytes = state.len;
	ms.magic = STATE_MAGIC;
	ms.vm_state.data = state.data;
	ms.vm_state.len = state.len;
	ms.paused_ns = paused_at;
	ret = send_msg(sock, &ms.base, NULL, 0, timeout_ms);
	free(state.data);
	if (ret) {
		say(why, "send State frame: %s", strerror(-ret));
		goto out;
	}
	t->sent_ns = hv_now_ns() - paused_at;
	ret = wait_reply(sock, MIGH__PHASE__PHASE_PREPARED, timeout_ms, &r,
			 &remote, why);
	if (ret)
		goto out;
	t->prepared_ns = hv_now_ns() - paused_at;
	t->restore_ns = r->restore_ns;
	migh__handover_reply__free_unpacked(r, NULL);
	r = NULL;
	/* A Go that does not arrive whole starts nothing over there. */
	go.magic = GO_MAGIC;
	ret = send_msg(sock, &go.base, NULL, 0, timeout_ms);
	if (ret) {
		say(why, "send Go: %s", strerror(-ret));
		goto out;
	}
	ret = wait_reply(sock, MIGH__PHASE__PHASE_STARTED, timeout_ms, &r,
			 &remote, why);
	if (ret && !remote) {
		/* No word after Go: it may run there. Never here too. A
		 * receiver that answers with an error ran nothing. */
		size_t n = strlen(why);

		snprintf(why + n, WHY_LEN - n,
			 "; Go was sent, the guest may run in the receiver: "
			 "not resuming");
		ret = MIGD_HANDOVER_UNCONFIRMED;
		goto out;
	}
	if (ret)
		goto out;
	t->total_ns = hv_now_ns() - paused_at;
	t->start_ns = r->start_ns;
	if (r->started_at_ns > paused_at)
		t->pause_ns = r->started_at_ns - paused_at;
	migh__handover_reply__free_unpacked(r, NULL);
	hv_info("handover",
		"op=commit vm=%s state_bytes=%llu sent_us=%llu pause_us=%llu "
		"total_us=%llu",
		hv_vm_name(vm), (unsigned long long)t->state_bytes,
		(unsigned long long)(t->sent_ns / 1000),
		(unsigned long long)(t->pause_ns / 1000),
		(unsigned long long)(t->total_ns / 1000));
out:
	finish(vm, "commit", ret, t, why);
	return ret;
}

int migd_handover_send(int sock, struct hv_vm *vm, const void *meta,
		       size_t meta_len, unsigned timeout_ms,
		       struct migd_handover_times *t)
{
	struct migd_handover_times local = {0};
	enum hv_vm_state st = hv_vm_get_state(vm);
	enum hv_dirty_mode dm = hv_vm_dirty_mode(vm);
	int ret;

	if (!t)
		t = &local;
	if (!t->paused_at_ns)
		t->paused_at_ns = hv_now_ns();
	/* Refuse before anything goes out: the receiver holds nothing. */
	if (st != HV_VM_PAUSED || dm != HV_DIRTY_INVALID) {
		if (st != HV_VM_PAUSED)
			snprintf(t->error, sizeof(t->error),
				 "the VM is not paused (state %d)", st);
		else
			snprintf(t->error, sizeof(t->error),
				 "dirty logging is on (mode %s): stop it "
				 "first",
				 hv_dirty_mode_name(dm));
		hv_err("handover", "op=send vm=%s err=%d reason=\"%s\"",
		       hv_vm_name(vm), -EBUSY, t->error);
		return -EBUSY;
	}
	ret = migd_handover_offer(sock, vm, meta, meta_len, timeout_ms, t);
	if (ret)
		return ret;
	return migd_handover_commit(sock, vm, timeout_ms, t);
}
