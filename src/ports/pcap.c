/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pcap:FILE — a capture file as if it were a link (docs/pcap.md).
 *
 *   pcap:in.pcap/R    rxsync reads packets from the file into the RX ring
 *   pcap:out.pcap/T   txsync appends the TX ring's packets to the file
 *
 * A file is read or written, never both. The port has one TX and one RX
 * ring in a private region (or the one @mem: names), and copies: packet
 * bytes go between the file buffer of src/capfile.c and the ring's
 * buffers, so the mode is "emulated". A record longer than one buffer
 * travels as an NS_MOREFRAG chain of consecutive slots, in both
 * directions. slot->ptr carries the packet's time stamp in nanoseconds
 * since the epoch (a pktmap extension: netmap leaves ptr to the user).
 *
 * rxsync never blocks on a regular file. At the end of the file the port
 * reports PKTMAP_INFO_EOF, which pktmap_poll() turns into POLLHUP once the
 * ring is drained; @conf:loop=1 rewinds instead. A corrupt file ends the
 * same way after the packets before the bad record, with one log line
 * naming the offset, and -EIO from the first rxsync that has nothing more
 * to deliver.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "capfile.h"
#include "check.h"
#include "copy_sync.h"
#include "log.h"
#include "name.h"
#include "port.h"
#include "region.h"
#include "util.h"

struct pcap_priv {
	struct pm_pcapr *rd;     /* RX: the file being read */
	struct pm_pcapw *wr;     /* TX: the file being written */
	bool loop;
	bool have_rec;           /* rec was read but is not in the ring yet */
	struct pm_pcap_rec rec;
	uint64_t pass_pkts;      /* packets delivered since the last rewind */
	int rx_err;              /* a read error not yet returned */
	int tx_err;              /* the writer's sticky error, once logged */
	struct iovec *iov;       /* TX: the fragments of one packet */
};

/* A name ending in ".pcapng" is written as pcapng, anything else as pcap. */
static bool wants_pcapng(const char *path)
{
	size_t n = strlen(path);
	return n >= 7 && strcmp(path + n - 7, ".pcapng") == 0;
}

static int open_file(struct pktmap_port *p, struct pcap_priv *pp,
		     const struct pm_name *nm)
{
	const struct pm_conf *c = &nm->conf;
	const char *path = nm->body;
	bool std = strcmp(path, "-") == 0; /* stdin or stdout, as libpcap */
	char err[300];
	int ret;

	if (p->dir == PKTMAP_DIR_RX) {
		if (std) {
			int fd = dup(0);
			ret = fd < 0 ? -errno :
				       pm_pcapr_open_fd(&pp->rd, fd, true, err,
							sizeof(err));
			if (fd < 0)
				snprintf(err, sizeof(err), "cannot read stdin: %s",
					 strerror(-ret));
		} else {
			ret = pm_pcapr_open(&pp->rd, path, err, sizeof(err));
		}
		if (ret == -ENOENT)
			return pm_open_error(p, ret, "%s: check the path (pcap:FILE/R "
					     "reads FILE, pcap:FILE/T writes "
					     "it)", err);
		if (ret == -EACCES)
			return pm_open_error(p, ret, "%s: make FILE readable to "
					     "you", err);
		if (ret)
			return pm_open_error(p, ret, "%s", err);
		p->linktype = pm_pcapr_linktype(pp->rd);
		return 0;
	}

	struct pm_pcapw_opts wo = {
		.format = wants_pcapng(path) ? PM_PCAP_FMT_PCAPNG : PM_PCAP_FMT_PCAP,
		.nanosec = c->nanosec != 0, /* unset (-1) means nanoseconds */
		.linktype = c->linktype ? c->linktype : 1,
	};
	if (std) {
		int fd = dup(1);
		ret = fd < 0 ? -errno : pm_pcapw_open_fd(&pp->wr, fd, true, &wo);
	} else {
		ret = pm_pcapw_open(&pp->wr, path, &wo);
	}
	if (ret == -ENOENT || ret == -EACCES)
		return pm_open_error(p, ret, "cannot create: %s: check that the "
				     "directory exists and is writable to you",
				     strerror(-ret));
	if (ret)
		return pm_open_error(p, ret, "cannot create: %s", strerror(-ret));
	p->linktype = wo.linktype;
	return 0;
}

static int pcap_open(struct pktmap_port *p, const struct pm_name *nm,
		     const struct pktmap_open_opts *o)
{
	(void)o;
	const struct pm_conf *c = &nm->conf;
	int ret;

	/* port.c has settled p->dir from "/R", "/T" and opts->dir. */
	if (p->dir == PKTMAP_DIR_BOTH)
		return pm_open_error(p, -EINVAL,
				     "a capture file is read (/R) or written (/T), "
				     "not both");
	if (nm->flags & PKTMAP_OPEN_ZEROCOPY)
		return pm_open_error(p, -EOPNOTSUPP,
				     "'/Z': a capture file is always copied "
				     "(emulated mode)");
	/* opts->rings: a name cannot say rings (pcap_conf), a program can */
	if (c->tx_rings > 1 || c->rx_rings > 1)
		return pm_open_error(p, -EINVAL,
				     "a capture file has one ring pair: open it "
				     "with one ring");

	struct pcap_priv *pp = calloc(1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	p->priv = pp;
	pp->loop = c->loop > 0;

	/* The file first: a missing file is the likeliest error. */
	ret = open_file(p, pp, nm);
	if (ret)
		return ret;

	uint32_t txs = c->tx_slots ? c->tx_slots : PM_DEFAULT_SLOTS;
	uint32_t rxs = c->rx_slots ? c->rx_slots : PM_DEFAULT_SLOTS;
	ret = pm_port_own_rings(p, c, "pcap", "pcap", 1, 1, txs, rxs);
	if (ret)
		return ret;
	p->mode = PKTMAP_MODE_EMULATED;
	/* pktmap_fd(): a file is always readable (a packet, or the end) and
	 * always writable, so the eventfd holds a count that nobody takes. */
	p->fd = eventfd(p->dir & PKTMAP_DIR_RX ? 1 : 0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->fd < 0)
		return pm_open_error(p, -errno, "cannot create an eventfd");
	pp->iov = calloc(txs, sizeof(*pp->iov));
	if (!pp->iov)
		return -ENOMEM;
	return 0;
}

/* Stop reading: at the end of the file, or at a bad record. */
static void rx_end(struct pktmap_port *p, struct pcap_priv *pp, int err)
{
	pm_info_set(p, PKTMAP_INFO_EOF);
	if (err) {
		pm_log(p, PKTMAP_LOG_ERR, "%s: %s", p->name,
		       pm_pcapr_error(pp->rd));
		pp->rx_err = -EIO;
	}
}

/* Fetch the next record into pp->rec. Returns false at the end. */
static bool rx_fetch(struct pktmap_port *p, struct pcap_priv *pp)
{
	for (;;) {
		int r = pm_pcapr_next(pp->rd, &pp->rec);
		if (pm_likely(r > 0)) {
			pp->have_rec = true;
			return true;
		}
		if (r < 0) {
			rx_end(p, pp, r);
			return false;
		}
		/* The end. Looping needs a pass that delivered something,
		 * or a file of no (deliverable) packets would spin here. */
		if (!pp->loop || !pp->pass_pkts) {
			rx_end(p, pp, 0);
			return false;
		}
		r = pm_pcapr_rewind(pp->rd);
		if (r) {
			pm_log(p, PKTMAP_LOG_ERR, "%s: cannot rewind to loop: %s",
			       p->name, r == -ESPIPE ? "not a regular file" :
						      pm_pcapr_error(pp->rd));
			rx_end(p, pp, 0);
			return false;
		}
		pp->pass_pkts = 0;
	}
}

/* Release [hwcur, head), then fill the free slots [hwtail, hwcur - 1)
 * with whole packets from the file. */
static int pcap_rxsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct pcap_priv *pp = p->priv;
	struct netmap_ring *ring = k->ring;
	const uint32_t n = k->nslots, usable = p->bs.usable;
	uint32_t j = k->hwtail;
	uint64_t pkts = 0, bytes = 0, last_ts = 0;
	int ret = 0;

	k->hwcur = k->rhead;
	uint32_t space = pm_ring_dist(j, k->hwcur ? k->hwcur - 1 : n - 1, n);

	while (space) {
		if (!pp->have_rec &&
		    ((pm_info_flags(p) & PKTMAP_INFO_EOF) || !rx_fetch(p, pp)))
			break;
		const struct pm_pcap_rec *rec = &pp->rec;
		uint32_t cl = rec->caplen;
		uint32_t need = cl ? (cl + usable - 1) / usable : 1;
		if (pm_unlikely(need > n - 1)) {
			/* Could never fit, however empty the ring. */
			pm_stat_add(&k->st->drop_too_long, 1);
			pp->have_rec = false;
			continue;
		}
		if (need > space)
			break; /* whole chains only: wait for room */
		uint32_t s = j, off = 0;
		for (uint32_t f = 0; f < need; f++) {
			struct netmap_slot *slot = &ring->slot[s];
			uint32_t idx = slot->buf_idx;
			if (pm_unlikely(!pm_buf_ok(&p->bs, idx))) {
				/* The application put a bad buffer in a slot it
				 * gave back: do not publish this packet. */
				pm_slot_reject(p, k, s, idx, 0, PM_SLOT_BAD_IDX);
				ret = -EINVAL;
				goto out;
			}
			uint32_t chunk = cl - off < usable ? cl - off : usable;
			memcpy(pm_region_buf(&p->region, idx), rec->data + off, chunk);
			slot->len = (uint16_t)chunk;
			slot->flags = f + 1 < need ? NS_MOREFRAG : 0;
			slot->ptr = rec->ts_ns;
			off += chunk;
			s = s + 1 == n ? 0 : s + 1;
		}
		j = s;
		space -= need;
		pkts++;
		bytes += cl;
		last_ts = rec->ts_ns;
		pp->have_rec = false;
		pp->pass_pkts++;
	}
out:
	k->hwtail = j;
	pm_rx_done(k, pkts, bytes, last_ts);
	if (!pkts && !ret && pp->rx_err) {
		/* Reported once, after the packets before the bad record. */
		ret = pp->rx_err;
		pp->rx_err = 0;
	}
	return ret;
}

/* Append the packets in [hwcur, head) to the file; every slot is free
 * again afterwards, except an unfinished NS_MOREFRAG chain at the end,
 * which waits for its last slot. */
static int pcap_txsync(struct pktmap_port *p, struct pm_kring *k)
{
	struct pcap_priv *pp = p->priv;
	struct netmap_ring *ring = k->ring;
	const uint32_t n = k->nslots, head = k->rhead;
	uint32_t i = k->hwcur, start = i, niov = 0;
	uint64_t pkts = 0, bytes = 0, total = 0, ts = 0, now = 0;
	bool bad = false;
	int ret = 0;

	while (i != head) {
		struct netmap_slot *slot = &ring->slot[i];
		uint32_t idx = slot->buf_idx, len = slot->len, fl = slot->flags;
		if (i == start)
			ts = slot->ptr;
		enum pm_slot_verdict v = pm_slot_check(&p->bs, idx, len, 1);
		if (pm_likely(v == PM_SLOT_OK)) {
			pp->iov[niov].iov_base = pm_region_buf(&p->region, idx);
			pp->iov[niov].iov_len = len;
			niov++;
			total += len;
		} else if (!bad) {
			/* One bad fragment drops its whole packet, counted
			 * once. */
			pm_slot_reject(p, k, i, idx, len, v);
			bad = true;
		}
		i = i + 1 == n ? 0 : i + 1;
		if (fl & NS_MOREFRAG)
			continue;
		if (!bad) {
			if (!ts)
				ts = now ? now : (now = pm_clock_ns(CLOCK_REALTIME));
			int r = pm_pcapw_writev(pp->wr, pp->iov, niov,
						total > UINT32_MAX ? UINT32_MAX :
								     (uint32_t)total,
						ts);
			if (pm_likely(r == 0)) {
				pkts++;
				bytes += total;
			} else {
				pm_stat_add(&k->st->drop_backend, 1);
				ret = r;
			}
		}
		start = i;
		niov = 0;
		total = 0;
		bad = false;
	}
	/* A chain that fills the whole ring can never be finished. */
	if (start != head && pm_ring_dist(start, head, n) == n - 1) {
		pm_stat_add(&k->st->drop_too_long, 1);
		start = head;
	}
	pm_count(k, pkts, bytes);
	k->hwcur = start;
	k->hwtail = start ? start - 1 : n - 1;
	if (ret && !pp->tx_err) {
		pp->tx_err = ret;
		pm_log(p, PKTMAP_LOG_ERR, "%s: cannot write the file: %s", p->name,
		       strerror(-ret));
	}
	/* The file is broken from here on: say so at every sync. */
	return pp->tx_err;
}

/* TX is always ready; RX while the file has packets and the ring room. */
static int pcap_poll_arm(struct pktmap_port *p, short events)
{
	if ((events & POLLOUT) && (p->dir & PKTMAP_DIR_TX))
		return 1;
	if ((events & POLLIN) && (p->dir & PKTMAP_DIR_RX) &&
	    !(pm_info_flags(p) & PKTMAP_INFO_EOF)) {
		struct pm_kring *k = pm_rxkring(p, 0);
		uint32_t n = k->nslots;
		return pm_ring_dist(k->hwtail, k->hwcur ? k->hwcur - 1 : n - 1, n) > 0;
	}
	return 0;
}

static void pcap_close(struct pktmap_port *p)
{
	struct pcap_priv *pp = p->priv;
	if (pp) {
		if (pp->wr) {
			int r = pm_pcapw_close(pp->wr);
			if (r && !pp->tx_err)
				pm_log(p, PKTMAP_LOG_ERR,
				       "%s: cannot write the file: %s", p->name,
				       strerror(-r));
		}
		pm_pcapr_close(pp->rd);
		free(pp->iov);
		free(pp);
		p->priv = NULL;
	}
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

static const struct pm_conf_key pcap_keys[] = {
	{ "loop", PM_CONF_INT, offsetof(struct pm_conf, loop), 0, 0, 1, NULL,
	  NULL, "1: a file read is replayed forever", 0 },
	{ "linktype", PM_CONF_U32, offsetof(struct pm_conf, linktype), 0, 0,
	  65535, NULL, NULL, "the link type (DLT) of a file written (default 1, "
	  "Ethernet)", 0 },
	{ "nanosec", PM_CONF_INT, offsetof(struct pm_conf, nanosec), 0, 0, 1,
	  NULL, NULL, "0: a file written has microsecond time stamps (default "
	  "nanoseconds)", 0 },
	{ NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, 0 },
};

/* A capture file has one ring pair: no rings keys. */
static const struct pm_conf_keys pcap_conf = {
	.common = PM_CK_ALL & ~PM_CK_RINGS,
	.own = pcap_keys,
};

const struct pm_port_ops pm_pcap_ops = {
	.desc = {
		.name = "pcap",
		.syntax = "pcap:FILE/R | pcap:FILE/T",
		.mode = "emulated",
		.summary = "read (/R) or write (/T) a pcap or pcapng file as if it "
			   "were a link",
	},
	.caps = PM_CAP_PATH |
		PM_CAP_FD_EXACT,
	.conf = &pcap_conf,
	.open = pcap_open,
	.txsync = pcap_txsync,
	.rxsync = pcap_rxsync,
	.poll_arm = pcap_poll_arm,
	.close = pcap_close,
};
