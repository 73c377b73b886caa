// SPDX-License-Identifier: MIT
/*
 * The boot files of a create request, checked (calls.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/vm.h"
#include "migrated/common/calls.h"

bool migd_boot_wanted(const Migd__VmCreateRequest *r)
{
	return r->boot && r->boot->kernel && r->boot->kernel[0];
}

static bool set(const char *s)
{
	return s && *s;
}

/*
 * The workload options a request sets, as migratectl names them, into
 * @buf ("" when none): they describe the project's own guest and mean
 * nothing to a kernel.
 */
static void workload_options(const Migd__Workload *w, char *buf, size_t n)
{
	const struct {
		bool on;
		const char *opt;
	} t[] = {
		{w && w->pattern, "--pattern"},
		{w && w->content, "--content"},
		{w && w->rate_pages, "--rate"},
		{w && w->region_offset, "--region-offset"},
		{w && w->region_bytes, "--region-size"},
		{w && w->write_pct, "--write-pct"},
		{w && w->hot_pct, "--hot-pct"},
		{w && w->hot_share_pct, "--hot-share"},
		{w && w->heartbeat_us, "--heartbeat-us"},
		{w && w->seed, "--seed"},
		{w && w->prefill, "--prefill"},
	};
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int k;

		if (!t[i].on)
			continue;
		k = snprintf(buf + len, n - len, "%s%s", len ? " " : "",
			     t[i].opt);
		if (k < 0 || (size_t)k >= n - len)
			break;
		len += (size_t)k;
	}
}

/* @what ("--kernel") at @path: absolute, readable, a non-empty file. */
static int check_file(const char *what, const char *path, char *err,
		      size_t err_size)
{
	struct stat st;
	int fd, e;

	if (strlen(path) >= HV_BOOT_PATH_MAX) {
		snprintf(err, err_size, "%s: a path of at most %d bytes", what,
			 HV_BOOT_PATH_MAX - 1);
		return -EINVAL;
	}
	if (path[0] != '/') {
		snprintf(err, err_size,
			 "%s '%s': needs an absolute path on the daemon's "
			 "host",
			 what, path);
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		e = errno;
		snprintf(err, err_size, "%s '%s': %s (errno %d)%s", what, path,
			 strerror(e), e,
			 e == EACCES ? ": the daemon's user cannot read it"
				     : "");
		return -e;
	}
	if (fstat(fd, &st)) {
		e = errno;
		close(fd);
		snprintf(err, err_size, "%s '%s': %s (errno %d)", what, path,
			 strerror(e), e);
		return -e;
	}
	close(fd);
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, err_size, "%s '%s': not a regular file", what,
			 path);
		return -EINVAL;
	}
	if (!st.st_size) {
		snprintf(err, err_size, "%s '%s': the file is empty", what,
			 path);
		return -EINVAL;
	}
	return 0;
}

#define FAIL(...)                                     \
	do {                                          \
		snprintf(err, err_size, __VA_ARGS__); \
		return -EINVAL;                       \
	} while (0)

int migd_boot_check(const Migd__VmCreateRequest *r, enum hv_accel_kind accel,
		    char *err, size_t err_size)
{
	const Migd__Boot *b = r->boot;
	char opts[160];
	size_t len;
	int ret;

	if (!migd_boot_wanted(r)) {
		if (b && set(b->initrd))
			FAIL("--initrd needs --kernel (a Linux guest)");
		if (b && set(b->cmdline))
			FAIL("--cmdline needs --kernel (a Linux guest)");
		return migd_devices_check(b, false, err, err_size);
	}
	workload_options(r->workload, opts, sizeof(opts));
	if (opts[0])
		FAIL("%s: options of the workload guest, not of a Linux "
		     "guest (--kernel): drop them",
		     opts);
	/* An unknown accelerator is migd_vm_cfg_build()'s to name. */
	if (accel != HV_ACCEL_KVM && accel != HV_ACCEL_INVALID)
		FAIL("booting a Linux kernel needs --accel kvm (this VM's "
		     "accelerator: %s%s)",
		     hv_accel_kind_name(accel),
		     set(r->accel) ? "" : ", the daemon's default");
	if (set(b->cmdline)) {
		len = strlen(b->cmdline);
		if (len >= HV_BOOT_CMDLINE_MAX)
			FAIL("--cmdline is %zu bytes: at most %d", len,
			     HV_BOOT_CMDLINE_MAX - 1);
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)b->cmdline[i] < 0x20 ||
			    b->cmdline[i] == 0x7f)
				FAIL("--cmdline: a control character at byte "
				     "%zu (one line of printable text)",
				     i);
	}
	ret = check_file("--kernel", b->kernel, err, err_size);
	if (!ret && set(b->initrd))
		ret = check_file("--initrd", b->initrd, err, err_size);
	if (!ret)
		ret = migd_devices_check(b, true, err, err_size);
	return ret;
}
