/* SPDX-License-Identifier: MIT */
/*
 * Private to the soft accelerator's ops (hvcore/soft/soft_accel.c for the
 * VM side, hvcore/soft/soft_accel_vcpu.c for the vCPU side): what
 * vm->accel and vcpu->accel point to, and the state-blob encoding.
 */
#ifndef HVCORE_SOFT_SOFT_ACCEL_H
#define HVCORE_SOFT_SOFT_ACCEL_H

#include <pthread.h>
#include <stdatomic.h>

#include "hvcore/soft/soft.h"
#include "hvcore/soft/soft_vcpu.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"

/* Entry formats as they appear in the VM state blob (0 is invalid). */
enum soft_fmt_id {
	SOFT_FMT_INVALID = 0,
	SOFT_FMT_X86_EPT,
	SOFT_FMT_ARM64_S2,
};

/* vm->accel */
struct soft_vm {
	/* immutable after vm_init */
	struct hv_soft_vm *svm;
	enum soft_fmt_id fmt_id;
	enum hv_soft_lock_mode clear_lock;
};

/* vcpu->accel */
struct soft_vcpu {
	/* immutable after vcpu_init */
	struct hv_vcpu *vcpu;
	struct hv_soft_vcpu *sv;

	/* set by vcpu_kick (any thread), cleared by vcpu_run */
	atomic_int kicked;
	/* A sleeping workload (pacing, throttle, idle) waits on wake_cond
	 * until its deadline; vcpu_kick sets kicked under wake_lock and
	 * signals, so a pause never waits for the sleep's timer. */
	pthread_mutex_t wake_lock;
	pthread_cond_t wake_cond; /* CLOCK_MONOTONIC */

	/* vCPU thread only */
	bool stop_asked;   /* our checkpoint made the workload return */
	bool hb_pending;   /* a heartbeat to report */
	uint64_t hb_seq;   /* its status: writes done */
	uint64_t hb_clock; /* its status: guest clock */
	uint64_t pace_owed; /* the workload's pacing, between runs */
};

static inline struct soft_vm *soft_vm_of(struct hv_vm *vm)
{
	return vm->accel;
}

int hv_soft_accel_vcpu_init(struct hv_vcpu *vcpu);
void hv_soft_accel_vcpu_fini(struct hv_vcpu *vcpu);
int hv_soft_accel_vcpu_run(struct hv_vcpu *vcpu, struct hv_exit *exit);
void hv_soft_accel_vcpu_kick(struct hv_vcpu *vcpu);
int hv_soft_accel_vcpu_save(struct hv_vcpu *vcpu, struct hv_blob *out);
int hv_soft_accel_vcpu_restore(struct hv_vcpu *vcpu,
			       const struct hv_blob *in);

/* Explicit little-endian encoding of state blobs. */
static inline void soft_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void soft_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t soft_get_le32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static inline uint64_t soft_get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

#endif
