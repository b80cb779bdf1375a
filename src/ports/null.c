/* SPDX-License-Identifier: BSD-2-Clause
 *
 * null: swallows TX (counted, checked, never copied), produces no RX.
 * What a generator achieves into null: is pktmap's own cost per packet.
 */
#include <poll.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "check.h"
#include "log.h"
#include "name.h"
#include "port.h"
#include "util.h"

static int null_open(struct pktmap_port *p, const struct pm_name *nm,
		     const struct pktmap_open_opts *o)
{
	(void)o;
	const struct pm_conf *c = &nm->conf;
	uint32_t ntx = c->tx_rings ? c->tx_rings : 1;
	uint32_t nrx = c->rx_rings ? c->rx_rings : 1;
	uint32_t txs = c->tx_slots ? c->tx_slots : PM_DEFAULT_SLOTS;
	uint32_t rxs = c->rx_slots ? c->rx_slots : PM_DEFAULT_SLOTS;
	int ret = pm_port_own_rings(p, c, "null", "null", ntx, nrx, txs, rxs);
	if (ret)
		return ret;
	p->mode = PKTMAP_MODE_ZEROCOPY;
	p->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->fd < 0)
		return pm_open_error(p, -errno, "cannot create an eventfd");
	return 0;
}

/* Check and count every submitted slot, then free them all at once. */
static int null_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct netmap_ring *ring = k->ring;
	uint32_t n = k->nslots, i = k->hwcur, head = k->rhead;
	uint64_t pkts = 0, bytes = 0;

	while (i != head) {
		const struct netmap_slot *s = &ring->slot[i];
		uint32_t idx = s->buf_idx, len = s->len;
		enum pm_slot_verdict v = pm_slot_check(&p->bs, idx, len, 1);
		if (pm_likely(v == PM_SLOT_OK)) {
			pkts += !(s->flags & NS_MOREFRAG);
			bytes += len;
		} else {
			pm_slot_reject(p, k, i, idx, len, v);
		}
		i = i + 1 == n ? 0 : i + 1;
	}
	pm_count(k, pkts, bytes);
	k->hwcur = head;
	k->hwtail = head == 0 ? n - 1 : head - 1;
	return 0;
}

static int null_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	(void)p;
	k->hwcur = k->rhead;
	return 0;
}

static int null_poll_arm(struct pktmap_port *p, short events)
{
	(void)p;
	return (events & POLLOUT) != 0;
}

static void null_close(struct pktmap_port *p)
{
	if (p->fd >= 0)
		close(p->fd);
}

/* The common keys, all of them. */
static const struct pm_conf_keys null_conf = { .common = PM_CK_ALL };

const struct pm_port_ops pm_null_ops = {
	.desc = {
		.name = "null",
		.syntax = "null:",
		.mode = "zerocopy",
		.summary = "swallows TX, produces no RX: measures pktmap's own cost",
	},
	.caps = PM_CAP_EMPTY_BODY | PM_CAP_ONE_RING | PM_CAP_ZEROCOPY |
		PM_CAP_FD_EXACT,
	.conf = &null_conf,
	.open = null_open,
	.txsync = null_txsync,
	.rxsync = null_rxsync,
	.poll_arm = null_poll_arm,
	.close = null_close,
};
