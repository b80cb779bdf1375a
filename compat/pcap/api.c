/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The libpcap entry points that take a pcap_t or open a device: each one
 * serves a live handle of ours (live.c) and passes any other pcap_t to
 * the system libpcap untouched. Error words and status codes are
 * libpcap 1.10's, so tools print what they always print.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

#define NOT_ACTIVATED_MSG "This handle hasn't been activated yet"

/* The system libpcap's function `name`, for a pcap_t that is not ours.
 * Without a system libpcap no such pcap_t can exist. */
#define REAL(name) (pmc_real()->name)

static int setting(struct pmc *h)
{
	if (h->activated) {
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "can't perform  operation on activated capture");
		return PCAP_ERROR_ACTIVATED;
	}
	return 0;
}

static int need_active(struct pmc *h)
{
	if (!h->activated) {
		snprintf(h->errbuf, sizeof(h->errbuf), NOT_ACTIVATED_MSG);
		return PCAP_ERROR_NOT_ACTIVATED;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Opening */

PMC_EXPORT pcap_t *pcap_create(const char *device, char *errbuf)
{
	char port[256];
	const struct pmc_real *r;

	if (pmc_device_is_ours(device, port, sizeof(port)))
		return pmc_create(device, port, errbuf);
	r = pmc_real();
	if (!r) {
		snprintf(errbuf, PCAP_ERRBUF_SIZE, "pktmap libpcap: %s",
			 pmc_real_error());
		return NULL;
	}
	return r->pcap_create(device, errbuf);
}

PMC_EXPORT pcap_t *pcap_open_live(const char *device, int snaplen,
				  int promisc, int to_ms, char *errbuf)
{
	char port[256];
	const struct pmc_real *r;

	if (pmc_device_is_ours(device, port, sizeof(port)))
		return pmc_open_live(device, port, snaplen, promisc, to_ms,
				     errbuf);
	r = pmc_real();
	if (!r) {
		snprintf(errbuf, PCAP_ERRBUF_SIZE, "pktmap libpcap: %s",
			 pmc_real_error());
		return NULL;
	}
	return r->pcap_open_live(device, snaplen, promisc, to_ms, errbuf);
}

PMC_EXPORT int pcap_lookupnet(const char *device, bpf_u_int32 *net,
			      bpf_u_int32 *mask, char *errbuf)
{
	char port[256];
	const struct pmc_real *r;

	if (pmc_device_is_ours(device, port, sizeof(port)))
		return pmc_lookupnet(port, net, mask, errbuf);
	r = pmc_real();
	if (!r) {
		snprintf(errbuf, PCAP_ERRBUF_SIZE, "pktmap libpcap: %s",
			 pmc_real_error());
		return PCAP_ERROR;
	}
	return r->pcap_lookupnet(device, net, mask, errbuf);
}

PMC_EXPORT int pcap_activate(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	return h ? pmc_activate(h) : REAL(pcap_activate)(p);
}

PMC_EXPORT void pcap_close(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	if (h)
		pmc_close(h);
	else if (p)
		REAL(pcap_close)(p);
}

/* ------------------------------------------------------------------ */
/* Settings before activation */

PMC_EXPORT int pcap_set_snaplen(pcap_t *p, int v)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_set_snaplen)(p, v);
	if ((rc = setting(h)))
		return rc;
	h->snaplen = v;
	return 0;
}

PMC_EXPORT int pcap_set_promisc(pcap_t *p, int v)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_set_promisc)(p, v);
	if ((rc = setting(h)))
		return rc;
	h->promisc = v;
	return 0;
}

PMC_EXPORT int pcap_can_set_rfmon(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	return h ? 0 : REAL(pcap_can_set_rfmon)(p);
}

PMC_EXPORT int pcap_set_rfmon(pcap_t *p, int v)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_set_rfmon)(p, v);
	if ((rc = setting(h)))
		return rc;
	h->rfmon = v;
	return 0;
}

PMC_EXPORT int pcap_set_timeout(pcap_t *p, int v)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_set_timeout)(p, v);
	if ((rc = setting(h)))
		return rc;
	h->timeout_ms = v;
	return 0;
}

PMC_EXPORT int pcap_set_tstamp_type(pcap_t *p, int v)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_set_tstamp_type)(p, v);
	if ((rc = setting(h)))
		return rc;
	if (v < 0)
		return PCAP_WARNING_TSTAMP_TYPE_NOTSUP;
	if (v != PCAP_TSTAMP_HOST)
		return PCAP_WARNING_TSTAMP_TYPE_NOTSUP;
	h->tstamp_type = v;
	return 0;
}

PMC_EXPORT int pcap_set_immediate_mode(pcap_t *p, int v)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_set_immediate_mode)(p, v);
	if ((rc = setting(h)))
		return rc;
	h->immediate = v;
	return 0;
}

PMC_EXPORT int pcap_set_buffer_size(pcap_t *p, int v)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_set_buffer_size)(p, v);
	if ((rc = setting(h)))
		return rc;
	if (v <= 0) /* libpcap ignores it too */
		return 0;
	h->buffer_size = v;
	return 0;
}

PMC_EXPORT int pcap_set_tstamp_precision(pcap_t *p, int v)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_set_tstamp_precision)(p, v);
	if ((rc = setting(h)))
		return rc;
	if (v != PCAP_TSTAMP_PRECISION_MICRO && v != PCAP_TSTAMP_PRECISION_NANO)
		return PCAP_ERROR_TSTAMP_PRECISION_NOTSUP;
	h->tstamp_precision = v;
	return 0;
}

PMC_EXPORT int pcap_get_tstamp_precision(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	return h ? h->tstamp_precision : REAL(pcap_get_tstamp_precision)(p);
}

PMC_EXPORT int pcap_set_protocol_linux(pcap_t *p, int v)
{
	struct pmc *h = pmc_of(p);

	if (!h)
		return REAL(pcap_set_protocol_linux)(p, v);
	return setting(h); /* every frame is captured anyway */
}

PMC_EXPORT int pcap_list_tstamp_types(pcap_t *p, int **types)
{
	struct pmc *h = pmc_of(p);

	if (!h)
		return REAL(pcap_list_tstamp_types)(p, types);
	/* As libpcap for a device with one kind of time stamp. */
	*types = malloc(sizeof(**types));
	if (!*types) {
		snprintf(h->errbuf, sizeof(h->errbuf), "malloc: %s",
			 strerror(errno));
		return PCAP_ERROR;
	}
	**types = PCAP_TSTAMP_HOST;
	return 1;
}

/* ------------------------------------------------------------------ */
/* Reading */

PMC_EXPORT int pcap_loop(pcap_t *p, int cnt, pcap_handler cb, u_char *user)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_loop)(p, cnt, cb, user);
	if ((rc = need_active(h)))
		return rc;
	return pmc_loop(h, cnt, cb, user);
}

PMC_EXPORT int pcap_dispatch(pcap_t *p, int cnt, pcap_handler cb,
			     u_char *user)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_dispatch)(p, cnt, cb, user);
	if ((rc = need_active(h)))
		return rc;
	return pmc_dispatch(h, cnt, cb, user);
}

PMC_EXPORT int pcap_next_ex(pcap_t *p, struct pcap_pkthdr **hdr,
			    const u_char **data)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_next_ex)(p, hdr, data);
	if ((rc = need_active(h)))
		return rc;
	return pmc_next_ex(h, hdr, data);
}

PMC_EXPORT const u_char *pcap_next(pcap_t *p, struct pcap_pkthdr *hdr)
{
	struct pmc *h = pmc_of(p);
	struct pcap_pkthdr *ph;
	const u_char *data;

	if (!h)
		return REAL(pcap_next)(p, hdr);
	if (need_active(h) || pmc_next_ex(h, &ph, &data) != 1)
		return NULL;
	*hdr = *ph;
	return data;
}

PMC_EXPORT void pcap_breakloop(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	if (h)
		atomic_store_explicit(&h->break_loop, 1, memory_order_relaxed);
	else
		REAL(pcap_breakloop)(p);
}

PMC_EXPORT int pcap_stats(pcap_t *p, struct pcap_stat *ps)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_stats)(p, ps);
	if ((rc = need_active(h)))
		return rc;
	return pmc_stats(h, ps);
}

PMC_EXPORT int pcap_setnonblock(pcap_t *p, int nb, char *errbuf)
{
	struct pmc *h = pmc_of(p);

	if (!h)
		return REAL(pcap_setnonblock)(p, nb, errbuf);
	h->nonblock = nb != 0;
	return 0;
}

PMC_EXPORT int pcap_getnonblock(pcap_t *p, char *errbuf)
{
	struct pmc *h = pmc_of(p);

	return h ? h->nonblock : REAL(pcap_getnonblock)(p, errbuf);
}

PMC_EXPORT int pcap_get_selectable_fd(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	if (!h)
		return REAL(pcap_get_selectable_fd)(p);
	return pmc_selectable_fd(h);
}

PMC_EXPORT const struct timeval *pcap_get_required_select_timeout(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	if (!h)
		return REAL(pcap_get_required_select_timeout)(p);
	/* pktmap_fd() wakes select() itself: no timeout is required. */
	return NULL;
}

PMC_EXPORT int pcap_fileno(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	if (!h)
		return REAL(pcap_fileno)(p);
	return pmc_selectable_fd(h);
}

PMC_EXPORT FILE *pcap_file(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	return h ? NULL : REAL(pcap_file)(p);
}

/* ------------------------------------------------------------------ */
/* Filters and direction */

PMC_EXPORT int pcap_compile(pcap_t *p, struct bpf_program *prog,
			    const char *str, int optimize, bpf_u_int32 mask)
{
	struct pmc *h = pmc_of(p);
	const struct pmc_real *r = pmc_real();

	if (!h)
		return REAL(pcap_compile)(p, prog, str, optimize, mask);
	if (!h->activated) {
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "not-yet-activated pcap_t passed to pcap_compile");
		return PCAP_ERROR;
	}
	/* The system libpcap compiles for our link type and snapshot
	 * length; its message is the one tools expect. */
	if (r->pcap_compile(h->dead, prog, str, optimize, mask) < 0) {
		snprintf(h->errbuf, sizeof(h->errbuf), "%s",
			 r->pcap_geterr(h->dead));
		return PCAP_ERROR;
	}
	return 0;
}

PMC_EXPORT int pcap_setfilter(pcap_t *p, struct bpf_program *prog)
{
	struct pmc *h = pmc_of(p);
	const struct pmc_real *r = pmc_real();

	if (!h)
		return REAL(pcap_setfilter)(p, prog);
	if (!prog || !r->bpf_validate(prog->bf_insns, (int)prog->bf_len)) {
		snprintf(h->errbuf, sizeof(h->errbuf), "BPF program is not valid");
		return PCAP_ERROR;
	}
	return pmc_set_filter(h, prog->bf_insns, prog->bf_len);
}

PMC_EXPORT int pcap_setdirection(pcap_t *p, pcap_direction_t d)
{
	struct pmc *h = pmc_of(p);

	if (!h)
		return REAL(pcap_setdirection)(p, d);
	if (d != PCAP_D_IN && d != PCAP_D_OUT && d != PCAP_D_INOUT) {
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "Invalid direction %d", (int)d);
		return PCAP_ERROR;
	}
	return pmc_set_direction(h, d);
}

/* ------------------------------------------------------------------ */
/* Sending */

PMC_EXPORT int pcap_inject(pcap_t *p, const void *buf, size_t size)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_inject)(p, buf, size);
	if ((rc = need_active(h)))
		return rc;
	return pmc_inject(h, buf, size);
}

PMC_EXPORT int pcap_sendpacket(pcap_t *p, const u_char *buf, int size)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_sendpacket)(p, buf, size);
	if (size <= 0) {
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "The number of bytes to be sent must be positive");
		return PCAP_ERROR;
	}
	if ((rc = need_active(h)))
		return rc;
	return pmc_inject(h, buf, (size_t)size) < 0 ? PCAP_ERROR : 0;
}

/* ------------------------------------------------------------------ */
/* Errors */

PMC_EXPORT char *pcap_geterr(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	return h ? h->errbuf : REAL(pcap_geterr)(p);
}

PMC_EXPORT void pcap_perror(pcap_t *p, const char *prefix)
{
	struct pmc *h = pmc_of(p);

	if (!h) {
		REAL(pcap_perror)(p, prefix);
		return;
	}
	/* libpcap's own behaviour: the one place it prints */
	fprintf(stderr, "%s: %s\n", prefix, h->errbuf);
}

/* ------------------------------------------------------------------ */
/* Link type and facts */

PMC_EXPORT int pcap_datalink(pcap_t *p)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_datalink)(p);
	if ((rc = need_active(h)))
		return rc;
	return h->linktype;
}

PMC_EXPORT int pcap_datalink_ext(pcap_t *p)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_datalink_ext)(p);
	if ((rc = need_active(h)))
		return rc;
	return h->linktype;
}

PMC_EXPORT int pcap_list_datalinks(pcap_t *p, int **list)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_list_datalinks)(p, list);
	if ((rc = need_active(h)))
		return rc;
	*list = malloc(sizeof(**list));
	if (!*list) {
		snprintf(h->errbuf, sizeof(h->errbuf), "malloc: %s",
			 strerror(errno));
		return PCAP_ERROR;
	}
	**list = h->linktype;
	return 1;
}

PMC_EXPORT int pcap_set_datalink(pcap_t *p, int dlt)
{
	struct pmc *h = pmc_of(p);
	const struct pmc_real *r = pmc_real();
	const char *name;

	if (!h)
		return REAL(pcap_set_datalink)(p, dlt);
	if (dlt == h->linktype)
		return 0;
	name = r ? r->pcap_datalink_val_to_name(dlt) : NULL;
	if (name)
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "%s is not one of the DLTs supported by this device",
			 name);
	else
		snprintf(h->errbuf, sizeof(h->errbuf),
			 "DLT %d is not one of the DLTs supported by this device",
			 dlt);
	return PCAP_ERROR;
}

PMC_EXPORT int pcap_snapshot(pcap_t *p)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_snapshot)(p);
	if ((rc = need_active(h)))
		return rc;
	return h->snaplen;
}

PMC_EXPORT int pcap_is_swapped(pcap_t *p)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_is_swapped)(p);
	if ((rc = need_active(h)))
		return rc;
	return 0;
}

PMC_EXPORT int pcap_major_version(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	return h ? PCAP_VERSION_MAJOR : REAL(pcap_major_version)(p);
}

PMC_EXPORT int pcap_minor_version(pcap_t *p)
{
	struct pmc *h = pmc_of(p);

	return h ? PCAP_VERSION_MINOR : REAL(pcap_minor_version)(p);
}

PMC_EXPORT int pcap_bufsize(pcap_t *p)
{
	struct pmc *h = pmc_of(p);
	int rc;

	if (!h)
		return REAL(pcap_bufsize)(p);
	if ((rc = need_active(h)))
		return rc;
	return h->buffer_size ? h->buffer_size : h->snaplen;
}

/* ------------------------------------------------------------------ */
/* Dump files: the system libpcap's dumpers, opened on the dead handle
 * that carries our link type, snapshot length and precision. */

static pcap_dumper_t *dumper_done(struct pmc *h, pcap_dumper_t *d)
{
	if (!d)
		snprintf(h->errbuf, sizeof(h->errbuf), "%s",
			 pmc_real()->pcap_geterr(h->dead));
	return d;
}

PMC_EXPORT pcap_dumper_t *pcap_dump_open(pcap_t *p, const char *fname)
{
	struct pmc *h = pmc_of(p);

	if (!h)
		return REAL(pcap_dump_open)(p, fname);
	if (need_active(h))
		return NULL;
	return dumper_done(h, pmc_real()->pcap_dump_open(h->dead, fname));
}

PMC_EXPORT pcap_dumper_t *pcap_dump_fopen(pcap_t *p, FILE *f)
{
	struct pmc *h = pmc_of(p);

	if (!h)
		return REAL(pcap_dump_fopen)(p, f);
	if (need_active(h))
		return NULL;
	return dumper_done(h, pmc_real()->pcap_dump_fopen(h->dead, f));
}

PMC_EXPORT pcap_dumper_t *pcap_dump_open_append(pcap_t *p, const char *fname)
{
	struct pmc *h = pmc_of(p);

	if (!h)
		return REAL(pcap_dump_open_append)(p, fname);
	if (need_active(h))
		return NULL;
	return dumper_done(h, pmc_real()->pcap_dump_open_append(h->dead, fname));
}
