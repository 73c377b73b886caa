/* SPDX-License-Identifier: MIT */
/*
 * migd_etcd_json: the bodies of etcd's v3 HTTP/JSON gateway (the gRPC
 * messages in protobuf's JSON mapping), built and decoded as pure
 * functions, so that every answer the daemon may read is tested without a
 * server (tests/unit/migrated/fleet/test_etcd_json.c).
 *
 * The mapping, as etcd 3.4's gateway speaks it: keys and values are
 * base64; 64-bit integers are JSON strings ("mod_revision": "5");
 * a field at its zero value is left out (a false "succeeded", a zero
 * lease, an empty "kvs"); an error is a non-200 answer with
 * {"error": ..., "message": ..., "code": N} (gRPC code).
 *
 * Decoders never trust the answer: a missing header, a field of the wrong
 * JSON type, a number that is not a decimal int64, bad base64 or a key or
 * value over MIGD_ETCD_VALUE_MAX is -EPROTO with the reason in @err.
 *
 * Ownership: the builders return a malloc'd NUL-terminated string the
 * caller frees; migd_etcd_kvs_free() frees what a decoder filled in.
 * Threads: no state; any thread.
 */
#ifndef MIGD_ETCD_JSON_H
#define MIGD_ETCD_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bound on one key or value we accept (etcd's own request limit is
 * 1.5 MiB; ours are small records). */
#define MIGD_ETCD_VALUE_MAX (64u * 1024)
/* Bound on the keys one range answer may carry. */
#define MIGD_ETCD_KVS_MAX 100000u

struct migd_etcd_kv {
	char *key;   /* NUL-terminated (keys are text here) */
	char *value; /* value_len bytes, plus a NUL for convenience */
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;
};

struct migd_etcd_kvs {
	struct migd_etcd_kv *kv;
	size_t n;
	int64_t revision; /* the store's revision when it answered */
	bool more;	  /* a limit cut the answer short */
};

void migd_etcd_kvs_free(struct migd_etcd_kvs *kvs);

/*
 * The error helper of the fleet's sources: format the message into @err
 * (when @err is not NULL and @err_size not 0) and return @ret, so that a
 * failure is one statement: return migd_etcd_fail(err, n, -EINVAL, ...).
 */
int migd_etcd_fail(char *err, size_t err_size, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* What a compare looks at (etcd's Compare.CompareTarget). */
enum migd_etcd_target {
	MIGD_ETCD_T_INVALID = 0,
	MIGD_ETCD_T_VERSION, /* 0 = the key does not exist */
	MIGD_ETCD_T_CREATE,
	MIGD_ETCD_T_MOD,
	MIGD_ETCD_T_VALUE,
};

enum migd_etcd_result {
	MIGD_ETCD_R_INVALID = 0,
	MIGD_ETCD_R_EQUAL,
	MIGD_ETCD_R_NOT_EQUAL,
	MIGD_ETCD_R_GREATER,
	MIGD_ETCD_R_LESS,
};

struct migd_etcd_cmp {
	const char *key;
	enum migd_etcd_target target;
	enum migd_etcd_result result;
	int64_t num;	   /* VERSION, CREATE, MOD */
	const char *value; /* VALUE */
	size_t value_len;
};

enum migd_etcd_op_kind {
	MIGD_ETCD_OP_INVALID = 0,
	MIGD_ETCD_OP_PUT,
	MIGD_ETCD_OP_RANGE, /* one key */
	MIGD_ETCD_OP_DELETE,
};

struct migd_etcd_op {
	enum migd_etcd_op_kind kind;
	const char *key;
	const char *value; /* PUT */
	size_t value_len;
	int64_t lease; /* PUT; 0 = none */
};

/* Base64 (standard alphabet, padded). NULL on allocation failure. */
char *migd_etcd_b64(const void *data, size_t len);
/* 0, or -EPROTO (not base64, or longer than @max). *out is malloc'd with
 * a NUL after the @out_len bytes. */
int migd_etcd_unb64(const char *s, size_t max, char **out, size_t *out_len);

/* Request bodies. @prefix: the range covers every key starting with
 * @key. @limit 0 = no limit. NULL on allocation failure or a bad enum. */
char *migd_etcd_req_range(const char *key, bool prefix, int64_t limit);
char *migd_etcd_req_put(const char *key, const void *value, size_t len,
			int64_t lease);
char *migd_etcd_req_delete(const char *key, bool prefix);
char *migd_etcd_req_txn(const struct migd_etcd_cmp *cmp, size_t ncmp,
			const struct migd_etcd_op *ok, size_t nok,
			const struct migd_etcd_op *els, size_t nels);
char *migd_etcd_req_lease_grant(int64_t ttl_s);
char *migd_etcd_req_lease_id(int64_t id); /* keepalive, revoke */

/*
 * Decoders of a 200 answer. Each checks the header and returns 0 or
 * -EPROTO with @err set.
 *   range:   @out gets the keys (caller frees with migd_etcd_kvs_free);
 *   put/delete: @revision (may be NULL) the store's revision;
 *   txn:     @succeeded; @out (may be NULL) the keys of every range
 *            response of the branch taken, in order;
 *   grant:   the lease's @id and granted @ttl (an "error" field in the
 *            body is -ENOSPC or -EPROTO with its text);
 *   keepalive: @ttl; 0 or missing means the lease is gone (-ENOENT);
 *            the gateway streams, so the first result object counts.
 */
int migd_etcd_parse_range(const char *body, size_t len,
			  struct migd_etcd_kvs *out, char *err,
			  size_t err_size);
int migd_etcd_parse_write(const char *body, size_t len, int64_t *revision,
			  int64_t *deleted, char *err, size_t err_size);
int migd_etcd_parse_txn(const char *body, size_t len, bool *succeeded,
			struct migd_etcd_kvs *out, char *err,
			size_t err_size);
int migd_etcd_parse_grant(const char *body, size_t len, int64_t *id,
			  int64_t *ttl, char *err, size_t err_size);
int migd_etcd_parse_keepalive(const char *body, size_t len, int64_t *ttl,
			      char *err, size_t err_size);

/*
 * A non-200 answer: the gRPC code (0 if none) and message into @err, and
 * the errno that stands for it: -ENOENT (lease not found, code 5),
 * -EAGAIN (unavailable, 14: no leader, a member stopping), -ETIMEDOUT
 * (deadline, 4), -EINVAL (invalid argument, 3), -EPROTO otherwise.
 */
int migd_etcd_parse_error(long http_status, const char *body, size_t len,
			  char *err, size_t err_size);

#endif
