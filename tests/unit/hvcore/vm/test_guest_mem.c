// SPDX-License-Identifier: MIT
/*
 * hv_guest_mem (hvcore/guest_mem.h): every backing creates a 2 MiB
 * aligned mapping that reads as zeros; the data map tells written and
 * read-only-touched pages (data) from never-touched ones (holes) on each
 * backing; discard makes everything a hole again; the private backing has
 * no fd and cannot be adopted.
 */
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/guest_mem.h"
#include "hvcore/vcpu.h"
#include "hvcore/wl_verify.h"

#define MEM (8ULL << 20)
#define NPAGES (MEM >> HV_PAGE_SHIFT)

static bool bit(const uint64_t *bits, uint64_t i)
{
	return bits[i / 64] >> (i % 64) & 1;
}

/* hugetlb needs reserved pages: -ENOMEM then is the documented answer. */
static struct hv_guest_mem *create_or_skip(enum hv_mem_backing b,
					   const char *test)
{
	struct hv_guest_mem *mem = NULL;
	int ret = hv_guest_mem_create(MEM, b, &mem);

	if (b == HV_BACKING_HUGETLB && ret == -ENOMEM) {
		hv_test_skip(test, "no hugetlb pages reserved");
		return NULL;
	}
	CU_ASSERT_EQUAL(ret, 0);
	return mem;
}

static void test_each_backing_maps_2m_aligned_zeroed(void)
{
	for (unsigned b = HV_BACKING_ANON; b < HV_BACKING_COUNT; b++) {
		struct hv_guest_mem *mem = create_or_skip(b, __func__);

		if (!mem)
			continue;
		CU_ASSERT_EQUAL((uintptr_t)mem->hva % (2u << 20), 0);
		CU_ASSERT_EQUAL(mem->bytes, MEM);
		CU_ASSERT_EQUAL(mem->backing, b);
		CU_ASSERT_EQUAL(hv_guest_mem_fd(mem) < 0,
				b == HV_BACKING_PRIVATE);
		CU_ASSERT_EQUAL(mem->hva[MEM - 1], 0);
		mem->hva[MEM - 1] = 7;
		CU_ASSERT_EQUAL(mem->hva[MEM - 1], 7);
		hv_guest_mem_destroy(mem);
	}
}

/*
 * Page 3 written, page 700 only read, page 1500 written, then all
 * discarded; the rest never touched. Huge pages make data granular by
 * 2 MiB (a write or even a read of one page maps a whole 2 MiB page, the
 * huge zero page for a read), so the holes checked lie in the one 2 MiB
 * block nothing touched: pages 1536..2047.
 */
static void test_data_map_tells_written_read_and_untouched(void)
{
	for (unsigned b = HV_BACKING_ANON; b < HV_BACKING_COUNT; b++) {
		struct hv_guest_mem *mem = create_or_skip(b, __func__);
		uint64_t *bits = calloc(NPAGES / 64, 8);
		volatile uint8_t *v;

		if (!mem) {
			free(bits);
			continue;
		}
		CU_ASSERT_FATAL(bits != NULL);
		v = mem->hva;
		CU_ASSERT_EQUAL(hv_guest_mem_data_map(mem, 0, NPAGES, bits),
				0);
		for (uint64_t i = 0; i < NPAGES; i++)
			CU_ASSERT_FALSE(bit(bits, i));
		v[3 * HV_PAGE_SIZE + 10] = 1;
		(void)v[700 * HV_PAGE_SIZE];
		v[1500 * HV_PAGE_SIZE] = 2;
		CU_ASSERT_EQUAL(hv_guest_mem_data_map(mem, 0, NPAGES, bits),
				0);
		CU_ASSERT_TRUE(bit(bits, 3));
		CU_ASSERT_TRUE(bit(bits, 1500));
		/* Read-only: the zero page (anon) or a hole (memfd reads
		 * allocate nothing): either is cheap and correct; never
		 * claimed as data it does not hold for the memfd. */
		if (b == HV_BACKING_PRIVATE)
			CU_ASSERT_TRUE(bit(bits, 700));
		/* Never touched, in 2 MiB blocks nothing touched. */
		CU_ASSERT_FALSE(bit(bits, 1536));
		CU_ASSERT_FALSE(bit(bits, 1800));
		CU_ASSERT_FALSE(bit(bits, NPAGES - 1));
		/* An offset window: page 1500 is bit 1500 - 1024. */
		CU_ASSERT_EQUAL(hv_guest_mem_data_map(mem, 1024 * HV_PAGE_SIZE,
						      1024, bits),
				0);
		CU_ASSERT_TRUE(bit(bits, 1500 - 1024));
		CU_ASSERT_FALSE(bit(bits, 1800 - 1024));
		CU_ASSERT_EQUAL(hv_guest_mem_data_map(mem, MEM, 1, bits),
				-EINVAL);
		CU_ASSERT_EQUAL(hv_guest_mem_data_map(mem, 1, 1, bits),
				-EINVAL);
		/* Discard: all holes, all zeros. */
		CU_ASSERT_EQUAL(hv_guest_mem_discard(mem), 0);
		CU_ASSERT_EQUAL(hv_guest_mem_data_map(mem, 0, NPAGES, bits),
				0);
		for (uint64_t i = 0; i < NPAGES; i++)
			if (bit(bits, i)) {
				CU_FAIL("data after discard");
				break;
			}
		CU_ASSERT_EQUAL(v[1500 * HV_PAGE_SIZE], 0);
		hv_guest_mem_destroy(mem);
		free(bits);
	}
}

static void test_private_backing_cannot_be_adopted(void)
{
	struct hv_guest_mem *mem = NULL, *other = (void *)1;

	CU_ASSERT_EQUAL_FATAL(hv_guest_mem_create(MEM, HV_BACKING_ANON, &mem),
			      0);
	CU_ASSERT_EQUAL(hv_guest_mem_adopt(hv_guest_mem_fd(mem), MEM,
					   HV_BACKING_PRIVATE, &other),
			-EINVAL);
	CU_ASSERT_PTR_EQUAL(other, (void *)1);
	hv_guest_mem_destroy(mem);
}

static void test_backing_names_round_trip(void)
{
	for (unsigned b = HV_BACKING_ANON; b < HV_BACKING_COUNT; b++)
		CU_ASSERT_EQUAL(hv_mem_backing_parse(hv_mem_backing_name(b)),
				b);
	CU_ASSERT_EQUAL(hv_mem_backing_parse("anon"), HV_BACKING_PRIVATE);
	CU_ASSERT_EQUAL(hv_mem_backing_parse("memfd"), HV_BACKING_ANON);
	CU_ASSERT_EQUAL(hv_mem_backing_parse("thp"), HV_BACKING_THP);
	CU_ASSERT_EQUAL(hv_mem_backing_parse("invalid"), HV_BACKING_INVALID);
	CU_ASSERT_EQUAL(hv_mem_backing_parse(""), HV_BACKING_INVALID);
	CU_ASSERT_EQUAL(hv_mem_backing_parse(NULL), HV_BACKING_INVALID);
}

/* A soft VM on private anonymous RAM runs its workload to the end and
 * every page's stamp checks out (the accelerator takes host pointers
 * only, whatever the backing). */
static void test_soft_vm_runs_on_anon_backing(void)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	struct hv_wl_verify r;

	hv_vm_cfg_init(&cfg, HV_ACCEL_SOFT, 32ULL << 20, 1);
	cfg.backing = HV_BACKING_PRIVATE;
	cfg.wl[0].region_pages = 1024;
	cfg.wl[0].max_writes = 3000;
	CU_ASSERT_EQUAL_FATAL(hv_vm_create(&cfg, &vm), 0);
	CU_ASSERT_EQUAL(hv_vm_mem_fd(vm), -1);
	CU_ASSERT_EQUAL_FATAL(hv_vm_start(vm), 0);
	CU_ASSERT_EQUAL(hv_vm_wait(vm, 30000), 0);
	CU_ASSERT_EQUAL(hv_vm_wl_status(vm, 0)->seq, 3000);
	CU_ASSERT_EQUAL(hv_wl_verify(hv_vm_gpa_to_hva(vm, 0, cfg.mem_bytes),
				     cfg.mem_bytes, &r),
			0);
	CU_ASSERT_EQUAL(r.written, 1024);
	CU_ASSERT(hv_wl_verify_clean(&r));
	hv_vm_destroy(vm);
}

static CU_TestInfo tests[] = {
	{ "soft_vm_runs_on_anon_backing", test_soft_vm_runs_on_anon_backing },
	{ "each_backing_maps_2m_aligned_zeroed",
	  test_each_backing_maps_2m_aligned_zeroed },
	{ "data_map_tells_written_read_and_untouched",
	  test_data_map_tells_written_read_and_untouched },
	{ "private_backing_cannot_be_adopted",
	  test_private_backing_cannot_be_adopted },
	{ "backing_names_round_trip", test_backing_names_round_trip },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/guest_mem", NULL, NULL, tests);
