// SPDX-License-Identifier: MIT
/*
 * migd_fleet: registration under a lease, its keepalive thread, and the
 * ownership keys (fleet.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hvcore/log.h"
#include "migrated/fleet/fleet.h"

#define COMP "migd.fleet"

struct migd_fleet {
	/* immutable after start */
	struct migd_etcd *etcd;
	char prefix[128];
	char id[MIGD_FLEET_ID_MAX + 1];
	char host_key[256];
	char *record; /* under @lock: migd_fleet_set_record() swaps it */
	char *lease_file;
	unsigned ttl_s;

	/* fleet thread; read by others through the atomics */
	pthread_t thread;
	_Atomic int64_t lease; /* read by the slot calls */
	_Atomic uint64_t last_ok_ms; /* 0: no lease held */
	_Atomic uint64_t epoch;

	pthread_mutex_t lock; /* stop + cond */
	pthread_cond_t cond;
	bool stop;
	bool threaded; /* migd_fleet_start(), not migd_fleet_open() */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool id_valid(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > MIGD_FLEET_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		      s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

static int etcd_fail(struct migd_fleet *f, int ret, char *err,
		     size_t err_size, const char *what)
{
	char m[512];

	migd_etcd_error(f->etcd, m, sizeof(m));
	return migd_etcd_fail(err, err_size, ret, "etcd %s: %s", what, m);
}

static void lease_file_write(struct migd_fleet *f)
{
	FILE *fp;

	if (!f->lease_file)
		return;
	fp = fopen(f->lease_file, "w");
	if (!fp)
		return;
	fprintf(fp, "%" PRId64 "\n", f->lease);
	fclose(fp);
}

static int64_t lease_file_read(struct migd_fleet *f)
{
	long long v = 0;
	FILE *fp;

	if (!f->lease_file)
		return 0;
	fp = fopen(f->lease_file, "r");
	if (!fp)
		return 0;
	if (fscanf(fp, "%lld", &v) != 1)
		v = 0;
	fclose(fp);
	return v;
}

/*
 * Put our record under @lease, unless the key is held under another
 * lease (another live daemon with our id). The txn makes "absent or
 * ours" and the put one step.
 */
static char *record_copy(struct migd_fleet *f)
{
	char *r;

	pthread_mutex_lock(&f->lock);
	r = strdup(f->record);
	pthread_mutex_unlock(&f->lock);
	return r;
}

static int put_record_copy(struct migd_fleet *f, int64_t lease,
			   const char *record, char *err, size_t err_size);

static int put_record(struct migd_fleet *f, int64_t lease, char *err,
		      size_t err_size)
{
	char *rec = record_copy(f);
	int ret;

	if (!rec)
		return migd_etcd_fail(err, err_size, -ENOMEM, "out of memory");
	ret = put_record_copy(f, lease, rec, err, err_size);
	free(rec);
	return ret;
}

static int put_record_copy(struct migd_fleet *f, int64_t lease,
			   const char *record, char *err, size_t err_size)
{
	size_t rlen = strlen(record);
	const struct migd_etcd_cmp absent = {
		.key = f->host_key, .target = MIGD_ETCD_T_VERSION,
		.result = MIGD_ETCD_R_EQUAL, .num = 0,
	};
	const struct migd_etcd_op put = {
		.kind = MIGD_ETCD_OP_PUT, .key = f->host_key,
		.value = record, .value_len = rlen, .lease = lease,
	};
	const struct migd_etcd_op get = {
		.kind = MIGD_ETCD_OP_RANGE, .key = f->host_key,
	};
	struct migd_etcd_kvs kvs = { 0 };
	bool ok;
	int ret;

	ret = migd_etcd_txn(f->etcd, &absent, 1, &put, 1, &get, 1, &ok, &kvs);
	if (ret)
		return etcd_fail(f, ret, err, err_size, "registration");
	if (ok)
		return 0;
	if (kvs.n && kvs.kv[0].lease == lease) {
		migd_etcd_kvs_free(&kvs);
		ret = migd_etcd_put(f->etcd, f->host_key, record, rlen,
				    lease, NULL);
		return ret ? etcd_fail(f, ret, err, err_size, "registration")
			   : 0;
	}
	ret = migd_etcd_fail(
		err, err_size, -EEXIST,
		"host id '%s' is registered by another live daemon "
		"(lease %" PRId64 "); give each host its own --host-id, or "
		"wait up to %u s after that daemon stopped",
		f->id, kvs.n ? kvs.kv[0].lease : 0, f->ttl_s);
	migd_etcd_kvs_free(&kvs);
	return ret;
}

/* A lease: ours from the lease file if etcd still has it, else new. */
static int take_lease(struct migd_fleet *f, int64_t *lease, char *err,
		      size_t err_size)
{
	int64_t id = lease_file_read(f), ttl;
	int ret;

	if (id && migd_etcd_lease_keepalive(f->etcd, id, &ttl) == 0) {
		*lease = id;
		return 0;
	}
	ret = migd_etcd_lease_grant(f->etcd, f->ttl_s, &id, &ttl);
	if (ret)
		return etcd_fail(f, ret, err, err_size, "lease grant");
	*lease = id;
	return 0;
}

static int do_register(struct migd_fleet *f, char *err, size_t err_size)
{
	uint64_t t0 = now_ms();
	int64_t lease = 0;
	int ret;

	ret = take_lease(f, &lease, err, err_size);
	if (ret)
		return ret;
	ret = put_record(f, lease, err, err_size);
	if (ret) {
		/* Not ours to keep: let it go at once. */
		migd_etcd_lease_revoke(f->etcd, lease);
		return ret;
	}
	f->lease = lease;
	lease_file_write(f);
	atomic_store(&f->last_ok_ms, t0 ? t0 : 1);
	atomic_fetch_add(&f->epoch, 1);
	hv_info(COMP, "event=fleet_registered host=%s lease=%" PRId64
		" ttl=%u", f->id, lease, f->ttl_s);
	return 0;
}

static bool wait_stop(struct migd_fleet *f, uint64_t ms)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&f->lock);
	if (!f->stop)
		pthread_cond_timedwait(&f->cond, &f->lock, &ts);
	stop = f->stop;
	pthread_mutex_unlock(&f->lock);
	return stop;
}

/*
 * The keepalive loop. The time taken *before* a keepalive is what its
 * success proves: etcd restarted the TTL no earlier than that.
 */
static void *fleet_thread(void *arg)
{
	struct migd_fleet *f = arg;
	const uint64_t period = f->ttl_s * 1000u / 3, retry = 250;
	uint64_t wait = period;
	bool lost_logged = false;

	while (!wait_stop(f, wait)) {
		uint64_t t0 = now_ms();
		char err[512];
		int64_t ttl;
		int ret;

		wait = retry;
		if (!atomic_load(&f->last_ok_ms)) {
			/* Lease lost: a new one, and the record again. */
			if (!do_register(f, err, sizeof(err))) {
				lost_logged = false;
				wait = period;
			}
			continue;
		}
		ret = migd_etcd_lease_keepalive(f->etcd, f->lease, &ttl);
		if (!ret) {
			atomic_store(&f->last_ok_ms, t0 ? t0 : 1);
			if (lost_logged)
				hv_info(COMP, "event=fleet_contact host=%s",
					f->id);
			lost_logged = false;
			wait = period;
			continue;
		}
		migd_etcd_error(f->etcd, err, sizeof(err));
		if (ret == -ENOENT) {
			hv_warn(COMP, "event=fleet_lease_lost host=%s "
				"lease=%" PRId64 " why=\"%s\"", f->id,
				f->lease, err);
			atomic_store(&f->last_ok_ms, 0);
			continue;
		}
		if (!lost_logged)
			hv_warn(COMP, "event=fleet_keepalive_failed host=%s "
				"err=\"%s\"", f->id, err);
		lost_logged = true;
	}
	return NULL;
}

static int fleet_new(const struct migd_fleet_cfg *cfg,
		     struct migd_fleet **out, char *err, size_t err_size)
{
	const char *prefix = cfg->prefix ? cfg->prefix : "/migrated/";
	struct migd_fleet *f;
	int ret;

	if (!cfg->host_id || !id_valid(cfg->host_id))
		return migd_etcd_fail(err, err_size, -EINVAL,
				      "bad host id '%s': [A-Za-z0-9._-], 1..%d",
				      cfg->host_id ? cfg->host_id : "",
				      MIGD_FLEET_ID_MAX);
	if (cfg->ttl_s == 1 || cfg->ttl_s > 3600)
		return migd_etcd_fail(err, err_size, -EINVAL,
				      "bad etcd lease TTL %u s: 2..3600",
				      cfg->ttl_s);
	if (strlen(prefix) >= 100)
		return migd_etcd_fail(err, err_size, -EINVAL,
				      "etcd prefix too long");
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	snprintf(f->prefix, sizeof(f->prefix), "%s", prefix);
	snprintf(f->id, sizeof(f->id), "%s", cfg->host_id);
	snprintf(f->host_key, sizeof(f->host_key), "%shosts/%s", f->prefix,
		 f->id);
	f->ttl_s = cfg->ttl_s ? cfg->ttl_s : MIGD_FLEET_TTL_DEFAULT;
	f->record = strdup(cfg->record ? cfg->record : "{}");
	f->lease_file = cfg->lease_file ? strdup(cfg->lease_file) : NULL;
	if (!f->record || (cfg->lease_file && !f->lease_file)) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = migd_etcd_create(&cfg->etcd, &f->etcd, err, err_size);
	if (ret)
		goto err_free;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	*out = f;
	return 0;

err_free:
	free(f->lease_file);
	free(f->record);
	free(f);
	return ret;
}

int migd_fleet_open(const struct migd_fleet_cfg *cfg,
		    struct migd_fleet **out, char *err, size_t err_size)
{
	return fleet_new(cfg, out, err, err_size);
}

int migd_fleet_start(const struct migd_fleet_cfg *cfg,
		     struct migd_fleet **out, char *err, size_t err_size)
{
	struct migd_fleet *f;
	int ret;

	ret = fleet_new(cfg, &f, err, err_size);
	if (ret)
		return ret;
	ret = do_register(f, err, err_size);
	if (ret)
		goto err_free;
	ret = -pthread_create(&f->thread, NULL, fleet_thread, f);
	if (ret) {
		migd_etcd_fail(err, err_size, ret, "fleet thread: %s",
			       strerror(-ret));
		migd_etcd_lease_revoke(f->etcd, f->lease);
		goto err_free;
	}
	f->threaded = true;
	*out = f;
	return 0;

err_free:
	migd_fleet_stop(f, false);
	return ret;
}

void migd_fleet_stop(struct migd_fleet *f, bool revoke)
{
	if (!f)
		return;
	if (f->threaded) {
		pthread_mutex_lock(&f->lock);
		f->stop = true;
		pthread_cond_signal(&f->cond);
		pthread_mutex_unlock(&f->lock);
		pthread_join(f->thread, NULL);
	}
	if (f->threaded && revoke && atomic_load(&f->last_ok_ms)) {
		migd_etcd_lease_revoke(f->etcd, f->lease);
		if (f->lease_file)
			unlink(f->lease_file);
	}
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	migd_etcd_destroy(f->etcd);
	free(f->lease_file);
	free(f->record);
	free(f);
}

uint64_t migd_fleet_lease_age_ms(struct migd_fleet *f)
{
	uint64_t t = atomic_load(&f->last_ok_ms);

	return t ? now_ms() - t : UINT64_MAX;
}

uint64_t migd_fleet_epoch(struct migd_fleet *f)
{
	return atomic_load(&f->epoch);
}

const char *migd_fleet_host_id(const struct migd_fleet *f)
{
	return f->id;
}

/* ---- ownership ----------------------------------------------------------- */

int migd_fleet_owner_parse(const char *value, size_t len,
			   struct migd_fleet_owner *out)
{
	json_object *o = json_tokener_parse(value), *v;
	int ret = -EPROTO;

	(void)len;
	if (!o || !json_object_is_type(o, json_type_object))
		goto out;
	if (!json_object_object_get_ex(o, "owner", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    !id_valid(json_object_get_string(v)))
		goto out;
	snprintf(out->owner, sizeof(out->owner), "%s",
		 json_object_get_string(v));
	if (!json_object_object_get_ex(o, "generation", &v) ||
	    !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 1)
		goto out;
	out->generation = (uint64_t)json_object_get_int64(v);
	ret = 0;
out:
	json_object_put(o);
	return ret;
}

static void vm_key(struct migd_fleet *f, const char *name, char *key,
		   size_t n)
{
	snprintf(key, n, "%svms/%s", f->prefix, name);
}

static int owner_value(const char *owner, uint64_t gen, char *buf, size_t n)
{
	return snprintf(buf, n, "{\"owner\":\"%s\",\"generation\":%" PRIu64
			"}", owner, gen);
}

static int owner_from(const struct migd_etcd_kv *kv,
		      struct migd_fleet_owner *out, const char *key,
		      char *err, size_t err_size)
{
	if (migd_fleet_owner_parse(kv->value, kv->value_len, out))
		return migd_etcd_fail(err, err_size, -EPROTO,
				      "ownership key %s holds no valid record",
				      key);
	out->mod_revision = kv->mod_revision;
	return 0;
}

int migd_fleet_vm_claim(struct migd_fleet *f, const char *name,
			struct migd_fleet_owner *owner, char *err,
			size_t err_size)
{
	char key[256], val[160];
	struct migd_etcd_cmp absent = { .target = MIGD_ETCD_T_VERSION,
					.result = MIGD_ETCD_R_EQUAL };
	struct migd_etcd_op put = { .kind = MIGD_ETCD_OP_PUT };
	struct migd_etcd_op get = { .kind = MIGD_ETCD_OP_RANGE };
	struct migd_etcd_kvs kvs = { 0 };
	bool ok;
	int ret;

	vm_key(f, name, key, sizeof(key));
	absent.key = put.key = get.key = key;
	put.value = val;
	put.value_len = (size_t)owner_value(f->id, 1, val, sizeof(val));
	ret = migd_etcd_txn(f->etcd, &absent, 1, &put, 1, &get, 1, &ok, &kvs);
	if (ret)
		return etcd_fail(f, ret, err, err_size, "vm claim");
	if (ok)
		return 0;
	ret = -EEXIST;
	if (kvs.n && owner_from(&kvs.kv[0], owner, key, err, err_size))
		ret = -EPROTO;
	else if (kvs.n)
		migd_etcd_fail(err, err_size, 0,
			       "a VM named '%s' exists in the fleet "
			       "(on host '%s', generation %" PRIu64 ")",
			       name, owner->owner, owner->generation);
	migd_etcd_kvs_free(&kvs);
	return ret;
}

int migd_fleet_vm_get(struct migd_fleet *f, const char *name, bool *found,
		      struct migd_fleet_owner *owner, char *err,
		      size_t err_size)
{
	struct migd_etcd_kv kv = { 0 };
	char key[256];
	int ret;

	vm_key(f, name, key, sizeof(key));
	ret = migd_etcd_get(f->etcd, key, found, &kv);
	if (ret)
		return etcd_fail(f, ret, err, err_size, "vm read");
	if (*found)
		ret = owner_from(&kv, owner, key, err, err_size);
	free(kv.key);
	free(kv.value);
	return ret;
}

int migd_fleet_vm_release(struct migd_fleet *f, const char *name, char *err,
			  size_t err_size)
{
	struct migd_fleet_owner o;
	char key[256];
	bool found;
	int ret;

	vm_key(f, name, key, sizeof(key));
	ret = migd_fleet_vm_get(f, name, &found, &o, err, err_size);
	if (ret || !found)
		return ret;
	if (strcmp(o.owner, f->id))
		return migd_etcd_fail(
			err, err_size, -EPERM,
			"VM '%s' is owned by host '%s' in the fleet", name,
			o.owner);
	/* Delete exactly the record we read, not a newer one. */
	{
		const struct migd_etcd_cmp same = {
			.key = key, .target = MIGD_ETCD_T_MOD,
			.result = MIGD_ETCD_R_EQUAL, .num = o.mod_revision,
		};
		const struct migd_etcd_op del = {
			.kind = MIGD_ETCD_OP_DELETE, .key = key,
		};
		bool ok;

		ret = migd_etcd_txn(f->etcd, &same, 1, &del, 1, NULL, 0, &ok,
				    NULL);
		if (ret)
			return etcd_fail(f, ret, err, err_size, "vm release");
		if (!ok)
			return migd_etcd_fail(
				err, err_size, -EPERM,
				"VM '%s' changed owner while released", name);
	}
	return 0;
}

int migd_fleet_vm_move(struct migd_fleet *f, const char *name,
		       const char *from, uint64_t generation,
		       struct migd_fleet_owner *now, char *err,
		       size_t err_size)
{
	char key[256], expect[160], val[160];
	struct migd_etcd_cmp same = { .target = MIGD_ETCD_T_VALUE,
				      .result = MIGD_ETCD_R_EQUAL };
	struct migd_etcd_op put = { .kind = MIGD_ETCD_OP_PUT };
	struct migd_etcd_op get = { .kind = MIGD_ETCD_OP_RANGE };
	struct migd_etcd_kvs kvs = { 0 };
	bool ok;
	int ret;

	vm_key(f, name, key, sizeof(key));
	/* The value is written by owner_value() only, so comparing the
	 * whole value compares owner and generation at once. */
	same.key = put.key = get.key = key;
	same.value = expect;
	same.value_len = (size_t)owner_value(from, generation, expect,
					     sizeof(expect));
	put.value = val;
	put.value_len = (size_t)owner_value(f->id, generation + 1, val,
					    sizeof(val));
	ret = migd_etcd_txn(f->etcd, &same, 1, &put, 1, &get, 1, &ok, &kvs);
	if (ret)
		return etcd_fail(f, ret, err, err_size, "ownership txn");
	if (ok)
		return 0;
	memset(now, 0, sizeof(*now));
	if (kvs.n)
		owner_from(&kvs.kv[0], now, key, NULL, 0);
	migd_etcd_fail(err, err_size, 0,
		       "ownership of VM '%s' is not %s/%" PRIu64
		       " but %s/%" PRIu64,
		       name, from, generation,
		       now->owner[0] ? now->owner : "(none)", now->generation);
	migd_etcd_kvs_free(&kvs);
	return -ESTALE;
}

int migd_fleet_list(struct migd_fleet *f, bool vms, struct migd_etcd_kvs *out,
		    char *err, size_t err_size)
{
	char p[160];
	size_t plen;
	int ret;

	plen = (size_t)snprintf(p, sizeof(p), "%s%s", f->prefix,
				vms ? "vms/" : "hosts/");
	ret = migd_etcd_list(f->etcd, p, out);
	if (ret)
		return etcd_fail(f, ret, err, err_size, "list");
	for (size_t i = 0; i < out->n; i++)
		memmove(out->kv[i].key, out->kv[i].key + plen,
			strlen(out->kv[i].key) - plen + 1);
	return 0;
}

/* ---- record updates and counted slots ------------------------------------ */

int migd_fleet_set_record(struct migd_fleet *f, const char *record,
			  char *err, size_t err_size)
{
	char *copy = strdup(record), *old;
	int64_t lease;

	if (!copy)
		return migd_etcd_fail(err, err_size, -ENOMEM, "out of memory");
	pthread_mutex_lock(&f->lock);
	old = f->record;
	f->record = copy;
	pthread_mutex_unlock(&f->lock);
	free(old);
	lease = atomic_load(&f->lease);
	if (!f->threaded || !lease || !atomic_load(&f->last_ok_ms))
		return 0; /* the next registration puts it */
	return put_record_copy(f, lease, record, err, err_size);
}

static void slot_key(struct migd_fleet *f, const char *set, unsigned i,
		     char *key, size_t n)
{
	snprintf(key, n, "%s%s/%u", f->prefix, set, i);
}

int migd_fleet_slot_take(struct migd_fleet *f, const char *set, unsigned max,
			 const char *holder, unsigned *slot, char *err,
			 size_t err_size)
{
	struct migd_etcd_kvs kvs = { 0 };
	int64_t lease = atomic_load(&f->lease);
	char p[192], key[256];
	size_t plen;
	int ret;

	if (!f->threaded || !lease || !atomic_load(&f->last_ok_ms))
		return migd_etcd_fail(err, err_size, -ENOLCK,
			    "no lease held in etcd (fenced or standalone)");
	plen = (size_t)snprintf(p, sizeof(p), "%s%s/", f->prefix, set);
	ret = migd_etcd_list(f->etcd, p, &kvs);
	if (ret)
		return etcd_fail(f, ret, err, err_size, "slot list");
	for (unsigned i = 0; i < max; i++) {
		bool held = false, ok = false;

		for (size_t k = 0; k < kvs.n && !held; k++) {
			char *end;
			unsigned long v = strtoul(kvs.kv[k].key + plen, &end,
						  10);

			held = !*end && v == i;
		}
		if (held)
			continue;
		slot_key(f, set, i, key, sizeof(key));
		{
			const struct migd_etcd_cmp absent = {
				.key = key, .target = MIGD_ETCD_T_VERSION,
				.result = MIGD_ETCD_R_EQUAL, .num = 0,
			};
			const struct migd_etcd_op put = {
				.kind = MIGD_ETCD_OP_PUT, .key = key,
				.value = holder, .value_len = strlen(holder),
				.lease = lease,
			};

			ret = migd_etcd_txn(f->etcd, &absent, 1, &put, 1,
					    NULL, 0, &ok, NULL);
		}
		if (ret) {
			migd_etcd_kvs_free(&kvs);
			return etcd_fail(f, ret, err, err_size, "slot take");
		}
		if (ok) {
			migd_etcd_kvs_free(&kvs);
			*slot = i;
			return 0;
		}
	}
	migd_etcd_kvs_free(&kvs);
	return migd_etcd_fail(err, err_size, -EBUSY, "all %u slots of %s are taken",
		    max, set);
}

int migd_fleet_slot_release(struct migd_fleet *f, const char *set,
			    unsigned slot, const char *holder, char *err,
			    size_t err_size)
{
	char key[256];
	const struct migd_etcd_cmp same = {
		.key = key, .target = MIGD_ETCD_T_VALUE,
		.result = MIGD_ETCD_R_EQUAL, .value = holder,
		.value_len = strlen(holder),
	};
	const struct migd_etcd_op del = {
		.kind = MIGD_ETCD_OP_DELETE, .key = key,
	};
	bool ok;
	int ret;

	slot_key(f, set, slot, key, sizeof(key));
	ret = migd_etcd_txn(f->etcd, &same, 1, &del, 1, NULL, 0, &ok, NULL);
	if (ret)
		return etcd_fail(f, ret, err, err_size, "slot release");
	return 0;
}
