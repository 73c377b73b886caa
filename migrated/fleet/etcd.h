/* SPDX-License-Identifier: MIT */
/*
 * migd_etcd: a client of etcd's v3 API through its HTTP/JSON gateway
 * (libcurl + json-c; docs/fleet.md, says why not gRPC).
 * One object talks to one cluster, given as a list of member URLs.
 *
 * Failover: requests go to the member that answered last. A member that
 * cannot be reached (connect refused, DNS, TLS handshake: the request
 * never left) or that says it has no leader (gRPC UNAVAILABLE) is skipped
 * and the next one tried, every member at most once per call. A request
 * that was sent but not answered in time is NOT retried when it writes
 * (put, delete, txn, lease calls): whether it took effect is unknown, and
 * the call returns -ETIMEDOUT saying so; the caller reads the key to
 * find out. Reads are retried on the next member.
 *
 * Errors: negative errno and a message for migd_etcd_error():
 *   -ECONNREFUSED  no member could be reached (each member's reason);
 *   -ETIMEDOUT     a member took longer than cfg->timeout_ms;
 *   -EAGAIN        every member reachable said it has no leader;
 *   -ENOENT        lease not found / expired (lease calls);
 *   -EPROTO        an answer that is not what the API promises;
 *   -EINVAL        bad arguments (endpoints, key).
 *
 * Threads: each call is blocking and serialised by the object's own
 * lock, so the daemon's loop thread and its fleet thread may share one
 * object; migd_etcd_error() copies the message of the calling thread's
 * last failed call (kept per object, so read it right after the call on
 * the same thread that made it).
 */
#ifndef MIGD_ETCD_H
#define MIGD_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migrated/fleet/etcd_json.h"

#define MIGD_ETCD_ENDPOINTS_MAX 16u
#define MIGD_ETCD_TIMEOUT_MS_DEFAULT 2000u

struct migd_etcd_cfg {
	/* "http://127.0.0.1:2379,https://h2:2379": comma-separated URLs
	 * (scheme http or https, host, port; a bare "host:port" is http).
	 * Copied. */
	const char *endpoints;
	/* TLS to the members (https URLs): CA bundle to verify them, and
	 * a client certificate and key when the cluster wants one. NULL or
	 * "" = none (system CAs). Copied. */
	const char *cacert;
	const char *cert;
	const char *key;
	/* One request to one member (connect included); 0 = default. */
	uint32_t timeout_ms;
};

struct migd_etcd;

/*
 * Parse @cfg; contacts nobody. 0, -EINVAL (message in @err: which
 * endpoint and why), -ENOMEM. *out untouched on failure.
 */
int migd_etcd_create(const struct migd_etcd_cfg *cfg, struct migd_etcd **out,
		     char *err, size_t err_size);
void migd_etcd_destroy(struct migd_etcd *e);

/* The message of this object's last failed call. */
void migd_etcd_error(struct migd_etcd *e, char *buf, size_t len);
/* The member URL that answered last (for logs). */
void migd_etcd_current(struct migd_etcd *e, char *buf, size_t len);

/* One key: 0 and *found; @kv (may be NULL) gets it, the caller frees
 * key and value. */
int migd_etcd_get(struct migd_etcd *e, const char *key, bool *found,
		  struct migd_etcd_kv *kv);
/* Every key under @prefix. */
int migd_etcd_list(struct migd_etcd *e, const char *prefix,
		   struct migd_etcd_kvs *out);
int migd_etcd_put(struct migd_etcd *e, const char *key, const void *value,
		  size_t len, int64_t lease, int64_t *revision);
/* *deleted (may be NULL): how many keys went. */
int migd_etcd_delete(struct migd_etcd *e, const char *key, bool prefix,
		     int64_t *deleted);
/*
 * If every compare holds, do @ok, else @els; *succeeded says which. @out
 * (may be NULL) gets the keys of the range ops of the branch taken.
 */
int migd_etcd_txn(struct migd_etcd *e, const struct migd_etcd_cmp *cmp,
		  size_t ncmp, const struct migd_etcd_op *ok, size_t nok,
		  const struct migd_etcd_op *els, size_t nels,
		  bool *succeeded, struct migd_etcd_kvs *out);

int migd_etcd_lease_grant(struct migd_etcd *e, int64_t ttl_s, int64_t *id,
			  int64_t *ttl);
/* One keepalive; *ttl the lease's remaining TTL; -ENOENT: it is gone. */
int migd_etcd_lease_keepalive(struct migd_etcd *e, int64_t id, int64_t *ttl);
int migd_etcd_lease_revoke(struct migd_etcd *e, int64_t id);

#endif
