// SPDX-License-Identifier: MIT
/*
 * migd_handover across processes: the parent runs a VM, pauses it and
 * hands it over a socketpair to a forked child, which runs the guest for
 * some 300 ms in the same memory, pauses it and checks every page stamp
 * (hvcore/wl_verify.h); its exit status is the verdict. Soft accelerator
 * always, KVM when /dev/kvm opens. Failures: a receiver that gets a
 * corrupt state blob (a relay flips a byte) or loses its sender after
 * PREPARED holds nothing afterwards and the sender resumes its VM, whose
 * stamps stay clean; a receiver that goes silent after Go leaves the
 * sender UNCONFIRMED (not resuming); a running or dirty-logging VM is
 * refused. The offer may also go out while the guest runs (the receiver
 * creates its VM before the pause), the commit after the pause.
 */
#include "tests/harness/hv_test.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/vcpu.h"
#include "hvcore/vm.h"
#include "hvcore/wl_verify.h"
#include "migrated/vmm/fdpass.h"
#include "migrated/vmm/handover.h"
#include "proto/handover.pb-c.h"

#define MEM (64ULL << 20)
#define NR 2
#define TMO 10000u

/* What the parent tells the child through the opaque metadata. */
struct meta {
	uint64_t magic;
	uint64_t seq[NR];
};
#define META_MAGIC 0x6174656d2d6f6876ULL

/* Child exit codes. */
enum {
	CHILD_OK = 0,
	CHILD_RECV_FAILED = 10,
	CHILD_BAD_META,
	CHILD_NO_PROGRESS,
	CHILD_BAD_STAMPS,
	CHILD_VCPU_ERROR,
	CHILD_START_FAILED,
	CHILD_EXPECTED_FAILURE,
	CHILD_LEFT_BEHIND,
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

static void make_cfg(struct hv_vm_cfg *cfg, enum hv_accel_kind accel)
{
	hv_vm_cfg_init(cfg, accel, MEM, NR);
	for (uint32_t i = 0; i < NR; i++) {
		cfg->wl[i].region_pages = 2048;
		cfg->wl[i].heartbeat_us = 1000;
		cfg->wl[i].rate_pages = 100000;
	}
}

__attribute__((no_sanitize("thread"))) static uint64_t
status_seq(struct hv_vm *vm, uint32_t idx)
{
	return hv_vm_wl_status(vm, idx)->seq;
}

static bool wait_progress(struct hv_vm *vm, const uint64_t *above)
{
	for (int t = 0; t < 1000; t++) {
		uint32_t ok = 0;

		for (uint32_t v = 0; v < NR; v++)
			ok += status_seq(vm, v) > (above ? above[v] : 0);
		if (ok == NR)
			return true;
		sleep_ms(10);
	}
	return false;
}

/* Paused @vm: every stamp right and no vCPU lost or failed. */
static bool vm_clean(struct hv_vm *vm)
{
	struct hv_wl_verify r;

	if (hv_wl_verify(hv_vm_gpa_to_hva(vm, 0, MEM), MEM, &r) ||
	    !hv_wl_verify_clean(&r) || !r.written) {
		fprintf(stderr,
			"verify: written=%llu bad=%llu stale=%llu lost=%u\n",
			(unsigned long long)r.written,
			(unsigned long long)r.bad, (unsigned long long)r.stale,
			r.lost_vcpus);
		return false;
	}
	return true;
}

static bool vcpus_ok(struct hv_vm *vm)
{
	for (uint32_t v = 0; v < NR; v++) {
		struct hv_vcpu_stats s;

		if (hv_vm_vcpu_stats(vm, v, &s) || s.asserted || s.error)
			return false;
	}
	return true;
}

/* The receiving child: its exit status is the verdict. */
static int child_recv(int sock, bool expect_fail, bool start)
{
	struct hv_vm *vm = NULL;
	struct meta m;
	void *md = NULL;
	size_t md_len = 0;
	int before = count_fds();
	int ret;

	ret = migd_handover_recv(sock, TMO, &vm, &md, &md_len, start);
	if (expect_fail) {
		if (!ret)
			return CHILD_EXPECTED_FAILURE;
		/* Nothing behind: no VM, no metadata, no extra fd. */
		return vm || md || md_len || count_fds() != before
			       ? CHILD_LEFT_BEHIND
			       : CHILD_OK;
	}
	if (ret)
		return CHILD_RECV_FAILED;
	if (md_len != sizeof(m))
		return CHILD_BAD_META;
	memcpy(&m, md, sizeof(m));
	free(md);
	if (m.magic != META_MAGIC)
		return CHILD_BAD_META;
	if (!start && hv_vm_start(vm))
		return CHILD_START_FAILED;
	sleep_ms(300);
	if (!wait_progress(vm, m.seq))
		return CHILD_NO_PROGRESS;
	hv_vm_pause(vm);
	if (!vcpus_ok(vm))
		return CHILD_VCPU_ERROR;
	ret = vm_clean(vm) ? CHILD_OK : CHILD_BAD_STAMPS;
	hv_vm_destroy(vm);
	return ret;
}

static pid_t fork_receiver(int sock, int other, bool expect_fail, bool start)
{
	pid_t pid = fork();

	if (pid == 0) {
		close(other);
		_exit(child_recv(sock, expect_fail, start));
	}
	close(sock);
	return pid;
}

static int child_status(pid_t pid)
{
	int st = 0;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* A running-then-paused VM with stamps; *m gets its seqs. */
static struct hv_vm *paused_vm(enum hv_accel_kind accel, struct meta *m)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;

	make_cfg(&cfg, accel);
	if (hv_vm_create(&cfg, &vm))
		return NULL;
	if (hv_vm_start(vm) || !wait_progress(vm, NULL)) {
		hv_vm_destroy(vm);
		return NULL;
	}
	sleep_ms(100);
	if (hv_vm_pause(vm)) {
		hv_vm_destroy(vm);
		return NULL;
	}
	m->magic = META_MAGIC;
	for (uint32_t v = 0; v < NR; v++)
		m->seq[v] = status_seq(vm, v);
	return vm;
}

/*
 * @live: offer while the guest runs, then pause and commit (the VM is
 * created over there before the pause); else one send on a paused VM.
 */
static void handover_across(enum hv_accel_kind accel, bool start, bool live)
{
	struct migd_handover_times t = { 0 };
	struct hv_vm *vm;
	struct meta m;
	pid_t pid;
	int sv[2], ret;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				   sv) == 0);
	pid = fork_receiver(sv[1], sv[0], false, start);
	CU_ASSERT_FATAL(pid > 0);
	vm = paused_vm(accel, &m);
	CU_ASSERT_FATAL(vm != NULL);
	if (live) {
		CU_ASSERT_FATAL(hv_vm_resume(vm) == 0);
		CU_ASSERT_EQUAL_FATAL(migd_handover_offer(sv[0], vm, &m,
							  sizeof(m), TMO, &t),
				      0);
		CU_ASSERT(t.create_ns > 0 && t.offer_ns >= t.create_ns);
		/* Not paused yet: refused, nothing sent, try again. */
		CU_ASSERT_EQUAL(migd_handover_commit(sv[0], vm, TMO, &t),
				-EBUSY);
		sleep_ms(50);
		t.paused_at_ns = now_ns();
		CU_ASSERT_FATAL(hv_vm_pause(vm) == 0);
		for (uint32_t v = 0; v < NR; v++)
			m.seq[v] = status_seq(vm, v);
		ret = migd_handover_commit(sv[0], vm, TMO, &t);
	} else {
		t.paused_at_ns = now_ns();
		ret = migd_handover_send(sv[0], vm, &m, sizeof(m), TMO, &t);
	}
	CU_ASSERT_EQUAL(ret, 0);
	if (ret)
		fprintf(stderr, "handover: %d %s\n", ret, t.error);
	CU_ASSERT_STRING_EQUAL(t.error, "");
	CU_ASSERT(t.state_bytes > 0);
	CU_ASSERT(t.sent_ns > 0 && t.sent_ns <= t.prepared_ns);
	CU_ASSERT(t.prepared_ns <= t.total_ns);
	CU_ASSERT(t.create_ns > 0);
	if (start)
		CU_ASSERT(t.pause_ns > 0 && t.pause_ns <= t.total_ns);
	printf("\n    %s%s: state=%lluB save=%lluus sent=%lluus create=%lluus "
	       "restore=%lluus start=%lluus pause=%lluus total=%lluus ",
	       hv_accel_kind_name(accel), live ? " live offer" : "",
	       (unsigned long long)t.state_bytes,
	       (unsigned long long)(t.save_ns / 1000),
	       (unsigned long long)(t.sent_ns / 1000),
	       (unsigned long long)(t.create_ns / 1000),
	       (unsigned long long)(t.restore_ns / 1000),
	       (unsigned long long)(t.start_ns / 1000),
	       (unsigned long long)(t.pause_ns / 1000),
	       (unsigned long long)(t.total_ns / 1000));
	/* The child writes the same memory: this mapping sees it go on. */
	if (!ret)
		CU_ASSERT(wait_progress(vm, m.seq));
	hv_vm_destroy(vm);
	CU_ASSERT_EQUAL(child_status(pid), CHILD_OK);
	close(sv[0]);
}

static void test_soft_across_processes(void)
{
	handover_across(HV_ACCEL_SOFT, true, false);
}

static void test_soft_receiver_starts_itself(void)
{
	handover_across(HV_ACCEL_SOFT, false, false);
}

static void test_soft_live_offer(void)
{
	handover_across(HV_ACCEL_SOFT, true, true);
}

static void test_kvm_across_processes(void)
{
	HV_TEST_REQUIRE_KVM();
	handover_across(HV_ACCEL_KVM, true, false);
}

static void test_kvm_live_offer(void)
{
	HV_TEST_REQUIRE_KVM();
	handover_across(HV_ACCEL_KVM, true, true);
}

/* ---- failures ------------------------------------------------------- */

enum relay_mode {
	RELAY_CORRUPT_STATE, /* flip a byte of the state blob */
	RELAY_CUT_AFTER_PREPARED, /* take PREPARED, then hang up both */
};

struct relay {
	int s, r; /* towards the sender, the receiver */
	enum relay_mode mode;
	int ret;
};

static int relay_frame(int from, int to, unsigned nfds)
{
	void *buf;
	size_t len;
	int fd = -1, ret;

	ret = migd_fdpass_recv(from, &buf, &len, 16u << 20, &fd, nfds, TMO);
	if (ret)
		return ret;
	ret = migd_fdpass_send(to, buf, len, &fd, nfds, TMO);
	free(buf);
	if (nfds)
		close(fd);
	return ret;
}

static void *relay_thread(void *arg)
{
	struct relay *rl = arg;
	Migh__HandoverState *m;
	void *buf, *out;
	size_t len;

	rl->ret = relay_frame(rl->s, rl->r, 1); /* Handover + memfd */
	if (!rl->ret)
		rl->ret = relay_frame(rl->r, rl->s, 0); /* CREATED */
	if (!rl->ret)
		rl->ret = migd_fdpass_recv(rl->s, &buf, &len, 16u << 20, NULL,
					   0, TMO);
	if (rl->ret)
		return NULL;
	m = migh__handover_state__unpack(NULL, len, buf);
	free(buf);
	if (!m) {
		rl->ret = -EPROTO;
		return NULL;
	}
	if (rl->mode == RELAY_CORRUPT_STATE)
		m->vm_state.data[m->vm_state.len / 2] ^= 0x20;
	out = malloc(migh__handover_state__get_packed_size(m));
	len = migh__handover_state__pack(m, out);
	migh__handover_state__free_unpacked(m, NULL);
	rl->ret = migd_fdpass_send(rl->r, out, len, NULL, 0, TMO);
	free(out);
	if (rl->ret)
		return NULL;
	if (rl->mode == RELAY_CORRUPT_STATE) {
		rl->ret = relay_frame(rl->r, rl->s, 0); /* the error reply */
		return NULL;
	}
	rl->ret = migd_fdpass_recv(rl->r, &buf, &len, 4096, NULL, 0, TMO);
	if (!rl->ret)
		free(buf);
	shutdown(rl->s, SHUT_RDWR);
	shutdown(rl->r, SHUT_RDWR);
	return NULL;
}

/* The handover fails on the receiver's side: the sender resumes. */
static void sender_resumes_after(enum relay_mode mode, int want_err,
				 const char *want_why)
{
	struct migd_handover_times t = { 0 };
	struct relay rl = { .mode = mode };
	struct hv_vm *vm;
	uint8_t *ram;
	struct meta m;
	pthread_t th;
	int s[2], r[2], ret;
	pid_t pid;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				   s) == 0);
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				   r) == 0);
	pid = fork_receiver(r[1], r[0], true, true);
	CU_ASSERT_FATAL(pid > 0);
	rl.s = s[1];
	rl.r = r[0];
	vm = paused_vm(HV_ACCEL_SOFT, &m);
	CU_ASSERT_FATAL(vm != NULL);
	ram = malloc(MEM);
	CU_ASSERT_FATAL(ram != NULL);
	memcpy(ram, hv_vm_gpa_to_hva(vm, 0, MEM), MEM);
	CU_ASSERT_FATAL(pthread_create(&th, NULL, relay_thread, &rl) == 0);
	ret = migd_handover_send(s[0], vm, &m, sizeof(m), TMO, &t);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(ret, want_err);
	CU_ASSERT_PTR_NOT_NULL(strstr(t.error, want_why));
	if (!strstr(t.error, want_why))
		fprintf(stderr, "error: %d \"%s\"\n", ret, t.error);
	CU_ASSERT_EQUAL(child_status(pid), CHILD_OK);
	/* The receiver never ran the guest: not a byte of RAM changed. */
	CU_ASSERT_EQUAL(memcmp(hv_vm_gpa_to_hva(vm, 0, MEM), ram, MEM), 0);
	free(ram);
	/* Still ours and paused: it resumes and keeps its stamps. */
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_PAUSED);
	CU_ASSERT_EQUAL(hv_vm_resume(vm), 0);
	CU_ASSERT(wait_progress(vm, m.seq));
	CU_ASSERT_EQUAL(hv_vm_pause(vm), 0);
	CU_ASSERT(vcpus_ok(vm));
	CU_ASSERT(vm_clean(vm));
	hv_vm_destroy(vm);
	for (int i = 0; i < 2; i++)
		close(s[i]), close(r[i]);
}

static void test_bad_state_blob_sender_resumes(void)
{
	sender_resumes_after(RELAY_CORRUPT_STATE, -EINVAL,
			     "receiver: restore VM state");
}

static void test_cut_before_go_sender_resumes(void)
{
	/* The receiver's PREPARED never reaches the sender; no Go. */
	sender_resumes_after(RELAY_CUT_AFTER_PREPARED, -ECONNRESET,
			     "no PREPARED reply");
}

static int fake_reply(int sock, Migh__Phase phase)
{
	Migh__HandoverReply r = MIGH__HANDOVER_REPLY__INIT;
	uint8_t out[64];
	size_t len;

	r.phase = phase;
	r.ok = true;
	len = migh__handover_reply__pack(&r, out);
	return migd_fdpass_send(sock, out, len, NULL, 0, TMO);
}

/* A receiver that takes Go and vanishes: the sender must not resume. */
static void *silent_after_go(void *arg)
{
	int sock = *(int *)arg, fd = -1;
	void *buf;
	size_t len;

	if (migd_fdpass_recv(sock, &buf, &len, 16u << 20, &fd, 1, TMO))
		return NULL;
	free(buf);
	close(fd);
	fake_reply(sock, MIGH__PHASE__PHASE_CREATED);
	if (migd_fdpass_recv(sock, &buf, &len, 16u << 20, NULL, 0, TMO))
		return NULL;
	free(buf);
	fake_reply(sock, MIGH__PHASE__PHASE_PREPARED);
	if (!migd_fdpass_recv(sock, &buf, &len, 4096, NULL, 0, TMO))
		free(buf);
	shutdown(sock, SHUT_RDWR);
	return NULL;
}

static void test_silent_after_go_is_unconfirmed(void)
{
	struct migd_handover_times t = { 0 };
	struct hv_vm *vm;
	struct meta m;
	pthread_t th;
	int sv[2];

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				   sv) == 0);
	vm = paused_vm(HV_ACCEL_SOFT, &m);
	CU_ASSERT_FATAL(vm != NULL);
	CU_ASSERT_FATAL(pthread_create(&th, NULL, silent_after_go, &sv[1]) ==
			0);
	CU_ASSERT_EQUAL(migd_handover_send(sv[0], vm, NULL, 0, TMO, &t),
			MIGD_HANDOVER_UNCONFIRMED);
	CU_ASSERT_PTR_NOT_NULL(strstr(t.error, "not resuming"));
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_PAUSED);
	hv_vm_destroy(vm);
	close(sv[0]);
	close(sv[1]);
}

static void test_refuses_running_or_logging_vm(void)
{
	struct migd_handover_times t = { 0 };
	struct hv_vm *vm;
	struct meta m;
	void *buf;
	size_t len;
	int sv[2];

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				   sv) == 0);
	vm = paused_vm(HV_ACCEL_SOFT, &m);
	CU_ASSERT_FATAL(vm != NULL);
	CU_ASSERT_EQUAL(hv_vm_resume(vm), 0);
	CU_ASSERT_EQUAL(migd_handover_send(sv[0], vm, NULL, 0, TMO, &t),
			-EBUSY);
	CU_ASSERT_PTR_NOT_NULL(strstr(t.error, "not paused"));
	CU_ASSERT_EQUAL(hv_vm_pause(vm), 0);
	CU_ASSERT_EQUAL(hv_vm_dirty_log_start(vm, HV_DIRTY_WP), 0);
	CU_ASSERT_EQUAL(migd_handover_send(sv[0], vm, NULL, 0, TMO, &t),
			-EBUSY);
	CU_ASSERT_PTR_NOT_NULL(strstr(t.error, "dirty logging"));
	CU_ASSERT_EQUAL(hv_vm_dirty_log_stop(vm), 0);
	CU_ASSERT_EQUAL(migd_handover_send(sv[0], vm, &m,
					   MIGD_HANDOVER_META_MAX + 1, TMO,
					   &t),
			-EINVAL);
	/* Nothing went out. */
	CU_ASSERT_EQUAL(migd_fdpass_recv(sv[1], &buf, &len, 4096, NULL, 0, 50),
			-ETIMEDOUT);
	hv_vm_destroy(vm);
	close(sv[0]);
	close(sv[1]);
}

static CU_TestInfo tests[] = {
	{ "soft_across_processes", test_soft_across_processes },
	{ "soft_receiver_starts_itself", test_soft_receiver_starts_itself },
	{ "soft_live_offer", test_soft_live_offer },
	{ "bad_state_blob_sender_resumes",
	  test_bad_state_blob_sender_resumes },
	{ "cut_before_go_sender_resumes", test_cut_before_go_sender_resumes },
	{ "silent_after_go_is_unconfirmed",
	  test_silent_after_go_is_unconfirmed },
	{ "refuses_running_or_logging_vm", test_refuses_running_or_logging_vm },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/vmm/handover", NULL, NULL, tests);

/* Needs /dev/kvm: the ctest test labelled "kvm" runs these. */
static CU_TestInfo kvm_tests[] = {
	{ "kvm_across_processes", test_kvm_across_processes },
	{ "kvm_live_offer", test_kvm_live_offer },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE_KVM("migrated/vmm/handover/kvm", NULL, NULL, kvm_tests);
