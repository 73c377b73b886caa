// SPDX-License-Identifier: MIT
#include "hvcore/devices/pci.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "hvcore/log.h"

struct hv_pci_bus {
	/* immutable after create */
	struct hv_iobus *pio, *mmio;
	struct hv_pci_dev host;
	/* config lock */
	pthread_mutex_t lock;
	uint32_t latch; /* 0xcf8 */
	struct hv_pci_dev *slot[HV_PCI_SLOTS];
	uint64_t next_mmio;
};

static uint32_t le_get(const uint8_t *p, unsigned len)
{
	uint32_t v = 0;

	for (unsigned i = 0; i < len; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static void le_put(uint8_t *p, uint32_t v, unsigned len)
{
	for (unsigned i = 0; i < len; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void hv_pci_dev_init(struct hv_pci_dev *d, uint16_t vendor, uint16_t device,
		     uint32_t class24, uint8_t revision, uint16_t subsys_vendor,
		     uint16_t subsys_id)
{
	memset(d, 0, sizeof(*d));
	le_put(&d->cfg[HV_PCI_VENDOR_ID], vendor, 2);
	le_put(&d->cfg[HV_PCI_DEVICE_ID], device, 2);
	le_put(&d->cfg[HV_PCI_CLASS_REVISION], class24 << 8 | revision, 4);
	le_put(&d->cfg[HV_PCI_SUBSYSTEM_VENDOR_ID], subsys_vendor, 2);
	le_put(&d->cfg[HV_PCI_SUBSYSTEM_ID], subsys_id, 2);
	d->cfg[HV_PCI_INTERRUPT_PIN] = 1;
	le_put(&d->wmask[HV_PCI_COMMAND],
	       HV_PCI_COMMAND_MEMORY | HV_PCI_COMMAND_MASTER |
		       HV_PCI_COMMAND_INTX_DISABLE,
	       2);
	d->wmask[0x0c] = 0xff; /* cache line size */
	d->wmask[0x0d] = 0xff; /* latency timer */
	d->wmask[HV_PCI_INTERRUPT_LINE] = 0xff;
	d->cap_end = 0x40;
	pthread_mutex_init(&d->msix_lock, NULL);
	for (unsigned i = 0; i < HV_PCI_MSIX_MAX; i++)
		d->msix[i].efd = d->msix[i].handle = -1;
}

int hv_pci_dev_set_bar(struct hv_pci_dev *d, unsigned idx, uint64_t size,
		       bool mem64, const struct hv_io_ops *ops, void *opaque)
{
	uint64_t mask = ~(size - 1);

	if (idx >= 6 || (mem64 && idx == 5) || size < 4096 ||
	    (size & (size - 1)) || size > (1ull << 31) || !ops)
		return -EINVAL;
	d->bar[idx] = (struct hv_pci_bar){d, size, mem64, ops, opaque, 0};
	le_put(&d->cfg[HV_PCI_BAR0 + 4 * idx], mem64 ? HV_PCI_BAR_MEM64 : 0, 4);
	le_put(&d->wmask[HV_PCI_BAR0 + 4 * idx], (uint32_t)mask & ~0xfu, 4);
	if (mem64)
		le_put(&d->wmask[HV_PCI_BAR0 + 4 * idx + 4], 0xffffffffu, 4);
	return 0;
}

int hv_pci_dev_add_cap(struct hv_pci_dev *d, const void *cap, uint8_t len)
{
	unsigned off = d->cap_end, p;

	if (len < 2 || off + len > 256)
		return -ENOSPC;
	memcpy(&d->cfg[off], cap, len);
	d->cfg[off + 1] = 0;
	/* Link at the end of the list. */
	if (!d->cfg[HV_PCI_CAPABILITY_LIST]) {
		d->cfg[HV_PCI_CAPABILITY_LIST] = (uint8_t)off;
	} else {
		for (p = d->cfg[HV_PCI_CAPABILITY_LIST]; d->cfg[p + 1];
		     p = d->cfg[p + 1])
			;
		d->cfg[p + 1] = (uint8_t)off;
	}
	d->cfg[HV_PCI_STATUS] |= HV_PCI_STATUS_CAP_LIST;
	d->cap_end = (uint8_t)((off + len + 3) & ~3u);
	return (int)off;
}

int hv_pci_dev_add_msix(struct hv_pci_dev *d, unsigned n, unsigned bar,
			uint32_t table, uint32_t pba)
{
	uint8_t cap[12] = {HV_PCI_CAP_ID_MSIX, 0};
	int off;

	if (!n || n > HV_PCI_MSIX_MAX || bar >= 6 || !d->bar[bar].size ||
	    (table & 7) || (pba & 7) || table + 16ull * n > d->bar[bar].size ||
	    pba + 8ull > d->bar[bar].size ||
	    (pba < table + 16ull * n && table < pba + 8ull))
		return -EINVAL;
	le_put(&cap[2], n - 1, 2);
	le_put(&cap[4], table | bar, 4);
	le_put(&cap[8], pba | bar, 4);
	off = hv_pci_dev_add_cap(d, cap, sizeof(cap));
	if (off < 0)
		return off;
	d->wmask[off + 3] = 0xc0; /* enable, mask all */
	d->msix_n = n;
	d->msix_bar = bar;
	d->msix_table = table;
	d->msix_pba = pba;
	d->msix_cap = (uint8_t)off;
	for (unsigned i = 0; i < n; i++)
		d->msix[i].ctrl = HV_PCI_MSIX_ENTRY_CTRL_MASKBIT;
	return 0;
}

/* MSI-X delivery. msix_lock held. */
static void msix_fire(struct hv_pci_dev *d, unsigned vec)
{
	const struct hv_dev_env *env = d->env;
	struct hv_pci_msix_entry *e = &d->msix[vec];
	uint64_t addr = (uint64_t)e->addr_hi << 32 | e->addr_lo;
	uint64_t one = 1;

	if (env->irqfd_msi) {
		if (e->efd >= 0 &&
		    (e->fd_addr != addr || e->fd_data != e->data)) {
			env->irqfd_del(env->opaque, e->handle);
			close(e->efd);
			e->efd = e->handle = -1;
		}
		if (e->efd < 0) {
			e->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			if (e->efd >= 0) {
				e->handle = env->irqfd_msi(env->opaque, addr,
							   e->data, e->efd);
				if (e->handle < 0) {
					close(e->efd);
					e->efd = -1;
				}
			}
			e->fd_addr = addr;
			e->fd_data = e->data;
		}
		if (e->efd >= 0 && write(e->efd, &one, 8) == 8)
			return;
	}
	env->msi(env->opaque, addr, e->data);
}

static bool msix_masked(struct hv_pci_dev *d, unsigned vec)
{
	return d->msix_maskall ||
	       (d->msix[vec].ctrl & HV_PCI_MSIX_ENTRY_CTRL_MASKBIT);
}

/* Deliver what is pending and no longer masked. msix_lock held. */
static void msix_unmasked(struct hv_pci_dev *d)
{
	if (!d->msix_enabled)
		return;
	for (unsigned v = 0; v < d->msix_n; v++) {
		if ((d->msix_pending >> v & 1) && !msix_masked(d, v)) {
			d->msix_pending &= ~(1ull << v);
			msix_fire(d, v);
		}
	}
}

int hv_pci_msix_notify(struct hv_pci_dev *d, unsigned vec)
{
	int ret = 0;

	pthread_mutex_lock(&d->msix_lock);
	if (vec >= d->msix_n || !d->msix_enabled) {
		ret = -EINVAL;
	} else if (msix_masked(d, vec)) {
		d->msix_pending |= 1ull << vec;
		ret = 1;
	} else {
		msix_fire(d, vec);
	}
	pthread_mutex_unlock(&d->msix_lock);
	return ret;
}

bool hv_pci_msix_enabled(struct hv_pci_dev *d)
{
	bool on;

	pthread_mutex_lock(&d->msix_lock);
	on = d->msix_enabled;
	pthread_mutex_unlock(&d->msix_lock);
	return on;
}

void hv_pci_intx(struct hv_pci_dev *d, bool level)
{
	/* The command register is read without the config lock: a stale
	 * INTx-disable bit only delays or repeats one edge of a level. */
	uint16_t cmd = (uint16_t)le_get(&d->cfg[HV_PCI_COMMAND], 2);

	if (!d->env)
		return; /* not on a bus yet */
	if (level && (cmd & HV_PCI_COMMAND_INTX_DISABLE))
		return;
	d->env->irq_line(d->env->opaque, d->intx_gsi, level);
}

/* The MSI-X table and PBA, as the guest reads and writes them. */
static void msix_table_access(struct hv_pci_dev *d, uint64_t off, void *data,
			      uint32_t len, bool is_write)
{
	pthread_mutex_lock(&d->msix_lock);
	if (off >= d->msix_pba && off < d->msix_pba + 8ull) {
		/* Read-only; the spec allows 4- and 8-byte reads. */
		if (!is_write && off + len <= d->msix_pba + 8ull) {
			uint8_t pba[8];

			le_put(pba, (uint32_t)d->msix_pending, 4);
			le_put(pba + 4, (uint32_t)(d->msix_pending >> 32), 4);
			memcpy(data, pba + (off - d->msix_pba), len);
		}
		goto out;
	}
	off -= d->msix_table;
	if ((len != 4 && len != 8) || (off & (len - 1)))
		goto out;
	for (uint32_t k = 0; k < len; k += 4) {
		struct hv_pci_msix_entry *e = &d->msix[(off + k) / 16];
		uint32_t *w[4] = {&e->addr_lo, &e->addr_hi, &e->data, &e->ctrl};
		uint32_t *reg = w[((off + k) % 16) / 4];
		uint32_t v;

		if (!is_write) {
			le_put((uint8_t *)data + k, *reg, 4);
			continue;
		}
		v = le_get((const uint8_t *)data + k, 4);
		if (reg == &e->ctrl) {
			*reg = v & HV_PCI_MSIX_ENTRY_CTRL_MASKBIT;
			msix_unmasked(d);
		} else {
			*reg = v;
		}
	}
out:
	pthread_mutex_unlock(&d->msix_lock);
}

static bool in_msix(const struct hv_pci_dev *d, unsigned bar, uint64_t off,
		    uint32_t len)
{
	if (!d->msix_n || bar != d->msix_bar)
		return false;
	return (off >= d->msix_table &&
		off + len <= d->msix_table + 16ull * d->msix_n) ||
	       (off >= d->msix_pba && off + len <= d->msix_pba + 8ull);
}

static void bar_read(void *opaque, uint64_t off, void *data, uint32_t len)
{
	struct hv_pci_bar *b = opaque;
	struct hv_pci_dev *d = b->dev;
	unsigned idx = (unsigned)(b - d->bar);

	if (in_msix(d, idx, off, len))
		msix_table_access(d, off, data, len, false);
	else if (b->ops->read)
		b->ops->read(b->opaque, off, data, len);
}

static void bar_write(void *opaque, uint64_t off, const void *data,
		      uint32_t len)
{
	struct hv_pci_bar *b = opaque;
	struct hv_pci_dev *d = b->dev;
	unsigned idx = (unsigned)(b - d->bar);

	if (in_msix(d, idx, off, len))
		msix_table_access(d, off, (void *)data, len, true);
	else if (b->ops->write)
		b->ops->write(b->opaque, off, data, len);
}

static const struct hv_io_ops bar_ops = {bar_read, bar_write};

/* The address BAR @idx holds in configuration space. Config lock held. */
static uint64_t bar_cfg_addr(const struct hv_pci_dev *d, unsigned idx)
{
	uint64_t a = le_get(&d->cfg[HV_PCI_BAR0 + 4 * idx], 4) & ~0xfull;

	if (d->bar[idx].mem64)
		a |= (uint64_t)le_get(&d->cfg[HV_PCI_BAR0 + 4 * idx + 4], 4)
		     << 32;
	return a;
}

/* Make BAR @idx's decoding match the config space. Config lock held. */
static void bar_update(struct hv_pci_bus *bus, struct hv_pci_dev *d,
		       unsigned idx)
{
	struct hv_pci_bar *b = &d->bar[idx];
	uint16_t cmd = (uint16_t)le_get(&d->cfg[HV_PCI_COMMAND], 2);
	uint64_t want = bar_cfg_addr(d, idx), old = b->mapped;

	if (!(cmd & HV_PCI_COMMAND_MEMORY) || want + b->size < want)
		want = 0;
	if (want == old)
		return;
	if (old)
		hv_iobus_unregister(bus->mmio, old);
	b->mapped = 0;
	if (want) {
		int ret = hv_iobus_register(bus->mmio, want, b->size, &bar_ops,
					    b);

		if (ret)
			hv_warn("pci",
				"op=bar_map slot=%u bar=%u gpa=0x%llx ret=%d",
				d->slot, idx, (unsigned long long)want, ret);
		else
			b->mapped = want;
	}
	if (d->bar_moved && b->mapped != old)
		d->bar_moved(d, idx, old, b->mapped);
}

static void cfg_write(struct hv_pci_bus *bus, struct hv_pci_dev *d,
		      unsigned off, uint32_t val, unsigned len)
{
	bool bars = false, msix = false;

	for (unsigned i = 0; i < len; i++) {
		unsigned o = off + i;
		uint8_t m = d->wmask[o], v = (uint8_t)(val >> (8 * i));

		d->cfg[o] = (d->cfg[o] & ~m) | (v & m);
		if (o >= HV_PCI_COMMAND && o < HV_PCI_COMMAND + 2)
			bars = true;
		if (o >= HV_PCI_BAR0 && o < HV_PCI_BAR0 + 24)
			bars = true;
		if (d->msix_n && o == d->msix_cap + 3u)
			msix = true;
	}
	if (bars) {
		for (unsigned i = 0; i < 6; i++)
			if (d->bar[i].size)
				bar_update(bus, d, i);
	}
	if (msix) {
		uint8_t f = d->cfg[d->msix_cap + 3];

		pthread_mutex_lock(&d->msix_lock);
		d->msix_enabled = f & (HV_PCI_MSIX_FLAGS_ENABLE >> 8);
		d->msix_maskall = f & (HV_PCI_MSIX_FLAGS_MASKALL >> 8);
		msix_unmasked(d);
		pthread_mutex_unlock(&d->msix_lock);
	}
}

/* The device the latch addresses, or NULL (another bus or function, an
 * empty slot, the enable bit clear). Config lock held. */
static struct hv_pci_dev *latched(struct hv_pci_bus *bus, unsigned *reg)
{
	uint32_t l = bus->latch;

	if (!(l & 0x80000000u) || ((l >> 16) & 0xff) || ((l >> 8) & 7))
		return NULL;
	*reg = l & 0xfc;
	return bus->slot[(l >> 11) & 0x1f];
}

static void cfg_port_read(void *opaque, uint64_t off, void *data, uint32_t len)
{
	struct hv_pci_bus *bus = opaque;
	struct hv_pci_dev *d;
	unsigned reg = 0;
	uint32_t v = 0xffffffffu;

	pthread_mutex_lock(&bus->lock);
	if (off == 0 && len == 4) {
		v = bus->latch;
	} else if (off >= 4 && off + len <= 8) {
		d = latched(bus, &reg);
		if (d)
			v = le_get(&d->cfg[reg + (off - 4)], len);
	}
	pthread_mutex_unlock(&bus->lock);
	le_put(data, v, len);
}

static void cfg_port_write(void *opaque, uint64_t off, const void *data,
			   uint32_t len)
{
	struct hv_pci_bus *bus = opaque;
	uint32_t v = le_get(data, len);
	struct hv_pci_dev *d;
	unsigned reg = 0;

	pthread_mutex_lock(&bus->lock);
	/* Only dword writes set the latch: Linux's probe writes a byte at
	 * 0xcfb (the configuration mechanism 2 test) that must not. */
	if (off == 0 && len == 4) {
		bus->latch = v & 0x80fffffcu;
	} else if (off >= 4 && off + len <= 8) {
		d = latched(bus, &reg);
		if (d)
			cfg_write(bus, d, reg + (unsigned)(off - 4), v, len);
	}
	pthread_mutex_unlock(&bus->lock);
}

static const struct hv_io_ops cfg_port_ops = {cfg_port_read, cfg_port_write};

int hv_pci_bus_create(struct hv_iobus *pio, struct hv_iobus *mmio,
		      struct hv_pci_bus **out)
{
	struct hv_pci_bus *bus = calloc(1, sizeof(*bus));
	int ret;

	if (!bus)
		return -ENOMEM;
	bus->pio = pio;
	bus->mmio = mmio;
	bus->next_mmio = HV_PCI_MMIO_BASE;
	pthread_mutex_init(&bus->lock, NULL);
	/* The host bridge: Red Hat's QEMU PCIe host bridge ID, which no
	 * Linux quirk matches; class 0600 is what the conf1 probe wants. */
	hv_pci_dev_init(&bus->host, 0x1b36, 0x0008, 0x060000, 0, 0x1af4,
			0x1100);
	bus->host.cfg[HV_PCI_INTERRUPT_PIN] = 0;
	memset(bus->host.wmask, 0, sizeof(bus->host.wmask));
	bus->slot[0] = &bus->host;
	ret = hv_iobus_register(pio, HV_PCI_CFG_PORT, HV_PCI_CFG_PORT_LEN,
				&cfg_port_ops, bus);
	if (ret) {
		pthread_mutex_destroy(&bus->host.msix_lock);
		pthread_mutex_destroy(&bus->lock);
		free(bus);
		return ret;
	}
	*out = bus;
	return 0;
}

void hv_pci_bus_destroy(struct hv_pci_bus *bus)
{
	if (!bus)
		return;
	hv_iobus_unregister(bus->pio, HV_PCI_CFG_PORT);
	pthread_mutex_destroy(&bus->host.msix_lock);
	pthread_mutex_destroy(&bus->lock);
	free(bus);
}

int hv_pci_bus_add(struct hv_pci_bus *bus, struct hv_pci_dev *d,
		   const struct hv_dev_env *env)
{
	uint64_t next;
	unsigned s;
	int ret = -ENOSPC;

	pthread_mutex_lock(&bus->lock);
	for (s = 1; s < HV_PCI_SLOTS && bus->slot[s]; s++)
		;
	if (s == HV_PCI_SLOTS)
		goto out;
	/* BAR addresses, naturally aligned, as firmware would assign them. */
	next = bus->next_mmio;
	for (unsigned i = 0; i < 6; i++) {
		uint64_t a;

		if (!d->bar[i].size)
			continue;
		a = HV_ALIGN_UP(next, d->bar[i].size);
		if (a + d->bar[i].size > HV_PCI_MMIO_BASE + HV_PCI_MMIO_SIZE)
			goto out;
		next = a + d->bar[i].size;
	}
	for (unsigned i = 0; i < 6; i++) {
		uint64_t a;

		if (!d->bar[i].size)
			continue;
		a = HV_ALIGN_UP(bus->next_mmio, d->bar[i].size);
		le_put(&d->cfg[HV_PCI_BAR0 + 4 * i],
		       (uint32_t)a | (d->bar[i].mem64 ? HV_PCI_BAR_MEM64 : 0),
		       4);
		if (d->bar[i].mem64)
			le_put(&d->cfg[HV_PCI_BAR0 + 4 * i + 4],
			       (uint32_t)(a >> 32), 4);
		bus->next_mmio = a + d->bar[i].size;
	}
	d->bus = bus;
	d->env = env;
	d->slot = s;
	d->intx_gsi = HV_PCI_INTX_GSI_BASE + s % 4;
	d->cfg[HV_PCI_INTERRUPT_LINE] = (uint8_t)d->intx_gsi;
	bus->slot[s] = d;
	ret = 0;
out:
	pthread_mutex_unlock(&bus->lock);
	return ret;
}

void hv_pci_bus_del(struct hv_pci_bus *bus, struct hv_pci_dev *d)
{
	const struct hv_dev_env *env = d->env;

	pthread_mutex_lock(&bus->lock);
	for (unsigned i = 0; i < 6; i++) {
		if (d->bar[i].mapped)
			hv_iobus_unregister(bus->mmio, d->bar[i].mapped);
		d->bar[i].mapped = 0;
	}
	if (d->slot && bus->slot[d->slot] == d)
		bus->slot[d->slot] = NULL;
	pthread_mutex_unlock(&bus->lock);
	pthread_mutex_lock(&d->msix_lock);
	for (unsigned v = 0; v < d->msix_n; v++) {
		if (d->msix[v].efd < 0)
			continue;
		env->irqfd_del(env->opaque, d->msix[v].handle);
		close(d->msix[v].efd);
		d->msix[v].efd = d->msix[v].handle = -1;
	}
	pthread_mutex_unlock(&d->msix_lock);
	pthread_mutex_destroy(&d->msix_lock);
}

uint64_t hv_pci_bar_addr(struct hv_pci_dev *d, unsigned idx)
{
	uint64_t a;

	if (!d->bus || idx >= 6)
		return 0;
	pthread_mutex_lock(&d->bus->lock);
	a = d->bar[idx].mapped;
	pthread_mutex_unlock(&d->bus->lock);
	return a;
}

void hv_pci_dev_save(struct hv_pci_dev *d, struct hv_pci_dev_state *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&d->bus->lock);
	memcpy(s->cfg, d->cfg, sizeof(s->cfg));
	pthread_mutex_unlock(&d->bus->lock);
	pthread_mutex_lock(&d->msix_lock);
	s->msix_enabled = d->msix_enabled;
	s->msix_maskall = d->msix_maskall;
	s->msix_n = d->msix_n;
	for (unsigned i = 0; i < d->msix_n; i++) {
		s->msix[i].addr_lo = d->msix[i].addr_lo;
		s->msix[i].addr_hi = d->msix[i].addr_hi;
		s->msix[i].data = d->msix[i].data;
		s->msix[i].ctrl = d->msix[i].ctrl;
	}
	s->msix_pending = d->msix_pending;
	pthread_mutex_unlock(&d->msix_lock);
}

int hv_pci_dev_load(struct hv_pci_dev *d, const struct hv_pci_dev_state *s)
{
	struct hv_pci_bus *bus = d->bus;

	/* IDs and class: the same kind of device. */
	if (memcmp(s->cfg, d->cfg, 4) ||
	    memcmp(&s->cfg[HV_PCI_CLASS_REVISION],
		   &d->cfg[HV_PCI_CLASS_REVISION], 4) ||
	    s->msix_n != d->msix_n)
		return -EINVAL;
	pthread_mutex_lock(&bus->lock);
	for (unsigned o = 0; o < sizeof(d->cfg); o++)
		d->cfg[o] = (d->cfg[o] & ~d->wmask[o]) |
			    (s->cfg[o] & d->wmask[o]);
	for (unsigned i = 0; i < 6; i++)
		if (d->bar[i].size)
			bar_update(bus, d, i);
	pthread_mutex_lock(&d->msix_lock);
	d->msix_enabled = s->msix_enabled;
	d->msix_maskall = s->msix_maskall;
	for (unsigned i = 0; i < d->msix_n; i++) {
		d->msix[i].addr_lo = s->msix[i].addr_lo;
		d->msix[i].addr_hi = s->msix[i].addr_hi;
		d->msix[i].data = s->msix[i].data;
		d->msix[i].ctrl = s->msix[i].ctrl;
	}
	d->msix_pending = s->msix_pending &
			  (d->msix_n < 64 ? (1ull << d->msix_n) - 1 : ~0ull);
	pthread_mutex_unlock(&d->msix_lock);
	pthread_mutex_unlock(&bus->lock);
	return 0;
}
