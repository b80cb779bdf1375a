/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The part of the libpcap API that never touches a live handle of ours:
 * offline files, dead handles, dumpers, BPF helpers, name tables. Each
 * function calls the system libpcap's own. They are generated from one
 * line each (return type, name, value when the system libpcap could not
 * be loaded, parameters, arguments) because they differ in nothing else:
 * the list below is the table of what this library passes through.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

#define PMC_FWD(ret, name, fail, params, args)                   \
	PMC_EXPORT ret name params                               \
	{                                                        \
		const struct pmc_real *r = pmc_real();           \
		return r && r->name ? r->name args : (fail);     \
	}

#define PMC_FWD_VOID(name, params, args)                         \
	PMC_EXPORT void name params                              \
	{                                                        \
		const struct pmc_real *r = pmc_real();           \
		if (r && r->name)                                \
			r->name args;                            \
	}

/* Functions that report failure in an errbuf say why in it. */
static void no_real(char *errbuf)
{
	if (errbuf)
		snprintf(errbuf, PCAP_ERRBUF_SIZE, "pktmap libpcap: %s",
			 pmc_real_error());
}

#define PMC_FWD_ERRBUF(ret, name, fail, params, args, errbuf)    \
	PMC_EXPORT ret name params                               \
	{                                                        \
		const struct pmc_real *r = pmc_real();           \
		if (r && r->name)                                \
			return r->name args;                     \
		no_real(errbuf);                                 \
		return (fail);                                   \
	}

/* Time stamp types and precisions. */
PMC_FWD_VOID(pcap_free_tstamp_types, (int *l), (l))
PMC_FWD(int, pcap_tstamp_type_name_to_val, PCAP_ERROR, (const char *s), (s))
PMC_FWD(const char *, pcap_tstamp_type_val_to_name, NULL, (int v), (v))
PMC_FWD(const char *, pcap_tstamp_type_val_to_description, NULL, (int v),
	(v))

/* Handles that are never live: dead and offline. */
PMC_FWD_ERRBUF(int, pcap_init, PCAP_ERROR, (unsigned int o, char *e), (o, e),
	       e)
PMC_FWD_ERRBUF(char *, pcap_lookupdev, NULL, (char *e), (e), e)
PMC_FWD(pcap_t *, pcap_open_dead, NULL, (int lt, int snap), (lt, snap))
PMC_FWD(pcap_t *, pcap_open_dead_with_tstamp_precision, NULL,
	(int lt, int snap, u_int prec), (lt, snap, prec))
PMC_FWD_ERRBUF(pcap_t *, pcap_open_offline_with_tstamp_precision, NULL,
	       (const char *f, u_int prec, char *e), (f, prec, e), e)
PMC_FWD_ERRBUF(pcap_t *, pcap_open_offline, NULL, (const char *f, char *e),
	       (f, e), e)
PMC_FWD_ERRBUF(pcap_t *, pcap_fopen_offline_with_tstamp_precision, NULL,
	       (FILE *f, u_int prec, char *e), (f, prec, e), e)
PMC_FWD_ERRBUF(pcap_t *, pcap_fopen_offline, NULL, (FILE *f, char *e),
	       (f, e), e)

/* Errors and versions. */
PMC_FWD(const char *, pcap_statustostr, "pktmap libpcap: no system libpcap",
	(int e), (e))
PMC_FWD(const char *, pcap_strerror, strerror(e), (int e), (e))

/* Filters. */
PMC_FWD(int, pcap_compile_nopcap, PCAP_ERROR,
	(int snap, int lt, struct bpf_program *p, const char *s, int opt,
	 bpf_u_int32 mask),
	(snap, lt, p, s, opt, mask))
PMC_FWD_VOID(pcap_freecode, (struct bpf_program *p), (p))
PMC_FWD(int, pcap_offline_filter, 0,
	(const struct bpf_program *p, const struct pcap_pkthdr *h,
	 const u_char *d),
	(p, h, d))
PMC_FWD(u_int, bpf_filter, 0,
	(const struct bpf_insn *f, const u_char *p, u_int wl, u_int bl),
	(f, p, wl, bl))
PMC_FWD(int, bpf_validate, 0, (const struct bpf_insn *f, int len), (f, len))
PMC_FWD(char *, bpf_image, NULL, (const struct bpf_insn *f, int n), (f, n))
PMC_FWD_VOID(bpf_dump, (const struct bpf_program *p, int opt), (p, opt))

/* Link types. */
PMC_FWD_VOID(pcap_free_datalinks, (int *l), (l))
PMC_FWD(int, pcap_datalink_name_to_val, PCAP_ERROR, (const char *s), (s))
PMC_FWD(const char *, pcap_datalink_val_to_name, NULL, (int v), (v))
PMC_FWD(const char *, pcap_datalink_val_to_description, NULL, (int v), (v))
PMC_FWD(const char *, pcap_datalink_val_to_description_or_dlt, NULL, (int v),
	(v))

/* Dumpers: always the system libpcap's (pcap_dump_open() on a live
 * handle of ours opens one for its link type and snapshot length). */
PMC_FWD(FILE *, pcap_dump_file, NULL, (pcap_dumper_t *d), (d))
PMC_FWD(long, pcap_dump_ftell, -1, (pcap_dumper_t *d), (d))
PMC_FWD(int64_t, pcap_dump_ftell64, -1, (pcap_dumper_t *d), (d))
PMC_FWD(int, pcap_dump_flush, -1, (pcap_dumper_t *d), (d))
PMC_FWD_VOID(pcap_dump_close, (pcap_dumper_t *d), (d))

/* pcap_dump() writes what the system libpcap's does (a 16-byte record
 * header with 32-bit seconds and sub-seconds as given, then caplen bytes)
 * into the dumper's FILE, without taking the FILE's lock twice a packet:
 * a dumper is written by one thread (libpcap's documentation), and this is
 * the per-packet cost of every "tcpdump -w". */
PMC_EXPORT void pcap_dump(u_char *user, const struct pcap_pkthdr *h,
			  const u_char *sp)
{
	FILE *f = (FILE *)(void *)user;
	struct {
		int32_t sec, subsec;
		uint32_t caplen, len;
	} rec = {(int32_t)h->ts.tv_sec, (int32_t)h->ts.tv_usec, h->caplen,
		 h->len};

	if (ferror_unlocked(f))
		return;
#ifdef __GLIBC__
	/* Room in the FILE's buffer (glibc's putc_unlocked looks the same
	 * way): both pieces straight in. */
	if ((size_t)(f->_IO_write_end - f->_IO_write_ptr) >=
	    sizeof(rec) + h->caplen) {
		memcpy(f->_IO_write_ptr, &rec, sizeof(rec));
		memcpy(f->_IO_write_ptr + sizeof(rec), sp, h->caplen);
		f->_IO_write_ptr += sizeof(rec) + h->caplen;
		return;
	}
#endif
	(void)fwrite_unlocked(&rec, sizeof(rec), 1, f);
	(void)fwrite_unlocked(sp, h->caplen, 1, f);
}

/* Interface lists (pcap_findalldevs() adds pktmap's ports: events.c). */
PMC_FWD_VOID(pcap_freealldevs, (pcap_if_t *l), (l))

/* Name tables (<pcap/namedb.h>). */
PMC_FWD(struct pcap_etherent *, pcap_next_etherent, NULL, (FILE *f), (f))
PMC_FWD(u_char *, pcap_ether_hostton, NULL, (const char *s), (s))
PMC_FWD(u_char *, pcap_ether_aton, NULL, (const char *s), (s))
PMC_FWD(bpf_u_int32 **, pcap_nametoaddr, NULL, (const char *s), (s))
PMC_FWD(struct addrinfo *, pcap_nametoaddrinfo, NULL, (const char *s), (s))
PMC_FWD(bpf_u_int32, pcap_nametonetaddr, 0, (const char *s), (s))
PMC_FWD(int, pcap_nametoport, 0, (const char *s, int *port, int *proto),
	(s, port, proto))
PMC_FWD(int, pcap_nametoportrange, 0,
	(const char *s, int *lo, int *hi, int *proto), (s, lo, hi, proto))
PMC_FWD(int, pcap_nametoproto, -1, (const char *s), (s))
PMC_FWD(int, pcap_nametoeproto, -1, (const char *s), (s))
PMC_FWD(int, pcap_nametollc, -1, (const char *s), (s))

/* The version: the system libpcap's, saying that pktmap serves it. */
static char lib_version[256];
static pthread_once_t lib_version_once = PTHREAD_ONCE_INIT;

static void make_lib_version(void)
{
	const struct pmc_real *r = pmc_real();

	snprintf(lib_version, sizeof(lib_version), "%s (with pktmap %s)",
		 r && r->pcap_lib_version ? r->pcap_lib_version()
					  : "libpcap version unknown",
		 PKTMAP_VERSION);
}

PMC_EXPORT const char *pcap_lib_version(void)
{
	pthread_once(&lib_version_once, make_lib_version);
	return lib_version;
}

/* libpcap's version as a variable (libpcap exports it; it is read, not
 * called). eproto_db, libpcap's other exported variable, is internal to
 * its filter compiler and not provided. */
PMC_EXPORT char pcap_version[] = PMC_SYSTEM_VERSION;
