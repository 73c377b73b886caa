// SPDX-License-Identifier: MIT
#include "tests/fuzz/fuzz_common.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hvcore/log.h"

static uint8_t *map_guarded(uint64_t npages)
{
	size_t len = (size_t)(npages + 2) * HV_PAGE_SIZE;
	uint8_t *p =
		mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + HV_PAGE_SIZE, (size_t)npages * HV_PAGE_SIZE,
		     PROT_READ | PROT_WRITE)) {
		munmap(p, len);
		return NULL;
	}
	return p + HV_PAGE_SIZE;
}

void fuzz_slots_map(struct mig_memmap_slot slots[FUZZ_NR_SLOTS])
{
	slots[0] = (struct mig_memmap_slot){
		.id = FUZZ_SLOT_A_ID,
		.base_gfn = FUZZ_SLOT_A_GFN,
		.npages = FUZZ_SLOT_A_PAGES,
		.host = map_guarded(FUZZ_SLOT_A_PAGES),
	};
	slots[1] = (struct mig_memmap_slot){
		.id = FUZZ_SLOT_B_ID,
		.base_gfn = FUZZ_SLOT_B_GFN,
		.npages = FUZZ_SLOT_B_PAGES,
		.host = map_guarded(FUZZ_SLOT_B_PAGES),
	};
	FUZZ_CHECK(slots[0].host && slots[1].host);
}

void fuzz_quiet_logs(void)
{
	int fd;

	if (getenv("FUZZ_LOG"))
		return;
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
		hv_log_set_fd(fd);
}
