// SPDX-License-Identifier: MIT
#include "migrated/mig/snap_disks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The open mode of /proc/@pid/fd/@fd from its fdinfo ("flags:\t0100002",
 * octal): true when it may write. */
static bool fd_writes(const char *pid, const char *fd)
{
	char p[128], line[128];
	unsigned long flags;
	bool w = false;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%.20s/fdinfo/%.20s", pid, fd);
	f = fopen(p, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "flags: %lo", &flags) == 1) {
			w = (flags & O_ACCMODE) != O_RDONLY;
			break;
		}
	}
	fclose(f);
	return w;
}

static bool is_pid(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Does process @pid have the inode (@dev, @ino) open for writing? */
static bool pid_writes(const char *pid, dev_t dev, ino_t ino)
{
	char p[48], q[160];
	struct dirent *e;
	bool found = false;
	struct stat sb;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%.20s/fd", pid);
	d = opendir(p);
	if (!d)
		return false; /* gone, or not ours to read */
	while (!found && (e = readdir(d))) {
		if (!is_pid(e->d_name))
			continue;
		snprintf(q, sizeof(q), "%.96s/%.20s", p, e->d_name);
		if (stat(q, &sb) || sb.st_dev != dev || sb.st_ino != ino)
			continue;
		found = fd_writes(pid, e->d_name);
	}
	closedir(d);
	return found;
}

int mig_snap_disk_writer(const char *path, pid_t *pid)
{
	char self[24];
	struct dirent *e;
	struct stat sb;
	int found = 0;
	DIR *d;

	if (stat(path, &sb))
		return -errno;
	snprintf(self, sizeof(self), "%d", (int)getpid());
	d = opendir("/proc");
	if (!d)
		return 0; /* no /proc: nothing to see */
	while (!found && (e = readdir(d))) {
		if (!is_pid(e->d_name) || !strcmp(e->d_name, self))
			continue;
		if (pid_writes(e->d_name, sb.st_dev, sb.st_ino)) {
			*pid = (pid_t)atoi(e->d_name);
			found = 1;
		}
	}
	closedir(d);
	return found;
}
