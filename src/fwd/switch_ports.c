/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The switch component's ports (switch_srv.h): attaching a port by its
 * pktmap name on every thread's context, detaching one (its counters
 * kept for the summary, its close left to a thread of its own), and a
 * port's counters summed over the threads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwd.h"
#include "switch_srv.h"

void sws_counters(struct sws *s, uint16_t id, struct sw_counters *c)
{
	memset(c, 0, sizeof(*c));
	for (unsigned t = 0; t < s->nthreads; t++) {
		struct sw *x = sws_ctx(s, t);
		if (id >= x->nports || !x->port[id])
			continue;
		const struct sw_counters *p = &x->port[id]->c;
		c->rx_frames += p->rx_frames;
		c->rx_bytes += p->rx_bytes;
		c->tx_frames += p->tx_frames;
		c->tx_bytes += p->tx_bytes;
		c->drop_nospace += p->drop_nospace;
		c->drop_invalid += p->drop_invalid;
		c->drop_unknown += p->drop_unknown;
		c->filtered += p->filtered;
		c->sync_errors += p->sync_errors;
		c->tx_moved += p->tx_moved;
	}
}

struct sw_mac *sws_mac(struct sws *s)
{
	return s->mac ? s->mac : s->sw.mac;
}

/* The closing thread: pktmap_close() of every queued port, in order. */
static void *reaper_main(void *arg)
{
	struct sws_reaper *rp = arg;
	pthread_mutex_lock(&rp->mu);
	for (;;) {
		while (!rp->n && !rp->stop)
			pthread_cond_wait(&rp->cv, &rp->mu);
		if (!rp->n)
			break;
		struct pktmap_port *p = rp->q[0];
		memmove(rp->q, rp->q + 1, --rp->n * sizeof(rp->q[0]));
		pthread_mutex_unlock(&rp->mu);
		pktmap_close(p);
		atomic_fetch_add_explicit(&rp->closed, 1, memory_order_relaxed);
		pthread_mutex_lock(&rp->mu);
	}
	pthread_mutex_unlock(&rp->mu);
	return NULL;
}

int sws__reaper_start(struct sws *s)
{
	struct sws_reaper *rp = &s->reaper;
	pthread_mutex_init(&rp->mu, NULL);
	pthread_cond_init(&rp->cv, NULL);
	int e = pthread_create(&rp->tid, NULL, reaper_main, rp);
	if (e) {
		snprintf(s->err, sizeof(s->err), "switch %s: cannot start its "
			 "closing thread: %s", s->o.name, strerror(e));
		return -e;
	}
	rp->started = true;
	return 0;
}

/* Closes what is queued, then ends. */
void sws__reaper_stop(struct sws *s)
{
	struct sws_reaper *rp = &s->reaper;
	if (!rp->started)
		return;
	pthread_mutex_lock(&rp->mu);
	rp->stop = true;
	pthread_cond_signal(&rp->cv);
	pthread_mutex_unlock(&rp->mu);
	pthread_join(rp->tid, NULL);
	rp->started = false;
}

/* Hand a detached port to the reaper; never waits for the close. With
 * the queue full (a thousand closes stuck), the port is left open: its
 * memory is lost until the switch exits, the forwarding is not. */
static void reap(struct sws *s, struct pktmap_port *p)
{
	struct sws_reaper *rp = &s->reaper;
	pthread_mutex_lock(&rp->mu);
	if (rp->n < SWS_MAX_REAP)
		rp->q[rp->n++] = p;
	pthread_cond_signal(&rp->cv);
	pthread_mutex_unlock(&rp->mu);
}

void sws_detach(struct sws *s, uint16_t id)
{
	struct sw_port *sp = id < s->sw.nports ? s->sw.port[id] : NULL;
	if (!sp)
		return;
	if (s->ngone < SWS_MAX_GONE) {
		struct sws_gone *g = &s->gone[s->ngone++];
		snprintf(g->name, sizeof(g->name), "%s", sp->name);
		snprintf(g->kind, sizeof(g->kind), "%s", sp->kind);
		sws_counters(s, id, &g->c);
	}
	for (unsigned i = 0; i < s->nconn; i++)
		if (s->conn[i].port == id)
			s->conn[i].port = -1;
	for (unsigned t = 0; t < s->nthreads; t++) {
		/* Out of the data path now; closed by the reaper (a client's
		 * port may make pktmap_close() wait on a lock it holds). */
		struct sw *x = sws_ctx(s, t);
		struct sw_port *tp = id < x->nports ? x->port[id] : NULL;
		if (tp && tp->own && s->reaper.started) {
			tp->own = false;
			reap(s, tp->port);
		}
		sw_detach(x, id);
	}
	s->epoch[id]++;
}

uint64_t sws__port_group(struct pktmap_port *p)
{
	/* The memory, not the name: one @mem: name may be two memories (a
	 * region shared with a group and a private one). */
	struct pktmap_info info = { .sz = sizeof(info) };
	return pktmap_info(p, &info) == 0 ? fwd_memory_group(&info) : 0;
}

/* What the switch calls a port it opens: "nic", "host", "tap", or the
 * back end's name ("port" when the name does not parse: the open says
 * why). */
static void port_kind(const struct pktmap_name *nm, bool parsed, char *kind,
		      size_t len)
{
	if (!parsed) {
		snprintf(kind, len, "port");
		return;
	}
	const char *bk = nm->backend;
	bool host = nm->reg == NR_REG_SW || nm->reg == NR_REG_ONE_SW;
	snprintf(kind, len, "%s", host ? "host" :
		 strcmp(bk, "tap") == 0 ? "tap" :
		 (strcmp(bk, "xdp") == 0 || strcmp(bk, "pkt") == 0) ? "nic" : bk);
}

/* The name thread t opens: with threads, queue t of an interface
 * (xdp:eth1 -> xdp:eth1-1); with one, the name itself. */
static int thread_name(const char *name, const struct pktmap_name *nm,
		       unsigned nthreads, unsigned t, char *out, size_t len)
{
	int n = nthreads > 1 ?
		snprintf(out, len, "%.*s-%u%s", (int)nm->port_len, name, t,
			 name + nm->port_len) :
		snprintf(out, len, "%s", name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Open `name` on every thread and attach it as pname: one id on all. */
static int attach_threads(struct sws *s, const char *name,
			  const struct pktmap_name *nm, const char *pname,
			  const char *kind, uint64_t group, uint32_t flags,
			  char *err, unsigned errlen)
{
	struct pktmap_open_opts o = { .sz = sizeof(o), .errbuf = err,
				      .errbuf_len = errlen, .flags = flags };
	int ret = 0, id = -1;
	unsigned t;
	for (t = 0; t < s->nthreads; t++) {
		char tname[300];
		struct pktmap_port *p;
		if (thread_name(name, nm, s->nthreads, t, tname, sizeof(tname))) {
			snprintf(err, errlen, "%s: name too long", name);
			ret = -ENAMETOOLONG;
			break;
		}
		ret = pktmap_open(&p, tname, &o);
		if (ret)
			break;
		ret = sw_attach(sws_ctx(s, t), p, pname, kind, true,
				group ? sws__port_group(p) : 0);
		if (ret < 0 || (id >= 0 && ret != id)) {
			snprintf(err, errlen, "%s: %s", tname, sws_ctx(s, t)->err);
			pktmap_close(p);
			ret = ret < 0 ? ret : -EPROTO;
			break;
		}
		id = ret;
		ret = 0;
	}
	if (ret) {
		while (t-- > 0 && id >= 0)
			sw_detach(sws_ctx(s, t), (uint16_t)id);
	}
	return ret;
}

int sws_attach_name(struct sws *s, const char *name, const char *as,
		    uint32_t flags, char *err, unsigned errlen)
{
	struct pktmap_name nm = { .sz = sizeof(nm), .region = "" };
	char kind[16], pname[64];
	bool parsed = pktmap_name_parse(name, &nm, err, errlen) == 0;
	port_kind(&nm, parsed, kind, sizeof(kind));
	/* The port's name on the switch: what follows the back end. */
	const char *colon = strchr(name, ':');
	snprintf(pname, sizeof(pname), "%s", as ? as : colon ? colon + 1 : name);
	pname[strcspn(pname, "@/")] = 0;
	if (sw_find(&s->sw, pname)) {
		snprintf(err, errlen, "%s: port '%s' is already attached to %s",
			 name, pname, s->o.name);
		return -EEXIST;
	}
	/* With threads, thread T opens queue T of an interface (NAME-T): the
	 * interface needs a queue per thread. Host rings and taps have one. */
	if (s->nthreads > 1 && (strcmp(kind, "nic") != 0 ||
				nm.reg != NR_REG_ALL_NIC)) {
		snprintf(err, errlen, "%s: with -p %u only clients and whole "
			 "interfaces (a queue per thread) can be attached: use -p 1",
			 name, s->nthreads);
		return -EOPNOTSUPP;
	}
	/* Ports in one @mem: region share a pool: move buffers (the group is
	 * the region's memory, sws__port_group()). */
	uint64_t group = nm.region[0] != 0;
	return attach_threads(s, name, &nm, pname, kind, group, flags, err,
			      errlen);
}
