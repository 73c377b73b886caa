// SPDX-License-Identifier: MIT
/*
 * migratectl vm check NAME: the daemon's page-stamp oracle over one VM
 * (docs/api.md, vm_check). Exit 0 when every page is intact, 1 when the
 * check found bad pages or a lost write, the usual RPC codes otherwise.
 */
#include <stdio.h>

#include "tools/migratectl/ctl.h"

int ctl_vm_check(struct ctl *ctl, const char *name)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__VmRef ref = MIGD__VM_REF__INIT;
	const Migd__VmCheckResult *r;
	Migd__Response *resp;
	int ret;

	ref.name = (char *)name;
	req.call_case = MIGD__REQUEST__CALL_VM_CHECK;
	req.vm_check = &ref;
	ret = ctl_call(ctl, &req, &resp);
	if (ret)
		return ret;
	r = resp->vm_check;
	if (ctl->json) {
		ctl_print_json(&r->base);
	} else {
		printf("%s: %llu pages checked, %llu written, %llu bad "
		       "(stamp %llu, content %llu, stale %llu), %u vCPU(s) "
		       "lost their last write; %.1f ms%s\n",
		       name, (unsigned long long)r->pages,
		       (unsigned long long)r->written,
		       (unsigned long long)r->bad,
		       (unsigned long long)r->bad_stamp,
		       (unsigned long long)r->bad_content,
		       (unsigned long long)r->stale, r->lost_vcpus,
		       (double)r->check_ns / 1e6,
		       r->paused_for_check ? " (paused for the check)" : "");
		if (r->n_bad_gfns) {
			printf("first bad gfns:");
			for (size_t i = 0; i < r->n_bad_gfns; i++)
				printf(" 0x%llx",
				       (unsigned long long)r->bad_gfns[i]);
			printf("\n");
		}
	}
	ret = r->bad || r->lost_vcpus ? 1 : 0;
	migd__response__free_unpacked(resp, NULL);
	return ret;
}
