// SPDX-License-Identifier: MIT
/*
 * hvbench boot: boot a Linux kernel on the KVM accelerator without the
 * daemon (docs/guests.md), copy its console to stdout, and time it: from
 * process start to the first console byte and to a marker line
 * (--until). Ends when the guest stops (reboot, poweroff), at the marker
 * with --stop-at-until, or at --timeout; the exit status says which:
 *
 *   0 the guest rebooted or powered off (or the marker came, with
 *     --stop-at-until); 1 it panicked or failed, or the VM could not be
 *     made; 2 usage; 124 timeout (the VM is stopped).
 *
 * With --stdin, what arrives on stdin is typed into the console.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/console.h"
#include "hvcore/kvm/kvm.h"
#include "hvcore/log.h"
#include "hvcore/vm.h"
#include "tools/hvbench/hvbench.h"

struct boot_opts {
	const char *kernel, *initrd, *cmdline, *until, *log;
	uint64_t mem;
	uint32_t vcpus;
	double timeout_s;
	bool stop_at_until, stdin_in;
	/* --disk PATH[,ro] (repeatable), --rng */
	const char *disk[HV_BOOT_DISKS_MAX];
	uint32_t nr_disks;
	bool rng;
	/* --net TAP[,mac=XX:XX:XX:XX:XX:XX] */
	const char *net;
};

/* CLOCK_MONOTONIC ns at which this process started (/proc/self/stat
 * field 22, clock ticks since boot; CLOCK_BOOTTIME counts the same). */
static uint64_t process_start_ns(void)
{
	char buf[1024], *p;
	unsigned long long ticks = 0;
	struct timespec bt, mono;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;
	int field = 2;

	if (!f)
		return hvbench_now_ns();
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p)
		return hvbench_now_ns();
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	ticks = strtoull(p, NULL, 10);
	clock_gettime(CLOCK_BOOTTIME, &bt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	{
		uint64_t boot_ns = (uint64_t)bt.tv_sec * 1000000000ULL +
				   (uint64_t)bt.tv_nsec;
		uint64_t mono_ns = (uint64_t)mono.tv_sec * 1000000000ULL +
				   (uint64_t)mono.tv_nsec;
		uint64_t start = ticks * (1000000000ULL /
					  (uint64_t)sysconf(_SC_CLK_TCK));

		return mono_ns - (boot_ns - start);
	}
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end || !v)
		return -EINVAL;
	*out = v;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: hvbench boot --kernel K [--initrd I] [--cmdline S] "
		"[--mem SIZE] [--vcpus N]\n"
		"       [--timeout SECS] [--until STRING [--stop-at-until]] "
		"[--log FILE] [--stdin]\n"
		"       [--disk PATH[,ro]]... [--rng] "
		"[--net TAP[,mac=XX:XX:XX:XX:XX:XX]]\n");
}

static int parse(int argc, char **argv, struct boot_opts *o)
{
	static const struct option lo[] = {
		{"kernel", required_argument, NULL, 'k'},
		{"initrd", required_argument, NULL, 'i'},
		{"cmdline", required_argument, NULL, 'c'},
		{"mem", required_argument, NULL, 'm'},
		{"vcpus", required_argument, NULL, 'n'},
		{"timeout", required_argument, NULL, 't'},
		{"until", required_argument, NULL, 'u'},
		{"stop-at-until", no_argument, NULL, 's'},
		{"log", required_argument, NULL, 'l'},
		{"stdin", no_argument, NULL, 'I'},
		{"disk", required_argument, NULL, 'd'},
		{"rng", no_argument, NULL, 'r'},
		{"net", required_argument, NULL, 'N'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->mem = 256ULL << 20;
	o->vcpus = 1;
	o->timeout_s = 60;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'k':
			o->kernel = optarg;
			break;
		case 'i':
			o->initrd = optarg;
			break;
		case 'c':
			o->cmdline = optarg;
			break;
		case 'm':
			if (parse_size(optarg, &o->mem))
				return -EINVAL;
			break;
		case 'n':
			o->vcpus = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 't':
			o->timeout_s = strtod(optarg, NULL);
			break;
		case 'u':
			o->until = optarg;
			break;
		case 's':
			o->stop_at_until = true;
			break;
		case 'l':
			o->log = optarg;
			break;
		case 'I':
			o->stdin_in = true;
			break;
		case 'd':
			if (o->nr_disks == HV_BOOT_DISKS_MAX)
				return -EINVAL;
			o->disk[o->nr_disks++] = optarg;
			break;
		case 'r':
			o->rng = true;
			break;
		case 'N':
			o->net = optarg;
			break;
		default:
			return -EINVAL;
		}
	}
	if (!o->kernel || optind != argc || !o->vcpus || o->timeout_s <= 0)
		return -EINVAL;
	return 0;
}

/* --net TAP[,mac=XX:XX:XX:XX:XX:XX]; without a MAC, QEMU's first
 * default (52:54:00:12:34:56). The tap is opened by hv_vm_create(). */
static int net_opt(const char *arg, struct hv_boot_cfg *b)
{
	static const uint8_t def[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
	const char *comma = strchr(arg, ',');
	size_t len = comma ? (size_t)(comma - arg) : strlen(arg);
	unsigned m[6];
	char end;

	memcpy(b->net_mac, def, 6);
	if (!len || len >= sizeof(b->net_tap))
		goto bad;
	memcpy(b->net_tap, arg, len);
	b->net_tap[len] = '\0';
	if (!comma)
		return 0;
	if (strncmp(comma + 1, "mac=", 4) ||
	    sscanf(comma + 5, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2],
		   &m[3], &m[4], &m[5], &end) != 6)
		goto bad;
	for (unsigned i = 0; i < 6; i++) {
		if (m[i] > 0xff)
			goto bad;
		b->net_mac[i] = (uint8_t)m[i];
	}
	if (!(b->net_mac[0] & 1))
		return 0;
bad:
	fprintf(stderr,
		"hvbench boot: bad --net '%s' (TAP[,mac=XX:XX:XX:XX:XX:XX], "
		"a unicast MAC)\n",
		arg);
	return -EINVAL;
}

static int copy_str(char *dst, size_t cap, const char *src, const char *what)
{
	if (!src)
		return 0;
	if (strlen(src) >= cap) {
		fprintf(stderr, "hvbench boot: %s too long\n", what);
		return -E2BIG;
	}
	strcpy(dst, src);
	return 0;
}

/* Look for @marker in the console stream: @tail keeps the last bytes so
 * a marker split across reads is found. */
static bool marker_seen(char *tail, size_t *tail_len, size_t cap,
			const char *buf, size_t n, const char *marker)
{
	for (size_t i = 0; i < n; i++) {
		if (*tail_len == cap - 1) {
			memmove(tail, tail + cap / 2, *tail_len - cap / 2);
			*tail_len -= cap / 2;
		}
		tail[(*tail_len)++] = buf[i];
		tail[*tail_len] = 0;
	}
	return strstr(tail, marker) != NULL;
}

/* One line a device: what the guest made of it. */
static void print_devices(struct hv_vm *vm)
{
	struct hv_kvm_dev_info d[HV_KVM_MAX_DEVS];
	unsigned n = hv_kvm_linux_devices(vm, d, HV_KVM_MAX_DEVS);

	for (unsigned i = 0; i < n; i++)
		fprintf(stderr,
			"\nhvbench boot: dev=%s slot=%u status=0x%x msix=%d "
			"bar0=0x%llx requests=%llu errors=%llu read=%llu "
			"written=%llu flushes=%llu",
			d[i].kind, d[i].slot, d[i].status, d[i].msix,
			(unsigned long long)d[i].bar0,
			(unsigned long long)d[i].requests,
			(unsigned long long)d[i].errors,
			(unsigned long long)d[i].bytes_read,
			(unsigned long long)d[i].bytes_written,
			(unsigned long long)d[i].flushes);
}

static int bench_boot(int argc, char **argv)
{
	uint64_t t0 = process_start_ns(), first = 0, until_at = 0, deadline;
	struct hv_console *con;
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	struct boot_opts o;
	struct hv_kvm_linux_stats ls;
	char buf[4096], tail[8192];
	size_t tail_len = 0;
	uint64_t pos = 0;
	enum hv_vm_exit why;
	int ret, status;

	if (parse(argc, argv, &o)) {
		usage();
		return 2;
	}
	hv_vm_cfg_init(&cfg, HV_ACCEL_KVM, o.mem, o.vcpus);
	snprintf(cfg.name, sizeof(cfg.name), "boot");
	if (copy_str(cfg.boot.kernel, sizeof(cfg.boot.kernel), o.kernel,
		     "--kernel") ||
	    copy_str(cfg.boot.initrd, sizeof(cfg.boot.initrd), o.initrd,
		     "--initrd") ||
	    copy_str(cfg.boot.cmdline, sizeof(cfg.boot.cmdline), o.cmdline,
		     "--cmdline") ||
	    copy_str(cfg.boot.console_log, sizeof(cfg.boot.console_log), o.log,
		     "--log"))
		return 2;
	for (uint32_t i = 0; i < o.nr_disks; i++) {
		struct hv_boot_disk *d = &cfg.boot.disk[i];
		size_t len = strlen(o.disk[i]);

		if (len > 3 && !strcmp(o.disk[i] + len - 3, ",ro")) {
			d->read_only = true;
			len -= 3;
		}
		if (len >= sizeof(d->path)) {
			fprintf(stderr, "hvbench boot: --disk too long\n");
			return 2;
		}
		memcpy(d->path, o.disk[i], len);
	}
	cfg.boot.nr_disks = o.nr_disks;
	cfg.boot.rng = o.rng;
	if (o.net && net_opt(o.net, &cfg.boot))
		return 2;
	ret = hv_vm_create(&cfg, &vm);
	if (ret) {
		fprintf(stderr, "hvbench boot: cannot create the VM: %s\n",
			strerror(-ret));
		return 1;
	}
	con = hv_vm_console(vm);
	ret = hv_vm_start(vm);
	if (ret) {
		fprintf(stderr, "hvbench boot: cannot start: %s\n",
			strerror(-ret));
		hv_vm_destroy(vm);
		return 1;
	}
	if (o.stdin_in)
		fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	deadline = hvbench_now_ns() + (uint64_t)(o.timeout_s * 1e9);
	status = 124;
	for (;;) {
		size_t n = hv_console_read(con, &pos, buf, sizeof(buf), NULL);
		struct pollfd pfd = {0, POLLIN, 0};

		if (n) {
			if (!first)
				first = hvbench_now_ns();
			fwrite(buf, 1, n, stdout);
			fflush(stdout);
			if (o.until && !until_at &&
			    marker_seen(tail, &tail_len, sizeof(tail), buf, n,
					o.until)) {
				until_at = hvbench_now_ns();
				if (o.stop_at_until) {
					status = 0;
					break;
				}
			}
			continue;
		}
		if (hv_vm_get_state(vm) == HV_VM_STOPPED) {
			why = hv_vm_exit_reason(vm);
			status = why == HV_VM_EXIT_REBOOT ||
						 why == HV_VM_EXIT_POWEROFF
					 ? 0
					 : 1;
			/* Drain what the guest wrote last. */
			while ((n = hv_console_read(con, &pos, buf, sizeof(buf),
						    NULL)))
				fwrite(buf, 1, n, stdout);
			break;
		}
		if (hvbench_now_ns() > deadline)
			break;
		if (o.stdin_in && poll(&pfd, 1, 0) == 1) {
			ssize_t r = read(0, buf, sizeof(buf));

			if (r > 0)
				hv_console_write(con, buf, (size_t)r);
		}
		usleep(2000);
	}
	why = hv_vm_exit_reason(vm);
	hv_kvm_linux_get_stats(vm, &ls);
	hv_vm_stop(vm);
	print_devices(vm);
	fflush(stdout);
	fprintf(stderr,
		"\nhvbench boot: exit=%s entry=%s first_byte_ms=%.1f "
		"until_ms=%.1f unclaimed_pio=%llu unclaimed_mmio=%llu%s\n",
		status == 124 ? "timeout" : hv_vm_exit_name(why), ls.entry,
		first ? (double)(first - t0) / 1e6 : -1.0,
		until_at ? (double)(until_at - t0) / 1e6 : -1.0,
		(unsigned long long)ls.unclaimed_pio,
		(unsigned long long)ls.unclaimed_mmio,
		o.until && !until_at ? " until=not_seen" : "");
	hv_vm_destroy(vm);
	if (o.until && !until_at && status == 0 && !o.stop_at_until)
		status = 0;
	return status;
}

HVBENCH_CMD("boot", "boot a Linux kernel on KVM, console to stdout, timed",
	    bench_boot);
