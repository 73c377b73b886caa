// SPDX-License-Identifier: MIT
/*
 * migd_etcd_json: request bodies and answer decoders of etcd's v3
 * HTTP/JSON gateway (etcd_json.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/evp.h>

#include "migrated/fleet/etcd_json.h"

int migd_etcd_fail(char *err, size_t err_size, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && err_size) {
		va_start(ap, fmt);
		vsnprintf(err, err_size, fmt, ap);
		va_end(ap);
	}
	return ret;
}

void migd_etcd_kvs_free(struct migd_etcd_kvs *kvs)
{
	if (!kvs)
		return;
	for (size_t i = 0; i < kvs->n; i++) {
		free(kvs->kv[i].key);
		free(kvs->kv[i].value);
	}
	free(kvs->kv);
	memset(kvs, 0, sizeof(*kvs));
}

/* ---- base64 -------------------------------------------------------------- */

char *migd_etcd_b64(const void *data, size_t len)
{
	char *out;

	if (len > INT_MAX / 2)
		return NULL;
	out = malloc(4 * ((len + 2) / 3) + 1);
	if (!out)
		return NULL;
	EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

int migd_etcd_unb64(const char *s, size_t max, char **out, size_t *out_len)
{
	size_t n = strlen(s), pad = 0;
	unsigned char *buf;
	int got;

	/* EVP_DecodeBlock takes only whole quantums and counts '=' as
	 * zero bytes: check the shape here, trim the padding after. */
	if (n % 4 || n / 4 * 3 > max + 2)
		return -EPROTO;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '=') {
			if (i < n - 2 || (i == n - 2 && s[n - 1] != '='))
				return -EPROTO;
			pad++;
		} else if (!((c >= 'A' && c <= 'Z') ||
			     (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || c == '+' || c == '/')) {
			return -EPROTO;
		}
	}
	buf = malloc(n / 4 * 3 + 1);
	if (!buf)
		return -ENOMEM;
	got = n ? EVP_DecodeBlock(buf, (const unsigned char *)s, (int)n) : 0;
	if (got < 0 || (size_t)got < pad || (size_t)got - pad > max) {
		free(buf);
		return -EPROTO;
	}
	got -= (int)pad;
	buf[got] = '\0';
	*out = (char *)buf;
	*out_len = (size_t)got;
	return 0;
}

/* ---- request bodies ------------------------------------------------------ */

static int add_b64(json_object *o, const char *field, const void *p,
		   size_t len)
{
	char *b = migd_etcd_b64(p, len);
	int ret;

	if (!b)
		return -ENOMEM;
	ret = json_object_object_add(o, field, json_object_new_string(b));
	free(b);
	return ret ? -ENOMEM : 0;
}

static int add_i64(json_object *o, const char *field, int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_object_object_add(o, field, json_object_new_string(s)) ?
		       -ENOMEM : 0;
}

/* range_end of a prefix: the key with its last byte incremented, bytes
 * 0xff dropped first; "\0" (every key) when all were 0xff. */
static int add_prefix_end(json_object *o, const char *key)
{
	size_t n = strlen(key);
	char *end = strdup(key);
	int ret;

	if (!end)
		return -ENOMEM;
	while (n && (unsigned char)end[n - 1] == 0xff)
		n--;
	if (n) {
		end[n - 1]++;
		ret = add_b64(o, "range_end", end, n);
	} else {
		ret = add_b64(o, "range_end", "", 1);
	}
	free(end);
	return ret;
}

static char *finish(json_object *o, int ret)
{
	char *s = NULL;

	if (!ret)
		s = strdup(json_object_to_json_string_ext(
			o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

static int fill_range(json_object *o, const char *key, bool prefix,
		      int64_t limit)
{
	int ret = add_b64(o, "key", key, strlen(key));

	if (!ret && prefix)
		ret = add_prefix_end(o, key);
	if (!ret && limit)
		ret = add_i64(o, "limit", limit);
	return ret;
}

static int fill_put(json_object *o, const char *key, const void *value,
		    size_t len, int64_t lease)
{
	int ret = add_b64(o, "key", key, strlen(key));

	if (!ret)
		ret = add_b64(o, "value", value, len);
	if (!ret && lease)
		ret = add_i64(o, "lease", lease);
	return ret;
}

char *migd_etcd_req_range(const char *key, bool prefix, int64_t limit)
{
	json_object *o = json_object_new_object();

	return o ? finish(o, fill_range(o, key, prefix, limit)) : NULL;
}

char *migd_etcd_req_put(const char *key, const void *value, size_t len,
			int64_t lease)
{
	json_object *o = json_object_new_object();

	return o ? finish(o, fill_put(o, key, value, len, lease)) : NULL;
}

char *migd_etcd_req_delete(const char *key, bool prefix)
{
	json_object *o = json_object_new_object();

	return o ? finish(o, fill_range(o, key, prefix, 0)) : NULL;
}

static const char *const target_names[] = {
	[MIGD_ETCD_T_VERSION] = "VERSION",
	[MIGD_ETCD_T_CREATE] = "CREATE",
	[MIGD_ETCD_T_MOD] = "MOD",
	[MIGD_ETCD_T_VALUE] = "VALUE",
};
static const char *const target_fields[] = {
	[MIGD_ETCD_T_VERSION] = "version",
	[MIGD_ETCD_T_CREATE] = "create_revision",
	[MIGD_ETCD_T_MOD] = "mod_revision",
	[MIGD_ETCD_T_VALUE] = "value",
};
static const char *const result_names[] = {
	[MIGD_ETCD_R_EQUAL] = "EQUAL",
	[MIGD_ETCD_R_NOT_EQUAL] = "NOT_EQUAL",
	[MIGD_ETCD_R_GREATER] = "GREATER",
	[MIGD_ETCD_R_LESS] = "LESS",
};

static int add_cmp(json_object *arr, const struct migd_etcd_cmp *c)
{
	json_object *o;
	int ret;

	if (c->target <= MIGD_ETCD_T_INVALID ||
	    c->target > MIGD_ETCD_T_VALUE ||
	    c->result <= MIGD_ETCD_R_INVALID ||
	    c->result > MIGD_ETCD_R_LESS || !c->key)
		return -EINVAL;
	o = json_object_new_object();
	if (!o)
		return -ENOMEM;
	json_object_array_add(arr, o);
	ret = add_b64(o, "key", c->key, strlen(c->key));
	if (ret)
		return ret;
	json_object_object_add(o, "target", json_object_new_string(
					target_names[c->target]));
	json_object_object_add(o, "result", json_object_new_string(
					result_names[c->result]));
	if (c->target == MIGD_ETCD_T_VALUE)
		return add_b64(o, "value", c->value ? c->value : "",
			       c->value_len);
	return add_i64(o, target_fields[c->target], c->num);
}

static int add_op(json_object *arr, const struct migd_etcd_op *op)
{
	json_object *o, *inner;
	const char *name;
	int ret;

	switch (op->kind) {
	case MIGD_ETCD_OP_PUT:
		name = "request_put";
		break;
	case MIGD_ETCD_OP_RANGE:
		name = "request_range";
		break;
	case MIGD_ETCD_OP_DELETE:
		name = "request_delete_range";
		break;
	default:
		return -EINVAL;
	}
	if (!op->key)
		return -EINVAL;
	o = json_object_new_object();
	inner = json_object_new_object();
	if (!o || !inner) {
		json_object_put(o);
		json_object_put(inner);
		return -ENOMEM;
	}
	json_object_array_add(arr, o);
	json_object_object_add(o, name, inner);
	if (op->kind == MIGD_ETCD_OP_PUT)
		ret = fill_put(inner, op->key, op->value ? op->value : "",
			       op->value_len, op->lease);
	else
		ret = fill_range(inner, op->key, false, 0);
	return ret;
}

static int add_array(json_object *o, const char *field, size_t n,
		     json_object **out)
{
	*out = NULL;
	if (!n)
		return 0;
	*out = json_object_new_array();
	if (!*out)
		return -ENOMEM;
	json_object_object_add(o, field, *out);
	return 0;
}

char *migd_etcd_req_txn(const struct migd_etcd_cmp *cmp, size_t ncmp,
			const struct migd_etcd_op *ok, size_t nok,
			const struct migd_etcd_op *els, size_t nels)
{
	json_object *o = json_object_new_object(), *a;
	int ret;

	if (!o)
		return NULL;
	ret = add_array(o, "compare", ncmp, &a);
	for (size_t i = 0; !ret && i < ncmp; i++)
		ret = add_cmp(a, &cmp[i]);
	if (!ret)
		ret = add_array(o, "success", nok, &a);
	for (size_t i = 0; !ret && i < nok; i++)
		ret = add_op(a, &ok[i]);
	if (!ret)
		ret = add_array(o, "failure", nels, &a);
	for (size_t i = 0; !ret && i < nels; i++)
		ret = add_op(a, &els[i]);
	return finish(o, ret);
}

char *migd_etcd_req_lease_grant(int64_t ttl_s)
{
	json_object *o = json_object_new_object();

	return o ? finish(o, add_i64(o, "TTL", ttl_s)) : NULL;
}

char *migd_etcd_req_lease_id(int64_t id)
{
	json_object *o = json_object_new_object();

	return o ? finish(o, add_i64(o, "ID", id)) : NULL;
}

/* ---- decoders ------------------------------------------------------------ */

static json_object *parse(const char *body, size_t len, char *err,
			  size_t err_size)
{
	json_tokener *tok;
	json_object *o;

	if (len > INT_MAX) {
		migd_etcd_fail(err, err_size, 0, "answer too long (%zu bytes)",
			       len);
		return NULL;
	}
	tok = json_tokener_new();
	if (!tok) {
		migd_etcd_fail(err, err_size, 0, "out of memory");
		return NULL;
	}
	o = json_tokener_parse_ex(tok, body, (int)len);
	if (!o) {
		migd_etcd_fail(
			err, err_size, 0, "answer is not JSON (%s)",
			json_tokener_error_desc(json_tokener_get_error(tok)));
	} else if (!json_object_is_type(o, json_type_object)) {
		migd_etcd_fail(err, err_size, 0, "answer is not a JSON object");
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* An int64 field, as the gateway writes it (a decimal string; we also
 * take a JSON integer). Missing = 0. */
static int get_i64(json_object *o, const char *field, int64_t *out,
		   char *err, size_t err_size)
{
	json_object *v;
	const char *s;
	char *end;
	long long n;

	*out = 0;
	if (!json_object_object_get_ex(o, field, &v) || !v)
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return migd_etcd_fail(err, err_size, -EPROTO,
				      "field '%s' is not a number", field);
	s = json_object_get_string(v);
	errno = 0;
	n = strtoll(s, &end, 10);
	if (!*s || *end || errno)
		return migd_etcd_fail(err, err_size, -EPROTO,
				      "field '%s' is not an int64: '%.32s'",
				      field, s);
	*out = n;
	return 0;
}

static int get_bool(json_object *o, const char *field, bool *out,
		    char *err, size_t err_size)
{
	json_object *v;

	*out = false;
	if (!json_object_object_get_ex(o, field, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return migd_etcd_fail(err, err_size, -EPROTO,
				      "field '%s' is not a boolean", field);
	*out = json_object_get_boolean(v);
	return 0;
}

/* An optional member of type @type; NULL when missing. */
static int get_typed(json_object *o, const char *field, json_type type,
		     json_object **out, char *err, size_t err_size)
{
	json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(o, field, &v) || !v)
		return 0;
	if (!json_object_is_type(v, type))
		return migd_etcd_fail(err, err_size, -EPROTO,
				      "field '%s' has the wrong type", field);
	*out = v;
	return 0;
}

/* Every answer carries a header with the revision (cluster_id, member_id
 * and raft_term too; we need none of them). */
static int get_header(json_object *o, int64_t *revision, char *err,
		      size_t err_size)
{
	json_object *h;
	int ret = get_typed(o, "header", json_type_object, &h, err, err_size);

	if (ret)
		return ret;
	if (!h)
		return migd_etcd_fail(err, err_size, -EPROTO,
				      "answer has no header");
	return get_i64(h, "revision", revision, err, err_size);
}

static int get_b64(json_object *o, const char *field, char **out,
		   size_t *len, char *err, size_t err_size)
{
	json_object *v;
	int ret = get_typed(o, field, json_type_string, &v, err, err_size);

	if (ret)
		return ret;
	if (!v) {
		*out = strdup("");
		*len = 0;
		return *out ? 0 : -ENOMEM;
	}
	ret = migd_etcd_unb64(json_object_get_string(v), MIGD_ETCD_VALUE_MAX,
			      out, len);
	if (ret == -EPROTO)
		return migd_etcd_fail(
			err, err_size, ret,
			"field '%s' is not base64 of at most %u bytes", field,
			MIGD_ETCD_VALUE_MAX);
	return ret;
}

static int get_kv(json_object *o, struct migd_etcd_kv *kv, char *err,
		  size_t err_size)
{
	size_t klen;
	int ret;

	if (!json_object_is_type(o, json_type_object))
		return migd_etcd_fail(err, err_size, -EPROTO,
				      "kv is not an object");
	ret = get_b64(o, "key", &kv->key, &klen, err, err_size);
	if (ret)
		return ret;
	if (!klen || strlen(kv->key) != klen)
		return migd_etcd_fail(err, err_size, -EPROTO,
				      "kv key is empty or not text");
	ret = get_b64(o, "value", &kv->value, &kv->value_len, err, err_size);
	if (!ret)
		ret = get_i64(o, "create_revision", &kv->create_revision, err,
			      err_size);
	if (!ret)
		ret = get_i64(o, "mod_revision", &kv->mod_revision, err,
			      err_size);
	if (!ret)
		ret = get_i64(o, "version", &kv->version, err, err_size);
	if (!ret)
		ret = get_i64(o, "lease", &kv->lease, err, err_size);
	return ret;
}

/* The body of a RangeResponse (top level, or inside a txn). Appends. */
static int get_range(json_object *o, struct migd_etcd_kvs *out, char *err,
		     size_t err_size)
{
	json_object *arr;
	size_t n, base = out->n;
	struct migd_etcd_kv *kv;
	int ret;

	ret = get_typed(o, "kvs", json_type_array, &arr, err, err_size);
	if (!ret)
		ret = get_bool(o, "more", &out->more, err, err_size);
	if (ret || !arr)
		return ret;
	n = json_object_array_length(arr);
	if (n > MIGD_ETCD_KVS_MAX - base)
		return migd_etcd_fail(err, err_size, -EPROTO,
				      "answer has over %u keys",
				      MIGD_ETCD_KVS_MAX);
	kv = realloc(out->kv, (base + n) * sizeof(*kv));
	if (!kv && n)
		return -ENOMEM;
	out->kv = kv;
	for (size_t i = 0; i < n; i++) {
		memset(&kv[base + i], 0, sizeof(*kv));
		out->n++; /* counted first: freed with the rest on failure */
		ret = get_kv(json_object_array_get_idx(arr, i), &kv[base + i],
			     err, err_size);
		if (ret)
			return ret;
	}
	return 0;
}

int migd_etcd_parse_range(const char *body, size_t len,
			  struct migd_etcd_kvs *out, char *err,
			  size_t err_size)
{
	struct migd_etcd_kvs kvs = { 0 };
	json_object *o = parse(body, len, err, err_size);
	int ret;

	if (!o)
		return -EPROTO;
	ret = get_header(o, &kvs.revision, err, err_size);
	if (!ret)
		ret = get_range(o, &kvs, err, err_size);
	json_object_put(o);
	if (ret) {
		migd_etcd_kvs_free(&kvs);
		return ret;
	}
	*out = kvs;
	return 0;
}

int migd_etcd_parse_write(const char *body, size_t len, int64_t *revision,
			  int64_t *deleted, char *err, size_t err_size)
{
	json_object *o = parse(body, len, err, err_size);
	int64_t rev, del = 0;
	int ret;

	if (!o)
		return -EPROTO;
	ret = get_header(o, &rev, err, err_size);
	if (!ret)
		ret = get_i64(o, "deleted", &del, err, err_size);
	json_object_put(o);
	if (ret)
		return ret;
	if (revision)
		*revision = rev;
	if (deleted)
		*deleted = del;
	return 0;
}

int migd_etcd_parse_txn(const char *body, size_t len, bool *succeeded,
			struct migd_etcd_kvs *out, char *err,
			size_t err_size)
{
	struct migd_etcd_kvs kvs = { 0 };
	json_object *o = parse(body, len, err, err_size), *arr, *r, *rr;
	bool ok = false;
	int ret;

	if (!o)
		return -EPROTO;
	ret = get_header(o, &kvs.revision, err, err_size);
	if (!ret)
		ret = get_bool(o, "succeeded", &ok, err, err_size);
	if (!ret)
		ret = get_typed(o, "responses", json_type_array, &arr, err,
				err_size);
	for (size_t i = 0; !ret && arr && i < json_object_array_length(arr);
	     i++) {
		r = json_object_array_get_idx(arr, i);
		if (!json_object_is_type(r, json_type_object)) {
			ret = migd_etcd_fail(err, err_size, -EPROTO,
					     "txn response is not an object");
			break;
		}
		ret = get_typed(r, "response_range", json_type_object, &rr,
				err, err_size);
		if (!ret && rr)
			ret = get_range(rr, &kvs, err, err_size);
	}
	json_object_put(o);
	if (ret) {
		migd_etcd_kvs_free(&kvs);
		return ret;
	}
	*succeeded = ok;
	if (out)
		*out = kvs;
	else
		migd_etcd_kvs_free(&kvs);
	return 0;
}

int migd_etcd_parse_grant(const char *body, size_t len, int64_t *id,
			  int64_t *ttl, char *err, size_t err_size)
{
	json_object *o = parse(body, len, err, err_size), *e;
	int64_t rev, i = 0, t = 0;
	int ret;

	if (!o)
		return -EPROTO;
	ret = get_header(o, &rev, err, err_size);
	if (!ret)
		ret = get_typed(o, "error", json_type_string, &e, err,
				err_size);
	if (!ret && e && *json_object_get_string(e))
		ret = migd_etcd_fail(err, err_size, -ENOSPC,
				     "lease refused: %.200s",
				     json_object_get_string(e));
	if (!ret)
		ret = get_i64(o, "ID", &i, err, err_size);
	if (!ret)
		ret = get_i64(o, "TTL", &t, err, err_size);
	if (!ret && (i == 0 || t <= 0))
		ret = migd_etcd_fail(err, err_size, -EPROTO,
				     "lease grant without an ID or a TTL");
	json_object_put(o);
	if (ret)
		return ret;
	*id = i;
	*ttl = t;
	return 0;
}

int migd_etcd_parse_keepalive(const char *body, size_t len, int64_t *ttl,
			      char *err, size_t err_size)
{
	const char *nl = memchr(body, '\n', len);
	json_object *o, *r;
	int64_t rev, t = 0;
	int ret;

	/* A stream of {"result": ...} lines; one request, one line. */
	if (nl)
		len = (size_t)(nl - body);
	o = parse(body, len, err, err_size);
	if (!o)
		return -EPROTO;
	ret = get_typed(o, "result", json_type_object, &r, err, err_size);
	if (!ret && !r) {
		json_object *e = NULL, *m = NULL;

		get_typed(o, "error", json_type_object, &e, NULL, 0);
		if (e)
			get_typed(e, "message", json_type_string, &m, NULL, 0);
		ret = migd_etcd_fail(err, err_size, -EPROTO,
				     "keepalive answer has no result: %.200s",
				     m ? json_object_get_string(m)
				       : "(no error either)");
	}
	if (!ret)
		ret = get_header(r, &rev, err, err_size);
	if (!ret)
		ret = get_i64(r, "TTL", &t, err, err_size);
	if (!ret && t <= 0)
		ret = migd_etcd_fail(err, err_size, -ENOENT,
				     "lease expired or revoked");
	json_object_put(o);
	if (ret)
		return ret;
	*ttl = t;
	return 0;
}

static const struct {
	int code;
	int err;
} grpc_errs[] = {
	{ 3, -EINVAL },	    /* INVALID_ARGUMENT */
	{ 4, -ETIMEDOUT },  /* DEADLINE_EXCEEDED */
	{ 5, -ENOENT },	    /* NOT_FOUND (lease) */
	{ 9, -EAGAIN },	    /* FAILED_PRECONDITION (not leader yet) */
	{ 14, -EAGAIN },    /* UNAVAILABLE */
};

int migd_etcd_parse_error(long http_status, const char *body, size_t len,
			  char *err, size_t err_size)
{
	json_object *o = parse(body, len, NULL, 0), *m = NULL;
	int64_t code = 0;
	int ret = -EPROTO;

	if (o) {
		if (get_typed(o, "message", json_type_string, &m, NULL, 0) ||
		    !m)
			get_typed(o, "error", json_type_string, &m, NULL, 0);
		get_i64(o, "code", &code, NULL, 0);
	}
	for (size_t i = 0; i < sizeof(grpc_errs) / sizeof(grpc_errs[0]); i++)
		if (grpc_errs[i].code == code)
			ret = grpc_errs[i].err;
	migd_etcd_fail(err, err_size, 0,
		       "etcd answered HTTP %ld: %.200s (code %" PRId64 ")",
		       http_status,
		       m ? json_object_get_string(m) : "no message", code);
	json_object_put(o);
	return ret;
}
