/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap's libpcap-compatible library: internal declarations.
 *
 * The library exports the whole libpcap 1.10 API under libpcap's own
 * names. A pcap_t it returns is one of two things:
 *
 *   - a *live handle* of ours (struct pmc), for a device name that is a
 *     pktmap port ("xdp:eth0", "pkt:eth0", "pipe:x}0", or a plain
 *     interface name mapped by PKTMAP_PCAP_MAP). These live in one arena
 *     mapped by this library, so "is this pcap_t ours?" is a range check
 *     on the pointer, never a read of memory the real libpcap owns;
 *   - a pcap_t of the system libpcap (offline files, pcap_open_dead(),
 *     live captures on names we do not serve), passed through untouched:
 *     every call on it goes to the real function.
 *
 * The system libpcap is loaded with dlopen() by its full path (it has the
 * same soname as this library) with RTLD_DEEPBIND, so its internal calls
 * stay inside it. It compiles filters (on a pcap_open_dead() handle with
 * our link type and snapshot length), runs them (bpf_filter()) and writes
 * dump files, exactly as for a capture of its own.
 */
#ifndef PKTMAP_COMPAT_PCAP_H
#define PKTMAP_COMPAT_PCAP_H

#include <pcap/pcap.h>
#include <pcap/namedb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <pktmap/pktmap.h>

#define PMC_EXPORT __attribute__((visibility("default")))

/* The real libpcap's functions this library calls: every exported one. */
#define PMC_REAL_SYMS(X)                                                       \
	X(bpf_dump) X(bpf_filter) X(bpf_image) X(bpf_validate)                 \
	X(pcap_activate) X(pcap_breakloop) X(pcap_bufsize)                     \
	X(pcap_can_set_rfmon) X(pcap_close) X(pcap_compile)                    \
	X(pcap_compile_nopcap) X(pcap_create) X(pcap_datalink)                 \
	X(pcap_datalink_ext) X(pcap_datalink_name_to_val)                      \
	X(pcap_datalink_val_to_description)                                    \
	X(pcap_datalink_val_to_description_or_dlt)                             \
	X(pcap_datalink_val_to_name) X(pcap_dispatch) X(pcap_dump)             \
	X(pcap_dump_close) X(pcap_dump_file) X(pcap_dump_flush)                \
	X(pcap_dump_fopen) X(pcap_dump_ftell) X(pcap_dump_ftell64)             \
	X(pcap_dump_open) X(pcap_dump_open_append) X(pcap_ether_aton)          \
	X(pcap_ether_hostton) X(pcap_file) X(pcap_fileno)                      \
	X(pcap_findalldevs) X(pcap_fopen_offline)                              \
	X(pcap_fopen_offline_with_tstamp_precision) X(pcap_free_datalinks)     \
	X(pcap_free_tstamp_types) X(pcap_freealldevs) X(pcap_freecode)         \
	X(pcap_get_required_select_timeout) X(pcap_get_selectable_fd)          \
	X(pcap_get_tstamp_precision) X(pcap_geterr) X(pcap_getnonblock)        \
	X(pcap_init) X(pcap_inject) X(pcap_is_swapped) X(pcap_lib_version)     \
	X(pcap_list_datalinks) X(pcap_list_tstamp_types) X(pcap_lookupdev)     \
	X(pcap_lookupnet) X(pcap_loop) X(pcap_major_version)                   \
	X(pcap_minor_version) X(pcap_nametoaddr) X(pcap_nametoaddrinfo)        \
	X(pcap_nametoeproto) X(pcap_nametollc) X(pcap_nametonetaddr)           \
	X(pcap_nametoport) X(pcap_nametoportrange) X(pcap_nametoproto)         \
	X(pcap_next) X(pcap_next_etherent) X(pcap_next_ex)                     \
	X(pcap_offline_filter) X(pcap_open_dead)                               \
	X(pcap_open_dead_with_tstamp_precision) X(pcap_open_live)              \
	X(pcap_open_offline) X(pcap_open_offline_with_tstamp_precision)        \
	X(pcap_perror) X(pcap_sendpacket) X(pcap_set_buffer_size)              \
	X(pcap_set_datalink) X(pcap_set_immediate_mode) X(pcap_set_promisc)    \
	X(pcap_set_protocol_linux) X(pcap_set_rfmon) X(pcap_set_snaplen)       \
	X(pcap_set_timeout) X(pcap_set_tstamp_precision)                       \
	X(pcap_set_tstamp_type) X(pcap_setdirection) X(pcap_setfilter)         \
	X(pcap_setnonblock) X(pcap_snapshot) X(pcap_stats) X(pcap_statustostr) \
	X(pcap_strerror) X(pcap_tstamp_type_name_to_val)                       \
	X(pcap_tstamp_type_val_to_description)                                 \
	X(pcap_tstamp_type_val_to_name)

/* Pointers to the real functions, typed as the prototypes of
 * <pcap/pcap.h> declare them. NULL when the system libpcap lacks one. */
struct pmc_real {
#define PMC_FIELD(n) __typeof__(&n) n;
	PMC_REAL_SYMS(PMC_FIELD)
#undef PMC_FIELD
};

/* The real functions (loaded on first use), or NULL when the system
 * libpcap cannot be loaded; pmc_real_error() then says why. */
const struct pmc_real *pmc_real(void);
const char *pmc_real_error(void);

#define PMC_MAX_RINGS 64

/* A live handle: a pcap_t served from a pktmap port. */
struct pmc {
	bool in_use;
	bool activated;
	char device[256];        /* the name the tool gave */
	char portname[256];      /* the pktmap port it opens */
	/* Settings before activation. */
	int snaplen, promisc, rfmon, timeout_ms, immediate, buffer_size;
	int tstamp_type, tstamp_precision;
	pcap_direction_t direction;
	int nonblock;
	/* After activation. */
	struct pktmap_port *port;
	struct netmap_ring *rx[PMC_MAX_RINGS];
	struct netmap_ring *tx[PMC_MAX_RINGS];
	unsigned nrx, ntx, rx_next, tx_next;
	uint32_t buf_usable;
	int linktype;
	bool ts_from_ptr;        /* the back end stamps slot->ptr */
	bool coalesce;           /* wait for batches (live.c) */
	bool small_batch;        /* the last read found few packets */
	bool fd_given;           /* the tool has the selectable fd (events.c) */
	pcap_t *dead;            /* real handle: compile, dump_open */
	struct bpf_insn *filter; /* our copy of the program set */
	u_int filter_len;
	bool kfilter;            /* the kernel runs it (pkt:) ... */
	uint64_t ufilter_left;   /* ... but not on these first packets */
	u_char *chain_buf;       /* an NS_MOREFRAG packet made contiguous */
	struct pcap_pkthdr next_hdr; /* pcap_next_ex() */
	/* Counters for pcap_stats(). */
	uint64_t passed;         /* packets that passed the filter */
	uint64_t filtered;       /* ... and those our own filter refused */
	atomic_int break_loop;
	char errbuf[PCAP_ERRBUF_SIZE];
};

/* The live handle p is, or NULL when p is the real libpcap's. */
struct pmc *pmc_of(pcap_t *p);

/* Whether a device name is served by pktmap, and by which port name. */
bool pmc_device_is_ours(const char *device, char *port, size_t len);

/* Live handles (live.c). */
pcap_t *pmc_create(const char *device, const char *port, char *errbuf);
pcap_t *pmc_open_live(const char *device, const char *port, int snaplen,
		      int promisc, int to_ms, char *errbuf);
int pmc_lookupnet(const char *device, bpf_u_int32 *net, bpf_u_int32 *mask,
		  char *errbuf);
int pmc_activate(struct pmc *h);
void pmc_close(struct pmc *h);
int pmc_dispatch(struct pmc *h, int cnt, pcap_handler cb, u_char *user);
int pmc_loop(struct pmc *h, int cnt, pcap_handler cb, u_char *user);
int pmc_next_ex(struct pmc *h, struct pcap_pkthdr **hdr, const u_char **data);
int pmc_inject(struct pmc *h, const void *buf, size_t size);
int pmc_stats(struct pmc *h, struct pcap_stat *ps);
/* The fd a tool waits on (events.c): pktmap_fd(), or -1. */
int pmc_selectable_fd(struct pmc *h);
int pmc_set_filter(struct pmc *h, const struct bpf_insn *insns, u_int len);
int pmc_set_direction(struct pmc *h, pcap_direction_t d);

#endif /* PKTMAP_COMPAT_PCAP_H */
