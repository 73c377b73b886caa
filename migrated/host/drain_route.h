/* SPDX-License-Identifier: MIT */
/*
 * migd_drain_route: which daemon answers a host drain call (host_drain,
 * host_drain_status, host_drain_cancel, host_undrain) that names another
 * host of the fleet. That host's record (hosts/<id>, migrated/fleet/
 * fleet.h) carries its control RPC address under "rpc" (--rpc-listen); the
 * daemon asked forwards the call there over mutual TLS
 * (host_drain_forward.c). A pure function of the records.
 *
 * Threads: none; any thread.
 */
#ifndef MIGD_DRAIN_ROUTE_H
#define MIGD_DRAIN_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "migrated/fleet/etcd_json.h"

/*
 * Find @host among @kvs (the fleet's hosts/ keys, without the prefix)
 * and parse its "rpc" address into @addr (no brackets) and *@port;
 * @text gets the address as recorded ("" when none). 0, or:
 * -ENOENT: no host @host is registered; -EADDRNOTAVAIL: its record has
 * no usable control RPC address (no --rpc-listen, or unparsable);
 * -ELOOP: the address is @self_rpc (this daemon's own, "" = none): the
 * record is stale (that host is gone and this daemon took its port), and
 * forwarding would call ourselves.
 */
int migd_drain_route(const struct migd_etcd_kvs *kvs, const char *host,
		     const char *self_rpc, char *addr, size_t addr_size,
		     uint16_t *port, char *text, size_t text_size);

#endif
