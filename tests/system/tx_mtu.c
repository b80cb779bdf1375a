// SPDX-License-Identifier: BSD-2-Clause
/* Frames of chosen lengths on a port's TX ring, for tests/system/tx_mtu.sh,
 * on the public API:
 *
 *   tx_mtu PORT [--set-mtu IF MTU [--until-seen]] LEN:COUNT[:vlan]...
 *
 * Opens PORT for TX, then (with --set-mtu) sets IF's MTU, then puts COUNT
 * broadcast frames of LEN bytes on the ring for each LEN:COUNT in order
 * (":vlan": with an 802.1Q tag after the MAC addresses), syncs until the
 * ring is empty again, and prints one line:
 *
 *   tx_packets N drop_too_long M tx_max_len L
 *
 * --until-seen (an MTU lowered under the open port): first send frames of
 * MTU + 15 bytes one sync at a time until the port counts one too long
 * (it reads the MTU again within about a second; at most 30 s), then
 * zero the counts by subtracting what that took; the line starts with
 * "before N", the frames sent before the port saw the new MTU.
 *
 * Exit status 0, or 1 with a line on stderr.
 */
#include <net/if.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pktmap/pktmap.h>

static int die(const char *what, int err)
{
	fprintf(stderr, "tx_mtu: %s: %s\n", what, err ? pktmap_strerror(err) : "");
	return 1;
}

/* Sync until every slot is back: each frame sent or counted. */
static int drain(struct pktmap_port *p)
{
	struct netmap_ring *r = NETMAP_TXRING(pktmap_nifp(p), 0);

	for (int tries = 0; nm_ring_space(r) < r->num_slots - 1; tries++) {
		if (tries > 100)
			return -1;
		pktmap_poll(p, POLLOUT, 100);
	}
	return 0;
}

static int set_mtu(const char *ifname, int mtu)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0), rc;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_mtu = mtu;
	rc = fd >= 0 ? ioctl(fd, SIOCSIFMTU, &ifr) : -1;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Put one frame of len bytes on the ring (waiting for room). */
static int put(struct pktmap_port *p, uint32_t len, int vlan)
{
	struct netmap_ring *r = NETMAP_TXRING(pktmap_nifp(p), 0);
	int tries = 0;

	while (nm_ring_space(r) == 0) {
		if (++tries > 100)
			return -1;
		pktmap_poll(p, POLLOUT, 100);
	}
	struct netmap_slot *s = &r->slot[r->head];
	uint8_t *b = (uint8_t *)NETMAP_BUF(r, s->buf_idx);
	memset(b, 0, len);
	memset(b, 0xff, 6);
	b[6] = 0x02;
	b[11] = 0x01;
	if (vlan) {
		b[12] = 0x81; b[13] = 0x00; b[14] = 0x00; b[15] = 0x07;
		b[16] = 0x88; b[17] = 0xb5;
	} else {
		b[12] = 0x88; b[13] = 0xb5;
	}
	s->len = (uint16_t)len;
	s->flags = 0;
	r->head = r->cur = nm_ring_next(r, r->head);
	return 0;
}

int main(int argc, char **argv)
{
	struct pktmap_open_opts o = {.sz = sizeof(o), .dir = PKTMAP_DIR_TX};
	struct pktmap_info info = {.sz = sizeof(info)};
	struct pktmap_stats st = {.sz = sizeof(st)};
	struct pktmap_port *p;
	struct pktmap_stats st0 = {.sz = sizeof(st0)};
	char errbuf[512] = "";
	unsigned long long before = 0;
	bool until_seen = false;
	int rc, a = 2;

	if (argc < 3) {
		fprintf(stderr, "usage: tx_mtu PORT [--set-mtu IF MTU] LEN:COUNT[:vlan]...\n");
		return 1;
	}
	o.errbuf = errbuf;
	o.errbuf_len = sizeof(errbuf);
	rc = pktmap_open(&p, argv[1], &o);
	if (rc < 0) {
		fprintf(stderr, "tx_mtu: %s\n", errbuf);
		return 1;
	}
	if (strcmp(argv[a], "--set-mtu") == 0) {
		if (argc < a + 3 || set_mtu(argv[a + 1], atoi(argv[a + 2])))
			return die("--set-mtu", 0);
		until_seen = argc > a + 3 && strcmp(argv[a + 3], "--until-seen") == 0;
		if (until_seen) {
			unsigned len = (unsigned)atoi(argv[a + 2]) + 15;
			struct timespec t0, t;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			while (st0.drop_too_long == 0) {
				clock_gettime(CLOCK_MONOTONIC, &t);
				if (t.tv_sec - t0.tv_sec > 30)
					return die("the port never saw the new MTU", 0);
				if (put(p, len, 0) || (rc = pktmap_txsync(p)) < 0 ||
				    drain(p))
					return die("--until-seen", 0);
				if ((rc = pktmap_stats(p, &st0)) < 0)
					return die("stats", rc);
			}
			before = (unsigned long long)st0.tx_packets;
			a++;
		}
		a += 3;
	}
	for (; a < argc; a++) {
		unsigned len, count;
		char tag[8] = "";

		if (sscanf(argv[a], "%u:%u:%7s", &len, &count, tag) < 2 ||
		    len < 14 || len > 9000)
			return die(argv[a], 0);
		for (unsigned i = 0; i < count; i++)
			if (put(p, len, strcmp(tag, "vlan") == 0))
				return die("the ring did not drain", 0);
		if ((rc = pktmap_txsync(p)) < 0)
			return die("txsync", rc);
	}
	if (drain(p))
		return die("the ring did not drain", 0);
	if ((rc = pktmap_stats(p, &st)) < 0 || (rc = pktmap_info(p, &info)) < 0)
		return die("stats", rc);
	if (until_seen)
		printf("before %llu ", before);
	printf("tx_packets %llu drop_too_long %llu tx_max_len %u\n",
	       (unsigned long long)(st.tx_packets - st0.tx_packets),
	       (unsigned long long)(st.drop_too_long - st0.drop_too_long),
	       info.tx_max_len);
	pktmap_close(p);
	return 0;
}
