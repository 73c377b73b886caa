/* SPDX-License-Identifier: MIT */
/*
 * migd_fdpass: one framed message with file descriptors over a connected
 * AF_UNIX SOCK_STREAM socket.
 *
 * Frame: a 4-byte little-endian payload length, then the payload. The fds
 * (SCM_RIGHTS) ride on the frame's first byte, so the receiver gets them
 * with the frame they belong to; they arrive MSG_CMSG_CLOEXEC.
 *
 * Both calls work on blocking and non-blocking sockets alike (every
 * transfer is MSG_DONTWAIT, waits are poll()), handle partial transfers,
 * and give up after @timeout_ms in total for the whole frame (0: no
 * limit). A failure in the middle leaves the stream out of sync: close
 * the socket then.
 *
 * Errors: -ETIMEDOUT (deadline), -ECONNRESET (peer closed, also at a
 * frame boundary; sending never raises SIGPIPE), -EMSGSIZE (length above
 * the caller's limit, or zero), -EPROTO (a number of fds other than
 * expected, or fds cut off by MSG_CTRUNC: every fd received is closed
 * then), -EINVAL (arguments), -ENOMEM, other -errno of sendmsg/recvmsg.
 *
 * Threads: one sender and one receiver per socket at a time.
 */
#ifndef MIGRATED_VMM_FDPASS_H
#define MIGRATED_VMM_FDPASS_H

#include <stddef.h>

/* Most fds one frame carries. */
#define MIGD_FDPASS_MAX_FDS 16u

/*
 * Send @len bytes at @buf (1 <= len <= UINT32_MAX) and @nfds fds (0 ..
 * MIGD_FDPASS_MAX_FDS; the caller keeps its copies) as one frame.
 */
int migd_fdpass_send(int sock, const void *buf, size_t len, const int *fds,
		     unsigned nfds, unsigned timeout_ms);

/*
 * Receive one frame: *buf (malloc'd, the caller frees) and *len get the
 * payload, which must be 1 .. @max_len bytes; exactly @nfds fds must come
 * with it (stored into @fds, the caller closes them). On any error
 * nothing is returned: *buf is NULL, no fd stays open.
 */
int migd_fdpass_recv(int sock, void **buf, size_t *len, size_t max_len,
		     int *fds, unsigned nfds, unsigned timeout_ms);

/*
 * As migd_fdpass_recv(), for a frame whose fd count its payload tells:
 * @min_fds .. @max_fds fds (at most MIGD_FDPASS_MAX_FDS) are accepted,
 * stored into @fds, their count in *@nfds (the caller checks it against
 * the payload and closes them). Fewer or more: -EPROTO, nothing kept.
 */
int migd_fdpass_recv_upto(int sock, void **buf, size_t *len, size_t max_len,
			  int *fds, unsigned min_fds, unsigned max_fds,
			  unsigned *nfds, unsigned timeout_ms);

#endif
