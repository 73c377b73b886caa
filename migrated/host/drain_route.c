// SPDX-License-Identifier: MIT
/*
 * migd_drain_route: where a host drain call naming another host goes
 * (drain_route.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "migrated/host/drain_route.h"
#include "migrated/rpc/parse.h"

int migd_drain_route(const struct migd_etcd_kvs *kvs, const char *host,
		     const char *self_rpc, char *addr, size_t addr_size,
		     uint16_t *port, char *text, size_t text_size)
{
	char h[MIGD_HOST_MAX + 1];
	json_object *rec, *v;
	uint16_t p;
	int ret = -EADDRNOTAVAIL;

	if (text_size)
		text[0] = '\0';
	for (size_t i = 0; kvs && host && i < kvs->n; i++) {
		if (strcmp(kvs->kv[i].key, host))
			continue;
		rec = json_tokener_parse(kvs->kv[i].value);
		if (rec && json_object_object_get_ex(rec, "rpc", &v) &&
		    json_object_is_type(v, json_type_string)) {
			const char *s = json_object_get_string(v);

			snprintf(text, text_size, "%s", s);
			if (!migd_parse_hostport(s, false, h, sizeof(h), &p) &&
			    h[0] && strlen(h) < addr_size) {
				ret = self_rpc && self_rpc[0] &&
						      !strcmp(s, self_rpc)
					      ? -ELOOP : 0;
				if (!ret) {
					snprintf(addr, addr_size, "%s", h);
					*port = p;
				}
			}
		}
		json_object_put(rec);
		return ret;
	}
	return -ENOENT;
}
