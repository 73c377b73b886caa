// SPDX-License-Identifier: MIT
/*
 * migd_reload: SIGHUP re-reads the configuration and the TLS material
 * (reload.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "hvcore/mem_backing.h"
#include "hvcore/log.h"
#include "migrated/host/config.h"
#include "migrated/host/daemon.h"
#include "migrated/host/notify.h"
#include "migrated/host/reload.h"
#include "migrated/mig/tls.h"

#define COMP "migd"

/* Every option, as reload compares them. */
enum rid {
	R_STATE, R_SOCKET, R_ACCEL, R_LOG, R_MIG_LISTEN, R_MIG_IO, R_TLSDIR,
	R_DEVTLS, R_RPC, R_RPC_HS, R_RPC_IDLE, R_METRICS, R_DMON, R_DINT,
	R_DSHIFT, R_DEVENT, R_RING, R_STOP_VMS, R_VMM, R_BACKING, R_RPC_ROLES,
	R_SOCKET_GROUP, R_NR
};

static const struct {
	const char *name; /* the long option */
	bool live;	  /* applied without a restart */
} ropts[R_NR] = {
	[R_STATE] = { "state-dir", false },
	[R_SOCKET] = { "socket", false },
	[R_ACCEL] = { "accel", false },
	[R_LOG] = { "log-level", true },
	[R_MIG_LISTEN] = { "migration-listen", false },
	[R_MIG_IO] = { "migration-io-timeout-ms", true },
	[R_TLSDIR] = { "tls-dir", false },
	[R_DEVTLS] = { "dev-tls", false },
	[R_RPC] = { "rpc-listen", false },
	[R_RPC_HS] = { "rpc-handshake-timeout-ms", true },
	[R_RPC_IDLE] = { "rpc-idle-timeout-ms", true },
	[R_METRICS] = { "metrics-listen", false },
	[R_DMON] = { "dirty-monitor", false },
	[R_DINT] = { "dirty-interval-ms", false },
	[R_DSHIFT] = { "dirty-sample-shift", false },
	[R_DEVENT] = { "dirty-event-ms", true },
	[R_RING] = { "dirty-ring", false },
	[R_STOP_VMS] = { "stop-vms", true },
	[R_VMM] = { "vmm", false },
	[R_BACKING] = { "backing", true },
	/* Both role options as one: a revoked identity takes effect on the
	 * next call of every connection, open ones included (server.c). */
	[R_RPC_ROLES] = { "rpc-role", true },
	[R_SOCKET_GROUP] = { "socket-group", false },
};

static const char *onoff(bool b)
{
	return b ? "on" : "off";
}

/* Option @id of @c as the operator writes it. */
static void fmt_opt(enum rid id, const struct migd_cfg *c, char *b, size_t n)
{
	switch (id) {
	case R_STATE:
		snprintf(b, n, "%s", c->state_dir);
		break;
	case R_SOCKET:
		snprintf(b, n, "%s", c->socket_path);
		break;
	case R_ACCEL:
		snprintf(b, n, "%s", c->accel == HV_ACCEL_INVALID
					     ? "auto"
					     : hv_accel_kind_name(c->accel));
		break;
	case R_LOG:
		snprintf(b, n, "%s", migd_log_level_name(c->log_level));
		break;
	case R_MIG_LISTEN:
		if (c->mig_port_max > c->mig_port)
			snprintf(b, n, "%s:%u-%u", c->mig_host, c->mig_port,
				 c->mig_port_max);
		else
			snprintf(b, n, "%s:%u", c->mig_host, c->mig_port);
		break;
	case R_MIG_IO:
		snprintf(b, n, "%u", c->mig_io_timeout_ms);
		break;
	case R_TLSDIR:
		snprintf(b, n, "%s", c->tls_dir);
		break;
	case R_DEVTLS:
		snprintf(b, n, "%s", onoff(c->dev_tls));
		break;
	case R_RPC:
		if (c->rpc_tcp)
			snprintf(b, n, "%s:%u", c->rpc_host, c->rpc_port);
		else
			snprintf(b, n, "off");
		break;
	case R_RPC_HS:
		snprintf(b, n, "%u", c->rpc_handshake_timeout_ms);
		break;
	case R_RPC_IDLE:
		snprintf(b, n, "%u", c->rpc_idle_timeout_ms);
		break;
	case R_METRICS:
		if (c->metrics)
			snprintf(b, n, "%s:%u", c->metrics_host,
				 c->metrics_port);
		else
			snprintf(b, n, "off");
		break;
	case R_DMON:
		snprintf(b, n, "%s", onoff(c->dirty_monitor));
		break;
	case R_DINT:
		snprintf(b, n, "%u", c->dirty_interval_ms);
		break;
	case R_DSHIFT:
		snprintf(b, n, "%u", c->dirty_sample_shift);
		break;
	case R_DEVENT:
		snprintf(b, n, "%u", c->dirty_event_ms);
		break;
	case R_RING:
		if (c->dirty_ring)
			snprintf(b, n, "%u", c->dirty_ring);
		else
			snprintf(b, n, "off");
		break;
	case R_STOP_VMS:
		snprintf(b, n, "%s", c->stop_vms ? "true" : "false");
		break;
	case R_VMM:
		snprintf(b, n, "%s", c->vmm_path);
		break;
	case R_BACKING:
		snprintf(b, n, "%s", hv_mem_backing_name(c->backing));
		break;
	case R_RPC_ROLES: {
		size_t o = (size_t)snprintf(
			b, n, "default=%s",
			c->rpc_default_role == MIGD_RPC_ROLE_INVALID
				? "auto"
				: migd_rpc_role_name(c->rpc_default_role));

		for (unsigned i = 0; i < c->nr_rpc_rules && o < n; i++)
			o += (size_t)snprintf(b + o, n - o, " %s:%s",
					      c->rpc_rules[i].id,
					      migd_rpc_role_name(
						      c->rpc_rules[i].role));
		break;
	}
	case R_SOCKET_GROUP:
		snprintf(b, n, "%s", c->socket_group);
		break;
	case R_NR:
		b[0] = '\0';
		break;
	}
}

/* Apply live option @id of @nc to the running daemon. */
static void apply_live(struct migd_host *d, enum rid id,
		       const struct migd_cfg *nc)
{
	switch (id) {
	case R_LOG:
		d->cfg.log_level = nc->log_level;
		hv_log_set_level(nc->log_level);
		break;
	case R_MIG_IO:
		d->cfg.mig_io_timeout_ms = nc->mig_io_timeout_ms;
		break;
	case R_RPC_HS:
		d->cfg.rpc_handshake_timeout_ms = nc->rpc_handshake_timeout_ms;
		break;
	case R_BACKING: /* workers spawned from now on get it */
		d->cfg.backing = nc->backing;
		break;
	case R_RPC_IDLE:
		d->cfg.rpc_idle_timeout_ms = nc->rpc_idle_timeout_ms;
		break;
	case R_DEVENT: /* workers spawned from now on get it */
		d->cfg.dirty_event_ms = nc->dirty_event_ms;
		break;
	case R_STOP_VMS:
		d->cfg.stop_vms = nc->stop_vms;
		break;
	case R_RPC_ROLES:
		memcpy(d->cfg.rpc_rules, nc->rpc_rules,
		       sizeof(nc->rpc_rules));
		d->cfg.nr_rpc_rules = nc->nr_rpc_rules;
		d->cfg.rpc_default_role = nc->rpc_default_role;
		break;
	default:
		break;
	}
}

struct reload_count {
	unsigned applied, restart;
};

/* Step 1 (reload.h): 0 or -EINVAL. */
static int reload_config(struct migd_host *d, struct reload_count *rc)
{
	struct migd_cfg *nc = malloc(sizeof(*nc));
	char err[1024], ov[PATH_MAX + 64], nv[PATH_MAX + 64];
	char eo[HV_LOG_ESCAPE_LEN(256)], en[HV_LOG_ESCAPE_LEN(256)];
	int ret;

	if (!nc)
		return -ENOMEM;
	ret = migd_config_parse(d->cfg.argc, d->cfg.argv, nc, err,
				sizeof(err));
	if (ret) {
		hv_err(COMP, "event=reload_config_failed config=%s why=\"%s\" "
			     "kept=\"every option as it was\"",
		       d->cfg.config_path, hv_log_escape(err, eo, sizeof(eo)));
		free(nc);
		return -EINVAL;
	}
	for (int id = 0; id < R_NR; id++) {
		fmt_opt(id, &d->cfg, ov, sizeof(ov));
		fmt_opt(id, nc, nv, sizeof(nv));
		if (!strcmp(ov, nv))
			continue;
		hv_log_escape(ov, eo, sizeof(eo));
		hv_log_escape(nv, en, sizeof(en));
		if (ropts[id].live) {
			apply_live(d, id, nc);
			rc->applied++;
			hv_info(COMP, "event=reload_option option=%s "
				      "old=\"%s\" new=\"%s\" applied=yes",
				ropts[id].name, eo, en);
		} else {
			rc->restart++;
			hv_warn(COMP, "event=reload_option option=%s "
				      "old=\"%s\" new=\"%s\" applied=no "
				      "why=\"needs a restart\"",
				ropts[id].name, eo, en);
		}
	}
	free(nc);
	return 0;
}

/*
 * host.pem (with the intermediates after it) must chain to ca.pem and be
 * valid now, and host.key must be its key: 0, or -EBADMSG or
 * -EKEYREJECTED with @why set. mig_tls_create() would refuse most of this
 * too, but with OpenSSL's words on another line.
 */
static int tls_material_check(const char *ca, const char *cert,
			      const char *key, char *why, size_t n)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *vctx = X509_STORE_CTX_new();
	STACK_OF(X509) *chain = sk_X509_new_null();
	EVP_PKEY *pkey = NULL;
	X509 *leaf = NULL, *x;
	FILE *f = NULL;
	int ret = -EBADMSG;

	if (!store || !vctx || !chain) {
		snprintf(why, n, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	if (X509_STORE_load_file(store, ca) != 1) {
		snprintf(why, n, "%s: no PEM certificate in it", ca);
		goto out;
	}
	f = fopen(cert, "re");
	leaf = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
	if (!leaf) {
		snprintf(why, n, "%s: no PEM certificate in it", cert);
		goto out;
	}
	while ((x = PEM_read_X509(f, NULL, NULL, NULL)))
		if (!sk_X509_push(chain, x))
			X509_free(x);
	fclose(f);
	f = fopen(key, "re");
	pkey = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
	if (!pkey) {
		snprintf(why, n, "%s: no PEM private key in it", key);
		goto out;
	}
	if (X509_check_private_key(leaf, pkey) != 1) {
		snprintf(why, n, "host.key does not match host.pem");
		ret = -EKEYREJECTED;
		goto out;
	}
	if (X509_STORE_CTX_init(vctx, store, leaf, chain) != 1) {
		snprintf(why, n, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	if (X509_verify_cert(vctx) != 1) {
		/* (paths cut to fit: the reason matters most) */
		snprintf(why, n, "%.200s does not verify against %.200s: %.100s",
			 cert, ca,
			 X509_verify_cert_error_string(
				 X509_STORE_CTX_get_error(vctx)));
		goto out;
	}
	ret = 0;
out:
	ERR_clear_error();
	if (f)
		fclose(f);
	EVP_PKEY_free(pkey);
	X509_free(leaf);
	sk_X509_pop_free(chain, X509_free);
	X509_STORE_CTX_free(vctx);
	X509_STORE_free(store);
	return ret;
}

/* Step 2 (reload.h): 0 or a negative errno, logged. */
static int reload_tls(struct migd_host *d)
{
	const char *files[] = { d->tls_ca, d->tls_cert, d->tls_key };
	char why[PATH_MAX + 256], esc[HV_LOG_ESCAPE_LEN(sizeof(why))];
	bool rpc = d->srv.tcp_listening;
	int ret = 0;

	for (size_t i = 0; i < HV_ARRAY_SIZE(files) && !ret; i++) {
		if (access(files[i], R_OK)) {
			ret = -errno;
			snprintf(why, sizeof(why), "%s: %s", files[i],
				 strerror(errno));
		}
	}
	d->tls_ready = !ret;
	if (!ret)
		ret = tls_material_check(d->tls_ca, d->tls_cert, d->tls_key,
					 why, sizeof(why));
	if (!ret && rpc) {
		ret = migd_server_reload_tls(&d->srv, d->tls_ca, d->tls_cert,
					     d->tls_key);
		if (ret)
			snprintf(why, sizeof(why), "OpenSSL refused the files "
						   "(comp=tls line above)");
	} else if (!ret) {
		/* No listener to rebuild: still check the key and the PEM,
		 * which migrations will load. */
		struct mig_tls_cfg tcfg = { d->tls_ca, d->tls_cert,
					    d->tls_key, true, NULL };
		struct mig_tls *t = NULL;

		ret = mig_tls_create(&tcfg, &t);
		mig_tls_destroy(t);
		if (ret)
			snprintf(why, sizeof(why), "OpenSSL refused the files "
						   "(comp=tls line above)");
	}
	if (ret) {
		hv_err(COMP, "event=tls_reload_failed dir=%s why=\"%s\" "
			     "rpc=\"%s\" migrations=\"%s\"",
		       d->cfg.tls_dir, hv_log_escape(why, esc, sizeof(esc)),
		       rpc ? "kept the previous TLS context" : "off",
		       d->tls_ready ? "each new one loads these files and "
				      "fails until they are fixed"
				    : "refused until the files exist");
		return ret;
	}
	hv_info(COMP, "event=tls_reloaded dir=%s rpc=%s", d->cfg.tls_dir,
		rpc ? "new context" : "off");
	return 0;
}

int migd_reload(struct migd_host *d)
{
	struct reload_count rc = { 0, 0 };
	int ret = 0, tret;

	if (d->stopping)
		return -ECANCELED;
	migd_notify_reloading("reloading configuration and TLS material");
	hv_info(COMP, "event=reload config=%s",
		d->cfg.config_path[0] ? d->cfg.config_path : "none");
	/* Without a config file the command line says what it said. */
	if (d->cfg.config_path[0] && d->cfg.argv)
		ret = reload_config(d, &rc);
	tret = reload_tls(d);
	hv_info(COMP, "event=reloaded applied=%u restart_needed=%u config=%s "
		      "tls=%s",
		rc.applied, rc.restart, ret ? "failed" : "ok",
		tret ? "failed" : "ok");
	migd_notifyf("READY=1\nSTATUS=running; reloaded: %u option(s) "
		     "applied, %u need a restart%s%s",
		     rc.applied, rc.restart,
		     ret ? "; config refused (see the log)" : "",
		     tret ? "; TLS material refused (see the log)" : "");
	return ret ? ret : tret;
}
