/* SPDX-License-Identifier: BSD-2-Clause
 *
 * netmap's user-visible data structures (netmap API 14), byte for byte.
 *
 * A port exposes one `struct netmap_if`, which lists its rings by offset;
 * each `struct netmap_ring` is followed by its slots; each slot names a
 * buffer of the port's region by index. Everything is an offset or an
 * index, never a pointer, so a region can be mapped at a different address
 * in every process that shares it. tests/unit/test_abi.c pins every offset.
 *
 * The ring protocol (see netmap(4)):
 *
 *                head          cur                tail
 *                 v             v                  v
 *   RX ring: .....[ owned by the application .......)[ owned by pktmap ]...
 *   TX ring: .....[ free slots the application fills )[ in flight ]......
 *
 *  - RX: slots [head, tail) hold received packets and belong to the
 *    application; moving head forward gives them back at the next sync.
 *  - TX: slots [head, tail) are free for the application; moving head
 *    forward submits the slots before it at the next sync.
 *  - cur may run ahead of head (up to tail): "wake me only when more than
 *    [head, cur) is available".
 *  - One slot is always left empty, so head == tail means "nothing".
 *  - pktmap touches a ring only inside a sync call (pktmap_txsync,
 *    pktmap_rxsync, pktmap_poll); between calls the application owns it.
 */
#ifndef PKTMAP_NETMAP_H
#define PKTMAP_NETMAP_H

#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>

#define NETMAP_API 14
#define NETMAP_MIN_API 14
#define NETMAP_MAX_API 15

#ifndef IFNAMSIZ
#define IFNAMSIZ 16
#endif

#define NM_CACHE_ALIGN 128

/* One packet (or one fragment of it) in a ring. 16 bytes. */
struct netmap_slot {
	uint32_t buf_idx; /* index of the buffer in the region's pool */
	uint16_t len;     /* bytes of packet in the buffer */
	uint16_t flags;   /* NS_* below */
	uint64_t ptr;     /* NS_INDIRECT: user address; pktmap RX: timestamp, ns */
};

/* The application changed buf_idx: pktmap must reload its mapping. pktmap
 * also sets it on slots whose buffer it swapped. */
#define NS_BUF_CHANGED 0x0001
/* Ask for a completion report for this slot (honoured as a hint). */
#define NS_REPORT 0x0002
/* On a host ring with NR_FORWARD: pass the packet to the other side. */
#define NS_FORWARD 0x0004
/* Do not let the software switch learn the source of this packet. */
#define NS_NO_LEARN 0x0008
/* ptr holds the address of the data instead of buf_idx (TX only). */
#define NS_INDIRECT 0x0010
/* More fragments of the same packet follow in the next slot. */
#define NS_MOREFRAG 0x0020
/* Packet seen on TX by a monitor. */
#define NS_TXMON 0x0040

#define NS_PORT_SHIFT 8
#define NS_PORT_MASK (0xff << NS_PORT_SHIFT)
#define NS_RFRAGS(_slot) (((_slot)->flags >> 8) & 0xff)

/* A ring of slots, followed in memory by `num_slots` slots. */
struct netmap_ring {
	const int64_t buf_ofs;       /* buffer pool, relative to this ring */
	const uint32_t num_slots;    /* number of slots in the ring */
	const uint32_t nr_buf_size;  /* stride between buffers */
	const uint16_t ringid;
	const uint16_t dir;          /* 0: tx, 1: rx */

	uint32_t head; /* first slot owned by the application */
	uint32_t cur;  /* wake-up point, head <= cur <= tail */
	uint32_t tail; /* first slot owned by pktmap (read-only) */

	uint32_t flags; /* NR_* below */

	struct timeval ts; /* time of the last rxsync */

	const uint64_t offset_mask;
	const uint64_t buf_align;

	/* opaque room for a mutex or similar object */
	uint8_t __attribute__((__aligned__(NM_CACHE_ALIGN))) sem[128];

	struct netmap_slot slot[0]; /* the slots follow */
};

#define NR_TIMESTAMP 0x0002 /* set ts at every rxsync */
#define NR_FORWARD 0x0004   /* honour NS_FORWARD on host rings */

enum { NR_TX = 0, NR_RX = 1 };

/* The interface descriptor: names the port and lists its rings. */
struct netmap_if {
	char ni_name[IFNAMSIZ];
	const uint32_t ni_version;
	const uint32_t ni_flags;
#define NI_PRIV_MEM 0x1

	const uint32_t ni_tx_rings;
	const uint32_t ni_rx_rings;

	uint32_t ni_bufs_head; /* list of extra buffers, linked by first word */
	const uint32_t ni_host_tx_rings;
	const uint32_t ni_host_rx_rings;
	uint32_t ni_spare1[3];
	/* Offsets of the rings from this structure, in the order NIC tx,
	 * host tx, NIC rx, host rx. */
	const ssize_t ring_ofs[0];
};

/* Registration modes of netmap's nmreq, used by pktmap_info. */
enum {
	NR_REG_DEFAULT = 0,
	NR_REG_ALL_NIC = 1,
	NR_REG_SW = 2,
	NR_REG_NIC_SW = 3,
	NR_REG_ONE_NIC = 4,
	NR_REG_PIPE_MASTER = 5,
	NR_REG_PIPE_SLAVE = 6,
	NR_REG_NULL = 7,
	NR_REG_ONE_SW = 8,
};

#endif /* PKTMAP_NETMAP_H */
