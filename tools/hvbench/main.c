// SPDX-License-Identifier: MIT
#include "tools/hvbench/hvbench.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CMDS 32

#ifndef HVBENCH_VERSION
#define HVBENCH_VERSION "unknown"
#endif

static const struct hvbench_cmd *cmds[MAX_CMDS];
static unsigned nr_cmds;

void hvbench_register(const struct hvbench_cmd *cmd)
{
	if (nr_cmds == MAX_CMDS) {
		fprintf(stderr, "hvbench: too many subcommands\n");
		abort();
	}
	cmds[nr_cmds++] = cmd;
}

uint64_t hvbench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double hvbench_median(double *v, unsigned n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cmp_cmd(const void *a, const void *b)
{
	const struct hvbench_cmd *x = *(const struct hvbench_cmd *const *)a;
	const struct hvbench_cmd *y = *(const struct hvbench_cmd *const *)b;

	return strcmp(x->name, y->name);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: hvbench <command> [options]   (command --help for "
		   "its options)\n       hvbench --version | --help\n\n"
		   "commands:\n");
	for (unsigned i = 0; i < nr_cmds; i++)
		fprintf(f, "  %-14s %s\n", cmds[i]->name, cmds[i]->help);
}

/*
 * COMMAND --help: the command's one-line summary, then its own usage.
 * Not every command knows --help; those print their usage on stderr for
 * an option they do not know and return before running anything, so
 * the usage is asked for that way, with stderr on stdout and getopt's
 * "unrecognized option" silenced, and the answer is exit 0.
 */
static int cmd_help(const struct hvbench_cmd *cmd)
{
	char *args[] = { (char *)cmd->name, (char *)"--help", NULL };

	printf("hvbench %s: %s\n", cmd->name, cmd->help);
	fflush(stdout);
	if (dup2(STDOUT_FILENO, STDERR_FILENO) < 0)
		return 0;
	opterr = 0;
	cmd->fn(2, args);
	fflush(stdout);
	return 0;
}

static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	qsort(cmds, nr_cmds, sizeof(cmds[0]), cmp_cmd);
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("hvbench (migrated) %s\n", HVBENCH_VERSION);
		return 0;
	}
	for (unsigned i = 0; i < nr_cmds; i++) {
		if (strcmp(argv[1], cmds[i]->name))
			continue;
		if (wants_help(argc - 1, argv + 1))
			return cmd_help(cmds[i]);
		return cmds[i]->fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "hvbench: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
