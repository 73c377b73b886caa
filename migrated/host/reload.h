/* SPDX-License-Identifier: MIT */
/*
 * migd_reload: what SIGHUP does (systemctl reload: ExecReload sends it).
 *
 * 1. The configuration: the command line is parsed again (config.h), so
 *    the config file is re-read where --config stands and options given
 *    after it still win. A file that does not parse changes nothing
 *    (event=reload_config_failed names the file, line and reason).
 *    Otherwise every option whose value changed is logged
 *    (event=reload_option option= old= new= applied=yes|no) and:
 *      live, applied now: log-level; rpc-handshake-timeout-ms and
 *        rpc-idle-timeout-ms (connections accepted from now on, and an
 *        open one's idle deadline when it is next re-armed, i.e. at its
 *        next byte); migration-io-timeout-ms (migrations started from
 *        now on); dirty-event-ms (workers started from now on: the
 *        DIRTY_RATE timer is a worker's, which keeps the period it was
 *        started with); stop-vms (read at shutdown);
 *      kept until a restart (applied=no why="needs a restart"): every
 *        other option -- state-dir, socket, accel, tls-dir, dev-tls,
 *        migration-listen, rpc-listen, metrics-listen, dirty-monitor,
 *        dirty-interval-ms, dirty-sample-shift, dirty-ring.
 * 2. The TLS material (<tls dir>/ca.pem, host.pem, host.key): each file
 *    must be readable and host.pem must chain to ca.pem and be valid now.
 *    Then the TCP RPC listener gets a new context (migd_server_reload_tls:
 *    new connections use it, open ones keep theirs); bad material keeps
 *    the old context and the log says why (event=tls_reload_failed).
 *    Migrations need nothing here: each one loads the three files when it
 *    starts (migration.c set_tls -> mig_source_start / mig_dest_start ->
 *    mig_tls_create), so migrations started after the files changed use
 *    the new material and running ones keep theirs. d->tls_ready follows
 *    whether the files are there.
 * The service manager hears RELOADING=1 (with MONOTONIC_USEC) before and
 * READY=1 with a STATUS line after (notify.h).
 *
 * Threads: loop thread (the SIGHUP handler in daemon.c).
 */
#ifndef MIGD_RELOAD_H
#define MIGD_RELOAD_H

struct migd_host;

/*
 * Reload as above. Returns 0 when the config (if any) and the TLS
 * material were taken, else the first failure: -EINVAL (the config does
 * not parse), -ENOENT, -EACCES, -EKEYREJECTED or -EBADMSG (TLS material;
 * see the log), -ECANCELED (shutting down: nothing done).
 */
int migd_reload(struct migd_host *d);

#endif
