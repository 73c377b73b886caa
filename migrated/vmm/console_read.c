// SPDX-License-Identifier: MIT
/*
 * One read of a guest's console by stream position (console_read.h).
 */
#include "hvcore/console.h"
#include "migrated/vmm/console_read.h"

void migd_console_chunk_read(struct hv_console *c, uint64_t pos, bool from_end,
			     void *buf, size_t max,
			     struct migd_console_chunk *out)
{
	uint64_t end = hv_console_end(c);
	uint64_t at;

	/* The end only grows: a position beyond the one read here was
	 * never this stream's. */
	if (from_end || pos > end)
		pos = end;
	at = pos;
	out->len = hv_console_read(c, &at, buf, max, &out->lost);
	out->start = at - out->len;
	out->next = at;
	out->end = hv_console_end(c);
}
