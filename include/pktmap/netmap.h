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
#include <sys/ioctl.h>
#include <sys/types.h>

#define NETMAP_API 14
#define NETMAP_MIN_API 14
#define NETMAP_MAX_API 15

#include <net/if.h> /* IFNAMSIZ, as netmap's headers have it */
#ifndef IFNAMSIZ /* strict ISO C: glibc gives the POSIX name only */
#define IFNAMSIZ IF_NAMESIZE
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* netmap's ABI, not a cache line size: sem[] (and so slot[]) is at
 * offset 128 of every netmap_ring whatever the machine's cache line
 * (PKTMAP_CACHELINE in pktmap.h). tests/unit/test_abi.c pins it. */
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

/* Nothing available from head on: no received packet (RX), no free slot
 * (TX). Counted from head, as netmap does (cur is only a wake-up point). */
static inline int nm_ring_empty(const struct netmap_ring *ring)
{
	return ring->head == ring->tail;
}

/* ------------------------------------------------------------------ */
/* The control requests (netmap API 14): what a program hands the netmap
 * device with ioctl(NIOCCTRL) and the legacy NIOCREGIF/NIOCGINFO. pktmap's
 * netmap compatibility (compat/netmap, docs/netmap.md) serves them over
 * pktmap ports; tests/unit/test_abi.c pins their layout. */

/* How large a request with its options may be. */
#define NETMAP_REQ_MAXSIZE 4096

/* An option, chained from nmreq_header.nr_options by address. */
struct nmreq_option {
	uint64_t nro_next;    /* address of the next option, 0 ends the chain */
	uint32_t nro_reqtype; /* NETMAP_REQ_OPT_* */
	uint32_t nro_status;  /* out: 0 if honoured, else an errno */
	uint64_t nro_size;    /* size of options that carry arrays, else 0 */
};

/* Every NIOCCTRL request starts with this. */
struct nmreq_header {
	uint16_t nr_version; /* NETMAP_API; out: the version served */
	uint16_t nr_reqtype; /* NETMAP_REQ_* */
	uint32_t nr_reserved; /* zero */
#define NETMAP_REQ_IFNAMSIZ 64
	char nr_name[NETMAP_REQ_IFNAMSIZ]; /* "eth0", "p{1", "vale0:a", ... */
	uint64_t nr_options; /* address of the first nmreq_option, or 0 */
	uint64_t nr_body;    /* address of the request's body */
};

/* nr_reqtype values. */
enum {
	NETMAP_REQ_REGISTER = 1,       /* body: nmreq_register */
	NETMAP_REQ_PORT_INFO_GET,      /* body: nmreq_port_info_get */
	NETMAP_REQ_VALE_ATTACH,
	NETMAP_REQ_VALE_DETACH,
	NETMAP_REQ_VALE_LIST,
	NETMAP_REQ_PORT_HDR_SET,       /* body: nmreq_port_hdr */
	NETMAP_REQ_PORT_HDR_GET,       /* body: nmreq_port_hdr */
	NETMAP_REQ_VALE_NEWIF,
	NETMAP_REQ_VALE_DELIF,
	NETMAP_REQ_VALE_POLLING_ENABLE,
	NETMAP_REQ_VALE_POLLING_DISABLE,
	NETMAP_REQ_POOLS_INFO_GET,     /* body: nmreq_pools_info */
	NETMAP_REQ_SYNC_KLOOP_START,
	NETMAP_REQ_SYNC_KLOOP_STOP,
	NETMAP_REQ_CSB_ENABLE,
};

/* nro_reqtype values. */
enum {
	NETMAP_REQ_OPT_EXTMEM = 1,         /* nmreq_opt_extmem */
	NETMAP_REQ_OPT_SYNC_KLOOP_EVENTFDS,
	NETMAP_REQ_OPT_CSB,                /* nmreq_opt_csb */
	NETMAP_REQ_OPT_SYNC_KLOOP_MODE,
	NETMAP_REQ_OPT_OFFSETS,            /* nmreq_opt_offsets */
	NETMAP_REQ_OPT_MAX,
};

/* NETMAP_REQ_REGISTER: bind the port named in the header to this file
 * descriptor. Ring and slot counts are wishes in, facts out. */
struct nmreq_register {
	uint64_t nr_offset;  /* out: the netmap_if, from the mapping's start */
	uint64_t nr_memsize; /* out: bytes to mmap() */
	uint32_t nr_tx_slots;
	uint32_t nr_rx_slots;
	uint16_t nr_tx_rings;
	uint16_t nr_rx_rings;
	uint16_t nr_host_tx_rings;
	uint16_t nr_host_rx_rings;
	uint16_t nr_mem_id;  /* in: wanted memory (0: any); out: the one used */
	uint16_t nr_ringid;  /* the ring of NR_REG_ONE_NIC / NR_REG_ONE_SW */
	uint32_t nr_mode;    /* NR_REG_* */
	uint32_t nr_extra_bufs; /* in: wanted; out: linked from ni_bufs_head */
	uint64_t nr_flags;   /* NR_* below */
#define NR_MONITOR_TX 0x100
#define NR_MONITOR_RX 0x200
#define NR_ZCOPY_MON 0x400
#define NR_EXCLUSIVE 0x800      /* nobody else may bind these rings */
#define NR_RX_RINGS_ONLY 0x2000 /* "/R" */
#define NR_TX_RINGS_ONLY 0x4000 /* "/T" */
#define NR_ACCEPT_VNET_HDR 0x8000
#define NR_DO_RX_POLL 0x10000   /* poll() syncs RX even without POLLIN */
#define NR_NO_TX_POLL 0x20000   /* poll() syncs TX only for POLLOUT */
};

/* Which rings nr_mode binds. */
enum {
	NR_REG_DEFAULT = 0,
	NR_REG_ALL_NIC = 1,     /* every NIC ring pair */
	NR_REG_SW = 2,          /* the host rings ("^") */
	NR_REG_NIC_SW = 3,      /* both ("*") */
	NR_REG_ONE_NIC = 4,     /* ring pair nr_ringid ("-N") */
	NR_REG_PIPE_MASTER = 5, /* old form of "NAME{N" */
	NR_REG_PIPE_SLAVE = 6,  /* old form of "NAME}N" */
	NR_REG_NULL = 7,        /* no rings, only the memory */
	NR_REG_ONE_SW = 8,      /* host ring pair nr_ringid ("^N") */
};

/* NETMAP_REQ_PORT_INFO_GET: what REGISTER would give, without binding. */
struct nmreq_port_info_get {
	uint64_t nr_memsize;
	uint32_t nr_tx_slots;
	uint32_t nr_rx_slots;
	uint16_t nr_tx_rings;
	uint16_t nr_rx_rings;
	uint16_t nr_host_tx_rings;
	uint16_t nr_host_rx_rings;
	uint16_t nr_mem_id;
	uint16_t pad[3];
};

#define NM_BDG_NAME "vale"

/* vale-ctl's requests (NETMAP_REQ_VALE_*), served by a running `pktmap
 * switch` (docs/netmap.md). The switch and port are in nr_name
 * ("vale0:eth1"; NEWIF and DELIF: the persistent port's name alone). */
struct nmreq_vale_attach {     /* NETMAP_REQ_VALE_ATTACH */
	struct nmreq_register reg; /* nr_mode NR_REG_NIC_SW: host rings too */
	uint32_t port_index;       /* out */
	uint32_t pad1;
};

struct nmreq_vale_detach {     /* NETMAP_REQ_VALE_DETACH */
	uint32_t port_index;       /* out */
	uint32_t pad1;
};

/* NETMAP_REQ_VALE_LIST: with nr_name "valeX:Y", where Y is; with an empty
 * nr_name, the first port at or after (nr_bridge_idx, nr_port_idx), its
 * name returned in nr_name (ENOENT after the last). */
struct nmreq_vale_list {
	uint16_t nr_bridge_idx;
	uint16_t pad1;
	uint32_t nr_port_idx;
};

struct nmreq_vale_newif {      /* NETMAP_REQ_VALE_NEWIF */
	uint32_t nr_tx_slots;
	uint32_t nr_rx_slots;
	uint16_t nr_tx_rings;
	uint16_t nr_rx_rings;
	uint16_t nr_mem_id;
	uint16_t pad1;
};

struct nmreq_vale_polling {    /* NETMAP_REQ_VALE_POLLING_ENABLE/DISABLE */
	uint32_t nr_mode;
#define NETMAP_POLLING_MODE_SINGLE_CPU 1
#define NETMAP_POLLING_MODE_MULTI_CPU 2
	uint32_t nr_first_cpu_id;
	uint32_t nr_num_polling_cpus;
	uint32_t pad1;
};

/* NETMAP_REQ_PORT_HDR_SET / _GET: the virtio-net header length. */
struct nmreq_port_hdr {
	uint32_t nr_hdr_len;
	uint32_t pad1;
};

/* NETMAP_REQ_POOLS_INFO_GET: the layout of a memory. */
struct nmreq_pools_info {
	uint64_t nr_memsize;
	uint16_t nr_mem_id;
	uint16_t pad1[3];
	uint64_t nr_if_pool_offset;
	uint32_t nr_if_pool_objtotal;
	uint32_t nr_if_pool_objsize;
	uint64_t nr_ring_pool_offset;
	uint32_t nr_ring_pool_objtotal;
	uint32_t nr_ring_pool_objsize;
	uint64_t nr_buf_pool_offset;
	uint32_t nr_buf_pool_objtotal;
	uint32_t nr_buf_pool_objsize;
};

/* NETMAP_REQ_OPT_EXTMEM: memory the application provides. */
struct nmreq_opt_extmem {
	struct nmreq_option nro_opt;
	uint64_t nro_usrptr;
	struct nmreq_pools_info nro_info;
};

/* NETMAP_REQ_OPT_CSB: head/cur/tail exchanged through user memory. */
struct nmreq_opt_csb {
	struct nmreq_option nro_opt;
	uint64_t csb_atok;
	uint64_t csb_ktoa;
};

/* NETMAP_REQ_OPT_OFFSETS: part of slot->ptr carries where the packet
 * starts in its buffer (NETMAP_ROFFSET / NETMAP_WOFFSET). */
struct nmreq_opt_offsets {
	struct nmreq_option nro_opt;
	uint64_t nro_max_offset;     /* largest offset the program will use */
	uint64_t nro_initial_offset; /* written into every slot at bind */
	uint32_t nro_offset_bits;    /* low bits of ptr holding the offset */
	uint32_t nro_min_gap;
};

/* The ioctls, with netmap's numbers ('i' 145..151). NIOCTXSYNC and
 * NIOCRXSYNC take no argument and never block. */
#define NIOCCTRL _IOWR('i', 151, struct nmreq_header)
#define NIOCTXSYNC _IO('i', 148)
#define NIOCRXSYNC _IO('i', 149)

/* The request of API 11..13, still accepted through NIOCREGIF/NIOCGINFO. */
struct nmreq {
	char nr_name[IFNAMSIZ];
	uint32_t nr_version;
	uint32_t nr_offset;
	uint32_t nr_memsize;
	uint32_t nr_tx_slots;
	uint32_t nr_rx_slots;
	uint16_t nr_tx_rings;
	uint16_t nr_rx_rings;
	uint16_t nr_ringid;
#define NETMAP_HW_RING 0x4000
#define NETMAP_SW_RING 0x2000
#define NETMAP_RING_MASK 0x0fff
#define NETMAP_NO_TX_POLL 0x1000
#define NETMAP_DO_RX_POLL 0x8000
	uint16_t nr_cmd;     /* NETMAP_BDG_* and friends; 0 to register */
#define NETMAP_BDG_ATTACH 1
#define NETMAP_BDG_DETACH 2
#define NETMAP_BDG_REGOPS 3
#define NETMAP_BDG_LIST 4
#define NETMAP_BDG_VNET_HDR 5
#define NETMAP_BDG_NEWIF 6
#define NETMAP_BDG_DELIF 7
#define NETMAP_PT_HOST_CREATE 8
#define NETMAP_PT_HOST_DELETE 9
#define NETMAP_BDG_POLLING_ON 10
#define NETMAP_BDG_POLLING_OFF 11
#define NETMAP_VNET_HDR_GET 12
#define NETMAP_POOLS_INFO_GET 13
	uint16_t nr_arg1;
#define NETMAP_BDG_HOST 1
	uint16_t nr_arg2;    /* memory id */
	uint32_t nr_arg3;    /* extra buffers */
	uint32_t nr_flags;   /* NR_REG_* in the low bits, NR_* flags above */
#define NR_REG_MASK 0xf
	uint32_t spare2[1];
};

#define NIOCGINFO _IOWR('i', 145, struct nmreq)
#define NIOCREGIF _IOWR('i', 146, struct nmreq)

#ifdef __cplusplus
}
#endif

#endif /* PKTMAP_NETMAP_H */
