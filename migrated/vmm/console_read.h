/* SPDX-License-Identifier: MIT */
/*
 * migd_console_chunk: one read of a guest's console for the vm_console
 * call (calls_console.c), by stream position (hvcore/console.h).
 *
 * The rules a client relies on (docs/api.md, vm_console):
 *   - from @pos, or from the current end when @from_end (nothing read:
 *     the client only learns where "now" is);
 *   - a position older than the ring keeps reads from the oldest byte
 *     kept, and lost says how many bytes were skipped;
 *   - a position beyond the end (a reader of an earlier VM of the same
 *     name) reads nothing and continues from the end: nothing lost;
 *   - next is where the following read starts, end the stream's end after
 *     this read (next < end: more to read now).
 */
#ifndef MIGD_CONSOLE_READ_H
#define MIGD_CONSOLE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hv_console;

/* Bytes one vm_console answer carries at most, and by default. */
#define MIGD_CONSOLE_READ_MAX (256u << 10)
#define MIGD_CONSOLE_READ_DEFAULT (64u << 10)
/* Bytes one vm_console_write takes at most (the UART's input queue). */
#define MIGD_CONSOLE_WRITE_MAX 4096u

struct migd_console_chunk {
	size_t len;	/* bytes copied into the buffer */
	uint64_t start; /* stream position of the first of them */
	uint64_t next;
	uint64_t end;
	uint64_t lost;
};

/* Read up to @max bytes into @buf as above. Any thread. */
void migd_console_chunk_read(struct hv_console *c, uint64_t pos, bool from_end,
			     void *buf, size_t max,
			     struct migd_console_chunk *out);

#endif
