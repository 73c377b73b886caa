// SPDX-License-Identifier: MIT
/*
 * mig_dest, postcopy (dest_priv.h, docs/migration-protocol.md, "Postcopy").
 *
 * Switch: PostcopyUnsent frames fill the missing set (RAM-page order);
 * the VmState then sets up the installer (postcopy_uffd.h: our stale
 * copies dropped, guest RAM registered with userfaultfd), turns the
 * receive pipe to "decode into a bounce buffer, then install", loads
 * the state and acks. After the Commit the VM runs; this thread then
 * serves faults: the installer's fault thread queues the gfn and wakes
 * us (eventfd), we send PageRequests and install the pages that come
 * back on the control channel, while the data channels install the
 * source's background push. When no page is missing, the pipe's end
 * (DataEnd) is awaited, the digest of the page-hash table (filled as
 * pages were installed) goes to the source in PostcopyDone.
 *
 * A page is never written into guest memory directly after the switch:
 * a write to a missing page would fault into our own userfaultfd.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hvcore/guest_mem.h"
#include "hvcore/log.h"
#include "hvcore/types.h"
#include "hvcore/vcpu.h"
#include "migrated/mig/batch.h"
#include "migrated/mig/dest_priv.h"
#include "migrated/mig/memmap.h"
#include "migrated/mig/pipeline.h"
#include "migrated/mig/postcopy_map.h"
#include "migrated/mig/postcopy_uffd.h"

#define VMSTATE_FORMAT 1u

/* RAM page index of the first page of slot @sl (it is in guest RAM). */
static uint64_t ram_index(const struct mig_dest *d,
			  const struct mig_memmap_slot *sl)
{
	return (uint64_t)(sl->host - d->pc_hva) >> HV_PAGE_SHIFT;
}

int mig__dst_pc_on_unsent(struct mig_dest *d, const ProtobufCMessage *m)
{
	const Mig__PostcopyUnsent *u = (const Mig__PostcopyUnsent *)m;
	const struct mig_memmap_slot *sl;
	uint64_t first, added = 0;
	int ret;

	if (!d->pc) {
		const struct hv_guest_mem *mem = d->vm->mem;

		/* Nothing may populate guest memory from here on: the pages
		 * the source did not send must stay missing for
		 * userfaultfd (mig_pc_uffd_create drops them, then
		 * registers). */
		mig_recv_pipe_prefault_stop(d->pipe);

		if (!mem)
			FAIL(d, -EOPNOTSUPP, "postcopy: no guest memory map");
		d->pc_hva = mem->hva;
		d->pc_ram_pages = mem->bytes >> HV_PAGE_SHIFT;
		d->pc_missing = calloc(HV_DIV_ROUND_UP(d->pc_ram_pages, 64),
				       8);
		if (!d->pc_missing)
			FAIL(d, -ENOMEM, "postcopy: out of memory");
		d->pc = true;
		mig__prog_phase(&d->prog, MIG_PHASE_SWITCHOVER);
	}
	sl = mig_memmap_find(d->map, u->slot);
	if (!sl)
		FAIL(d, -EPROTO, "postcopy: unsent pages of unknown slot %u",
		     u->slot);
	first = ram_index(d, sl);
	/* Slots start on 2 MiB boundaries: a whole bitmap word. */
	if (first & 63)
		FAIL(d, -EPROTO, "postcopy: slot %u not 64-page aligned",
		     u->slot);
	ret = mig_pc_unsent_apply(u, sl->npages, d->pc_missing + first / 64,
				  &added);
	if (ret)
		FAIL(d, -EPROTO, "postcopy: bad unsent range of slot %u: %s",
		     u->slot, strerror(-ret));
	d->pc_unsent += added;
	return 0;
}

/* Table (digest) index of page @gfn of slot @id (a checked batch). */
static uint64_t table_index(const struct mig_memmap *map, uint32_t id,
			    uint64_t gfn)
{
	uint64_t idx = 0;

	for (unsigned i = 0; i < mig_memmap_count(map); i++) {
		const struct mig_memmap_slot *sl = mig_memmap_at(map, i);

		if (sl->id == id)
			return idx + (gfn - sl->base_gfn);
		idx += sl->npages;
	}
	return UINT64_MAX;
}

/*
 * Install the pages of batch @b, decoded into the bounce buffer: hash
 * each into the digest table, UFFDIO_COPY it (or a zero page), then free
 * its bounce page. Only the batch's own pages are dropped from the
 * bounce buffer: another channel may be decoding its neighbours.
 * Any thread (pipe channels and the engine).
 */
static int install_pages(struct mig_dest *d, const struct mig_memmap *bmap,
			 const Mig__PageBatch *b)
{
	uint8_t *first = NULL;
	const uint8_t *bh = mig_memmap_range(bmap, b->slot, b->first_gfn,
					     b->npages);
	const uint8_t *gh = mig_memmap_range(d->map, b->slot, b->first_gfn,
					     b->npages);
	uint64_t t = table_index(d->map, b->slot, b->first_gfn);
	uint64_t zh = mig_zero_page_hash();

	if (!bh || !gh || t == UINT64_MAX)
		return -EPROTO; /* mig_batch_check passed: cannot happen */
	for (uint32_t i = 0; i < b->npages; i++) {
		const uint8_t *page = bh + ((uint64_t)i << HV_PAGE_SHIFT);
		uint64_t idx = (uint64_t)(gh - d->pc_hva) / HV_PAGE_SIZE + i;
		bool zero = b->zero_mask >> i & 1;
		int ret;

		if (!(b->page_mask >> i & 1))
			continue;
		ret = mig_pc_uffd_install(d->pc_uffd, idx, zero ? NULL : page);
		/* Only the installer of a page hashes it: a page that came
		 * twice (pushed, then asked for) is hashed once, by one
		 * thread. */
		if (ret == 1 && d->htab)
			d->htab[t + i] = zero ? 0 : mig_page_hash(page) ^ zh;
		if (ret < 0) {
			hv_err("mig", "op=postcopy_install gfn=0x%llx err=%d",
			       (unsigned long long)(b->first_gfn + i), ret);
			return ret;
		}
		if (!first)
			first = (uint8_t *)page;
	}
	/* The bounce buffer is this channel's alone: free the batch's
	 * window in one call (one TLB shootdown, not one a page); a ring
	 * keeps its few pages for the next batch. */
	if (first && !d->pc_bounce_ring)
		madvise(first,
			(size_t)(bh + ((uint64_t)b->npages << HV_PAGE_SHIFT) -
				 first),
			MADV_DONTNEED);
	return 0;
}

/* The data channels' pages (the pipe's install callback). */
static int install_batch(void *arg, const struct mig_memmap *bmap,
			 const Mig__PageBatch *b)
{
	return install_pages(arg, bmap, b);
}

uint64_t mig__dst_pc_idx_gfn(const struct mig_dest *d, uint64_t idx)
{
	const uint8_t *hva = d->pc_hva + (idx << HV_PAGE_SHIFT);

	for (unsigned i = 0; i < mig_memmap_count(d->map); i++) {
		const struct mig_memmap_slot *sl = mig_memmap_at(d->map, i);

		if (hva >= sl->host &&
		    (uint64_t)(hva - sl->host) >> HV_PAGE_SHIFT < sl->npages)
			return sl->base_gfn +
			       ((uint64_t)(hva - sl->host) >> HV_PAGE_SHIFT);
	}
	return UINT64_MAX;
}

void mig__dst_pc_pipe_install(struct mig_dest *d)
{
	mig_recv_pipe_set_install(d->pipe, d->pc_bmap, install_batch, d);
}

/* Fault thread: RAM page @idx is needed; queue its gfn for the engine. */
static void on_fault(void *arg, uint64_t idx)
{
	struct mig_dest *d = arg;
	uint64_t one = 1, gfn = mig__dst_pc_idx_gfn(d, idx);

	if (gfn == UINT64_MAX)
		return; /* guest RAM outside every slot: never missing */
	pthread_mutex_lock(&d->pc_lock);
	if (d->pc_qlen < HV_ARRAY_SIZE(d->pc_q))
		d->pc_q[d->pc_qlen++] = gfn;
	pthread_mutex_unlock(&d->pc_lock);
	if (write(d->pc_efd, &one, sizeof(one)) < 0)
		hv_err("mig", "op=postcopy_wake err=%d", -errno);
}

/*
 * A bounce ring: the range of guest RAM's size maps one small memfd of
 * BOUNCE_RING_BYTES again and again, so that page i and page i + ring
 * share memory. A batch (at most 64 consecutive pages, decoded and then
 * installed by one channel thread before its next) never meets itself,
 * and the ring's pages stay resident: no page fault, zeroed page, free
 * and TLB shootdown per batch, which an anonymous buffer freed after
 * each batch costs (a shootdown per fault for the control channel's
 * single-page batches). RAM of BOUNCE_RING_MAPS rings or more (each
 * mapping counts against vm.max_map_count) keeps the anonymous buffer.
 * 0, 1 when not used, or a negative errno.
 */
#define BOUNCE_RING_BYTES (4ull << 20)
#define BOUNCE_RING_MAPS 4096u

static int bounce_ring(uint8_t *bounce, uint64_t bytes)
{
	int fd, ret = 0;

	if (bytes / BOUNCE_RING_BYTES >= BOUNCE_RING_MAPS)
		return 1;
	fd = memfd_create("mig-bounce", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)BOUNCE_RING_BYTES) < 0)
		ret = -errno;
	for (uint64_t off = 0; !ret && off < bytes; off += BOUNCE_RING_BYTES) {
		size_t len = (size_t)HV_MIN(BOUNCE_RING_BYTES, bytes - off);

		if (mmap(bounce + off, len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
			ret = -errno;
	}
	close(fd);
	return ret;
}

/*
 * A bounce buffer per channel (data channels and control): a page pushed
 * and then asked for again comes twice, and a copy being decoded on one
 * channel must not be overwritten or dropped by another's install. Laid
 * out as guest RAM (the decoder's memory map), backed by a ring
 * (bounce_ring()) or, for very large RAM, by anonymous memory backed
 * only while a batch waits for its install (each channel frees its
 * batch's window in one call).
 */
static int bounce_create(struct mig_dest *d, uint8_t **bounce,
			 struct mig_memmap **bmap)
{
	unsigned n = mig_memmap_count(d->map);
	struct mig_memmap_slot *ms;
	uint64_t bytes = d->pc_ram_pages << HV_PAGE_SHIFT;
	int ret;

	*bounce = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (*bounce == MAP_FAILED) {
		*bounce = NULL;
		return -errno;
	}
	ret = bounce_ring(*bounce, bytes);
	if (ret < 0)
		return ret;
	d->pc_bounce_ring = ret == 0;
	ms = calloc(HV_MAX(n, 1u), sizeof(*ms));
	if (!ms)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		const struct mig_memmap_slot *sl = mig_memmap_at(d->map, i);

		ms[i] = *sl;
		ms[i].host = *bounce + (sl->host - d->pc_hva);
	}
	ret = mig_memmap_create(ms, n, bmap);
	free(ms);
	return ret;
}

static int send_requests(struct mig_dest *d, uint64_t *seq);
static int ctl_batch(struct mig_dest *d, const Mig__PageBatch *b, bool *link);
static int wait_work(struct mig_dest *d, unsigned ms);

struct pc_load {
	struct mig_dest *d;
	int ret;
	atomic_bool done;
};

static void *load_thread(void *arg)
{
	struct pc_load *l = arg;
	uint64_t one = 1;

	l->ret = hv_vm_state_restore(l->d->vm, &l->d->state);
	atomic_store(&l->done, true);
	/* Wake the engine's wait (it reads the eventfd as requests). */
	if (write(l->d->pc_efd, &one, sizeof(one)) < 0)
		hv_err("mig", "op=postcopy_load_wake err=%d", -errno);
	return NULL;
}

/*
 * Load the VM state with guest RAM registered and pages missing. The load
 * may touch one of them: for a Linux guest, KVM writes the wall clock
 * (MSR_KVM_WALL_CLOCK_NEW) and maps each vCPU's kvmclock page
 * (MSR_KVM_SYSTEM_TIME_NEW) while the MSRs are set, from the thread that
 * sets them. Run on this thread, such a fault would wait for a request
 * that only this thread sends: the load runs on a thread of its own
 * while this one asks for the pages it faults on and installs them (the
 * source answers PageRequests before the Ack, source_postcopy.c). The
 * VM has not run: on a failure here the pages the load waits on are
 * installed as zero pages, so that it ends, and the migration fails.
 */
static int pc_load_state(struct mig_dest *d)
{
	struct pc_load l = {.d = d};
	pthread_t thr;
	int ret, err = 0;

	ret = -pthread_create(&thr, NULL, load_thread, &l);
	if (ret)
		FAIL(d, ret, "load VM state: thread: %s", strerror(-ret));
	while (!err && !atomic_load(&l.done)) {
		struct mig_frame_hdr h;
		ProtobufCMessage *m;
		bool link;

		err = send_requests(d, &d->pc_seq);
		if (err || atomic_load(&l.done))
			break;
		err = wait_work(d, 100);
		if (err == -ETIMEDOUT) {
			err = atomic_load(&d->cancel) ? -ECANCELED : 0;
			continue;
		}
		if (!err)
			err = mig_conn_recv(d->ctl, &h, &m);
		if (err)
			break;
		atomic_fetch_add_explicit(&d->ctl_bytes,
					  MIG_FRAME_HDR_SIZE + h.len,
					  memory_order_relaxed);
		if (h.type != MIG__MSG_TYPE__MSG_PAGE_BATCH) {
			hv_err("mig", "op=postcopy_load port=%u got=%s",
			       d->port, mig_frame_type_name(h.type));
			err = h.type == MIG__MSG_TYPE__MSG_ABORT ? -ECONNABORTED
								 : -EPROTO;
		} else {
			err = ctl_batch(d, (Mig__PageBatch *)m, &link);
		}
		mig_frame_msg_free(m);
	}
	/* Not run yet, and never will be: let the load end on zero pages
	 * (the installer stays, the data channels may still use it). */
	while (err && !atomic_load(&l.done)) {
		uint64_t w[64];
		size_t n = mig_pc_uffd_waiting(d->pc_uffd, w, HV_ARRAY_SIZE(w));

		for (size_t i = 0; i < n; i++)
			mig_pc_uffd_install(d->pc_uffd, w[i], NULL);
		usleep(1000);
	}
	pthread_join(thr, NULL);
	d->pc_load_faults = atomic_load(&d->pc_requested);
	if (d->pc_load_faults)
		hv_info("mig",
			"op=postcopy_load port=%u pages_asked=%llu "
			"err=%d",
			d->port, (unsigned long long)d->pc_load_faults, err);
	if (err)
		FAIL(d, err, "load VM state: serving its page faults: %s",
		     strerror(-err));
	return l.ret;
}

int mig__dst_pc_on_vm_state(struct mig_dest *d, const ProtobufCMessage *m)
{
	const Mig__VmStateEnvelope *env = (const Mig__VmStateEnvelope *)m;
	const struct hv_guest_mem *mem = d->vm->mem;
	struct mig_pc_uffd_cfg cfg = { 0 };
	Mig__Ack ack = MIG__ACK__INIT;
	uint64_t t0;
	int ret;

	if (env->format != VMSTATE_FORMAT || !env->state.len)
		FAIL(d, -EPROTO, "VM state format %u, %zu bytes", env->format,
		     env->state.len);
	d->state.data = malloc(env->state.len);
	if (!d->state.data)
		FAIL(d, -ENOMEM, "VM state: out of memory");
	memcpy(d->state.data, env->state.data, env->state.len);
	d->state.len = env->state.len;
	t0 = mig__now_ns();
	mig_recv_pipe_prefault_stop(d->pipe);
	pthread_mutex_init(&d->pc_lock, NULL);
	d->pc_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->pc_efd < 0)
		FAIL(d, -errno, "postcopy: eventfd: %s", strerror(errno));
	ret = 0;
	for (unsigned i = 0; !ret && i <= d->nchan; i++)
		ret = bounce_create(d, &d->pc_bounce[i], &d->pc_bmap[i]);
	if (!ret)
		ret = mig_batch_dec_create(&d->pc_dec);
	if (ret)
		FAIL(d, ret, "postcopy: %s", strerror(-ret));
	d->pc_payload = malloc(MIG_BATCH_PAYLOAD_MAX);
	if (!d->pc_payload)
		FAIL(d, -ENOMEM, "postcopy: out of memory");
	cfg.base = d->pc_hva;
	cfg.npages = d->pc_ram_pages;
	cfg.shared = mem->fd >= 0;
	cfg.hugetlb = mem->backing == HV_BACKING_HUGETLB;
	cfg.request = on_fault;
	cfg.arg = d;
	ret = mig_pc_uffd_create(&cfg, d->pc_missing, &d->pc_uffd);
	if (ret)
		FAIL(d, ret, "postcopy: userfaultfd on %s memory: %s",
		     hv_mem_backing_name(mem->backing), strerror(-ret));
	/* Every precopy batch was applied (IterAck): from here on pages
	 * go through the bounce buffer. */
	mig__dst_pc_pipe_install(d);
	d->pc_cbmap = d->pc_bmap[d->nchan];
	if (d->hooks.dst_received)
		d->hooks.dst_received(d->hooks.arg, d->vm);
	d->verify_ns = mig__now_ns() - t0;
	t0 = mig__now_ns();
	ret = pc_load_state(d);
	d->load_ns = mig__now_ns() - t0;
	if (ret)
		FAIL(d, ret, "load VM state: %s", strerror(-ret));
	mig__prog_phase(&d->prog, MIG_PHASE_COMMIT);
	ack.pages = mig_memmap_pages(d->map);
	ret = mig_conn_send(d->ctl, MIG__MSG_TYPE__MSG_ACK, &ack.base, NULL, 0);
	if (ret)
		FAIL(d, ret, "send ack: %s", strerror(-ret));
	d->commit_state = DST_LOADED;
	hv_info("mig", "op=postcopy_loaded port=%u missing=%llu", d->port,
		(unsigned long long)d->pc_unsent);
	return 0;
}

/* Ask for every queued gfn, MIG_PC_REQ_MAX per frame. */
static int send_requests(struct mig_dest *d, uint64_t *seq)
{
	uint64_t q[HV_ARRAY_SIZE(d->pc_q)], one;
	unsigned n;
	int ret = 0;

	if (read(d->pc_efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	pthread_mutex_lock(&d->pc_lock);
	n = d->pc_qlen;
	memcpy(q, d->pc_q, n * sizeof(q[0]));
	d->pc_qlen = 0;
	pthread_mutex_unlock(&d->pc_lock);
	for (unsigned i = 0; !ret && i < n; i += MIG_PC_REQ_MAX) {
		Mig__PageRequest r = MIG__PAGE_REQUEST__INIT;

		r.seq = (*seq)++;
		r.n_gfns = HV_MIN(n - i, MIG_PC_REQ_MAX);
		r.gfns = q + i;
		ret = mig_conn_send(d->ctl, MIG__MSG_TYPE__MSG_PAGE_REQUEST,
				    &r.base, NULL, 0);
	}
	atomic_fetch_add(&d->pc_requested, n);
	return ret;
}

/* A page batch answering a request, on the control channel. A failed
 * read of its payload is the channel's (*@link). */
static int ctl_batch(struct mig_dest *d, const Mig__PageBatch *b, bool *link)
{
	struct mig_batch_info info;
	int ret = mig_batch_check(b, d->pc_cbmap);

	*link = false;
	if (!ret) {
		ret = mig_conn_read(d->ctl, d->pc_payload, b->payload_len);
		*link = ret != 0;
	}
	if (!ret)
		ret = mig_batch_decode(d->pc_dec, d->pc_cbmap, b,
				       d->pc_payload, b->payload_len, &info);
	if (!ret)
		ret = install_pages(d, d->pc_cbmap, b);
	return ret;
}

/* Wait up to @ms for the control channel or a queued request. */
static int wait_work(struct mig_dest *d, unsigned ms)
{
	struct pollfd pf[2] = {
		{ .fd = mig_conn_fd(d->ctl), .events = POLLIN },
		{ .fd = d->pc_efd, .events = POLLIN },
	};
	int ret = mig_conn_wait_recv(d->ctl, 0);

	if (ret != -ETIMEDOUT)
		return ret; /* TLS holds bytes (0), or the channel failed */
	if (poll(pf, 2, (int)ms) < 0 && errno != EINTR)
		return -errno;
	return pf[0].revents ? 0 : -ETIMEDOUT;
}

static void pc_counters(struct mig_dest *d)
{
	struct mig_pc_uffd_stats st;

	mig_pc_uffd_get_stats(d->pc_uffd, &st);
	pthread_mutex_lock(&d->prog.lock);
	d->prog.p.postcopy = true;
	d->prog.p.pc_unsent_pages = st.missing;
	d->prog.p.pc_pages_requested = st.faults_served;
	d->prog.p.pc_pages_pushed = st.installed - st.faults_served;
	d->prog.p.pc_fault_p50_ns = st.lat_p50_ns;
	d->prog.p.pc_fault_p99_ns = st.lat_p99_ns;
	d->prog.p.pc_fault_max_ns = st.lat_max_ns;
	if (st.last_install_ns > d->pc_t0)
		d->prog.p.pc_last_page_ns = st.last_install_ns - d->pc_t0;
	d->prog.p.remaining_bytes = (st.missing - st.installed)
				    << HV_PAGE_SHIFT;
	pthread_mutex_unlock(&d->prog.lock);
}

/*
 * Serve faults until no page is missing. 0; or an error: with *@broken
 * a channel's (@why says which: recoverable), else the migration's (the
 * progress says why).
 */
static int pc_serve(struct mig_dest *d, uint64_t *seq, bool *broken,
		    char *why, size_t why_len)
{
	int ret;

	*broken = true;
	while (mig_pc_uffd_remaining(d->pc_uffd)) {
		struct mig_frame_hdr h;
		ProtobufCMessage *m;
		int perr = atomic_load(&d->pipe_err);
		bool link;

		if (perr) {
			snprintf(why, why_len, "data channel: %s",
				 strerror(-perr));
			return perr;
		}
		ret = send_requests(d, seq);
		if (ret) {
			snprintf(why, why_len, "send page request: %s",
				 strerror(-ret));
			return ret;
		}
		ret = wait_work(d, 100);
		if (ret == -ETIMEDOUT) {
			pc_counters(d);
			mig__prog_emit(&d->prog, false);
			continue;
		}
		if (!ret)
			ret = mig_conn_recv(d->ctl, &h, &m);
		if (ret) {
			perr = atomic_load(&d->pipe_err);
			snprintf(why, why_len, "%s: %s",
				 perr ? "data channel" : "control channel",
				 strerror(-(perr ? perr : ret)));
			return ret;
		}
		atomic_fetch_add_explicit(&d->ctl_bytes,
					  MIG_FRAME_HDR_SIZE + h.len,
					  memory_order_relaxed);
		if (h.type != MIG__MSG_TYPE__MSG_PAGE_BATCH) {
			mig__prog_fail(&d->prog, -EPROTO,
				       "postcopy: unexpected %s from the "
				       "source",
				       mig_frame_type_name(h.type));
			mig_frame_msg_free(m);
			*broken = false;
			return -EPROTO;
		}
		ret = ctl_batch(d, (Mig__PageBatch *)m, &link);
		mig_frame_msg_free(m);
		if (ret && link) {
			snprintf(why, why_len, "control channel: %s",
				 strerror(-ret));
			return ret;
		}
		if (ret) {
			*broken = false;
			FAIL(d, ret, "postcopy: requested page: %s",
			     strerror(-ret));
		}
	}
	return 0;
}

/*
 * Every page is in: wait for the push's end (DataEnd on every channel),
 * take the digest, hand the VM over (once), send PostcopyDone. 0; or an
 * error, *@broken as pc_serve().
 */
/* CLOCK_REALTIME of the first heartbeat of the VM (any vCPU) since it
 * started here; 0 when none came or the VM is gone. */
static uint64_t first_heartbeat_real(struct mig_dest *d)
{
	struct hv_vm *vm = d->vm_out ? d->vm_out : d->vm;
	uint64_t first = 0;

	if (!vm)
		return 0;
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct hv_vcpu_stats st;

		if (hv_vm_vcpu_stats(vm, i, &st) || !st.first_heartbeat_ns)
			continue;
		if (!first || st.first_heartbeat_ns < first)
			first = st.first_heartbeat_ns;
	}
	return first ? mig__mono_to_real(first) : 0;
}

static int pc_finish(struct mig_dest *d, bool *broken, char *why,
		     size_t why_len)
{
	Mig__PostcopyDone done = MIG__POSTCOPY_DONE__INIT;
	struct mig_pc_uffd_stats st;
	struct mig_frame_hdr h;
	ProtobufCMessage *m;
	int ret;

	*broken = true;
	if (!d->pipe) { /* dropped with the channels: the link is down */
		snprintf(why, why_len, "data channels: not connected");
		return -ENOTCONN;
	}
	ret = mig_recv_pipe_join(d->pipe);
	if (ret) {
		snprintf(why, why_len, "data channels: %s", strerror(-ret));
		return ret;
	}
	*broken = false;
	ret = mig_digest_table_rel(d->map, d->htab, mig_zero_page_hash(),
				   d->digest);
	if (ret)
		FAIL(d, ret, "postcopy digest: %s", strerror(-ret));
	mig_pc_uffd_get_stats(d->pc_uffd, &st);
	done.pages_installed = st.installed;
	done.pages_requested = st.faults_served;
	done.fault_p50_ns = st.lat_p50_ns;
	done.fault_p99_ns = st.lat_p99_ns;
	done.fault_max_ns = st.lat_max_ns;
	done.last_page_ns = st.last_install_ns > d->pc_t0
				    ? st.last_install_ns - d->pc_t0
				    : 0;
	done.digest.data = d->digest;
	done.digest.len = MIG_DIGEST_LEN;
	done.first_heartbeat_realtime_ns = first_heartbeat_real(d);
	/* Complete: its owner learns it before the source does. */
	if (d->opts.dst_running && d->vm_out) {
		d->opts.dst_running(d->opts.dst_running_arg, d->vm_out);
		d->vm_out = NULL;
	}
	d->pc_whole = true;
	ret = mig_conn_send(d->ctl, MIG__MSG_TYPE__MSG_POSTCOPY_DONE,
			    &done.base, NULL, 0);
	if (ret) {
		/* The source must hear it: it keeps its copy until then. */
		*broken = true;
		snprintf(why, why_len, "send done: %s", strerror(-ret));
		return ret;
	}
	/* Its echo says it has it; without it (a link broken just now) we
	 * pause, and its recovery finds nothing missing and hears the Done
	 * again. The source hashes what it sent first: a large VM takes
	 * a while, so the wait is ten I/O timeouts. */
	for (unsigned waited = 0;; waited += 1000) {
		ret = mig_conn_wait_recv(d->ctl, 1000);
		if (ret != -ETIMEDOUT || waited >= 10 * d->io_ms)
			break;
		pc_counters(d);
		mig__prog_emit(&d->prog, false);
	}
	if (!ret)
		ret = mig_conn_recv_types(
			d->ctl, MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_POSTCOPY_DONE),
			&h, &m);
	if (ret) {
		*broken = true;
		snprintf(why, why_len,
			 "every page is in place, waiting for the source to "
			 "take the Done: %s",
			 strerror(-ret));
		return ret;
	}
	mig_frame_msg_free(m);
	return 0;
}

int mig__dst_pc_run(struct mig_dest *d)
{
	struct mig_progress p;
	int ret;

	d->pc_t0 = mig__now_ns();
	mig__prog_phase(&d->prog, MIG_PHASE_POSTCOPY);
	for (;;) {
		char why[160] = "";
		bool broken;

		ret = pc_serve(d, &d->pc_seq, &broken, why, sizeof(why));
		if (!ret)
			ret = pc_finish(d, &broken, why, sizeof(why));
		if (!ret || !broken)
			break;
		/* Not a failure: paused until the source reconnects. */
		ret = mig__dst_pc_recover(d, ret, why);
		if (ret == -ECANCELED && d->pc_whole) {
			/* Only the source's echo of our Done was missing: the
			 * VM is whole and runs here; it stays. */
			mig__prog_set(&d->prog, MIG_PHASE_POSTCOPY, 0,
				      "every page in place; ended by a cancel "
				      "while waiting for the source's last "
				      "word");
			ret = 0;
			break; /* its channels are gone: nothing to serve */
		}
		if (ret)
			break;
	}
	pc_counters(d);
	mig__prog_get(&d->prog, &p);
	hv_log(ret ? HV_LOG_ERR : HV_LOG_INFO, "mig",
	       "op=postcopy_in port=%u err=%d unsent=%llu asked=%llu "
	       "recoveries=%u fault_p50_us=%.1f fault_p99_us=%.1f "
	       "fault_max_us=%.1f last_page_ms=%.1f",
	       d->port, ret, (unsigned long long)p.pc_unsent_pages,
	       (unsigned long long)atomic_load(&d->pc_requested),
	       d->pc_recoveries, (double)p.pc_fault_p50_ns / 1e3,
	       (double)p.pc_fault_p99_ns / 1e3,
	       (double)p.pc_fault_max_ns / 1e3,
	       (double)p.pc_last_page_ns / 1e6);
	if (ret)
		d->pc_broken = true;
	return ret;
}

void mig__dst_pc_fini(struct mig_dest *d)
{
	if (!d->pc)
		return;
	/* A broken postcopy's VM waits on its missing pages: closing the
	 * userfaultfd would let it read zeros. Kept until destroy. */
	if (!d->pc_broken) {
		mig_pc_uffd_destroy(d->pc_uffd);
		d->pc_uffd = NULL;
	}
	for (unsigned i = 0; i <= MIG_CHANNELS_MAX; i++) {
		mig_memmap_destroy(d->pc_bmap[i]);
		d->pc_bmap[i] = NULL;
		if (d->pc_bounce[i])
			munmap(d->pc_bounce[i],
			       d->pc_ram_pages << HV_PAGE_SHIFT);
		d->pc_bounce[i] = NULL;
	}
	d->pc_cbmap = NULL;
	mig_batch_dec_destroy(d->pc_dec);
	d->pc_dec = NULL;
	free(d->pc_payload);
	d->pc_payload = NULL;
	free(d->pc_missing);
	d->pc_missing = NULL;
	if (d->pc_efd > 0)
		close(d->pc_efd);
	d->pc_efd = -1;
}
