/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets (fuzz_<decoder>.c) and the seed generator
 * (seedgen.c) share: the guest memory layout the page batch target decodes
 * into, so that the generator's batches land in it, and the quiet start-up
 * of a target.
 *
 * Each target is one libFuzzer binary: LLVMFuzzerTestOneInput() feeds one
 * input to one peer-facing decoder through its public functions and checks
 * what the decoder promises on top of what ASan and UBSan catch; any
 * violated promise aborts (a crash for libFuzzer). docs/fuzzing.md lists
 * the targets.
 */
#ifndef TESTS_FUZZ_COMMON_H
#define TESTS_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "migrated/mig/memmap.h"

/*
 * The batch target's memory: two slots with ids and gfns that are not the
 * trivial 0, so that a decoder mixing up slot id, index and gfn writes to
 * the wrong place. Each slot is mapped between two PROT_NONE guard pages.
 */
#define FUZZ_SLOT_A_ID 0u
#define FUZZ_SLOT_A_GFN 0ull
#define FUZZ_SLOT_A_PAGES 96ull
#define FUZZ_SLOT_B_ID 7u
#define FUZZ_SLOT_B_GFN 4096ull
#define FUZZ_SLOT_B_PAGES 80ull
#define FUZZ_NR_SLOTS 2u

/*
 * Map the two slots (guarded, zero-filled) and describe them in
 * @slots[FUZZ_NR_SLOTS]. Aborts on failure: a target cannot run without.
 */
void fuzz_slots_map(struct mig_memmap_slot slots[FUZZ_NR_SLOTS]);

/*
 * Drop the project's log lines (every rejected input logs one) unless
 * $FUZZ_LOG is set: they cost time and hide libFuzzer's own output.
 */
void fuzz_quiet_logs(void);

/* A broken promise: print it and abort, which libFuzzer reports. */
#define FUZZ_CHECK(cond)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#endif
