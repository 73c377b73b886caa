// SPDX-License-Identifier: MIT
/*
 * The engine against hand-made peers built from the frame API: a fake
 * destination that misbehaves at each phase (the source must end with its
 * VM running, logging off), and a fake source that sends a corrupt or
 * misplaced frame at each phase (the destination must fail and hold no
 * VM).
 */
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migrated/mig/digest.h"
#include "migrated/mig/handshake.h"
#include "migrated/mig/pipeline.h"
#include "tests/harness/hv_test.h"
#include "tests/unit/migrated/mig/session_util.h"

/* ---- fake destination ------------------------------------------------ */

enum fake_dst_mode {
	FD_BAD_HELLO,	    /* answers Hello with a SetupAccept */
	FD_REFUSE,	    /* refuses the layout */
	FD_ABORT_ITER,	    /* Abort after the first IterEnd */
	FD_BAD_ACK,	    /* Ack for the wrong number of pages */
	FD_SILENT,	    /* never acknowledges (dead peer) */
	FD_ABORT_COMMIT,    /* Abort instead of Resumed: did not start */
};

struct fake_dst {
	enum fake_dst_mode mode;
	struct mig_tls *tls;
	int lfd;
	uint16_t port;
	pthread_t t;
};

static int recv_type(struct mig_conn *c, ProtobufCMessage **m)
{
	struct mig_frame_hdr h;

	if (mig_conn_recv(c, &h, m))
		return -1;
	return h.type;
}

static void *fake_dst_run(void *arg)
{
	struct fake_dst *f = arg;
	struct mig_conn *ctl = NULL, *data[2] = { NULL, NULL };
	struct mig_recv_pipe *pipe = NULL;
	struct mig_memmap *map = NULL;
	struct mig_hello_info hi;
	ProtobufCMessage *m = NULL;
	uint8_t *mem = NULL;
	int type;

	if (mig_conn_accept(f->lfd, f->tls, 5000, &ctl) ||
	    mig_hello_recv(ctl, &hi))
		goto out;
	if (f->mode == FD_BAD_HELLO) {
		Mig__SetupAccept a = MIG__SETUP_ACCEPT__INIT;

		mig_conn_send(ctl, MIG__MSG_TYPE__MSG_SETUP_ACCEPT, &a.base,
			      NULL, 0);
		usleep(200000);
		goto out;
	}
	mig_hello_send(ctl, 1, MIG__ROLE__ROLE_CONTROL, hi.session_id, 0, 2);
	for (unsigned i = 0; i < 2; i++) {
		struct mig_hello_info dh;

		if (mig_conn_accept(f->lfd, f->tls, 5000, &data[i]) ||
		    mig_hello_recv(data[i], &dh))
			goto out;
		mig_hello_send(data[i], 1, MIG__ROLE__ROLE_DATA, hi.session_id,
			       dh.channel_index, 2);
	}
	type = recv_type(ctl, &m);
	if (type != MIG__MSG_TYPE__MSG_SETUP)
		goto out;
	if (f->mode == FD_REFUSE) {
		Mig__SetupRefuse r = MIG__SETUP_REFUSE__INIT;

		r.reason = MIG__REFUSE_REASON__REFUSE_LAYOUT;
		r.detail = "test refuses";
		mig_conn_send(ctl, MIG__MSG_TYPE__MSG_SETUP_REFUSE, &r.base,
			      NULL, 0);
		usleep(200000);
		goto out;
	}
	{
		const Mig__VmLayout *l = (const Mig__VmLayout *)m;
		struct mig_memmap_slot s = { 0, 0, l->slots[0]->npages, NULL };
		Mig__SetupAccept a = MIG__SETUP_ACCEPT__INIT;

		if (posix_memalign((void **)&mem, 4096, s.npages * 4096))
			goto out;
		s.host = mem;
		if (mig_memmap_create(&s, 1, &map) ||
		    mig_recv_pipe_create(data, 2, map, &pipe))
			goto out;
		a.nr_channels = 2;
		mig_conn_send(ctl, MIG__MSG_TYPE__MSG_SETUP_ACCEPT, &a.base,
			      NULL, 0);
	}
	for (;;) {
		mig_frame_msg_free(m);
		m = NULL;
		type = recv_type(ctl, &m);
		if (type < 0)
			goto out;
		if (type == MIG__MSG_TYPE__MSG_ITER_END &&
		    f->mode == FD_ABORT_ITER) {
			Mig__Abort a = MIG__ABORT__INIT;

			a.reason = MIG__ABORT_REASON__ABORT_INTERNAL;
			a.detail = "test aborts";
			mig_conn_send(ctl, MIG__MSG_TYPE__MSG_ABORT, &a.base,
				      NULL, 0);
			goto out;
		}
		if (type == MIG__MSG_TYPE__MSG_ITER_END) {
			/* Applied the pass, as a real destination would. */
			const Mig__IterEnd *ie = (const Mig__IterEnd *)m;
			Mig__IterAck ia = MIG__ITER_ACK__INIT;

			if (mig_recv_pipe_wait(pipe, ie->channel_batches,
					       2000))
				goto out;
			ia.iteration = ie->iteration;
			mig_conn_send(ctl, MIG__MSG_TYPE__MSG_ITER_ACK,
				      &ia.base, NULL, 0);
		}
		if (type == MIG__MSG_TYPE__MSG_DIGEST) {
			Mig__Ack ack = MIG__ACK__INIT;

			if (f->mode == FD_SILENT) {
				recv_type(ctl, &m); /* until the source quits */
				goto out;
			}
			ack.pages = ((Mig__Digest *)m)->pages +
				    (f->mode == FD_BAD_ACK);
			mig_conn_send(ctl, MIG__MSG_TYPE__MSG_ACK, &ack.base,
				      NULL, 0);
		}
		if (type == MIG__MSG_TYPE__MSG_COMMIT) {
			Mig__Abort a = MIG__ABORT__INIT;

			a.reason = MIG__ABORT_REASON__ABORT_STATE_LOAD;
			a.detail = "test cannot start";
			mig_conn_send(ctl, MIG__MSG_TYPE__MSG_ABORT, &a.base,
				      NULL, 0);
			usleep(200000);
			goto out;
		}
	}
out:
	mig_frame_msg_free(m);
	mig_recv_pipe_destroy(pipe);
	mig_conn_destroy(ctl);
	mig_conn_destroy(data[0]);
	mig_conn_destroy(data[1]);
	mig_memmap_destroy(map);
	free(mem);
	return NULL;
}

static void source_vs_fake(enum fake_dst_mode mode, int want,
			   const char *what)
{
	struct mig_opts o, so;
	struct fake_dst f = { .mode = mode };
	struct mig_progress fin;
	struct mig_source *src;
	struct hv_vm *vm;
	bool skip;
	int ret;

	HV_TEST_REQUIRE_KVM();
	vm = su_vm(HV_ACCEL_KVM, 1, 5000, &skip);
	CU_ASSERT_FATAL(vm != NULL);
	su_opts(&so, true);
	CU_ASSERT_EQUAL_FATAL(mig_tls_create(so.tls, &f.tls), 0);
	CU_ASSERT_EQUAL_FATAL(mig_listen("127.0.0.1", 0, &f.lfd, &f.port), 0);
	pthread_create(&f.t, NULL, fake_dst_run, &f);
	su_opts(&o, false);
	o.io_timeout_ms = 1500;
	CU_ASSERT_EQUAL_FATAL(mig_source_start(vm, "127.0.0.1", f.port, &o,
					       NULL, NULL, &src),
			      0);
	ret = mig_source_wait(src, &fin);
	printf("\n    %s: ret=%d phase=%s msg=\"%s\"\n", what, ret,
	       mig_phase_name(fin.phase), fin.message);
	CU_ASSERT(ret < 0);
	if (want)
		CU_ASSERT_EQUAL(ret, want);
	CU_ASSERT_EQUAL(fin.phase, MIG_PHASE_FAILED);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_RUNNING);
	CU_ASSERT(su_vm_progresses(vm, 2000));
	CU_ASSERT(su_logging_off(vm));
	mig_source_destroy(src);
	pthread_join(f.t, NULL);
	close(f.lfd);
	mig_tls_destroy(f.tls);
	hv_vm_destroy(vm);
}

static void test_source_survives_bad_hello_reply(void)
{
	source_vs_fake(FD_BAD_HELLO, -EPROTO, "bad hello");
}

static void test_source_survives_refused_layout(void)
{
	source_vs_fake(FD_REFUSE, -ECONNREFUSED, "refused");
}

static void test_source_survives_abort_while_iterating(void)
{
	source_vs_fake(FD_ABORT_ITER, 0, "abort in iteration");
}

static void test_source_resumes_after_bad_ack_while_paused(void)
{
	source_vs_fake(FD_BAD_ACK, -EPROTO, "bad ack");
}

static void test_source_resumes_when_destination_goes_silent(void)
{
	source_vs_fake(FD_SILENT, -ETIMEDOUT, "silent destination");
}

static void test_source_resumes_when_destination_cannot_start(void)
{
	source_vs_fake(FD_ABORT_COMMIT, -ECONNABORTED, "no start");
}

/* ---- fake source ----------------------------------------------------- */

enum fake_src_mode {
	FS_BAD_HELLO,	 /* control Hello with the data role */
	FS_BAD_LAYOUT,	 /* page size 8192 */
	FS_CORRUPT_HDR,	 /* a batch frame with a bad header */
	FS_EARLY_COMMIT, /* Commit while iterating */
	FS_BAD_DIGEST,	 /* one digest byte wrong */
	FS_BAD_STATE,	 /* garbage VM state, right digest */
};

#define FS_MEM (16ULL << 20)

struct cursor {
	uint64_t next, end;
};

/* Every page of slot 0, 64 at a time. */
static int all_pages(void *ctx, struct mig_page_run *run)
{
	struct cursor *c = ctx;

	if (c->next >= c->end)
		return 0;
	run->slot = 0;
	run->gfn = c->next;
	run->mask = ~0ull;
	c->next += 64;
	return 1;
}

static void send_ctl(struct mig_conn *c, unsigned type, ProtobufCMessage *m)
{
	mig_conn_send(c, type, m, NULL, 0);
}

static void fake_source(uint16_t port, struct mig_tls *tls,
			enum fake_src_mode mode, enum hv_accel_kind accel)
{
	struct mig_conn *ctl = NULL, *data[2] = { NULL, NULL };
	Mig__Memslot slot = MIG__MEMSLOT__INIT, *slots[1] = { &slot };
	Mig__VmLayout l = MIG__VM_LAYOUT__INIT;
	Mig__IterStart is = MIG__ITER_START__INIT;
	Mig__IterEnd ie = MIG__ITER_END__INIT;
	struct mig_memmap_slot ms = { 0, 0, FS_MEM >> 12, NULL };
	struct cursor cur = { 0, FS_MEM >> 12 };
	struct mig_send_pipe *pipe = NULL;
	struct mig_memmap *map = NULL;
	struct mig_hello_info hi;
	ProtobufCMessage *m = NULL;
	uint64_t counts[2] = { 0, 0 };
	uint8_t sid[MIG_SESSION_ID_LEN] = { 1, 2, 3 };
	uint8_t *mem = NULL;

	if (mig_conn_connect("127.0.0.1", port, tls, 5000, &ctl))
		return;
	mig_hello_send(ctl, 0,
		       mode == FS_BAD_HELLO ? MIG__ROLE__ROLE_DATA
					    : MIG__ROLE__ROLE_CONTROL,
		       sid, 0, 2);
	if (mode == FS_BAD_HELLO || mig_hello_recv(ctl, &hi))
		goto out;
	for (unsigned i = 0; i < 2; i++)
		if (mig_conn_connect("127.0.0.1", port, tls, 5000, &data[i]) ||
		    mig_hello_send(data[i], 1, MIG__ROLE__ROLE_DATA, sid, i,
				   2) ||
		    mig_hello_recv(data[i], &hi))
			goto out;
	slot.npages = FS_MEM >> 12;
	l.n_slots = 1;
	l.slots = slots;
	l.nr_vcpus = 1;
	l.accel = (char *)hv_accel_kind_name(accel);
	l.page_size = mode == FS_BAD_LAYOUT ? 8192 : 4096;
	send_ctl(ctl, MIG__MSG_TYPE__MSG_SETUP, &l.base);
	if (recv_type(ctl, &m) != MIG__MSG_TYPE__MSG_SETUP_ACCEPT)
		goto out;
	if (posix_memalign((void **)&mem, 4096, FS_MEM))
		goto out;
	for (uint64_t i = 0; i < FS_MEM / 4; i++)
		((uint32_t *)mem)[i] = (uint32_t)(i * 2654435761u) >> 20;
	ms.host = mem;
	if (mig_memmap_create(&ms, 1, &map) ||
	    mig_send_pipe_create(data, 2, map, NULL, &pipe))
		goto out;
	send_ctl(ctl, MIG__MSG_TYPE__MSG_ITER_START, &is.base);
	if (mode == FS_CORRUPT_HDR) {
		/* Between runs the caller may write on a data channel. */
		uint8_t frame[MIG_FRAME_HDR_SIZE] = { 0 };
		struct mig_frame_hdr h = { MIG_FRAME_MAGIC, MIG_FRAME_VERSION,
					   MIG__MSG_TYPE__MSG_PAGE_BATCH, 0,
					   0x40, 0 };

		mig_frame_hdr_encode(&h, frame);
		mig_conn_send_frame(data[0], frame, sizeof(frame));
		counts[0] = 1;
	} else if (mode == FS_EARLY_COMMIT) {
		Mig__Commit c = MIG__COMMIT__INIT;

		send_ctl(ctl, MIG__MSG_TYPE__MSG_COMMIT, &c.base);
		goto drain;
	} else {
		mig_send_pipe_run(pipe, all_pages, &cur, counts);
	}
	ie.n_channel_batches = 2;
	ie.channel_batches = counts;
	send_ctl(ctl, MIG__MSG_TYPE__MSG_ITER_END, &ie.base);
	if (mode == FS_CORRUPT_HDR)
		goto drain;
	{
		Mig__Switchover so = MIG__SWITCHOVER__INIT;
		Mig__VmStateEnvelope env = MIG__VM_STATE_ENVELOPE__INIT;
		Mig__Digest dg = MIG__DIGEST__INIT;
		uint8_t junk[64], digest[MIG_DIGEST_LEN];
		uint64_t pages = 0;

		send_ctl(ctl, MIG__MSG_TYPE__MSG_SWITCHOVER, &so.base);
		mig_send_pipe_finish(pipe);
		memset(junk, 0xa5, sizeof(junk));
		env.format = 1;
		env.state.data = junk;
		env.state.len = sizeof(junk);
		send_ctl(ctl, MIG__MSG_TYPE__MSG_VM_STATE, &env.base);
		mig_digest_compute(map, 1, digest, &pages);
		if (mode == FS_BAD_DIGEST)
			digest[7] ^= 1;
		dg.algo = MIG__DIGEST_ALGO__DIGEST_PAGE64_SHA256;
		dg.digest.data = digest;
		dg.digest.len = sizeof(digest);
		dg.pages = pages;
		send_ctl(ctl, MIG__MSG_TYPE__MSG_DIGEST, &dg.base);
	}
drain:
	/* Until the destination hangs up (or 3 s). */
	mig_frame_msg_free(m);
	m = NULL;
	recv_type(ctl, &m);
out:
	mig_frame_msg_free(m);
	mig_send_pipe_destroy(pipe);
	mig_conn_destroy(ctl);
	mig_conn_destroy(data[0]);
	mig_conn_destroy(data[1]);
	mig_memmap_destroy(map);
	free(mem);
}

static void dest_vs_fake_on(enum fake_src_mode mode, int want,
			    const char *what, enum hv_accel_kind accel)
{
	struct mig_opts o, co;
	struct mig_progress fin;
	struct mig_dest *dst;
	/* Never dereferenced: a failed wait must leave *vm_out as it was. */
	struct hv_vm *const untouched = (struct hv_vm *)&fin;
	struct hv_vm *vm = untouched;
	struct mig_tls *tls;
	int ret;

	su_opts(&o, true);
	o.io_timeout_ms = 3000;
	su_opts(&co, false);
	CU_ASSERT_EQUAL_FATAL(mig_tls_create(co.tls, &tls), 0);
	CU_ASSERT_EQUAL_FATAL(mig_dest_start("127.0.0.1", 0, &o, NULL, NULL,
					     NULL, &dst),
			      0);
	fake_source(mig_dest_port(dst), tls, mode, accel);
	ret = mig_dest_wait(dst, &vm, &fin);
	printf("\n    %s (%s): ret=%d phase=%s msg=\"%s\"\n", what,
	       hv_accel_kind_name(accel), ret, mig_phase_name(fin.phase),
	       fin.message);
	CU_ASSERT(ret < 0);
	if (want)
		CU_ASSERT_EQUAL(ret, want);
	CU_ASSERT_EQUAL(fin.phase, MIG_PHASE_FAILED);
	CU_ASSERT_PTR_EQUAL(vm, untouched);
	mig_dest_destroy(dst);
	mig_tls_destroy(tls);
}

/* On the soft accelerator always, so that these run on every machine;
 * on KVM too where /dev/kvm is there. */
static void dest_vs_fake(enum fake_src_mode mode, int want, const char *what)
{
	dest_vs_fake_on(mode, want, what, HV_ACCEL_SOFT);
	if (hv_test_have_kvm())
		dest_vs_fake_on(mode, want, what, HV_ACCEL_KVM);
}

/*
 * A control connection with a bad Hello is a stray peer, not the
 * migration: the destination drops it and keeps listening; the next,
 * real, source is served (here: its layout refused, as for any source).
 */
static void drops_bad_hello_on(enum hv_accel_kind accel)
{
	struct mig_opts o, co;
	struct mig_progress p;
	struct mig_dest *dst;
	struct mig_tls *tls;

	su_opts(&o, true);
	o.io_timeout_ms = 3000;
	su_opts(&co, false);
	CU_ASSERT_EQUAL_FATAL(mig_tls_create(co.tls, &tls), 0);
	CU_ASSERT_EQUAL_FATAL(mig_dest_start("127.0.0.1", 0, &o, NULL, NULL,
					     NULL, &dst),
			      0);
	fake_source(mig_dest_port(dst), tls, FS_BAD_HELLO, accel);
	fake_source(mig_dest_port(dst), tls, FS_BAD_HELLO, accel);
	mig_dest_get_progress(dst, &p);
	CU_ASSERT_EQUAL(p.error, 0);
	fake_source(mig_dest_port(dst), tls, FS_BAD_LAYOUT, accel);
	CU_ASSERT_EQUAL(mig_dest_wait(dst, NULL, &p), -EINVAL);
	printf("\n    after two stray peers: \"%s\"\n", p.message);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.message, "page size"));
	mig_dest_destroy(dst);
	mig_tls_destroy(tls);
}

static void test_dest_drops_bad_hello_and_keeps_listening(void)
{
	drops_bad_hello_on(HV_ACCEL_SOFT);
	if (hv_test_have_kvm())
		drops_bad_hello_on(HV_ACCEL_KVM);
}

static void test_dest_refuses_bad_layout(void)
{
	dest_vs_fake(FS_BAD_LAYOUT, -EINVAL, "bad layout");
}

static void test_dest_fails_on_corrupt_batch_frame(void)
{
	dest_vs_fake(FS_CORRUPT_HDR, -EPROTO, "corrupt batch");
}

static void test_dest_refuses_commit_out_of_order(void)
{
	dest_vs_fake(FS_EARLY_COMMIT, -EPROTO, "early commit");
}

static void test_dest_discards_memory_with_wrong_digest(void)
{
	dest_vs_fake(FS_BAD_DIGEST, -EBADE, "bad digest");
}

static void test_dest_discards_vm_whose_state_does_not_load(void)
{
	dest_vs_fake(FS_BAD_STATE, -EINVAL, "bad state");
}

static CU_TestInfo tests[] = {
	{ "dest_drops_bad_hello_and_keeps_listening",
	  test_dest_drops_bad_hello_and_keeps_listening },
	{ "dest_refuses_bad_layout", test_dest_refuses_bad_layout },
	{ "dest_fails_on_corrupt_batch_frame",
	  test_dest_fails_on_corrupt_batch_frame },
	{ "dest_refuses_commit_out_of_order",
	  test_dest_refuses_commit_out_of_order },
	{ "dest_discards_memory_with_wrong_digest",
	  test_dest_discards_memory_with_wrong_digest },
	{ "dest_discards_vm_whose_state_does_not_load",
	  test_dest_discards_vm_whose_state_does_not_load },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/session_peer", su_init, su_clean, tests);

/* Needs /dev/kvm: the ctest test labelled "kvm" runs these. */
static CU_TestInfo kvm_tests[] = {
	{ "source_survives_bad_hello_reply",
	  test_source_survives_bad_hello_reply },
	{ "source_survives_refused_layout",
	  test_source_survives_refused_layout },
	{ "source_survives_abort_while_iterating",
	  test_source_survives_abort_while_iterating },
	{ "source_resumes_after_bad_ack_while_paused",
	  test_source_resumes_after_bad_ack_while_paused },
	{ "source_resumes_when_destination_goes_silent",
	  test_source_resumes_when_destination_goes_silent },
	{ "source_resumes_when_destination_cannot_start",
	  test_source_resumes_when_destination_cannot_start },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE_KVM("migrated/mig/session_peer/kvm", su_init, su_clean, kvm_tests);
