// SPDX-License-Identifier: MIT
#include "hvcore/devices/iobus.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct io_range {
	uint64_t base, len;
	const struct hv_io_ops *ops;
	void *dev;
};

struct hv_iobus {
	pthread_rwlock_t lock;
	struct io_range *r; /* sorted by base */
	unsigned n, cap;
};

int hv_iobus_create(struct hv_iobus **out)
{
	struct hv_iobus *bus = calloc(1, sizeof(*bus));

	if (!bus)
		return -ENOMEM;
	pthread_rwlock_init(&bus->lock, NULL);
	*out = bus;
	return 0;
}

void hv_iobus_destroy(struct hv_iobus *bus)
{
	if (!bus)
		return;
	pthread_rwlock_destroy(&bus->lock);
	free(bus->r);
	free(bus);
}

/* Index of the first range with base > @addr. Lock held. */
static unsigned upper(const struct hv_iobus *bus, uint64_t addr)
{
	unsigned lo = 0, hi = bus->n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (bus->r[mid].base > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int hv_iobus_register(struct hv_iobus *bus, uint64_t base, uint64_t len,
		      const struct hv_io_ops *ops, void *dev)
{
	unsigned i;
	int ret = 0;

	if (!len || base + len < base || !ops)
		return -EINVAL;
	pthread_rwlock_wrlock(&bus->lock);
	i = upper(bus, base);
	if ((i > 0 && bus->r[i - 1].base + bus->r[i - 1].len > base) ||
	    (i < bus->n && bus->r[i].base < base + len)) {
		ret = -EEXIST;
		goto out;
	}
	if (bus->n == bus->cap) {
		unsigned cap = bus->cap ? 2 * bus->cap : 8;
		struct io_range *r = realloc(bus->r, cap * sizeof(*r));

		if (!r) {
			ret = -ENOMEM;
			goto out;
		}
		bus->r = r;
		bus->cap = cap;
	}
	memmove(&bus->r[i + 1], &bus->r[i], (bus->n - i) * sizeof(*bus->r));
	bus->r[i] = (struct io_range){base, len, ops, dev};
	bus->n++;
out:
	pthread_rwlock_unlock(&bus->lock);
	return ret;
}

int hv_iobus_unregister(struct hv_iobus *bus, uint64_t base)
{
	unsigned i;
	int ret = -ENOENT;

	pthread_rwlock_wrlock(&bus->lock);
	i = upper(bus, base);
	if (i > 0 && bus->r[i - 1].base == base) {
		i--;
		memmove(&bus->r[i], &bus->r[i + 1],
			(bus->n - i - 1) * sizeof(*bus->r));
		bus->n--;
		ret = 0;
	}
	pthread_rwlock_unlock(&bus->lock);
	return ret;
}

bool hv_iobus_access(struct hv_iobus *bus, uint64_t addr, bool is_write,
		     void *data, uint32_t len)
{
	struct io_range r = {0};
	bool found = false;
	unsigned i;

	pthread_rwlock_rdlock(&bus->lock);
	i = upper(bus, addr);
	if (i > 0) {
		r = bus->r[i - 1];
		found = addr - r.base < r.len && len <= r.len - (addr - r.base);
	}
	pthread_rwlock_unlock(&bus->lock);
	if (!found) {
		if (!is_write)
			memset(data, 0xff, len);
		return false;
	}
	if (is_write) {
		if (r.ops->write)
			r.ops->write(r.dev, addr - r.base, data, len);
	} else {
		memset(data, 0, len);
		if (r.ops->read)
			r.ops->read(r.dev, addr - r.base, data, len);
	}
	return true;
}
