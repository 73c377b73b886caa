// SPDX-License-Identifier: MIT
/*
 * migd_host: start-up (re-adoption of an earlier daemon's workers) and
 * shutdown (host.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "hvcore/time.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host.h"
#include "migrated/host/host_priv.h"

#define COMP "migd.host"

#ifndef MIGD_VMM_RELDIR
#define MIGD_VMM_RELDIR "../libexec/migrated"
#endif

/*
 * The worker binary: --vmm, $MIGRATED_VMM, else next to this one (the
 * build tree), else MIGD_VMM_RELDIR from this one's directory (installed:
 * sbin/migrated and libexec/migrated/migrated-vmm).
 */
static int find_vmm(struct migd_host *d)
{
	struct migd_supervisor *h = d->sup;
	const char *env = getenv("MIGRATED_VMM");
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (d->cfg.vmm_path[0])
		snprintf(h->vmm_path, sizeof(h->vmm_path), "%s",
			 d->cfg.vmm_path);
	else if (env && *env)
		snprintf(h->vmm_path, sizeof(h->vmm_path), "%s", env);
	else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			return -errno;
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		snprintf(h->vmm_path, sizeof(h->vmm_path), "%.4000s/migrated-vmm",
			 self);
		if (access(h->vmm_path, X_OK))
			snprintf(h->vmm_path, sizeof(h->vmm_path),
				 "%.3800s/" MIGD_VMM_RELDIR "/migrated-vmm",
				 self);
	}
	/* Logs and `ps` show /usr/libexec/..., not /usr/sbin/../libexec. */
	if (realpath(h->vmm_path, self))
		snprintf(h->vmm_path, sizeof(h->vmm_path), "%s", self);
	if (access(h->vmm_path, X_OK)) {
		hv_err(COMP, "event=start_failed vmm=%s err=\"%s\" "
			     "hint=\"the worker binary migrated-vmm is installed "
			     "next to migrated or in " MIGD_VMM_RELDIR
			     " from it; --vmm PATH names another\"",
		       h->vmm_path, strerror(errno));
		return -ENOENT;
	}
	return 0;
}

struct rec {
	uint64_t wid, start_time;
	int pid;
	char vm[MIGD_NAME_MAX + 1];
	char reserved[MIGD_NAME_MAX + 1];
	char crashed[128];
};

static int rec_read(const char *path, struct rec *r)
{
	char line[512];
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	memset(r, 0, sizeof(*r));
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, '=');
		unsigned long long x;

		if (!v)
			continue;
		*v++ = '\0';
		v[strcspn(v, "\n")] = '\0';
		if (!strcmp(line, "wid") && sscanf(v, "%llu", &x) == 1)
			r->wid = x;
		else if (!strcmp(line, "pid") && sscanf(v, "%llu", &x) == 1)
			r->pid = (int)x;
		else if (!strcmp(line, "start_time") &&
			 sscanf(v, "%llu", &x) == 1)
			r->start_time = x;
		else if (!strcmp(line, "vm"))
			snprintf(r->vm, sizeof(r->vm), "%s", v);
		else if (!strcmp(line, "reserved"))
			snprintf(r->reserved, sizeof(r->reserved), "%s", v);
		else if (!strcmp(line, "crashed"))
			snprintf(r->crashed, sizeof(r->crashed), "%s", v);
	}
	fclose(f);
	return r->wid && r->pid > 0 ? 0 : -EINVAL;
}

/* A zombie (dead, not yet reaped: an orphaned worker's parent is init,
 * which may reap late or never) still answers kill(0) with its start
 * time, but it is gone. */
static bool proc_zombie(int pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && (p[2] == 'Z' || p[2] == 'X');
}

static bool worker_alive(const struct rec *r)
{
	uint64_t st;

	return kill(r->pid, 0) == 0 &&
	       migd__proc_start_time(r->pid, &st) == 0 &&
	       st == r->start_time && !proc_zombie(r->pid);
}

/* Migrations an orphaned worker finished and wrote down before it
 * exited. */
static void load_outcome(struct migd_host *d, const struct rec *r)
{
	char path[PATH_MAX];
	uint8_t buf[64 << 10];
	Migd__MigStatusResult *res;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%.4000s/%llu.outcome", d->sup->vms_dir,
		 (unsigned long long)r->wid);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	unlink(path);
	res = migd__mig_status_result__unpack(NULL, n, buf);
	if (!res)
		return;
	for (size_t i = res->n_migrations; i-- > 0;) {
		migd_hmig_add(d, res->migrations[i]->id, r->wid,
			      res->migrations[i]);
		hv_info(COMP, "event=migration_outcome mig=%llu wid=%llu "
			      "how=\"finished while no daemon ran\"",
			(unsigned long long)res->migrations[i]->id,
			(unsigned long long)r->wid);
	}
	migd__mig_status_result__free_unpacked(res, NULL);
}

static void adopt_info(struct migd_worker *w, Migd__Response *resp, void *arg)
{
	struct migd_host *d = w->d;
	const Migd__WorkerInfo *wi;

	if (d->sup->adopt_pending && !--d->sup->adopt_pending)
		d->sup->adopt_done_ns = hv_now_ns();
	if (!resp || resp->result_case != MIGD__RESPONSE__RESULT_WORKER_INFO) {
		hv_warn(COMP, "event=adopt_failed wid=%llu pid=%d",
			(unsigned long long)w->wid, w->pid);
		return;
	}
	wi = resp->worker_info;
	for (size_t i = wi->n_migrations; i-- > 0;)
		migd_hmig_add(d, wi->migrations[i]->id, w->wid,
			      wi->migrations[i]);
	if (wi->has_vm && wi->vm)
		migd__host_set_info(w, wi->vm);
	d->sup->adopted++;
	hv_info(COMP, "event=worker_adopted wid=%llu pid=%d vm=%s "
		      "migrations=%zu orphaned=%s",
		(unsigned long long)w->wid, w->pid, w->name[0] ? w->name : "-",
		wi->n_migrations, wi->orphaned ? "yes" : "no");
	if (d->sup->adopt_done_ns && !d->sup->adopt_pending)
		hv_info(COMP, "event=adopt_done workers=%u ms=%.1f",
			d->sup->nr_workers,
			(d->sup->adopt_done_ns - d->sup->adopt_start_ns) / 1e6);
}

static void adopt_one(struct migd_host *d, const char *path)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__WorkerInfoRequest wr = MIGD__WORKER_INFO_REQUEST__INIT;
	struct migd_worker *w;
	struct rec r;

	if (rec_read(path, &r)) {
		hv_warn(COMP, "event=record_bad path=%s", path);
		return;
	}
	if (!worker_alive(&r)) {
		uint64_t st = 0;

		if (kill(r.pid, 0) == 0 &&
		    !migd__proc_start_time(r.pid, &st) &&
		    st != r.start_time)
			hv_warn(COMP,
				"event=record_not_adopted wid=%llu pid=%d "
				"why=\"pid %d is another process now (start "
				"time %llu, the worker's was %llu): the pid "
				"was recycled\"",
				(unsigned long long)r.wid, r.pid, r.pid,
				(unsigned long long)st,
				(unsigned long long)r.start_time);
		load_outcome(d, &r);
		if (r.vm[0]) {
			/* It ran a VM and is gone: report, keep the record. */
			w = migd__worker_new(d, r.wid);
			if (!w)
				return;
			w->pid = r.pid;
			w->start_time = r.start_time;
			snprintf(w->name, sizeof(w->name), "%s", r.vm);
			w->has_vm = true;
			w->crashed = true;
			snprintf(w->exit_reason, sizeof(w->exit_reason), "%s",
				 r.crashed[0] ? r.crashed
					      : "its worker exited while no "
						"daemon watched it");
			d->sup->crashes += !r.crashed[0];
			migd__record_write(w);
			hv_warn(COMP, "event=vm_crashed vm=%s wid=%llu why=\"%s\"",
				w->name, (unsigned long long)w->wid,
				w->exit_reason);
		} else {
			unlink(path);
		}
		return;
	}
	w = migd__worker_new(d, r.wid);
	if (!w)
		return;
	w->pid = r.pid;
	w->start_time = r.start_time;
	snprintf(w->name, sizeof(w->name), "%s", r.vm[0] ? r.vm : r.reserved);
	w->has_vm = r.vm[0] != '\0'; /* WorkerInfo confirms */
	if (migd__worker_connect(w)) {
		hv_warn(COMP, "event=adopt_failed wid=%llu why=connect",
			(unsigned long long)w->wid);
		return;
	}
	req.call_case = MIGD__REQUEST__CALL_WORKER_INFO;
	req.worker_info = &wr;
	if (migd_worker_call(w, &req, adopt_info, NULL) == 0)
		d->sup->adopt_pending++;
}

int migd_host_init(struct migd_host *d)
{
	struct migd_supervisor *h = calloc(1, sizeof(*h));
	char path[PATH_MAX + 300];
	struct dirent *de;
	unsigned long long id;
	DIR *dir;
	FILE *f;
	int ret;

	if (!h)
		return -ENOMEM;
	d->sup = h;
	h->next_wid = 1;
	snprintf(h->vms_dir, sizeof(h->vms_dir), "%.4000s/vms",
		 d->cfg.state_dir);
	if (mkdir(h->vms_dir, 0700) && errno != EEXIST) {
		ret = -errno;
		hv_err(COMP, "event=start_failed dir=%s err=\"%s\"",
		       h->vms_dir, strerror(-ret));
		return ret;
	}
	ret = find_vmm(d);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/next_mig_id", d->cfg.state_dir);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%llu", &id) == 1)
			d->next_mig_id = id;
		fclose(f);
	}
	h->adopt_start_ns = hv_now_ns();
	dir = opendir(h->vms_dir);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		size_t n = strlen(de->d_name);

		if (n < 5 || strcmp(de->d_name + n - 4, ".rec"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", h->vms_dir, de->d_name);
		adopt_one(d, path);
	}
	closedir(dir);
	if (!h->adopt_pending)
		h->adopt_done_ns = hv_now_ns();
	hv_info(COMP, "event=host_ready vmm=%s adopting=%u", h->vmm_path,
		h->adopt_pending);
	return 0;
}

static void stop_done(struct migd_host *d)
{
	struct migd_supervisor *h = d->sup;

	if (h->stop_timer_on) {
		uv_close((uv_handle_t *)&h->stop_timer, NULL);
		h->stop_timer_on = false;
	}
	h->vms_stopped = true;
	migd_shutdown(d);
}

static void destroyed_cb(struct migd_worker *w, Migd__Response *resp,
			 void *arg)
{
	struct migd_host *d = w->d;

	if (d->sup->stop_left && !--d->sup->stop_left && !d->sup->vms_stopped)
		stop_done(d);
}

static void stop_timeout(uv_timer_t *t)
{
	struct migd_host *d = t->data;

	hv_warn(COMP, "event=stop_vms_timeout left=%u", d->sup->stop_left);
	stop_done(d);
}

bool migd_host_stop_vms(struct migd_host *d)
{
	struct migd_supervisor *h = d->sup;

	if (!h || h->vms_stopped)
		return false;
	if (h->stop_left)
		return true; /* a second signal while they stop */
	for (struct migd_worker *w = h->workers; w; w = w->next) {
		Migd__Request req = MIGD__REQUEST__INIT;
		Migd__VmRef ref = MIGD__VM_REF__INIT;

		if (!w->has_vm || w->crashed || !w->name[0])
			continue;
		ref.name = w->name;
		req.call_case = MIGD__REQUEST__CALL_VM_DESTROY;
		req.vm_destroy = &ref;
		if (!migd_worker_call(w, &req, destroyed_cb, NULL))
			h->stop_left++;
	}
	if (!h->stop_left) {
		h->vms_stopped = true;
		return false;
	}
	hv_info(COMP, "event=stop_vms vms=%u", h->stop_left);
	uv_timer_init(d->loop, &h->stop_timer);
	h->stop_timer.data = d;
	h->stop_timer_on = true;
	uv_timer_start(&h->stop_timer, stop_timeout, 10000, 0);
	return true;
}

void migd_host_fini(struct migd_host *d)
{
	struct migd_supervisor *h = d->sup;

	if (!h)
		return;
	/* Workers keep running: the connections close, nothing else. */
	while (h->workers)
		migd__worker_detach(h->workers);
	while (h->migs) {
		struct migd_hmig *m = h->migs;

		h->migs = m->next;
		if (m->info)
			migd__mig_info__free_unpacked(m->info, NULL);
		free(m);
	}
}
