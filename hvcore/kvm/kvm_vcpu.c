// SPDX-License-Identifier: MIT
/*
 * KVM vCPUs: creation with the guest image's boot state, KVM_RUN, the
 * exit-reason table, the ucall decoder and the kick.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "arch/x86/guest/ucall.h"
#include "hvcore/kvm/kvm_priv.h"
#include "hvcore/log.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"

int hv_kvm_vcpu_init(struct hv_vcpu *vcpu)
{
	struct hv_vm *vm = vcpu->vm;
	struct hv_kvm_vm *k = kvm_of(vm);
	struct hv_kvm_vcpu *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = ioctl(k->vm_fd, KVM_CREATE_VCPU, (unsigned long)vcpu->id);
	if (c->fd < 0) {
		ret = -errno;
		goto err_free;
	}
	c->run = mmap(NULL, k->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      c->fd, 0);
	if (c->run == MAP_FAILED) {
		ret = -errno;
		goto err_close;
	}
	if (k->ring_entries) {
		c->ring = mmap(NULL,
			       k->ring_entries * sizeof(struct kvm_dirty_gfn),
			       PROT_READ | PROT_WRITE, MAP_SHARED, c->fd,
			       KVM_DIRTY_LOG_PAGE_OFFSET * getpagesize());
		if (c->ring == MAP_FAILED) {
			ret = -errno;
			c->ring = NULL;
			goto err_run;
		}
		c->taken = calloc(k->ring_entries, sizeof(*c->taken));
		if (!c->taken) {
			ret = -ENOMEM;
			goto err_ring;
		}
	}
	if (k->lx)
		ret = hv_kvm_linux_vcpu_init(vcpu, c->fd);
	else
		ret = x86_vcpu_set_cpuid(c->fd, k->cpuid, vcpu->id);
	if (ret)
		goto err_ring;
	if (k->lx) {
		/* Linux guest: entry state set above. */
	} else if (vcpu->id == 0) {
		ret = x86_vcpu_boot_pvh(c->fd, k->entry32,
					(uint32_t)HV_X86_START_INFO_GPA);
	} else {
		/* Started directly in long mode instead of INIT-SIPI, and
		 * runnable: with the in-kernel LAPIC an AP otherwise waits
		 * for a SIPI. */
		struct kvm_mp_state mp = {KVM_MP_STATE_RUNNABLE};

		ret = x86_vcpu_boot_long(c->fd, k->ap_entry64, HV_X86_AP_PT_GPA,
					 vcpu->id);
		if (!ret && ioctl(c->fd, KVM_SET_MP_STATE, &mp) < 0)
			ret = -errno;
	}
	if (ret)
		goto err_ring;
	if (vcpu->id == 0) {
		int khz = ioctl(c->fd, KVM_GET_TSC_KHZ, 0);

		if (!vm->tsc_khz && khz > 0)
			vm->tsc_khz = (uint64_t)khz;
		if (!k->msrs) {
			ret = x86_msr_list_probe(k->sys_fd, c->fd, &k->msrs);
			if (ret)
				goto err_ring;
		}
	}
	vcpu->accel = c;
	return 0;

err_ring:
	if (c->ring)
		munmap(c->ring, k->ring_entries * sizeof(struct kvm_dirty_gfn));
err_run:
	munmap(c->run, k->run_size);
err_close:
	close(c->fd);
err_free:
	free(c->taken);
	free(c);
	hv_err("kvm", "vm=%s vcpu=%u op=vcpu_init err=%d", hv_vm_name(vm),
	       vcpu->id, ret);
	return ret;
}

void hv_kvm_vcpu_fini(struct hv_vcpu *vcpu)
{
	struct hv_kvm_vm *k = kvm_of(vcpu->vm);
	struct hv_kvm_vcpu *c = vcpu->accel;

	if (!c)
		return;
	/* The drainer reads every vCPU's ring: stop it before one goes. */
	hv_kvm_ring_drain_stop(vcpu->vm);
	if (c->ring)
		munmap(c->ring, k->ring_entries * sizeof(struct kvm_dirty_gfn));
	munmap(c->run, k->run_size);
	close(c->fd);
	free(c->taken);
	free(c);
	vcpu->accel = NULL;
}

/* ---- exits ---------------------------------------------------------- */

/* A handler returns 1: report @exit to generic code; 0: re-enter. */
typedef int (*exit_fn)(struct hv_vcpu *vcpu, struct hv_exit *exit);

static int complete_io(struct hv_kvm_vcpu *c)
{
	/* Re-enter with immediate_exit so KVM finishes the OUT and returns
	 * without running guest code: state is consistent for a save. */
	__atomic_store_n(&c->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	if (ioctl(c->fd, KVM_RUN, 0) == 0 || errno == EINTR)
		return 0;
	return -errno;
}

/*
 * Sleep for @ns on the vCPU thread, unless a kick ends it: the kick sets
 * immediate_exit and then sends HV_KVM_KICK_SIGNAL (hv_kvm_vcpu_kick).
 *
 *   vCPU:  block signal ; check immediate_exit / request ; ppoll(unblock)
 *   kick:  immediate_exit = 1 ; pthread_kill
 *
 * A kick whose store the check missed sends its signal after the block:
 * it stays pending, and ppoll, which unblocks it atomically, returns at
 * once with EINTR. A signal delivered before the block comes after its
 * store, which the check sees.
 */
static void halt_sleep(struct hv_vcpu *vcpu, uint64_t ns)
{
	struct hv_kvm_vcpu *c = vcpu->accel;
	struct timespec ts = {(time_t)(ns / 1000000000ULL),
			      (long)(ns % 1000000000ULL)};
	sigset_t block, old, wait;

	sigemptyset(&block);
	sigaddset(&block, HV_KVM_KICK_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	if (!__atomic_load_n(&c->run->immediate_exit, __ATOMIC_SEQ_CST) &&
	    !hv_vcpu_kick_pending(vcpu)) {
		wait = old;
		sigdelset(&wait, HV_KVM_KICK_SIGNAL);
		ppoll(NULL, 0, &ts, &wait);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * HV_UCALL_HALT: the guest paces itself or idles (arch/x86/guest/halt.h).
 * Sleep until its deadline (at most HV_UCALL_HALT_MAX_US, whatever it
 * asks), acknowledge in the guest's ucall block (a logged write, so a
 * migration carries it), finish the OUT and run the guest again: the
 * halt is no event for generic code, but a kick during it is, and the
 * run loop sees that request before it re-enters.
 */
static int ucall_halt(struct hv_vcpu *vcpu, uint32_t gpa,
		      const struct hv_ucall *uc)
{
	struct hv_kvm_vcpu *c = vcpu->accel;
	uint64_t khz = vcpu->vm->tsc_khz, ticks = uc->args[0] - uc->args[1];
	uint64_t max_ticks = HV_UCALL_HALT_MAX_US * khz / 1000;
	const uint64_t ack = HV_UCALL_HALT_ACK;
	int ret;

	if ((int64_t)ticks > 0 && khz) {
		if (ticks > max_ticks)
			ticks = max_ticks;
		halt_sleep(vcpu, ticks * 1000000ULL / khz);
	}
	ret = hv_vm_write_guest(vcpu->vm,
				gpa + offsetof(struct hv_ucall, args[2]), &ack,
				sizeof(ack));
	if (ret)
		return ret;
	ret = complete_io(c);
	return ret ? ret : 0;
}

static const enum hv_exit_kind ucall_kinds[HV_UCALL_COUNT] = {
	[HV_UCALL_SYNC] = HV_EXIT_SYNC,
	[HV_UCALL_HEARTBEAT] = HV_EXIT_HEARTBEAT,
	[HV_UCALL_DONE] = HV_EXIT_DONE,
	[HV_UCALL_ASSERT] = HV_EXIT_ASSERT,
};

static int exit_io(struct hv_vcpu *vcpu, struct hv_exit *exit)
{
	struct hv_kvm_vcpu *c = vcpu->accel;
	struct kvm_run *run = c->run;
	const struct hv_ucall *uc;
	uint32_t gpa;
	int ret;

	if (run->io.port != HV_UCALL_PORT ||
	    run->io.direction != KVM_EXIT_IO_OUT || run->io.size != 4 ||
	    run->io.count != 1)
		return 0; /* other ports (COM1 under our VMM): ignored */
	memcpy(&gpa, (uint8_t *)run + run->io.data_offset, sizeof(gpa));
	uc = hv_vm_gpa_to_hva(vcpu->vm, gpa, sizeof(*uc));
	exit->detail = "KVM_EXIT_IO";
	if (!uc || uc->cmd == HV_UCALL_INVALID || uc->cmd >= HV_UCALL_COUNT) {
		exit->kind = HV_EXIT_ERROR;
		exit->detail = "bad ucall";
		exit->args[0] = gpa;
		return 1;
	}
	if (uc->cmd == HV_UCALL_HALT)
		return ucall_halt(vcpu, gpa, uc);
	exit->kind = ucall_kinds[uc->cmd];
	memcpy(exit->args, uc->args, sizeof(exit->args));
	if (uc->cmd == HV_UCALL_ASSERT) {
		memcpy(exit->file, uc->file,
		       HV_MIN(sizeof(exit->file), sizeof(uc->file)));
		exit->file[sizeof(exit->file) - 1] = 0;
		exit->line = uc->line;
	}
	ret = complete_io(c);
	return ret ? ret : 1;
}

/* Consecutive ring-full exits with nothing to collect after which the
 * kernel's ring is taken as wedged (see below). One or two happen
 * legitimately when another thread collected the entries first. */
#define RING_STUCK_EXITS 1000

static int exit_ring_full(struct hv_vcpu *vcpu, struct hv_exit *exit)
{
	struct hv_kvm_vm *k = kvm_of(vcpu->vm);
	struct hv_kvm_vcpu *c = vcpu->accel;
	int64_t n;

	/* Make room ourselves: reap our own ring. The harvester or the
	 * drainer may be reaping it; reap_lock serialises them. */
	__atomic_fetch_add(&k->rstats.full_exits, 1, __ATOMIC_RELAXED);
	n = hv_kvm_ring_reap_full(vcpu->vm, vcpu);
	if (n < 0)
		return (int)n;
	if (n)
		c->empty_full_run = 0;
	else
		c->empty_full_run++;
	/*
	 * Full, yet every entry is collected and reset, again and again:
	 * the kernel pushed past the end of the ring (kvm_dirty_ring_push
	 * WARN "should never get full"; on the nested PVM host its emulator
	 * overshoots the soft limit) and its reset index can no longer
	 * advance. This vCPU cannot run again and writes were lost: count
	 * it, resync the log, say so once, and stop spinning hot (kicks
	 * still work: we return to the generic loop).
	 */
	if (c->empty_full_run == RING_STUCK_EXITS) {
		__atomic_fetch_add(&k->rstats.desyncs, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&k->ring_overflow, true, __ATOMIC_RELEASE);
		hv_err("kvm",
		       "vm=%s vcpu=%u op=ring_full err=%d "
		       "reason=kernel_ring_overflow empty_full_exits=%u "
		       "ring=%u",
		       hv_vm_name(vcpu->vm), vcpu->id, -EIO, c->empty_full_run,
		       k->ring_entries);
	}
	if (c->empty_full_run >= RING_STUCK_EXITS) {
		const struct timespec ms = {0, 1000000L};

		nanosleep(&ms, NULL);
	}
	exit->kind = HV_EXIT_LOG_FULL;
	exit->detail = "KVM_EXIT_DIRTY_RING_FULL";
	return 1;
}

static int exit_kick(struct hv_vcpu *vcpu, struct hv_exit *exit)
{
	exit->kind = HV_EXIT_KICK;
	exit->detail = "KVM_EXIT_INTR";
	return 1;
}

static int exit_shutdown(struct hv_vcpu *vcpu, struct hv_exit *exit)
{
	exit->kind = HV_EXIT_SHUTDOWN;
	return 1;
}

static int exit_internal(struct hv_vcpu *vcpu, struct hv_exit *exit)
{
	struct kvm_run *run = ((struct hv_kvm_vcpu *)vcpu->accel)->run;

	exit->kind = HV_EXIT_ERROR;
	exit->args[0] = run->internal.suberror;
	exit->args[1] = run->internal.ndata > 0 ? run->internal.data[0] : 0;
	return 1;
}

static int exit_error(struct hv_vcpu *vcpu, struct hv_exit *exit)
{
	struct kvm_run *run = ((struct hv_kvm_vcpu *)vcpu->accel)->run;

	exit->kind = HV_EXIT_ERROR;
	if (run->exit_reason == KVM_EXIT_FAIL_ENTRY)
		exit->args[0] = run->fail_entry.hardware_entry_failure_reason;
	if (run->exit_reason == KVM_EXIT_MMIO)
		exit->args[0] = run->mmio.phys_addr;
	return 1;
}

#define EXIT(r, fn) [r] = {#r, fn}
static const struct {
	const char *name;
	exit_fn fn;
} exit_table[] = {
	EXIT(KVM_EXIT_UNKNOWN, exit_error),
	EXIT(KVM_EXIT_EXCEPTION, exit_error),
	EXIT(KVM_EXIT_IO, exit_io),
	EXIT(KVM_EXIT_HYPERCALL, exit_error),
	EXIT(KVM_EXIT_DEBUG, exit_error),
	EXIT(KVM_EXIT_HLT, exit_shutdown),
	EXIT(KVM_EXIT_MMIO, exit_error),
	EXIT(KVM_EXIT_IRQ_WINDOW_OPEN, exit_error),
	EXIT(KVM_EXIT_SHUTDOWN, exit_shutdown),
	EXIT(KVM_EXIT_FAIL_ENTRY, exit_error),
	EXIT(KVM_EXIT_INTR, exit_kick),
	EXIT(KVM_EXIT_SET_TPR, exit_error),
	EXIT(KVM_EXIT_TPR_ACCESS, exit_error),
	EXIT(KVM_EXIT_NMI, exit_error),
	EXIT(KVM_EXIT_INTERNAL_ERROR, exit_internal),
	EXIT(KVM_EXIT_SYSTEM_EVENT, exit_shutdown),
	EXIT(KVM_EXIT_IOAPIC_EOI, exit_error),
	EXIT(KVM_EXIT_HYPERV, exit_error),
	EXIT(KVM_EXIT_X86_RDMSR, exit_error),
	EXIT(KVM_EXIT_X86_WRMSR, exit_error),
	EXIT(KVM_EXIT_DIRTY_RING_FULL, exit_ring_full),
	EXIT(KVM_EXIT_AP_RESET_HOLD, exit_error),
	EXIT(KVM_EXIT_X86_BUS_LOCK, exit_error),
	EXIT(KVM_EXIT_XEN, exit_error),
	EXIT(KVM_EXIT_NOTIFY, exit_error),
};

const char *hv_kvm_exit_name(uint32_t reason)
{
	if (reason < HV_ARRAY_SIZE(exit_table) && exit_table[reason].name)
		return exit_table[reason].name;
	return "KVM_EXIT_?";
}

int hv_kvm_vcpu_run(struct hv_vcpu *vcpu, struct hv_exit *exit)
{
	struct hv_kvm_vcpu *c = vcpu->accel;
	struct kvm_run *run = c->run;

	for (;;) {
		uint32_t r;
		int ret;

		/* Clear, then check: see the timeline in hvcore/vcpu.h. */
		__atomic_store_n(&run->immediate_exit, 0, __ATOMIC_SEQ_CST);
		if (hv_vcpu_kick_pending(vcpu)) {
			exit->kind = HV_EXIT_KICK;
			return 0;
		}
		if (ioctl(c->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				exit->kind = HV_EXIT_KICK;
				return 0;
			}
			ret = -errno;
			hv_err("kvm", "vm=%s vcpu=%u op=run err=%d",
			       hv_vm_name(vcpu->vm), vcpu->id, ret);
			return ret;
		}
		r = run->exit_reason;
		if (kvm_of(vcpu->vm)->lx) {
			ret = hv_kvm_linux_exit(vcpu, run, exit);
			if (ret < 0)
				return ret;
			if (ret == 0)
				continue;
			if (ret == 1)
				return 0;
		}
		if (r >= HV_ARRAY_SIZE(exit_table) || !exit_table[r].fn) {
			exit->kind = HV_EXIT_ERROR;
			exit->detail = "KVM_EXIT_?";
			exit->args[0] = r;
			return 0;
		}
		ret = exit_table[r].fn(vcpu, exit);
		if (ret < 0)
			return ret;
		if (ret) {
			if (!exit->detail)
				exit->detail = exit_table[r].name;
			return 0;
		}
	}
}

void hv_kvm_vcpu_kick(struct hv_vcpu *vcpu)
{
	struct hv_kvm_vcpu *c = vcpu->accel;
	pthread_t t;
	bool has;

	__atomic_store_n(&c->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&vcpu->lock);
	has = vcpu->has_thread;
	t = vcpu->thread;
	pthread_mutex_unlock(&vcpu->lock);
	if (has)
		pthread_kill(t, HV_KVM_KICK_SIGNAL);
}
