// SPDX-License-Identifier: MIT
/*
 * fleet-sim: the gateway calls the fleet's client does not make (it
 * never watches): a watch stream on the VM keys, and a member's status
 * for its DB size (fleetsim.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "migrated/fleet/etcd_json.h"
#include "migrated/fleet/fleet.h"
#include "tools/fleetsim/fleetsim.h"

struct fs_watcher {
	pthread_t thread;
	struct fs_shared *sh;
	char url[512];
	char *body;
	json_tokener *tok;
	size_t plen; /* strlen(prefix "vms/") */
	_Atomic bool ready;
	bool bad;
};

static void event(struct fs_watcher *w, json_object *ev, uint64_t now)
{
	json_object *kv, *k, *v, *t;
	struct migd_fleet_owner o;
	char *key = NULL, *val = NULL;
	size_t klen, vlen;
	unsigned vm, step;
	uint64_t sent;

	if (json_object_object_get_ex(ev, "type", &t) &&
	    strcmp(json_object_get_string(t), "PUT"))
		return; /* a DELETE */
	if (!json_object_object_get_ex(ev, "kv", &kv) ||
	    !json_object_object_get_ex(kv, "key", &k) ||
	    !json_object_object_get_ex(kv, "value", &v))
		return;
	if (migd_etcd_unb64(json_object_get_string(k), 1024, &key, &klen) ||
	    migd_etcd_unb64(json_object_get_string(v), 1024, &val, &vlen))
		goto out;
	if (klen <= w->plen || sscanf(key + w->plen, "sim-vm-%u", &vm) != 1 ||
	    vm >= w->sh->nvms || migd_fleet_owner_parse(val, vlen, &o))
		goto out;
	step = atomic_load(&w->sh->step);
	atomic_fetch_add(&w->sh->watch_events[step], 1);
	sent = atomic_load(&w->sh->sent_ns[vm * 4u + (o.generation & 3u)]);
	if (sent && now > sent)
		fs_hist_add(&w->sh->watch_hist[step], now - sent);
out:
	free(key);
	free(val);
}

/* One object of the stream: {"result": {"created": true} or
 * {"events": [...]}}. */
static void message(struct fs_watcher *w, json_object *m)
{
	json_object *r, *x;
	uint64_t now = fs_now_ns();

	if (!json_object_object_get_ex(m, "result", &r)) {
		fprintf(stderr, "fleet-sim: watch %s: %s\n", w->url,
			json_object_to_json_string(m));
		w->bad = true;
		return;
	}
	if (json_object_object_get_ex(r, "created", &x) &&
	    json_object_get_boolean(x))
		atomic_store(&w->ready, true);
	if (!json_object_object_get_ex(r, "events", &x) ||
	    !json_object_is_type(x, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(x); i++)
		event(w, json_object_array_get_idx(x, i), now);
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
	struct fs_watcher *w = arg;
	size_t n = size * nmemb, off = 0;

	while (off < n) {
		json_object *m;

		m = json_tokener_parse_ex(w->tok, p + off, (int)(n - off));
		if (json_tokener_get_error(w->tok) == json_tokener_continue)
			break; /* all taken; the object goes on */
		if (!m) {
			fprintf(stderr, "fleet-sim: watch %s: not JSON\n",
				w->url);
			w->bad = true;
			return 0;
		}
		off += json_tokener_get_parse_end(w->tok);
		json_tokener_reset(w->tok);
		message(w, m);
		json_object_put(m);
	}
	return n;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
		       curl_off_t d)
{
	struct fs_watcher *w = arg;

	(void)a, (void)b, (void)c, (void)d;
	return atomic_load(&w->sh->stop) ? 1 : 0;
}

static void *watch_thread(void *arg)
{
	struct fs_watcher *w = arg;
	struct curl_slist *hdr;
	CURL *c = curl_easy_init();
	CURLcode res;

	hdr = curl_slist_append(NULL, "Content-Type: application/json");
	if (!c || !hdr) {
		w->bad = true;
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, w->url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, w->body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, w);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	res = curl_easy_perform(c);
	if (res != CURLE_ABORTED_BY_CALLBACK && !atomic_load(&w->sh->stop)) {
		fprintf(stderr, "fleet-sim: watch %s ended: %s\n", w->url,
			curl_easy_strerror(res));
		w->bad = true;
	}
out:
	curl_slist_free_all(hdr);
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

struct fs_watcher *fs_watch_start(const char *url, struct fs_shared *sh)
{
	struct fs_watcher *w = calloc(1, sizeof(*w));
	char *from = NULL, *key = NULL, *end = NULL;
	size_t n;

	if (!w)
		return NULL;
	w->sh = sh;
	snprintf(w->url, sizeof(w->url), "%s/v3/watch", url);
	if (asprintf(&from, "%svms/", sh->prefix) < 0)
		goto err;
	n = strlen(from);
	w->plen = n;
	/* The range of a prefix ends at the prefix with its last byte + 1
	 * ('/' + 1 = '0'). */
	key = migd_etcd_b64(from, n);
	from[n - 1]++;
	end = migd_etcd_b64(from, n);
	w->tok = json_tokener_new();
	if (!key || !end || !w->tok ||
	    asprintf(&w->body, "{\"create_request\":{\"key\":\"%s\","
		     "\"range_end\":\"%s\"}}", key, end) < 0)
		goto err;
	if (pthread_create(&w->thread, NULL, watch_thread, w))
		goto err;
	free(from);
	free(key);
	free(end);
	return w;
err:
	fprintf(stderr, "fleet-sim: cannot start a watcher on %s\n", url);
	if (w->tok)
		json_tokener_free(w->tok);
	free(w->body);
	free(from);
	free(key);
	free(end);
	free(w);
	return NULL;
}

bool fs_watch_ready(struct fs_watcher *w)
{
	return atomic_load(&w->ready) && !w->bad;
}

void fs_watch_stop(struct fs_watcher *w)
{
	if (!w)
		return;
	pthread_join(w->thread, NULL);
	json_tokener_free(w->tok);
	free(w->body);
	free(w);
}

struct buf {
	char b[4096];
	size_t n;
};

static size_t on_status(char *p, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb, room = sizeof(b->b) - 1 - b->n;

	memcpy(b->b + b->n, p, n < room ? n : room);
	b->n += n < room ? n : room;
	b->b[b->n] = '\0';
	return n;
}

/* POST /v3/maintenance/status: {"header":..., "dbSize": "N", ...}. */
static int64_t member_db_size(CURL *c, const char *url)
{
	struct buf b = { .n = 0 };
	char u[600];
	json_object *o, *v;
	int64_t size = -1;

	snprintf(u, sizeof(u), "%s/v3/maintenance/status", url);
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, u);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{}");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_status);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (curl_easy_perform(c) != CURLE_OK)
		return -1;
	o = json_tokener_parse(b.b);
	if (o && json_object_object_get_ex(o, "dbSize", &v))
		size = json_object_get_int64(v); /* parses "N" too */
	json_object_put(o);
	return size;
}

int64_t fs_db_size(const char *endpoints)
{
	char *list = strdup(endpoints), *save = NULL, *u;
	CURL *c = curl_easy_init();
	int64_t best = -1;

	for (u = list && c ? strtok_r(list, ",", &save) : NULL; u;
	     u = strtok_r(NULL, ",", &save)) {
		int64_t s = member_db_size(c, u);

		if (s > best)
			best = s;
	}
	if (c)
		curl_easy_cleanup(c);
	free(list);
	return best;
}
