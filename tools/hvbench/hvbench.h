/* SPDX-License-Identifier: MIT */
/*
 * hvbench: benchmark programs, one subcommand per file. Each prints tables
 * that compare variants side by side in one run (docs/architecture.md).
 *
 *   static int bench_memslots(int argc, char **argv) { ... }
 *   HVBENCH_CMD("memslots", "memslot table scaling vs array baseline",
 *		 bench_memslots);
 *
 * argv[0] is the subcommand name. Return 0 on success, non-zero on failure.
 */
#ifndef TOOLS_HVBENCH_H
#define TOOLS_HVBENCH_H

#include <stdint.h>

struct hvbench_cmd {
	const char *name;
	const char *help;
	int (*fn)(int argc, char **argv);
};

void hvbench_register(const struct hvbench_cmd *cmd);

#define HVBENCH_CMD(name_, help_, fn_)                                       \
	static const struct hvbench_cmd hvbench_cmd_##fn_ = { name_, help_,  \
							      fn_ };         \
	__attribute__((constructor)) static void hvbench_ctor_##fn_(void)   \
	{                                                                    \
		hvbench_register(&hvbench_cmd_##fn_);                        \
	}

/* Monotonic nanoseconds. */
uint64_t hvbench_now_ns(void);

/* Median of @n values (sorts @v in place). */
double hvbench_median(double *v, unsigned n);

#endif
