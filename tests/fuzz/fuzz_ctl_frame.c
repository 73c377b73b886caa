// SPDX-License-Identifier: MIT
/*
 * Target: the control RPC framing (migrated/rpc/ctl_frame.h) and the
 * messages it carries, as the daemon reads them from a client (Request)
 * and a client from the daemon (ServerMessage).
 *
 * The input's first byte chooses how the rest arrives -- in pieces of
 * 1..64 bytes from a small generator it seeds, or in one piece -- and the
 * frame cap (MIGD_FRAME_MAX or a small one); the rest is the byte stream.
 * The reader drains every complete frame after each piece, as the server
 * does (server.c conn_plain()).
 *
 * Promises checked: every frame is 1..max bytes and lies in the framer's
 * buffer; frames plus pending bytes account for every byte fed; the
 * bytes kept stay below one frame, and the buffer below twice one frame
 * plus the largest piece (it doubles); an error is sticky.
 */
#include <errno.h>
#include <string.h>

#include "migrated/rpc/ctl_frame.h"
#include "proto/control.pb-c.h"
#include "tests/fuzz/fuzz_common.h"

#define SMALL_MAX 512u

static void unpack_both(const uint8_t *msg, uint32_t len)
{
	Migd__Request *req = migd__request__unpack(NULL, len, msg);
	Migd__ServerMessage *sm = migd__server_message__unpack(NULL, len, msg);

	if (req)
		migd__request__free_unpacked(req, NULL);
	if (sm)
		migd__server_message__free_unpacked(sm, NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet_logs();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct migd_framer f;
	uint32_t max, rng;
	size_t off = 1, framed = 0, piece_max = 0;
	int err = 0;

	if (size < 1)
		return 0;
	max = data[0] & 0x80 ? SMALL_MAX : MIGD_FRAME_MAX;
	rng = data[0] | 1u;
	migd_framer_init(&f, max);
	while (off < size) {
		size_t n = size - off;
		const uint8_t *msg;
		uint32_t len;
		int ret;

		if (data[0] & 0x40) {
			rng = rng * 1103515245u + 12345u;
			n = HV_MIN(n, 1 + (rng >> 16) % 64);
		}
		piece_max = HV_MAX(piece_max, n);
		ret = migd_framer_feed(&f, data + off, n);
		if (err) {
			FUZZ_CHECK(ret == err);
			break;
		}
		FUZZ_CHECK(ret == 0);
		off += n;
		while ((ret = migd_framer_next(&f, &msg, &len)) == 1) {
			FUZZ_CHECK(len >= 1 && len <= max);
			FUZZ_CHECK(msg >= f.buf && msg + len <= f.buf + f.len);
			framed += MIGD_FRAME_HDR + len;
			unpack_both(msg, len);
		}
		if (ret < 0) {
			FUZZ_CHECK(ret == -EMSGSIZE);
			err = ret;
			FUZZ_CHECK(migd_framer_next(&f, &msg, &len) == err);
			continue;
		}
		FUZZ_CHECK(ret == 0);
		FUZZ_CHECK(framed + migd_framer_pending(&f) == off - 1);
		FUZZ_CHECK(migd_framer_pending(&f) < MIGD_FRAME_HDR + max);
		/* The buffer starts at 4 KiB and doubles. */
		FUZZ_CHECK(f.cap <= HV_MAX(4096u, 2 * (MIGD_FRAME_HDR + max +
						       piece_max)));
	}
	migd_framer_fini(&f);
	return 0;
}
