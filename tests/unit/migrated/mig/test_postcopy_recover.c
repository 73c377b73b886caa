// SPDX-License-Identifier: MIT
/* The shared pieces of postcopy recovery (migrated/mig/postcopy_recover.c):
 * the missing set on the wire and the PostcopyResume check. */
#include "tests/harness/hv_test.h"
#include "migrated/mig/postcopy_recover.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "migrated/mig/frame.h"
#include "migrated/mig/postcopy_map.h"

/* Two blocking plain connections over a socketpair. */
static void pair(struct mig_conn **a, struct mig_conn **b)
{
	int sv[2];

	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CU_ASSERT_EQUAL_FATAL(mig_conn_server_new(sv[0], NULL, a), 0);
	CU_ASSERT_EQUAL_FATAL(mig_conn_server_new(sv[1], NULL, b), 0);
	CU_ASSERT_EQUAL_FATAL(mig_conn_set_blocking(*a, 5000), 0);
	CU_ASSERT_EQUAL_FATAL(mig_conn_set_blocking(*b, 5000), 0);
}

/* What a slot's frames set, read back as the source does. */
static uint64_t read_back(struct mig_conn *c, uint32_t slot, uint64_t npages,
			  uint64_t *bits, unsigned *frames)
{
	uint64_t total = 0, covered = 0;

	*frames = 0;
	while (covered < npages) {
		struct mig_frame_hdr h;
		ProtobufCMessage *m;
		const Mig__PostcopyUnsent *u;
		uint64_t added = 0;

		CU_ASSERT_EQUAL_FATAL(mig_conn_recv_types(c,
							  MIG_PC_RESUME_TYPES,
							  &h, &m),
				      0);
		CU_ASSERT_EQUAL_FATAL(h.type,
				      MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT);
		u = (const Mig__PostcopyUnsent *)m;
		CU_ASSERT_EQUAL(u->slot, slot);
		CU_ASSERT_EQUAL(u->first_page, covered);
		CU_ASSERT_EQUAL(mig_pc_unsent_apply(u, npages, bits, &added),
				0);
		covered += u->npages;
		total += added;
		(*frames)++;
		mig_frame_msg_free(m);
	}
	CU_ASSERT_EQUAL(covered, npages);
	return total;
}

static void test_missing_set_round_trip(void)
{
	uint64_t npages = 5000, words = (npages + 63) / 64, bytes = 0;
	uint64_t *in = calloc(words, 8), *out = calloc(words, 8);
	struct mig_conn *a, *b;
	unsigned frames;

	pair(&a, &b);
	for (uint64_t p = 0; p < npages; p += 7)
		in[p >> 6] |= 1ull << (p & 63);
	in[(npages - 1) >> 6] |= 1ull << ((npages - 1) & 63);
	CU_ASSERT_EQUAL(mig_pc_unsent_send(a, 7, in, npages, &bytes), 0);
	CU_ASSERT(bytes > 0);
	CU_ASSERT_EQUAL(read_back(b, 7, npages, out, &frames),
			(npages + 6) / 7 + ((npages - 1) % 7 != 0));
	CU_ASSERT_EQUAL(frames, 1);
	CU_ASSERT_EQUAL(memcmp(in, out, words * 8), 0);
	/* An empty set is said too: one frame with nothing set. */
	memset(in, 0, words * 8);
	memset(out, 0, words * 8);
	CU_ASSERT_EQUAL(mig_pc_unsent_send(a, 7, in, npages, NULL), 0);
	CU_ASSERT_EQUAL(read_back(b, 7, npages, out, &frames), 0);
	CU_ASSERT_EQUAL(frames, 1);
	/* A slot of no pages is refused, nothing sent. */
	CU_ASSERT_EQUAL(mig_pc_unsent_send(a, 7, in, 0, NULL), -EINVAL);
	mig_conn_destroy(a);
	mig_conn_destroy(b);
	free(in);
	free(out);
}

static void test_resume_check(void)
{
	Mig__PostcopyResume r = MIG__POSTCOPY_RESUME__INIT;

	r.missing_pages = 12;
	r.recoveries = 1;
	CU_ASSERT_EQUAL(mig_pc_resume_check(&r, 12), 0);
	CU_ASSERT_EQUAL(mig_pc_resume_check(&r, 11), -EBADMSG);
	r.recoveries = 0;
	CU_ASSERT_EQUAL(mig_pc_resume_check(&r, 12), -EBADMSG);
	r.recoveries = 3;
	r.missing_pages = 0;
	CU_ASSERT_EQUAL(mig_pc_resume_check(&r, 0), 0);
}

static CU_TestInfo tests[] = {
	{ "missing_set_round_trip", test_missing_set_round_trip },
	{ "resume_check", test_resume_check },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/postcopy_recover", NULL, NULL, tests);
