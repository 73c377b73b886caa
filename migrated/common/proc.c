// SPDX-License-Identifier: MIT
/*
 * Start-up helpers of both processes (proc.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "migrated/common/proc.h"

#define COMP "migd"

int migd_private_dir(const char *path, long gid)
{
	mode_t want;

	char tmp[PATH_MAX];
	struct stat st;
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	if (stat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != getuid())
		return -EPERM;
	if (gid >= 0 && st.st_gid != (gid_t)gid &&
	    chown(path, (uid_t)-1, (gid_t)gid))
		return -errno;
	want = gid >= 0 ? 0710 : 0700 | (st.st_mode & 0010);
	if ((st.st_mode & 0777) != want && chmod(path, want))
		return -errno;
	return 0;
}

bool migd_tls_files(const char *dir, char *ca, char *cert, char *key)
{
	bool ready;

	snprintf(ca, MIGD_TLS_PATH, "%s/ca.pem", dir);
	snprintf(cert, MIGD_TLS_PATH, "%s/host.pem", dir);
	snprintf(key, MIGD_TLS_PATH, "%s/host.key", dir);
	ready = !access(ca, R_OK) && !access(cert, R_OK) && !access(key, R_OK);
	if (!ready)
		hv_warn(COMP,
			"event=no_tls dir=%s hint=\"only insecure migrations "
			"until ca.pem, host.pem and host.key exist, or use "
			"--dev-tls\"",
			dir);
	return ready;
}

void migd_close_walk_cb(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}
