// SPDX-License-Identifier: BSD-2-Clause
/* Pins netmap's user-visible layout (API 14), field by field. */
#include <stddef.h>
#include <string.h>

#include "pktmap/netmap_user.h"
#include "pktmap/pktmap.h"
#include "t.h"

#define OFF(type, field, want) CHECK_EQ(offsetof(struct type, field), want)
#define SIZE(type, field, want) CHECK_EQ(sizeof(((struct type *)0)->field), want)

int main(void)
{
	CHECK_EQ(sizeof(struct netmap_slot), 16);
	OFF(netmap_slot, buf_idx, 0); SIZE(netmap_slot, buf_idx, 4);
	OFF(netmap_slot, len, 4);     SIZE(netmap_slot, len, 2);
	OFF(netmap_slot, flags, 6);   SIZE(netmap_slot, flags, 2);
	OFF(netmap_slot, ptr, 8);     SIZE(netmap_slot, ptr, 8);

	OFF(netmap_ring, buf_ofs, 0);      SIZE(netmap_ring, buf_ofs, 8);
	OFF(netmap_ring, num_slots, 8);    SIZE(netmap_ring, num_slots, 4);
	OFF(netmap_ring, nr_buf_size, 12); SIZE(netmap_ring, nr_buf_size, 4);
	OFF(netmap_ring, ringid, 16);      SIZE(netmap_ring, ringid, 2);
	OFF(netmap_ring, dir, 18);         SIZE(netmap_ring, dir, 2);
	OFF(netmap_ring, head, 20);        SIZE(netmap_ring, head, 4);
	OFF(netmap_ring, cur, 24);         SIZE(netmap_ring, cur, 4);
	OFF(netmap_ring, tail, 28);        SIZE(netmap_ring, tail, 4);
	OFF(netmap_ring, flags, 32);       SIZE(netmap_ring, flags, 4);
	OFF(netmap_ring, ts, 40);          SIZE(netmap_ring, ts, 16);
	OFF(netmap_ring, offset_mask, 56); SIZE(netmap_ring, offset_mask, 8);
	OFF(netmap_ring, buf_align, 64);   SIZE(netmap_ring, buf_align, 8);
	OFF(netmap_ring, sem, 128);        SIZE(netmap_ring, sem, 128);
	OFF(netmap_ring, slot, 256);
	CHECK_EQ(sizeof(struct netmap_ring), 256);

	OFF(netmap_if, ni_name, 0);           SIZE(netmap_if, ni_name, 16);
	OFF(netmap_if, ni_version, 16);
	OFF(netmap_if, ni_flags, 20);
	OFF(netmap_if, ni_tx_rings, 24);
	OFF(netmap_if, ni_rx_rings, 28);
	OFF(netmap_if, ni_bufs_head, 32);
	OFF(netmap_if, ni_host_tx_rings, 36);
	OFF(netmap_if, ni_host_rx_rings, 40);
	OFF(netmap_if, ni_spare1, 44);        SIZE(netmap_if, ni_spare1, 12);
	OFF(netmap_if, ring_ofs, 56);
	CHECK_EQ(sizeof(struct netmap_if), 56);

	CHECK_EQ(NS_BUF_CHANGED, 0x1);
	CHECK_EQ(NS_REPORT, 0x2);
	CHECK_EQ(NS_FORWARD, 0x4);
	CHECK_EQ(NS_NO_LEARN, 0x8);
	CHECK_EQ(NS_INDIRECT, 0x10);
	CHECK_EQ(NS_MOREFRAG, 0x20);
	CHECK_EQ(NS_TXMON, 0x40);
	CHECK_EQ(NR_TIMESTAMP, 0x2);
	CHECK_EQ(NR_FORWARD, 0x4);
	CHECK_EQ(NETMAP_API, 14);

	/* The control requests of API 14 and the legacy nmreq. */
	CHECK_EQ(sizeof(struct nmreq_option), 24);
	OFF(nmreq_option, nro_next, 0); OFF(nmreq_option, nro_reqtype, 8);
	OFF(nmreq_option, nro_status, 12); OFF(nmreq_option, nro_size, 16);
	CHECK_EQ(sizeof(struct nmreq_header), 88);
	OFF(nmreq_header, nr_version, 0); OFF(nmreq_header, nr_reqtype, 2);
	OFF(nmreq_header, nr_reserved, 4); OFF(nmreq_header, nr_name, 8);
	SIZE(nmreq_header, nr_name, 64);
	OFF(nmreq_header, nr_options, 72); OFF(nmreq_header, nr_body, 80);
	CHECK_EQ(sizeof(struct nmreq_register), 56);
	OFF(nmreq_register, nr_offset, 0); OFF(nmreq_register, nr_memsize, 8);
	OFF(nmreq_register, nr_tx_slots, 16); OFF(nmreq_register, nr_rx_slots, 20);
	OFF(nmreq_register, nr_tx_rings, 24); OFF(nmreq_register, nr_rx_rings, 26);
	OFF(nmreq_register, nr_host_tx_rings, 28);
	OFF(nmreq_register, nr_host_rx_rings, 30);
	OFF(nmreq_register, nr_mem_id, 32); OFF(nmreq_register, nr_ringid, 34);
	OFF(nmreq_register, nr_mode, 36); OFF(nmreq_register, nr_extra_bufs, 40);
	OFF(nmreq_register, nr_flags, 48);
	CHECK_EQ(sizeof(struct nmreq_port_info_get), 32);
	OFF(nmreq_port_info_get, nr_memsize, 0);
	OFF(nmreq_port_info_get, nr_tx_slots, 8);
	OFF(nmreq_port_info_get, nr_tx_rings, 16);
	OFF(nmreq_port_info_get, nr_host_tx_rings, 20);
	OFF(nmreq_port_info_get, nr_mem_id, 24);
	CHECK_EQ(sizeof(struct nmreq_port_hdr), 8);
	CHECK_EQ(sizeof(struct nmreq_vale_attach), 64);
	OFF(nmreq_vale_attach, port_index, 56);
	CHECK_EQ(sizeof(struct nmreq_vale_detach), 8);
	CHECK_EQ(sizeof(struct nmreq_vale_list), 8);
	OFF(nmreq_vale_list, nr_port_idx, 4);
	CHECK_EQ(sizeof(struct nmreq_vale_newif), 16);
	OFF(nmreq_vale_newif, nr_tx_rings, 8);
	OFF(nmreq_vale_newif, nr_mem_id, 12);
	CHECK_EQ(sizeof(struct nmreq_vale_polling), 16);
	OFF(nmreq_vale_polling, nr_num_polling_cpus, 8);
	CHECK_EQ(NETMAP_POLLING_MODE_MULTI_CPU, 2);
	CHECK_EQ(sizeof(struct nmreq_pools_info), 64);
	OFF(nmreq_pools_info, nr_mem_id, 8);
	OFF(nmreq_pools_info, nr_if_pool_offset, 16);
	OFF(nmreq_pools_info, nr_ring_pool_offset, 32);
	OFF(nmreq_pools_info, nr_buf_pool_offset, 48);
	OFF(nmreq_pools_info, nr_buf_pool_objsize, 60);
	CHECK_EQ(sizeof(struct nmreq_opt_extmem), 96);
	OFF(nmreq_opt_extmem, nro_usrptr, 24);
	CHECK_EQ(sizeof(struct nmreq_opt_offsets), 48);
	OFF(nmreq_opt_offsets, nro_max_offset, 24);
	OFF(nmreq_opt_offsets, nro_initial_offset, 32);
	OFF(nmreq_opt_offsets, nro_offset_bits, 40);
	OFF(nmreq_opt_offsets, nro_min_gap, 44);
	CHECK_EQ(sizeof(struct nmreq), 60);
	OFF(nmreq, nr_version, 16); OFF(nmreq, nr_offset, 20);
	OFF(nmreq, nr_memsize, 24); OFF(nmreq, nr_tx_rings, 36);
	OFF(nmreq, nr_ringid, 40); OFF(nmreq, nr_cmd, 42);
	OFF(nmreq, nr_arg1, 44); OFF(nmreq, nr_arg2, 46);
	OFF(nmreq, nr_arg3, 48); OFF(nmreq, nr_flags, 52);
	/* netmap's ioctl numbers, as its module decodes them. */
	CHECK_EQ(NIOCCTRL, 0xc0586997UL);
	CHECK_EQ(NIOCTXSYNC, 0x6994);
	CHECK_EQ(NIOCRXSYNC, 0x6995);
	CHECK_EQ(NIOCGINFO, 0xc03c6991UL);
	CHECK_EQ(NIOCREGIF, 0xc03c6992UL);
	CHECK_EQ(NETMAP_REQ_REGISTER, 1);
	CHECK_EQ(NETMAP_REQ_PORT_INFO_GET, 2);
	CHECK_EQ(NETMAP_REQ_PORT_HDR_GET, 7);
	CHECK_EQ(NETMAP_REQ_POOLS_INFO_GET, 12);
	CHECK_EQ(NETMAP_REQ_CSB_ENABLE, 15);
	CHECK_EQ(NETMAP_REQ_OPT_EXTMEM, 1);
	CHECK_EQ(NETMAP_REQ_OPT_CSB, 3);
	CHECK_EQ(NETMAP_REQ_OPT_OFFSETS, 5);
	CHECK_EQ(NR_REG_ONE_SW, 8);
	CHECK_EQ(NR_EXCLUSIVE, 0x800);
	CHECK_EQ(NR_RX_RINGS_ONLY, 0x2000);
	CHECK_EQ(NR_TX_RINGS_ONLY, 0x4000);
	CHECK_EQ(NR_ACCEPT_VNET_HDR, 0x8000);
	CHECK_EQ(NR_NO_TX_POLL, 0x20000);

	/* The inline helpers on a hand-made ring. */
	static union {
		struct netmap_ring r;
		char raw[256 + 8 * 16];
	} u;
	memset(&u, 0, sizeof(u));
	*(uint32_t *)&u.r.num_slots = 8;
	*(uint32_t *)&u.r.nr_buf_size = 2048;
	*(int64_t *)&u.r.buf_ofs = 4096;
	struct netmap_ring *r = &u.r;
	CHECK_EQ(nm_ring_next(r, 0), 1);
	CHECK_EQ(nm_ring_next(r, 7), 0);
	r->head = r->cur = 6; r->tail = 2;
	CHECK_EQ(nm_ring_space(r), 4);
	CHECK(!nm_ring_empty(r), "not empty");
	/* Counted from head, as netmap does: cur ahead changes nothing. */
	r->cur = 1;
	CHECK_EQ(nm_ring_space(r), 4);
	CHECK(!nm_ring_empty(r), "cur at tail, head before it: not empty");
	r->head = 2;
	CHECK(nm_ring_empty(r), "empty at head == tail");
	CHECK_EQ(nm_ring_space(r), 0);
	r->head = 3; r->tail = 2;
	CHECK(!nm_tx_pending(r), "all free: nothing pending");
	r->tail = 5;
	CHECK(nm_tx_pending(r), "pending");
	char *b = NETMAP_BUF(r, 5);
	CHECK_EQ(b - (char *)r, 4096 + 5 * 2048);
	CHECK_EQ(NETMAP_BUF_IDX(r, b), 5);

	/* NETMAP_TXRING / NETMAP_RXRING index ring_ofs in the documented
	 * order: NIC tx, host tx, NIC rx, host rx. */
	static union {
		struct netmap_if nif;
		char raw[56 + 6 * 8];
	} v;
	*(uint32_t *)&v.nif.ni_tx_rings = 2;
	*(uint32_t *)&v.nif.ni_host_tx_rings = 1;
	*(uint32_t *)&v.nif.ni_rx_rings = 2;
	for (int i = 0; i < 6; i++)
		*(ssize_t *)&v.nif.ring_ofs[i] = 1000 * (i + 1);
	CHECK_EQ((char *)NETMAP_TXRING(&v.nif, 1) - (char *)&v.nif, 2000);
	CHECK_EQ((char *)NETMAP_TXRING(&v.nif, 2) - (char *)&v.nif, 3000);
	CHECK_EQ((char *)NETMAP_RXRING(&v.nif, 0) - (char *)&v.nif, 4000);
	CHECK_EQ((char *)NETMAP_RXRING(&v.nif, 2) - (char *)&v.nif, 6000);
	return t_done("abi");
}
