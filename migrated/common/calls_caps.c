// SPDX-License-Identifier: MIT
/*
 * The calls about the process itself, answered by the daemon and by a
 * worker alike (calls.h): ping, and capabilities, what this daemon speaks,
 * for clients that must work across versions (docs/api.md, "Versions and
 * compatibility"). Loop thread. Nothing here links the engine: the host
 * daemon serves these too.
 */
#include <fcntl.h>
#include <unistd.h>

#include "hvcore/time.h"

#include "migrated/common/calls.h"
#include "migrated/common/cfg.h"
#include "migrated/mig/frame.h"
#include "migrated/mig/session.h"

/* Every optional feature this build has, whatever the configuration. */
static const char *const built_features[] = {
	"capabilities",	     "migration-uuid", "vm-check",
	"dirty-rate",	     "converge-estimate", "live-update",
	"rpc-roles",	     "paused-migration", "linux-boot",
	"vm-console",	     "virtio-blk",	  "virtio-rng",
	"virtio-net",
#ifdef MIGD_HAVE_ENGINE
	"migration",	     "postcopy",	  "delta",
	"compression",	     "migration-resolve", "snapshot",
#endif
};

bool migd_accel_usable(enum hv_accel_kind kind)
{
	int fd;

	switch (kind) {
	case HV_ACCEL_SOFT:
		return true;
	case HV_ACCEL_KVM:
		fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return false;
		close(fd);
		return true;
	default:
		return false;
	}
}

void migd_call_capabilities(struct migd_call *call, const struct migd_proc *p)
{
	const size_t nb = sizeof(built_features) / sizeof(built_features[0]);
	Migd__CapabilitiesResult *r = migd_call_alloc(call, sizeof(*r));
	char **feat = migd_call_alloc(call, (nb + 4) * sizeof(*feat));
	char **acc = migd_call_alloc(call, HV_ACCEL_COUNT * sizeof(*acc));
	size_t n = 0, na = 0;

	if (!r || !feat || !acc)
		return;
	migd__capabilities_result__init(r);
	r->api_version = MIGD_API_VERSION;
	r->api_package = (char *)migd__capabilities_result__descriptor
				 .package_name;
	r->version = (char *)MIGD_VERSION;
	for (size_t i = 0; i < nb; i++)
		feat[n++] = (char *)built_features[i];
	if (p->tls_ready)
		feat[n++] = "tls";
	if (p->srv->tcp_listening)
		feat[n++] = "rpc-tls";
	if (p->fleet) {
		feat[n++] = "fleet";
		feat[n++] = "drain-cancel"; /* and host_undrain */
	}
	r->n_features = n;
	r->features = feat;
	for (int k = HV_ACCEL_INVALID + 1; k < HV_ACCEL_COUNT; k++)
		if (migd_accel_usable((enum hv_accel_kind)k))
			acc[na++] = (char *)hv_accel_kind_name(k);
	r->n_accelerators = na;
	r->accelerators = acc;
	r->default_accel = (char *)hv_accel_kind_name(p->accel);
	r->stream_version_min = MIG_FRAME_VERSION_MIN;
	r->stream_version_max = MIG_FRAME_VERSION;
	r->channels_max = MIG_CHANNELS_MAX;
	call->resp->result_case = MIGD__RESPONSE__RESULT_CAPABILITIES;
	call->resp->capabilities = r;
}

void migd_call_ping(struct migd_call *call, const struct migd_proc *p)
{
	Migd__PingResult *r = migd_call_alloc(call, sizeof(*r));

	if (!r)
		return;
	migd__ping_result__init(r);
	r->version = (char *)MIGD_VERSION;
	r->pid = (uint64_t)getpid();
	r->default_accel = (char *)hv_accel_kind_name(p->accel);
#ifdef MIGD_HAVE_ENGINE
	r->engine = true;
#endif
	r->uptime_ms = (hv_now_ns() - p->start_ns) / 1000000;
	r->requests_served = p->srv->requests;
	r->tls_refused = p->srv->tls_refused;
	r->rpc_tls = p->srv->tcp_listening;
	call->resp->result_case = MIGD__RESPONSE__RESULT_PING;
	call->resp->ping = r;
}
