// SPDX-License-Identifier: MIT
/*
 * Target: the decoders of etcd's gateway answers
 * (migrated/fleet/etcd_json.h), which read whatever an etcd member -- or
 * anything listening on its address -- sends back.
 *
 * The input's first byte picks the decoder (range, txn, write, grant,
 * keepalive, error); the rest is the answer's body.
 *
 * Promises checked: a decoder that fails leaves its output untouched and
 * names a reason; a range or txn it accepts has at most
 * MIGD_ETCD_KVS_MAX keys, each a non-empty NUL-free string, each value at
 * most MIGD_ETCD_VALUE_MAX bytes and NUL-terminated; an accepted grant
 * has an id and a positive TTL, a keepalive a positive TTL.
 */
#include <errno.h>
#include <string.h>

#include "migrated/fleet/etcd_json.h"
#include "tests/fuzz/fuzz_common.h"

static void check_kvs(const struct migd_etcd_kvs *kvs)
{
	FUZZ_CHECK(kvs->n <= MIGD_ETCD_KVS_MAX);
	for (size_t i = 0; i < kvs->n; i++) {
		const struct migd_etcd_kv *kv = &kvs->kv[i];

		FUZZ_CHECK(kv->key && kv->key[0]);
		FUZZ_CHECK(strlen(kv->key) <= MIGD_ETCD_VALUE_MAX);
		FUZZ_CHECK(kv->value_len <= MIGD_ETCD_VALUE_MAX);
		FUZZ_CHECK(kv->value[kv->value_len] == '\0');
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet_logs();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data + 1;
	struct migd_etcd_kvs kvs = { .n = 7 };
	int64_t a = 7, b = 7;
	bool ok = false;
	char err[256] = "";
	size_t len;
	int ret;

	if (size < 1)
		return 0;
	len = size - 1;
	switch (data[0] % 6) {
	case 0:
		ret = migd_etcd_parse_range(body, len, &kvs, err, sizeof(err));
		if (ret)
			FUZZ_CHECK(kvs.n == 7);
		else
			check_kvs(&kvs);
		break;
	case 1:
		ret = migd_etcd_parse_txn(body, len, &ok, &kvs, err,
					  sizeof(err));
		if (ret)
			FUZZ_CHECK(kvs.n == 7);
		else
			check_kvs(&kvs);
		break;
	case 2:
		ret = migd_etcd_parse_write(body, len, &a, &b, err,
					    sizeof(err));
		if (ret)
			FUZZ_CHECK(a == 7 && b == 7);
		break;
	case 3:
		ret = migd_etcd_parse_grant(body, len, &a, &b, err,
					    sizeof(err));
		FUZZ_CHECK(ret ? a == 7 && b == 7 : a != 0 && b > 0);
		break;
	case 4:
		ret = migd_etcd_parse_keepalive(body, len, &a, err,
						sizeof(err));
		FUZZ_CHECK(ret ? a == 7 : a > 0);
		break;
	default:
		ret = migd_etcd_parse_error(500, body, len, err, sizeof(err));
		FUZZ_CHECK(ret < 0);
		FUZZ_CHECK(err[0]);
		return 0;
	}
	if (ret)
		FUZZ_CHECK(err[0]);
	else if (data[0] % 6 <= 1)
		migd_etcd_kvs_free(&kvs);
	return 0;
}
