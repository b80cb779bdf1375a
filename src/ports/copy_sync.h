/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The end of an rxsync, shared by the back ends that fill RX slots
 * themselves (packet_rx.c, tap.c, pcap.c).
 */
#ifndef PKTMAP_PORTS_RX_DONE_H
#define PKTMAP_PORTS_RX_DONE_H

#include "internal.h"

/* An rxsync delivered `pkts` packets of `bytes` bytes, the newest
 * stamped `ts_ns` (ns since the epoch): count them, and give the ring
 * that time as netmap does (ring->ts). Nothing when none came. */
static inline void pm_rx_done(struct pm_kring *k, uint64_t pkts,
			      uint64_t bytes, uint64_t ts_ns)
{
	if (!pkts)
		return;
	pm_count(k, pkts, bytes);
	k->ring->ts.tv_sec = (time_t)(ts_ns / 1000000000ull);
	k->ring->ts.tv_usec = (suseconds_t)(ts_ns % 1000000000ull / 1000);
}

#endif /* PKTMAP_PORTS_RX_DONE_H */
