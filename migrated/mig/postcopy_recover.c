// SPDX-License-Identifier: MIT
#include "migrated/mig/postcopy_recover.h"

#include <errno.h>
#include <stdlib.h>

#include "hvcore/types.h"
#include "migrated/mig/frame.h"
#include "migrated/mig/postcopy_map.h"

int mig_pc_unsent_send(struct mig_conn *c, uint32_t slot,
		       const uint64_t *bits, uint64_t npages,
		       uint64_t *bytes)
{
	uint64_t f = 0;

	do {
		Mig__PostcopyUnsent u = MIG__POSTCOPY_UNSENT__INIT;
		uint64_t n = HV_MIN(npages - f, MIG_PC_UNSENT_RANGE_MAX);
		unsigned enc;
		uint8_t *data;
		size_t len;
		int ret;

		if (!n)
			return -EINVAL; /* a slot has at least one page */
		ret = mig_pc_unsent_encode(bits, f, n, &data, &len, &enc,
					   &u.set_pages);
		if (ret)
			return ret;
		u.slot = slot;
		u.first_page = f;
		u.npages = n;
		u.encoding = enc;
		u.data.data = data;
		u.data.len = len;
		ret = mig_conn_send(c, MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT,
				    &u.base, NULL, 0);
		if (bytes)
			*bytes += mig_frame_size(&u.base);
		free(data);
		if (ret)
			return ret;
		f += n;
	} while (f < npages);
	return 0;
}

int mig_pc_resume_check(const Mig__PostcopyResume *r, uint64_t set_pages)
{
	if (!r->recoveries || r->missing_pages != set_pages)
		return -EBADMSG;
	return 0;
}
