/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The privileged half of `pktmap broker` (<pktmap/broker.h>): pktmap's XDP
 * program steering a queue to a socket the broker bound, and the locked
 * filter that keeps a handed-over AF_PACKET socket on its interface.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pktmap/broker.h>

#include "xdp.h"

#ifndef SO_LOCK_FILTER
#define SO_LOCK_FILTER 44
#endif

struct pktmap_broker_xsk {
	struct pktmap_port port; /* for the log and error of xdp_prog.c */
	struct pm_xdp_prog prog;
	int ifindex;
	uint32_t queue;
	uint32_t nq;             /* 1: queue is in the XSKMAP; 0: a hold */
};

/* The program on ifindex (joined or attached), with n (0 or 1) queue
 * steered to fd. */
static int attach(struct pktmap_broker_xsk **out, int ifindex,
		  const char *ifname, uint32_t queue, int fd, uint32_t n,
		  int native, char *err, size_t errlen)
{
	*out = NULL;
	struct pktmap_broker_xsk *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->port.errbuf = err;
	h->port.errbuf_len = errlen;
	h->port.log_level = PKTMAP_LOG_ERR;
	h->port.fd = -1;
	if (n)
		snprintf(h->port.name, sizeof(h->port.name), "xdp:%s-%u", ifname,
			 queue);
	else
		snprintf(h->port.name, sizeof(h->port.name), "xdp:%s", ifname);
	if (err && errlen)
		err[0] = 0;
	pm_xdp_prog_init(&h->prog);
	char driver[32];
	pm_xdp_driver_name(ifname, driver, sizeof(driver));
	h->ifindex = ifindex;
	h->queue = queue;
	h->nq = n;
	int ret = pm_xdp_prog_attach(&h->port, &h->prog, ifindex, ifname, driver,
				     native != 0, &queue, &fd, n);
	if (ret) {
		pm_xdp_prog_release(&h->port, &h->prog, ifindex, &queue, n);
		free(h);
		return ret;
	}
	*out = h;
	return 0;
}

int pktmap_broker_xsk_attach(struct pktmap_broker_xsk **out, int ifindex,
			     const char *ifname, uint32_t queue, int fd,
			     int native, char *err, size_t errlen)
{
	return attach(out, ifindex, ifname, queue, fd, 1, native, err, errlen);
}

int pktmap_broker_xdp_hold(struct pktmap_broker_xsk **out, int ifindex,
			   const char *ifname, char *err, size_t errlen)
{
	return attach(out, ifindex, ifname, 0, -1, 0, 0, err, errlen);
}

int pktmap_broker_xdp_held(const struct pktmap_broker_xsk *h)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, qo);
	if (!h || bpf_xdp_query(h->ifindex, 0, &qo) != 0)
		return 0;
	return qo.prog_id != 0 && qo.prog_id == h->prog.prog_id;
}

const char *pktmap_broker_xsk_mode(const struct pktmap_broker_xsk *h)
{
	return h && h->prog.generic ? "generic" : "native";
}

void pktmap_broker_xsk_detach(struct pktmap_broker_xsk *h)
{
	if (!h)
		return;
	pm_xdp_prog_release(&h->port, &h->prog, h->ifindex, &h->queue, h->nq);
	free(h);
}

/* The filter: frames of the interface in map[0] pass whole, the rest (and
 * everything once map[0] is 0) are dropped. */
static int filter_load(int map_fd)
{
#define INSN(c, d, s, o, i) { .code = (c), .dst_reg = (d), .src_reg = (s), \
			      .off = (o), .imm = (i) }
	const struct bpf_insn prog[] = {
		/* r7 = skb->ifindex */
		INSN(BPF_LDX | BPF_MEM | BPF_W, 7, 1,
		     offsetof(struct __sk_buff, ifindex), 0),
		/* key 0 on the stack, r2 = &key */
		INSN(BPF_ST | BPF_MEM | BPF_W, 10, 0, -4, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4),
		/* r1 = the map */
		INSN(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, map_fd),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 4, 0),
		INSN(BPF_LDX | BPF_MEM | BPF_W, 1, 0, 0, 0),
		INSN(BPF_JMP | BPF_JNE | BPF_X, 1, 7, 2, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0x7fffffff),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
#undef INSN
	return bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "pktmap_pktlock",
			     "GPL", prog, sizeof(prog) / sizeof(prog[0]), NULL);
}

int pktmap_broker_pkt_lock(int fd, int ifindex, char *err, size_t errlen)
{
	uint32_t key = 0, val = (uint32_t)ifindex;
	int map = bpf_map_create(BPF_MAP_TYPE_ARRAY, "pktmap_pktlock", 4, 4, 1,
				 NULL);
	if (map < 0) {
		snprintf(err, errlen, "cannot create the filter's map: %s",
			 strerror(-map));
		return map;
	}
	int ret = bpf_map_update_elem(map, &key, &val, BPF_ANY);
	int prog = ret ? ret : filter_load(map);
	if (prog < 0) {
		snprintf(err, errlen, "cannot load the interface filter: %s",
			 strerror(-prog));
		close(map);
		return prog;
	}
	int one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_BPF, &prog, sizeof(prog)) ||
	    setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one))) {
		ret = -errno;
		snprintf(err, errlen, "cannot attach the interface filter: %s",
			 strerror(errno));
		close(prog);
		close(map);
		return ret;
	}
	close(prog); /* the socket holds it */
	return map;
}

int pktmap_broker_pkt_revoke(int switch_fd)
{
	uint32_t key = 0, val = 0;
	return bpf_map_update_elem(switch_fd, &key, &val, BPF_ANY);
}
