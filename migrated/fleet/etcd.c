// SPDX-License-Identifier: MIT
/*
 * migd_etcd: etcd v3 over the HTTP/JSON gateway with libcurl (etcd.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "migrated/fleet/etcd.h"

/* An answer larger than this is refused (a range of MIGD_ETCD_KVS_MAX
 * small records fits). */
#define ANSWER_MAX (64u << 20)

struct migd_etcd {
	/* immutable after create */
	char *url[MIGD_ETCD_ENDPOINTS_MAX];
	unsigned n;
	char *cacert, *cert, *key;
	uint32_t timeout_ms;

	/* protected by lock */
	pthread_mutex_t lock;
	CURL *curl;
	unsigned cur; /* the member that answered last */
	char err[512];
	/* the answer being read */
	char *buf;
	size_t len, cap;
	bool too_long;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_res;

static void curl_init(void)
{
	curl_init_res = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_opt(const char *s, bool *oom)
{
	char *d;

	if (!s || !*s)
		return NULL;
	d = strdup(s);
	if (!d)
		*oom = true;
	return d;
}

/* "host:port", "http://host:port" or "https://host:port[/]" into a URL
 * without a trailing slash. */
static int parse_endpoint(const char *s, size_t n, char **out, char *err,
			  size_t err_size)
{
	const char *hp = s, *colon;
	size_t hlen;
	bool scheme = false;
	char *u;

	if (n >= 7 && !strncmp(s, "http://", 7)) {
		hp = s + 7;
		scheme = true;
	} else if (n >= 8 && !strncmp(s, "https://", 8)) {
		hp = s + 8;
		scheme = true;
	} else if (memmem(s, n, "://", 3)) {
		return migd_etcd_fail(
			err, err_size, -EINVAL,
			"bad etcd endpoint '%.*s': scheme must be http "
			"or https",
			(int)n, s);
	}
	hlen = n - (size_t)(hp - s);
	if (hlen && hp[hlen - 1] == '/')
		hlen--;
	colon = memrchr(hp, ':', hlen);
	if (!hlen || !colon || colon == hp || colon == hp + hlen - 1 ||
	    memchr(hp, '/', hlen) || memchr(hp, ' ', hlen))
		return migd_etcd_fail(
			err, err_size, -EINVAL,
			"bad etcd endpoint '%.*s': want [http[s]://]"
			"HOST:PORT",
			(int)n, s);
	for (const char *p = colon + 1; p < hp + hlen; p++)
		if (*p < '0' || *p > '9')
			return migd_etcd_fail(
				err, err_size, -EINVAL,
				"bad etcd endpoint '%.*s': port is not a "
				"number",
				(int)n, s);
	if (asprintf(&u, "%s%.*s", scheme ? "" : "http://",
		     (int)(scheme ? (size_t)(hp - s) + hlen : hlen), s) < 0)
		return -ENOMEM;
	*out = u;
	return 0;
}

int migd_etcd_create(const struct migd_etcd_cfg *cfg, struct migd_etcd **out,
		     char *err, size_t err_size)
{
	struct migd_etcd *e;
	const char *s, *end;
	bool oom = false;
	int ret;

	if (!cfg->endpoints || !*cfg->endpoints)
		return migd_etcd_fail(err, err_size, -EINVAL,
				      "no etcd endpoint given");
	pthread_once(&curl_once, curl_init);
	if (curl_init_res != CURLE_OK)
		return migd_etcd_fail(err, err_size, -ENOMEM,
				      "libcurl init: %s",
				      curl_easy_strerror(curl_init_res));
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (s = cfg->endpoints; *s; s = *end ? end + 1 : end) {
		end = strchrnul(s, ',');
		if (end == s)
			continue;
		if (e->n == MIGD_ETCD_ENDPOINTS_MAX) {
			ret = migd_etcd_fail(err, err_size, -EINVAL,
					     "more than %u etcd endpoints",
					     MIGD_ETCD_ENDPOINTS_MAX);
			goto err_free;
		}
		ret = parse_endpoint(s, (size_t)(end - s), &e->url[e->n], err,
				     err_size);
		if (ret)
			goto err_free;
		e->n++;
	}
	if (!e->n) {
		ret = migd_etcd_fail(err, err_size, -EINVAL,
				     "no etcd endpoint given");
		goto err_free;
	}
	e->cacert = dup_opt(cfg->cacert, &oom);
	e->cert = dup_opt(cfg->cert, &oom);
	e->key = dup_opt(cfg->key, &oom);
	e->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms :
					  MIGD_ETCD_TIMEOUT_MS_DEFAULT;
	e->curl = curl_easy_init();
	if (oom || !e->curl) {
		ret = -ENOMEM;
		goto err_free;
	}
	pthread_mutex_init(&e->lock, NULL);
	*out = e;
	return 0;

err_free:
	if (e->curl)
		curl_easy_cleanup(e->curl);
	free(e->cacert);
	free(e->cert);
	free(e->key);
	for (unsigned i = 0; i < e->n; i++)
		free(e->url[i]);
	free(e);
	return ret;
}

void migd_etcd_destroy(struct migd_etcd *e)
{
	if (!e)
		return;
	curl_easy_cleanup(e->curl);
	pthread_mutex_destroy(&e->lock);
	free(e->buf);
	free(e->cacert);
	free(e->cert);
	free(e->key);
	for (unsigned i = 0; i < e->n; i++)
		free(e->url[i]);
	free(e);
}

void migd_etcd_error(struct migd_etcd *e, char *buf, size_t len)
{
	pthread_mutex_lock(&e->lock);
	snprintf(buf, len, "%s", e->err);
	pthread_mutex_unlock(&e->lock);
}

void migd_etcd_current(struct migd_etcd *e, char *buf, size_t len)
{
	pthread_mutex_lock(&e->lock);
	snprintf(buf, len, "%s", e->url[e->cur]);
	pthread_mutex_unlock(&e->lock);
}

static size_t write_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct migd_etcd *e = arg;
	size_t n = size * nmemb;

	if (n > ANSWER_MAX - e->len) {
		e->too_long = true;
		return 0; /* libcurl fails the transfer */
	}
	if (e->len + n + 1 > e->cap) {
		size_t cap = e->cap ? e->cap : 4096;
		char *b;

		while (cap < e->len + n + 1)
			cap *= 2;
		b = realloc(e->buf, cap);
		if (!b)
			return 0;
		e->buf = b;
		e->cap = cap;
	}
	memcpy(e->buf + e->len, p, n);
	e->len += n;
	e->buf[e->len] = '\0';
	return n;
}

/* Was the request on its way (connected) when @res happened? */
static bool was_sent(CURL *c, CURLcode res)
{
	curl_off_t t = 0;

	switch (res) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
		return false;
	default:
		break;
	}
	if (curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &t) != CURLE_OK)
		return true;
	return t > 0;
}

/*
 * A TLS member that wants a client certificate and got none ends the
 * connection during or right after the handshake, which libcurl reports
 * as a transport error that does not say why: say what is likely.
 */
static const char *cert_hint(struct migd_etcd *e, unsigned m, CURLcode res)
{
	if (e->cert || strncmp(e->url[m], "https://", 8))
		return "";
	switch (res) {
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
		return " (no client certificate given: does the member "
		       "want one?)";
	default:
		return "";
	}
}

/*
 * POST @body to @path on the current member, then the others. On 0 the
 * answer is in e->buf / e->len (valid until the next request). Called
 * with e->lock held.
 */
static int request(struct migd_etcd *e, const char *path, const char *body,
		   bool write)
{
	char why[MIGD_ETCD_ENDPOINTS_MAX][160];
	int last = -ECONNREFUSED;
	bool all_unavailable = true;
	struct curl_slist *hdr;

	if (!body)
		return migd_etcd_fail(e->err, sizeof(e->err), -ENOMEM,
				      "out of memory");
	hdr = curl_slist_append(NULL, "Content-Type: application/json");
	if (!hdr)
		return -ENOMEM;
	for (unsigned i = 0; i < e->n; i++) {
		unsigned m = (e->cur + i) % e->n;
		char url[512], cerr[CURL_ERROR_SIZE] = "";
		CURLcode res;
		long status = 0;
		int ret;

		snprintf(url, sizeof(url), "%s%s", e->url[m], path);
		curl_easy_reset(e->curl);
		curl_easy_setopt(e->curl, CURLOPT_URL, url);
		curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, write_cb);
		curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
		curl_easy_setopt(e->curl, CURLOPT_ERRORBUFFER, cerr);
		curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS,
				 (long)e->timeout_ms);
		curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
		/* Loopback members must not go through a proxy from the
		 * environment. */
		curl_easy_setopt(e->curl, CURLOPT_NOPROXY, "*");
		if (e->cacert)
			curl_easy_setopt(e->curl, CURLOPT_CAINFO, e->cacert);
		if (e->cert)
			curl_easy_setopt(e->curl, CURLOPT_SSLCERT, e->cert);
		if (e->key)
			curl_easy_setopt(e->curl, CURLOPT_SSLKEY, e->key);
		e->len = 0;
		e->too_long = false;
		res = curl_easy_perform(e->curl);
		if (res == CURLE_OK) {
			curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE,
					  &status);
			if (!e->buf) /* an empty answer: parse "" */
				write_cb("", 1, 0, e);
			if (status == 200) {
				e->cur = m;
				curl_slist_free_all(hdr);
				return 0;
			}
			ret = migd_etcd_parse_error(status, e->buf, e->len,
						    why[i], sizeof(why[i]));
			if (ret != -EAGAIN) {
				e->cur = m;
				curl_slist_free_all(hdr);
				return migd_etcd_fail(e->err, sizeof(e->err),
						      ret, "%s: %s", e->url[m],
						      why[i]);
			}
			last = -EAGAIN;
			continue;
		}
		all_unavailable = false;
		snprintf(why[i], sizeof(why[i]), "%.100s%.59s",
			 e->too_long ? "answer too long" :
			 *cerr	     ? cerr :
				       curl_easy_strerror(res),
			 cert_hint(e, m, res));
		if (e->too_long) {
			curl_slist_free_all(hdr);
			return migd_etcd_fail(e->err, sizeof(e->err), -EPROTO,
					      "%s: %s", e->url[m], why[i]);
		}
		if (was_sent(e->curl, res) && write) {
			/* It may have been applied: never send it twice. */
			curl_slist_free_all(hdr);
			return migd_etcd_fail(
				e->err, sizeof(e->err), -ETIMEDOUT,
				"%s: %s (sent; whether it took effect is "
				"unknown)",
				e->url[m], why[i]);
		}
		if (res == CURLE_OPERATION_TIMEDOUT)
			last = -ETIMEDOUT;
	}
	curl_slist_free_all(hdr);
	if (all_unavailable)
		last = -EAGAIN;
	{
		size_t off = (size_t)snprintf(e->err, sizeof(e->err),
					      "no etcd member answered:");

		for (unsigned i = 0; i < e->n && off < sizeof(e->err); i++)
			off += (size_t)snprintf(e->err + off,
						sizeof(e->err) - off,
						" %s: %s;",
						e->url[(e->cur + i) % e->n],
						why[i]);
	}
	return last;
}

/* The request @path with @body (freed here), then @decode of the answer
 * under the lock. */
#define CALL(e, path, body, write, decode)                                   \
	({                                                                   \
		char *b_ = (body);                                           \
		int r_;                                                      \
		pthread_mutex_lock(&(e)->lock);                              \
		r_ = request((e), (path), b_, (write));                      \
		if (!r_) {                                                   \
			const char *buf = (e)->buf;                          \
			size_t len = (e)->len;                               \
			char *err = (e)->err;                                \
			size_t err_size = sizeof((e)->err);                  \
			r_ = (decode);                                       \
		}                                                            \
		pthread_mutex_unlock(&(e)->lock);                            \
		free(b_);                                                    \
		r_;                                                          \
	})

int migd_etcd_get(struct migd_etcd *e, const char *key, bool *found,
		  struct migd_etcd_kv *kv)
{
	struct migd_etcd_kvs kvs = { 0 };
	int ret;

	ret = CALL(e, "/v3/kv/range", migd_etcd_req_range(key, false, 1),
		   false, migd_etcd_parse_range(buf, len, &kvs, err,
						err_size));
	if (ret)
		return ret;
	*found = kvs.n > 0;
	if (kv && kvs.n) {
		*kv = kvs.kv[0];
		kvs.kv[0].key = kvs.kv[0].value = NULL;
	}
	migd_etcd_kvs_free(&kvs);
	return 0;
}

int migd_etcd_list(struct migd_etcd *e, const char *prefix,
		   struct migd_etcd_kvs *out)
{
	return CALL(e, "/v3/kv/range", migd_etcd_req_range(prefix, true, 0),
		    false, migd_etcd_parse_range(buf, len, out, err,
						 err_size));
}

int migd_etcd_put(struct migd_etcd *e, const char *key, const void *value,
		  size_t len_, int64_t lease, int64_t *revision)
{
	return CALL(e, "/v3/kv/put",
		    migd_etcd_req_put(key, value, len_, lease), true,
		    migd_etcd_parse_write(buf, len, revision, NULL, err,
					  err_size));
}

int migd_etcd_delete(struct migd_etcd *e, const char *key, bool prefix,
		     int64_t *deleted)
{
	return CALL(e, "/v3/kv/deleterange",
		    migd_etcd_req_delete(key, prefix), true,
		    migd_etcd_parse_write(buf, len, NULL, deleted, err,
					  err_size));
}

int migd_etcd_txn(struct migd_etcd *e, const struct migd_etcd_cmp *cmp,
		  size_t ncmp, const struct migd_etcd_op *ok, size_t nok,
		  const struct migd_etcd_op *els, size_t nels,
		  bool *succeeded, struct migd_etcd_kvs *out)
{
	return CALL(e, "/v3/kv/txn",
		    migd_etcd_req_txn(cmp, ncmp, ok, nok, els, nels), true,
		    migd_etcd_parse_txn(buf, len, succeeded, out, err,
					err_size));
}

int migd_etcd_lease_grant(struct migd_etcd *e, int64_t ttl_s, int64_t *id,
			  int64_t *ttl)
{
	return CALL(e, "/v3/lease/grant", migd_etcd_req_lease_grant(ttl_s),
		    true, migd_etcd_parse_grant(buf, len, id, ttl, err,
						err_size));
}

int migd_etcd_lease_keepalive(struct migd_etcd *e, int64_t id, int64_t *ttl)
{
	/* A keepalive is harmless twice: it is a read for failover. */
	return CALL(e, "/v3/lease/keepalive", migd_etcd_req_lease_id(id),
		    false, migd_etcd_parse_keepalive(buf, len, ttl, err,
						     err_size));
}

int migd_etcd_lease_revoke(struct migd_etcd *e, int64_t id)
{
	return CALL(e, "/v3/lease/revoke", migd_etcd_req_lease_id(id), true,
		    migd_etcd_parse_write(buf, len, NULL, NULL, err,
					  err_size));
}
