// SPDX-License-Identifier: MIT
/*
 * migratectl vm console NAME: a Linux guest's serial console (docs/api.md,
 * vm_console and vm_console_write).
 *
 *   on a terminal (stdin and stdout), without --input: interactive, as
 *     virsh console: raw mode, every keystroke goes to the guest (Ctrl-C
 *     included), Ctrl-] detaches; new output only, unless --from-start;
 *   otherwise, output on stdout: what the daemon keeps (the last 256 KiB)
 *     and exit, or with --follow what comes next (all that is kept first
 *     with --from-start) until Ctrl-C or the VM stops; --until TEXT
 *     follows until TEXT appears (exit 0) or the VM stops (exit 1);
 *   --input FILE ("-": stdin) sends FILE's bytes as typed input first.
 *
 * Output is read by polling (every POLL_MS while nothing comes): a
 * reader that fell more than 256 KiB behind is told how much it lost.
 * The terminal's settings are restored on every way out: return, a
 * signal (SIGTERM, SIGHUP, SIGQUIT), an RPC failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "tools/migratectl/ctl.h"

#define POLL_MS 100
#define DETACH_KEY 0x1d /* Ctrl-] */
#define WRITE_MAX 4096	/* vm_console_write's limit */

struct console {
	struct ctl *ctl;
	const char *vm;
	uint64_t pos;
	bool from_end; /* the next read starts at the end */
	bool stopped;  /* the VM is stopped (or gone) */
	char why[64];  /* its stop reason */
	const char *until;
	size_t until_len;
	char *tail; /* the last until_len - 1 bytes seen, for --until */
	size_t tail_len;
	bool found;
};

/* Terminal state, restored by atexit and by the signal handler. */
static struct termios saved_tio;
static volatile sig_atomic_t raw_on, stop_sig;

static void tty_restore(void)
{
	if (raw_on) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
		raw_on = 0;
	}
}

static void on_signal(int sig)
{
	/* Only async-signal-safe calls: tcsetattr is one. */
	if (raw_on) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
		raw_on = 0;
	}
	stop_sig = sig;
}

static int tty_raw(void)
{
	struct termios t;
	struct sigaction sa;

	if (tcgetattr(STDIN_FILENO, &saved_tio))
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	atexit(tty_restore);
	t = saved_tio;
	cfmakeraw(&t);
	/* Output keeps its newline translation: the guest's "\r\n" and our
	 * own messages both read right. */
	t.c_oflag |= OPOST;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t))
		return -errno;
	raw_on = 1;
	return 0;
}

/* Look for --until's text across chunk boundaries. */
static void until_scan(struct console *c, const uint8_t *p, size_t n)
{
	size_t keep = c->until_len - 1, have;
	char *buf;

	if (!c->until || c->found || !n)
		return;
	have = c->tail_len + n;
	buf = malloc(have + 1);
	if (!buf)
		return;
	memcpy(buf, c->tail, c->tail_len);
	memcpy(buf + c->tail_len, p, n);
	buf[have] = '\0';
	if (memmem(buf, have, c->until, c->until_len))
		c->found = true;
	c->tail_len = have < keep ? have : keep;
	memcpy(c->tail, buf + have - c->tail_len, c->tail_len);
	free(buf);
}

/*
 * Read output until the end as it stands. Returns 0, or the exit code of
 * a failed call. Sets c->stopped when the VM stopped or is gone.
 */
static int drain_output(struct console *c)
{
	for (;;) {
		Migd__Request req = MIGD__REQUEST__INIT;
		Migd__VmConsoleRequest cr = MIGD__VM_CONSOLE_REQUEST__INIT;
		const Migd__VmConsoleResult *r;
		Migd__Response *resp;
		bool more;
		int ret;

		cr.vm = (char *)c->vm;
		cr.pos = c->pos;
		cr.from_end = c->from_end;
		req.call_case = MIGD__REQUEST__CALL_VM_CONSOLE;
		req.vm_console = &cr;
		ret = ctl_call(c->ctl, &req, &resp);
		if (ret)
			return ret;
		r = resp->vm_console;
		if (!r) {
			fprintf(stderr,
				"migratectl: the daemon sent no console "
				"output\n");
			migd__response__free_unpacked(resp, NULL);
			return 1;
		}
		c->from_end = false;
		if (r->lost)
			fprintf(stderr,
				"%s[migratectl: %llu bytes of console output "
				"are not kept any more; the console log has "
				"them (vm inspect names it)]%s\n",
				raw_on ? "\r\n" : "",
				(unsigned long long)r->lost,
				raw_on ? "\r" : "");
		if (c->ctl->json) {
			if (r->data.len || r->lost)
				ctl_print_json(&r->base);
		} else if (r->data.len) {
			fwrite(r->data.data, 1, r->data.len, stdout);
			fflush(stdout);
		}
		until_scan(c, r->data.data, r->data.len);
		c->pos = r->next_pos;
		more = r->next_pos < r->end_pos;
		if (r->state == MIGD__VM_STATE__VM_STATE_STOPPED ||
		    r->state == MIGD__VM_STATE__VM_STATE_CRASHED) {
			c->stopped = true;
			snprintf(c->why, sizeof(c->why), "%s",
				 r->stop_reason && *r->stop_reason
					 ? r->stop_reason
					 : "stopped");
		}
		migd__response__free_unpacked(resp, NULL);
		if (!more || c->found)
			return 0;
	}
}

/* Queue @n bytes of input, waiting while the guest's queue is full. */
static int send_input(struct console *c, const uint8_t *p, size_t n)
{
	while (n) {
		Migd__Request req = MIGD__REQUEST__INIT;
		Migd__VmConsoleWriteRequest wr =
			MIGD__VM_CONSOLE_WRITE_REQUEST__INIT;
		Migd__Response *resp;
		size_t k = n < WRITE_MAX ? n : WRITE_MAX, took;
		int ret;

		wr.vm = (char *)c->vm;
		wr.data.data = (uint8_t *)p;
		wr.data.len = k;
		req.call_case = MIGD__REQUEST__CALL_VM_CONSOLE_WRITE;
		req.vm_console_write = &wr;
		ret = ctl_call(c->ctl, &req, &resp);
		if (ret)
			return ret;
		took = resp->vm_console_write ? resp->vm_console_write->accepted
					      : 0;
		migd__response__free_unpacked(resp, NULL);
		if (took > k)
			took = k;
		p += took;
		n -= took;
		if (!took) { /* the guest is not reading: let it */
			struct timespec ts = {0, 20 * 1000000L};

			nanosleep(&ts, NULL);
		}
		if (stop_sig)
			return 1;
	}
	return 0;
}

/* --input FILE|-: its bytes (@fd), as typed. */
static int send_file(struct console *c, int fd, const char *path)
{
	uint8_t buf[WRITE_MAX];
	ssize_t n;
	int ret = 0;

	while (!ret && (n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "migratectl: --input '%s': %s\n", path,
				strerror(errno));
			ret = 1;
			break;
		}
		ret = send_input(c, buf, (size_t)n);
	}
	return ret;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Until the VM stops, --until's text shows, or a signal. */
static int follow(struct console *c)
{
	int ret;

	while (!stop_sig) {
		ret = drain_output(c);
		if (ret)
			return ret;
		if (c->found)
			return 0;
		if (c->stopped) {
			fprintf(stderr, "migratectl: VM '%s' stopped (%s)\n",
				c->vm, c->why);
			return c->until ? 1 : 0;
		}
		sleep_ms(POLL_MS);
	}
	return 1;
}

static int interactive(struct console *c)
{
	struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
	int ret = tty_raw();

	if (ret) {
		fprintf(stderr,
			"migratectl: cannot set the terminal to raw "
			"mode: %s\n",
			strerror(-ret));
		return 1;
	}
	fprintf(stderr,
		"Connected to the console of VM '%s'; Ctrl-] "
		"detaches.\r\n",
		c->vm);
	while (!stop_sig) {
		uint8_t keys[256];
		ssize_t n;
		int pr;

		ret = drain_output(c);
		if (ret)
			break;
		if (c->stopped) {
			tty_restore();
			fprintf(stderr, "\nmigratectl: VM '%s' stopped (%s)\n",
				c->vm, c->why);
			return 0;
		}
		pr = poll(&pfd, 1, POLL_MS);
		if (pr < 0 && errno != EINTR) {
			ret = 1;
			break;
		}
		if (pr <= 0)
			continue;
		n = read(STDIN_FILENO, keys, sizeof(keys));
		if (n <= 0) /* the terminal went away */
			break;
		for (ssize_t i = 0; i < n; i++) {
			if (keys[i] != DETACH_KEY)
				continue;
			if (i)
				send_input(c, keys, (size_t)i);
			tty_restore();
			fprintf(stderr,
				"\nmigratectl: detached from VM "
				"'%s'\n",
				c->vm);
			return 0;
		}
		ret = send_input(c, keys, (size_t)n);
		if (ret)
			break;
	}
	tty_restore();
	if (stop_sig)
		fprintf(stderr, "\nmigratectl: %s: console closed\n",
			strsignal(stop_sig));
	return ret ? ret : stop_sig ? 1 : 0;
}

int ctl_vm_console(struct ctl *ctl, int argc, char **argv)
{
	enum { O_FOLLOW = 256, O_START, O_INPUT, O_UNTIL };
	static const struct option opts[] = {
		{"follow", no_argument, NULL, O_FOLLOW},
		{"from-start", no_argument, NULL, O_START},
		{"input", required_argument, NULL, O_INPUT},
		{"until", required_argument, NULL, O_UNTIL},
		{NULL, 0, NULL, 0},
	};
	struct console c = {.ctl = ctl};
	const char *input = NULL;
	bool follow_on = false, from_start = false, tty;
	int opt, ret, in_fd = -1;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "f", opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
		case O_FOLLOW:
			follow_on = true;
			break;
		case O_START:
			from_start = true;
			break;
		case O_INPUT:
			input = optarg;
			break;
		case O_UNTIL:
			if (!*optarg)
				return migd_cli_bad("migratectl", "--until",
						    optarg, "a non-empty text");
			c.until = optarg;
			c.until_len = strlen(optarg);
			follow_on = true;
			break;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "migratectl: vm console needs one NAME\n");
		return 2;
	}
	c.vm = argv[optind];
	if (c.until) {
		c.tail = malloc(c.until_len);
		if (!c.tail)
			return 1;
	}
	tty = !input && !ctl->json && isatty(STDIN_FILENO) &&
	      isatty(STDOUT_FILENO);
	/* A one-shot read prints all that is kept; a session or --follow
	 * what comes next, unless asked for what is kept first. */
	c.from_end = (tty || follow_on) && !from_start;
	if (input) {
		in_fd = strcmp(input, "-") ? open(input, O_RDONLY | O_CLOEXEC)
					   : STDIN_FILENO;
		if (in_fd < 0) {
			fprintf(stderr, "migratectl: --input '%s': %s\n", input,
				strerror(errno));
			ret = 2;
			goto out;
		}
		/* First a read: the VM has a console, and "now" is known
		 * before the input goes (its echo and answer come after);
		 * with --follow --from-start it prints what is kept. */
		if (!follow_on)
			c.from_end = true;
		ret = drain_output(&c);
		if (!ret)
			ret = send_file(&c, in_fd, input);
		if (ret || !follow_on)
			goto out;
	}
	if (tty)
		ret = interactive(&c);
	else if (follow_on)
		ret = follow(&c);
	else
		ret = drain_output(&c);
out:
	if (in_fd > STDIN_FILENO)
		close(in_fd);
	free(c.tail);
	return ret;
}
