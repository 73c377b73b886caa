// SPDX-License-Identifier: MIT
#include "hvcore/console.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvcore/log.h"

struct hv_console {
	pthread_mutex_t lock;
	uint8_t *ring;
	size_t ring_bytes;
	uint64_t end; /* stream position one past the last byte */

	int log_fd;
	uint64_t log_len;
	char *log_path;
	bool log_failed;

	uint8_t in[HV_CONSOLE_IN_MAX];
	size_t in_head, in_len;

	void (*notify)(void *arg);
	void *notify_arg;
};

int hv_console_create(size_t ring_bytes, const char *log_path, bool keep_log,
		      struct hv_console **out)
{
	struct hv_console *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->ring_bytes = ring_bytes ? ring_bytes : HV_CONSOLE_RING_DEFAULT;
	c->ring = malloc(c->ring_bytes);
	c->log_fd = -1;
	if (!c->ring)
		goto nomem;
	if (log_path && log_path[0]) {
		c->log_path = strdup(log_path);
		if (!c->log_path)
			goto nomem;
		c->log_fd = open(log_path,
				 O_WRONLY | O_CREAT | O_CLOEXEC |
					 (keep_log ? O_APPEND : O_TRUNC),
				 0640);
		if (c->log_fd >= 0 && keep_log) {
			off_t end = lseek(c->log_fd, 0, SEEK_END);

			/* Rotation counts what the file holds already. */
			c->log_len = end > 0 ? (uint64_t)end : 0;
		}
		if (c->log_fd < 0) {
			int err = -errno;

			hv_err("console", "op=open path=%s err=%d", log_path,
			       err);
			hv_console_destroy(c);
			return err;
		}
	}
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
nomem:
	free(c->ring);
	free(c->log_path);
	free(c);
	return -ENOMEM;
}

void hv_console_destroy(struct hv_console *c)
{
	if (!c)
		return;
	if (c->log_fd >= 0)
		close(c->log_fd);
	pthread_mutex_destroy(&c->lock);
	free(c->log_path);
	free(c->ring);
	free(c);
}

/* Start a new log file, the old one kept as PATH.1. Lock held. */
static void log_rotate(struct hv_console *c)
{
	size_t n = strlen(c->log_path) + 3;
	char *old = malloc(n);

	if (!old)
		return;
	snprintf(old, n, "%s.1", c->log_path);
	close(c->log_fd);
	c->log_fd = -1;
	if (rename(c->log_path, old) == 0)
		c->log_fd =
			open(c->log_path,
			     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	c->log_len = 0;
	free(old);
}

static void log_append(struct hv_console *c, const uint8_t *p, size_t len)
{
	while (len && c->log_fd >= 0 && !c->log_failed) {
		ssize_t n;

		if (c->log_len >= HV_CONSOLE_LOG_MAX) {
			log_rotate(c);
			continue;
		}
		n = write(c->log_fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			c->log_failed = true;
			hv_err("console", "op=log path=%s err=%d", c->log_path,
			       n < 0 ? -errno : -EIO);
			return;
		}
		c->log_len += (uint64_t)n;
		p += n;
		len -= (size_t)n;
	}
}

void hv_console_put(struct hv_console *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_mutex_lock(&c->lock);
	log_append(c, p, len);
	if (len > c->ring_bytes) {
		c->end += len - c->ring_bytes;
		p += len - c->ring_bytes;
		len = c->ring_bytes;
	}
	while (len) {
		size_t at = c->end % c->ring_bytes;
		size_t n = c->ring_bytes - at;

		if (n > len)
			n = len;
		memcpy(c->ring + at, p, n);
		c->end += n;
		p += n;
		len -= n;
	}
	pthread_mutex_unlock(&c->lock);
}

size_t hv_console_read(struct hv_console *c, uint64_t *pos, void *buf,
		       size_t len, uint64_t *lost)
{
	uint8_t *out = buf;
	uint64_t oldest, at;
	size_t done = 0;

	pthread_mutex_lock(&c->lock);
	oldest = c->end > c->ring_bytes ? c->end - c->ring_bytes : 0;
	at = *pos;
	if (lost)
		*lost = at < oldest ? oldest - at : 0;
	if (at < oldest)
		at = oldest;
	while (done < len && at < c->end) {
		size_t off = at % c->ring_bytes;
		size_t n = c->ring_bytes - off;

		if (n > len - done)
			n = len - done;
		if (n > c->end - at)
			n = (size_t)(c->end - at);
		memcpy(out + done, c->ring + off, n);
		done += n;
		at += n;
	}
	if (at > *pos)
		*pos = at;
	pthread_mutex_unlock(&c->lock);
	return done;
}

uint64_t hv_console_end(struct hv_console *c)
{
	uint64_t end;

	pthread_mutex_lock(&c->lock);
	end = c->end;
	pthread_mutex_unlock(&c->lock);
	return end;
}

size_t hv_console_write(struct hv_console *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	void (*fn)(void *);
	void *arg;
	size_t done = 0;

	pthread_mutex_lock(&c->lock);
	while (done < len && c->in_len < HV_CONSOLE_IN_MAX) {
		c->in[(c->in_head + c->in_len) % HV_CONSOLE_IN_MAX] = p[done++];
		c->in_len++;
	}
	fn = c->notify;
	arg = c->notify_arg;
	pthread_mutex_unlock(&c->lock);
	if (done && fn)
		fn(arg);
	return done;
}

size_t hv_console_get(struct hv_console *c, void *buf, size_t len)
{
	uint8_t *out = buf;
	size_t done = 0;

	pthread_mutex_lock(&c->lock);
	while (done < len && c->in_len) {
		out[done++] = c->in[c->in_head];
		c->in_head = (c->in_head + 1) % HV_CONSOLE_IN_MAX;
		c->in_len--;
	}
	pthread_mutex_unlock(&c->lock);
	return done;
}

size_t hv_console_input_pending(struct hv_console *c)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->in_len;
	pthread_mutex_unlock(&c->lock);
	return n;
}

void hv_console_set_notify(struct hv_console *c, void (*fn)(void *arg),
			   void *arg)
{
	pthread_mutex_lock(&c->lock);
	c->notify = fn;
	c->notify_arg = arg;
	pthread_mutex_unlock(&c->lock);
}
