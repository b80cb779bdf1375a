/* SPDX-License-Identifier: BSD-2-Clause
 *
 * What a tool waits on and what it can choose from: the selectable fd of
 * a live handle, and pktmap's ports in pcap_findalldevs().
 */
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

/* The descriptor a tool select()s (polls, epolls) on before it calls
 * pcap_dispatch(): the port's own pktmap_fd(), which is readable exactly
 * while a dispatch would find packets (or the source ended), on every
 * back end, without our help; non-blocking mode then never spins on it.
 * pcap_get_required_select_timeout() is NULL accordingly. Returns -1
 * before activation. */
int pmc_selectable_fd(struct pmc *h)
{
	if (!h->activated)
		return -1;
	int fd = pktmap_fd(h->port);
	if (fd < 0)
		return -1;
	h->fd_given = true;
	return fd;
}

/* A new list entry, allocated as libpcap allocates its own (the system
 * pcap_freealldevs() frees it). */
static pcap_if_t *dev_new(const char *name, const char *desc, bpf_u_int32 flags)
{
	pcap_if_t *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->name = strdup(name);
	d->description = strdup(desc);
	d->flags = flags;
	if (!d->name || !d->description) {
		free(d->name);
		free(d->description);
		free(d);
		return NULL;
	}
	return d;
}

/* pcap_findalldevs(): the system's interfaces first, numbered as stock
 * libpcap numbers them (tcpdump -i N keeps working), then pktmap's ports:
 * pkt:IF and xdp:IF for every network interface, and one end of every
 * pipe some process has open. */
PMC_EXPORT int pcap_findalldevs(pcap_if_t **list, char *errbuf)
{
	const struct pmc_real *r = pmc_real();
	if (!r || !r->pcap_findalldevs) {
		if (errbuf)
			snprintf(errbuf, PCAP_ERRBUF_SIZE, "pktmap libpcap: %s",
				 pmc_real_error());
		return PCAP_ERROR;
	}
	int rc = r->pcap_findalldevs(list, errbuf);
	if (rc != 0 || !list)
		return rc;
	pcap_if_t **tail = list, *sys = *list;
	while (*tail)
		tail = &(*tail)->next;
	char name[IFNAMSIZ + 8], desc[160];
	for (pcap_if_t *d = sys; d; d = d->next) {
		if (strchr(d->name, ':') || if_nametoindex(d->name) == 0)
			continue; /* "any", USB, D-Bus, netfilter queues */
		static const char *const kinds[][2] = {
			{ "pkt", "AF_PACKET ring" },
			{ "xdp", "AF_XDP socket" },
		};
		for (unsigned k = 0; k < 2; k++) {
			snprintf(name, sizeof(name), "%s:%s", kinds[k][0], d->name);
			snprintf(desc, sizeof(desc), "pktmap: %s on %s", kinds[k][1],
				 d->name);
			pcap_if_t *n = dev_new(name, desc, d->flags);
			if (!n)
				return 0; /* the list so far is still valid */
			*tail = n;
			tail = &n->next;
		}
	}
	struct pktmap_region_desc regs[64];
	int nreg = pktmap_regions(regs, 64, 0);
	for (int i = 0; i < nreg && i < 64; i++) {
		if (!regs[i].in_use || strncmp(regs[i].name, "pipe.", 5) != 0)
			continue;
		char pname[80];
		snprintf(pname, sizeof(pname), "pipe:%.60s}0", regs[i].name + 5);
		snprintf(desc, sizeof(desc), "pktmap: pipe %.60s (either end: }N or {N)",
			 regs[i].name + 5);
		pcap_if_t *n = dev_new(pname, desc, PCAP_IF_UP | PCAP_IF_RUNNING);
		if (!n)
			break;
		*tail = n;
		tail = &n->next;
	}
	return 0;
}
