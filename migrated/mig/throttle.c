// SPDX-License-Identifier: MIT
#include "migrated/mig/throttle.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "hvcore/log.h"
#include "hvcore/types.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int read_params(struct hv_vm *vm, uint32_t i,
		       struct hv_wl_vcpu_params *p)
{
	return hv_vm_read_guest(vm,
				HV_WL_PARAMS_GPA +
					offsetof(struct hv_wl_params, vcpu) +
					i * sizeof(*p),
				p, sizeof(*p));
}

static int set_pct(struct mig_throttle *t, uint32_t i, uint32_t pct)
{
	struct hv_wl_vcpu_params p;
	int ret = read_params(t->vm, i, &p);

	if (ret)
		return ret;
	if (p.throttle_pct == pct)
		return 0;
	p.throttle_pct = pct;
	return hv_vm_wl_set_vcpu(t->vm, i, &p);
}

int mig_throttle_init(struct mig_throttle *t, struct hv_vm *vm)
{
	memset(t, 0, sizeof(*t));
	t->vm = vm;
	/*
	 * The throttle is the workload guest's: a percentage it reads in its
	 * params page. A Linux guest has no such page: the same address is
	 * its own memory, which a throttle written there would corrupt (seen
	 * as a guest hung after a migration that throttled). It has no vCPU
	 * to throttle here: apply and restore do nothing.
	 */
	if (hv_vm_is_linux(vm)) {
		hv_info("mig",
			"op=throttle_init vm=%s linux=1 note=\"no "
			"throttle: the guest has no params page\"",
			hv_vm_name(vm));
		return 0;
	}
	t->n = HV_MIN(vm->cfg.nr_vcpus, HV_WL_MAX_VCPUS);
	for (uint32_t i = 0; i < t->n; i++) {
		struct hv_wl_vcpu_params p;
		const volatile struct hv_wl_status *st;

		if (read_params(vm, i, &p))
			return -EIO;
		t->orig[i] = t->cur[i] = p.throttle_pct;
		st = hv_vm_wl_status(vm, i);
		t->last_seq[i] = st ? st->seq : 0;
	}
	t->last_ns = mono_ns();
	return 0;
}

void mig_throttle_sample(struct mig_throttle *t)
{
	uint64_t now = mono_ns();
	double dt = (double)(now - t->last_ns) / 1e9;

	if (dt <= 0)
		return;
	for (uint32_t i = 0; i < t->n; i++) {
		const volatile struct hv_wl_status *st = hv_vm_wl_status(t->vm,
									 i);
		uint64_t seq = st ? st->seq : 0;

		t->rate[i] = seq >= t->last_seq[i]
				     ? (double)(seq - t->last_seq[i]) / dt
				     : 0;
		t->last_seq[i] = seq;
	}
	t->last_ns = now;
}

void mig_throttle_spread(const double *rates, uint32_t n, uint32_t pct,
			 uint32_t *out)
{
	double max = 0;

	for (uint32_t i = 0; i < n; i++)
		max = rates[i] > max ? rates[i] : max;
	for (uint32_t i = 0; i < n; i++) {
		if (max <= 0) {
			out[i] = pct;
		} else if (rates[i] * 100 < max * MIG_THROTTLE_QUIET_PCT) {
			out[i] = 0;
		} else {
			double v = ceil((double)pct * rates[i] / max);

			out[i] = v > pct ? pct : (uint32_t)v;
		}
	}
}

int mig_throttle_apply(struct mig_throttle *t, uint32_t pct)
{
	uint32_t want[HV_WL_MAX_VCPUS];
	int ret = 0;

	pct = HV_MIN(pct, 99u);
	/* Rates measured under a throttle are scaled back up first, so the
	 * ranking reflects what each vCPU would do unthrottled. */
	{
		double r[HV_WL_MAX_VCPUS];

		for (uint32_t i = 0; i < t->n; i++)
			r[i] = t->cur[i] < 100
				       ? t->rate[i] * 100.0 / (100 - t->cur[i])
				       : t->rate[i];
		mig_throttle_spread(r, t->n, pct, want);
	}
	for (uint32_t i = 0; i < t->n && !ret; i++) {
		/* Never lower a vCPU below what its owner configured. */
		uint32_t v = HV_MAX(want[i], t->orig[i]);

		ret = set_pct(t, i, v);
		if (!ret) {
			t->cur[i] = v;
			t->applied = true;
		}
	}
	if (ret)
		hv_err("mig", "op=throttle pct=%u err=%d", pct, ret);
	return ret;
}

int mig_throttle_restore(struct mig_throttle *t)
{
	int ret = 0;

	if (!t->vm || !t->applied)
		return 0;
	for (uint32_t i = 0; i < t->n; i++) {
		int r = set_pct(t, i, t->orig[i]);

		if (r && !ret)
			ret = r;
		else if (!r)
			t->cur[i] = t->orig[i];
	}
	if (!ret)
		t->applied = false;
	return ret;
}

uint32_t mig_throttle_max(const struct mig_throttle *t)
{
	uint32_t m = 0;

	for (uint32_t i = 0; i < t->n; i++)
		m = HV_MAX(m, t->cur[i]);
	return m;
}
