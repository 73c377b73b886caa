// SPDX-License-Identifier: MIT
/*
 * Fault points (faultpoint.h). The spec is parsed into a small fixed table
 * under one mutex; reaching a point when nothing is armed costs one
 * atomic load.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/log.h"
#include "migrated/mig/faultpoint.h"

#define FP_MAX 16
#define FP_NAME_MAX 32

enum fp_action {
	FP_INVALID = 0,
	FP_SLEEP,
	FP_KILL,
	FP_FAIL,
	FP_DROP,
};

struct fp_entry {
	char name[FP_NAME_MAX];
	unsigned nth; /* 0: every time */
	enum fp_action action;
	unsigned long arg;
	unsigned hits;
};

static pthread_mutex_t fp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fp_once = PTHREAD_ONCE_INIT;
/* protected by fp_lock */
static struct fp_entry fp_table[FP_MAX];
static unsigned fp_count;
/* written under fp_lock, read without it on the fast path */
static atomic_bool fp_armed;

static const struct {
	const char *name;
	enum fp_action action;
	bool has_arg;
} fp_actions[] = {
	{"sleep", FP_SLEEP, true},
	{"kill", FP_KILL, false},
	{"fail", FP_FAIL, false},
	{"drop", FP_DROP, false},
};

/* One "NAME[@N]=ACTION[:ARG]" of @len bytes at @s into @e. */
static int parse_one(const char *s, size_t len, struct fp_entry *e)
{
	char buf[96], *eq, *at, *colon, *end;
	bool found = false;

	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	eq = strchr(buf, '=');
	if (!eq)
		return -EINVAL;
	*eq = 0;
	memset(e, 0, sizeof(*e));
	at = strchr(buf, '@');
	if (at) {
		*at = 0;
		errno = 0;
		e->nth = (unsigned)strtoul(at + 1, &end, 10);
		if (errno || *end || !e->nth)
			return -EINVAL;
	}
	if (!buf[0] || strlen(buf) >= FP_NAME_MAX)
		return -EINVAL;
	strcpy(e->name, buf);
	colon = strchr(eq + 1, ':');
	if (colon)
		*colon = 0;
	for (size_t i = 0; i < sizeof(fp_actions) / sizeof(fp_actions[0]);
	     i++) {
		if (strcmp(eq + 1, fp_actions[i].name))
			continue;
		if (fp_actions[i].has_arg != (colon != NULL))
			return -EINVAL;
		e->action = fp_actions[i].action;
		found = true;
	}
	if (!found)
		return -EINVAL;
	if (colon) {
		errno = 0;
		e->arg = strtoul(colon + 1, &end, 10);
		if (errno || *end || end == colon + 1)
			return -EINVAL;
	}
	return 0;
}

/* Caller holds fp_lock. */
static int set_locked(const char *spec)
{
	struct fp_entry t[FP_MAX];
	unsigned n = 0;

	while (spec && *spec) {
		size_t len = strcspn(spec, ",");
		int ret;

		if (n == FP_MAX)
			return -EINVAL;
		ret = parse_one(spec, len, &t[n]);
		if (ret)
			return ret;
		n++;
		spec += len;
		if (*spec == ',')
			spec++;
	}
	memcpy(fp_table, t, n * sizeof(t[0]));
	fp_count = n;
	atomic_store(&fp_armed, n > 0);
	return 0;
}

static void load_env(void)
{
	const char *spec = getenv(MIG_FAULTPOINTS_ENV);

	if (!spec || !*spec)
		return;
	pthread_mutex_lock(&fp_lock);
	if (set_locked(spec))
		hv_err("mig", "op=faultpoints_load err=%d env=%s what=bad_spec",
		       -EINVAL, MIG_FAULTPOINTS_ENV);
	else
		hv_warn("mig", "op=faultpoints_load spec=\"%s\"", spec);
	pthread_mutex_unlock(&fp_lock);
}

int mig_faultpoints_set(const char *spec)
{
	int ret;

	pthread_once(&fp_once, load_env);
	pthread_mutex_lock(&fp_lock);
	ret = set_locked(spec);
	if (ret)
		set_locked(NULL);
	pthread_mutex_unlock(&fp_lock);
	return ret;
}

int mig_faultpoint(const char *name)
{
	enum fp_action act = FP_INVALID;
	unsigned long arg = 0;

	pthread_once(&fp_once, load_env);
	if (!atomic_load_explicit(&fp_armed, memory_order_relaxed))
		return 0;
	pthread_mutex_lock(&fp_lock);
	for (unsigned i = 0; i < fp_count; i++) {
		struct fp_entry *e = &fp_table[i];

		if (strcmp(e->name, name))
			continue;
		e->hits++;
		if (e->nth && e->hits != e->nth)
			continue;
		act = e->action;
		arg = e->arg;
		break;
	}
	pthread_mutex_unlock(&fp_lock);
	if (act == FP_INVALID)
		return 0;
	hv_warn("mig", "op=faultpoint name=%s action=%s arg=%lu", name,
		fp_actions[act - 1].name, arg);
	switch (act) {
	case FP_SLEEP: {
		struct timespec ts = {(time_t)(arg / 1000),
				      (long)(arg % 1000) * 1000000L};

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		return 0;
	}
	case FP_KILL:
		raise(SIGKILL);
		return -EIO; /* not reached */
	case FP_FAIL:
		return -EIO;
	case FP_DROP:
		return MIG_FAULT_DROP;
	default:
		return 0;
	}
}
