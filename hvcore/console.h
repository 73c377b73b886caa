/* SPDX-License-Identifier: MIT */
/*
 * hv_console: the bytes of a guest's console (the UART on COM1 of a Linux
 * guest, docs/guests.md).
 *
 * Output: what the guest writes is kept in a bounded ring (the last
 * ring_bytes bytes) and, when a log path is given, appended to that file;
 * the file is bounded too: when it reaches HV_CONSOLE_LOG_MAX it is
 * renamed to PATH.1 (replacing the previous one) and a new file started.
 * Readers address output by stream position (bytes written since create),
 * so several readers follow it independently and a reader that fell
 * behind the ring learns how much it lost.
 *
 * Input: what a user types is queued (HV_CONSOLE_IN_MAX bytes) for the
 * device to take; the device's notify callback runs (on the writer's
 * thread, without the console's lock held) when input arrives, so it can
 * raise its receive interrupt.
 *
 * Any thread: one mutex guards ring, file and queue.
 */
#ifndef HVCORE_CONSOLE_H
#define HVCORE_CONSOLE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define HV_CONSOLE_RING_DEFAULT (256u << 10)
#define HV_CONSOLE_LOG_MAX (4u << 20)
#define HV_CONSOLE_IN_MAX 4096u

struct hv_console;

/*
 * @ring_bytes: 0 = HV_CONSOLE_RING_DEFAULT. @log_path: NULL or "" = no
 * file; else created (truncated) 0640, or, with @keep_log, continued
 * (appended to, as one more writer of the same guest's console: a local
 * live update's new worker). -errno opening it, -ENOMEM.
 */
int hv_console_create(size_t ring_bytes, const char *log_path, bool keep_log,
		      struct hv_console **out);
void hv_console_destroy(struct hv_console *c);

/* Device side: output from the guest. File errors are logged once and
 * the ring keeps working. */
void hv_console_put(struct hv_console *c, const void *buf, size_t len);
/* Device side: take up to @len bytes of queued input; 0 when none. */
size_t hv_console_get(struct hv_console *c, void *buf, size_t len);
size_t hv_console_input_pending(struct hv_console *c);
void hv_console_set_notify(struct hv_console *c, void (*fn)(void *arg),
			   void *arg);

/*
 * Reader side: copy output from stream position *@pos, at most @len
 * bytes; returns how many and advances *@pos. When *@pos is older than
 * the ring keeps, reading starts at the oldest kept byte and *@lost (if
 * not NULL) gets how many bytes were skipped (else 0). A *@pos beyond the
 * end reads nothing.
 */
size_t hv_console_read(struct hv_console *c, uint64_t *pos, void *buf,
		       size_t len, uint64_t *lost);
/* Stream position one past the last byte written. */
uint64_t hv_console_end(struct hv_console *c);
/* Queue input for the guest: how many bytes were taken (fewer than @len
 * when the queue filled). */
size_t hv_console_write(struct hv_console *c, const void *buf, size_t len);

#endif
