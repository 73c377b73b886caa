// SPDX-License-Identifier: MIT
/*
 * migratectl host list: the fleet's hosts and the VMs each owns, read
 * from etcd (migrated/fleet/fleet.h has the key layout), not from a
 * daemon: it is the fleet's view, and works while a host is down.
 * host drain / drain-status / drain-cancel / undrain are the daemon's
 * calls (cmd_drain.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "migrated/fleet/etcd.h"
#include "migrated/fleet/fleet.h"
#include "tools/migratectl/ctl.h"

static const char *str_of(json_object *o, const char *k)
{
	json_object *v;

	return o && json_object_object_get_ex(o, k, &v) &&
			       json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : "?";
}

static long long int_of(json_object *o, const char *k)
{
	json_object *v;

	return o && json_object_object_get_ex(o, k, &v) &&
			       json_object_is_type(v, json_type_int)
		       ? (long long)json_object_get_int64(v)
		       : -1;
}

/* The host marked itself draining (migratectl host drain). */
static bool draining(json_object *o)
{
	json_object *v;

	return o && json_object_object_get_ex(o, "draining", &v) &&
	       json_object_get_boolean(v);
}

static int list_prefix(struct migd_etcd *e, const char *prefix,
		       const char *what, struct migd_etcd_kvs *out)
{
	char err[512];
	int ret = migd_etcd_list(e, prefix, out);

	if (ret) {
		migd_etcd_error(e, err, sizeof(err));
		fprintf(stderr, "migratectl: cannot list %s: %s\n", what, err);
	}
	return ret;
}

static void print_hosts(const struct migd_etcd_kvs *hosts,
			const struct migd_etcd_kvs *vms, size_t hlen,
			size_t vlen, bool as_json)
{
	json_object *all = as_json ? json_object_new_array() : NULL;

	if (!as_json)
		printf("%-16s %-5s %5s %8s %-22s %-8s %s\n", "HOST", "ACCEL",
		       "VCPUS", "MEM_GIB", "MIGRATION", "STATE",
		       "VMS (generation)");
	for (size_t i = 0; i < hosts->n; i++) {
		const char *id = hosts->kv[i].key + hlen;
		json_object *rec = json_tokener_parse(hosts->kv[i].value);
		json_object *names = json_object_new_array();
		char list[1024] = "";
		size_t off = 0;

		for (size_t j = 0; j < vms->n; j++) {
			struct migd_fleet_owner o;

			if (migd_fleet_owner_parse(vms->kv[j].value,
						   vms->kv[j].value_len, &o) ||
			    strcmp(o.owner, id))
				continue;
			json_object_array_add(names, json_object_new_string(
							vms->kv[j].key + vlen));
			if (off < sizeof(list))
				off += (size_t)snprintf(list + off,
							sizeof(list) - off,
							"%s%s(%llu)",
							off ? " " : "",
							vms->kv[j].key + vlen,
							(unsigned long long)
								o.generation);
		}
		if (as_json) {
			json_object *h = json_object_new_object();

			json_object_object_add(h, "host",
					       json_object_new_string(id));
			json_object_object_add(h, "record",
					       rec ? json_object_get(rec)
						   : NULL);
			json_object_object_add(h, "vms", names);
			json_object_object_add(h, "draining",
					       json_object_new_boolean(
						       draining(rec)));
			json_object_array_add(all, h);
		} else {
			long long mem = int_of(rec, "mem_bytes");

			printf("%-16s %-5s %5lld %8.1f %-22s %-8s %s\n", id,
			       str_of(rec, "accel"), int_of(rec, "vcpus"),
			       mem > 0 ? (double)mem / (1 << 30) : 0.0,
			       str_of(rec, "migration"),
			       draining(rec) ? "draining" : "up", list);
			json_object_put(names);
		}
		json_object_put(rec);
	}
	if (as_json) {
		printf("%s\n", json_object_to_json_string_ext(
				       all, JSON_C_TO_STRING_PLAIN));
		json_object_put(all);
	}
}

int ctl_host(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "etcd", required_argument, NULL, 'e' },
		{ "etcd-prefix", required_argument, NULL, 'p' },
		{ "etcd-cacert", required_argument, NULL, 'a' },
		{ "etcd-cert", required_argument, NULL, 'c' },
		{ "etcd-key", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct migd_etcd_cfg cfg = { .endpoints = getenv("MIGRATED_ETCD") };
	const char *prefix = "/migrated/";
	struct migd_etcd_kvs hosts = { 0 }, vms = { 0 };
	char hp[160], vp[160], err[512];
	struct migd_etcd *e;
	int c, ret;

	if (argc >= 2 && (!strcmp(argv[1], "drain") ||
			  !strcmp(argv[1], "drain-status")))
		return ctl_host_drain(ctl, argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "drain-cancel"))
		return ctl_host_drain_cancel(ctl, argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "undrain"))
		return ctl_host_undrain(ctl, argc, argv);
	if (argc < 2 || strcmp(argv[1], "list")) {
		fprintf(stderr, "migratectl: host list --etcd URL[,URL...] "
			"(or $MIGRATED_ETCD) | host drain HOST | host "
			"drain-status [HOST] | host drain-cancel HOST | host "
			"undrain HOST\n");
		return 2;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			cfg.endpoints = optarg;
			break;
		case 'p':
			prefix = optarg;
			break;
		case 'a':
			cfg.cacert = optarg;
			break;
		case 'c':
			cfg.cert = optarg;
			break;
		case 'k':
			cfg.key = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!cfg.endpoints || strlen(prefix) > 100) {
		fprintf(stderr, "migratectl: host list needs --etcd URL (or "
			"$MIGRATED_ETCD)\n");
		return 2;
	}
	if (migd_etcd_create(&cfg, &e, err, sizeof(err))) {
		fprintf(stderr, "migratectl: %s\n", err);
		return 2;
	}
	snprintf(hp, sizeof(hp), "%shosts/", prefix);
	snprintf(vp, sizeof(vp), "%svms/", prefix);
	ret = list_prefix(e, hp, "hosts", &hosts);
	if (!ret)
		ret = list_prefix(e, vp, "VMs", &vms);
	if (!ret)
		print_hosts(&hosts, &vms, strlen(hp), strlen(vp), ctl->json);
	migd_etcd_kvs_free(&hosts);
	migd_etcd_kvs_free(&vms);
	migd_etcd_destroy(e);
	return ret ? 4 : 0;
}
