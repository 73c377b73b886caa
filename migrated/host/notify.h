/* SPDX-License-Identifier: MIT */
/*
 * migd_notify: the service manager's notify protocol (sd_notify(3)),
 * without libsystemd. A unit of Type=notify starts us with
 * $NOTIFY_SOCKET naming a datagram socket: a path ("/run/systemd/notify")
 * or, with a leading '@', a name in the abstract namespace. Each state
 * change is one datagram of newline-separated assignments:
 *
 *   READY=1            start-up finished (systemd starts dependents)
 *   RELOADING=1        a reload began; with MONOTONIC_USEC=<CLOCK_MONOTONIC
 *                      in us> (Type=notify-reload needs it), then READY=1
 *   STOPPING=1         shutdown began
 *   STATUS=...         one line for `systemctl status`
 *   MAINPID=<pid>      the daemon's pid
 *
 * Without $NOTIFY_SOCKET (not started by systemd, or Type=simple) every
 * call is a no-op. The sender's credentials travel with the datagram (the
 * kernel adds them for a receiver with SO_PASSCRED): NotifyAccess=main
 * accepts only the main process, so workers never speak for the daemon.
 *
 * Threads: migd_notify_unset_env() at start-up, before other threads
 * exist (it changes the environment); migd_notify() from any thread.
 */
#ifndef MIGD_NOTIFY_H
#define MIGD_NOTIFY_H

/*
 * Send @state ("READY=1\nSTATUS=serving", no trailing newline needed) as
 * one datagram to the socket $NOTIFY_SOCKET named, or to the one
 * migd_notify_unset_env() took from it. Returns 1 when sent, 0 when there
 * is no socket (no-op), or a negative errno: -EAFNOSUPPORT (the address is
 * neither "/path" nor "@name"), -ENAMETOOLONG, -EMSGSIZE, or what
 * socket(2)/sendto(2) failed with (-ECONNREFUSED, -ENOENT, ...). Failures
 * are logged once per call with the address and the reason.
 */
int migd_notify(const char *state);

/* printf-style migd_notify(); the text is cut at 4 KiB. */
int migd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * "RELOADING=1\nMONOTONIC_USEC=<now>" plus "\nSTATUS=@status" when
 * @status is not NULL.
 */
int migd_notify_reloading(const char *status);

/*
 * Keep the notify address for migd_notify() and remove $NOTIFY_SOCKET
 * from the environment, so that processes the daemon starts (the VM
 * workers) do not inherit it and cannot speak for the daemon.
 * Idempotent.
 */
void migd_notify_unset_env(void);

#endif
