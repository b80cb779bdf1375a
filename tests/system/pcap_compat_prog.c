// SPDX-License-Identifier: BSD-2-Clause
/* A libpcap program linked against pktmap's libpcap-compatible library
 * (compat/pcap), for the system tests of that library:
 *
 *   pcap_compat_prog inject DEV FILE    every packet of capture FILE
 *                                       (read by the system libpcap,
 *                                       forwarded) sent with pcap_inject()
 *                                       on DEV (served by pktmap); prints
 *                                       "injected N"
 *   pcap_compat_prog next DEV N [FILTER] read N packets with pcap_next_ex()
 *                                       (then pcap_next(), pcap_dispatch());
 *                                       prints "got N recv R drop D"
 *   pcap_compat_prog select DEV N       select() on pcap_get_selectable_fd()
 *                                       then pcap_dispatch(), as dumpcap
 *   pcap_compat_prog wait DEV N HOW     non-blocking mode, waiting with no
 *                                       timeout in HOW (select, poll or
 *                                       epoll) on pcap_get_selectable_fd():
 *                                       N packets, no spinning
 *   pcap_compat_prog api DEV            the API's answers on a live handle
 *                                       before and after activation
 *
 * Exit status 0 when everything went as libpcap says it should.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <unistd.h>

static int fails;

#define EXPECT(cond, ...)                                           \
	do {                                                        \
		if (!(cond)) {                                      \
			fprintf(stderr, "FAIL line %d: %s: ", __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);               \
			fprintf(stderr, "\n");                      \
			fails++;                                    \
		}                                                   \
	} while (0)

static pcap_t *open_dev(const char *dev, int to_ms)
{
	char err[PCAP_ERRBUF_SIZE] = "";
	pcap_t *p = pcap_open_live(dev, 65535, 1, to_ms, err);

	if (!p) {
		fprintf(stderr, "pcap_open_live %s: %s\n", dev, err);
		exit(2);
	}
	/* As tcpdump's line: the test starts its sender once it is seen. */
	fprintf(stderr, "listening on %s\n", dev);
	return p;
}

static int inject(const char *dev, const char *file)
{
	char err[PCAP_ERRBUF_SIZE] = "";
	pcap_t *in = pcap_open_offline(file, err), *out;
	struct pcap_pkthdr *h;
	const u_char *d;
	long n = 0;
	int rc;

	if (!in) {
		fprintf(stderr, "pcap_open_offline %s: %s\n", file, err);
		return 2;
	}
	out = open_dev(dev, 1000);
	while ((rc = pcap_next_ex(in, &h, &d)) == 1) {
		if (n % 2) {
			EXPECT(pcap_inject(out, d, h->caplen) == (int)h->caplen,
			       "%s", pcap_geterr(out));
		} else {
			EXPECT(pcap_sendpacket(out, d, (int)h->caplen) == 0, "%s",
			       pcap_geterr(out));
		}
		n++;
	}
	EXPECT(rc == PCAP_ERROR_BREAK, "end of file: %d %s", rc,
	       pcap_geterr(in));
	/* A packet larger than a buffer is refused with a message. */
	static u_char big[70000];
	EXPECT(pcap_inject(out, big, sizeof(big)) == PCAP_ERROR, "big inject");
	EXPECT(strstr(pcap_geterr(out), "does not fit") != NULL, "%s",
	       pcap_geterr(out));
	pcap_close(in);
	pcap_close(out);
	printf("injected %ld\n", n);
	return fails ? 1 : 0;
}

static void count_cb(u_char *user, const struct pcap_pkthdr *h,
		     const u_char *d)
{
	long *n = (long *)(void *)user;

	(void)d;
	if (h->caplen > h->len || h->caplen == 0)
		fails++;
	(*n)++;
}

static int next(const char *dev, long want, const char *filter)
{
	pcap_t *p = open_dev(dev, 2000);
	struct pcap_pkthdr *h, hh;
	const u_char *d;
	struct pcap_stat st;
	long got = 0;
	int rc;

	if (filter) {
		struct bpf_program prog;

		EXPECT(pcap_compile(p, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) == 0,
		       "%s", pcap_geterr(p));
		EXPECT(pcap_setfilter(p, &prog) == 0, "%s", pcap_geterr(p));
		pcap_freecode(&prog);
	}
	/* A third each way: next_ex, next, dispatch. */
	while (got < want / 3 && (rc = pcap_next_ex(p, &h, &d)) >= 0)
		if (rc == 1)
			got++;
	while (got < 2 * want / 3 && pcap_next(p, &hh))
		got++;
	while (got < want) {
		rc = pcap_dispatch(p, (int)(want - got), count_cb,
				   (u_char *)&got);
		if (rc < 0)
			break;
	}
	EXPECT(pcap_stats(p, &st) == 0, "%s", pcap_geterr(p));
	printf("got %ld recv %u drop %u\n", got, st.ps_recv, st.ps_drop);
	pcap_close(p);
	return fails ? 1 : 0;
}

static int sel(const char *dev, long want)
{
	pcap_t *p = open_dev(dev, 250);
	int fd = pcap_get_selectable_fd(p);
	long got = 0;

	EXPECT(fd >= 0, "selectable fd %d", fd);
	for (int idle = 0; got < want && idle < 40;) {
		fd_set rd;
		struct timeval tv = {0, 250000};

		FD_ZERO(&rd);
		FD_SET(fd, &rd);
		if (select(fd + 1, &rd, NULL, NULL, &tv) <= 0) {
			idle++;
			continue;
		}
		int rc = pcap_dispatch(p, -1, count_cb, (u_char *)&got);
		if (rc < 0)
			break;
		idle = rc ? 0 : idle + 1;
	}
	printf("got %ld\n", got);
	pcap_close(p);
	return fails ? 1 : 0;
}

/* As p0f, darkstat or argus: non-blocking, and the only waiting is in
 * the tool's own loop, with no timeout (a lost wake-up hangs, and the
 * test's timeout fails it). Counts the dispatches that found nothing:
 * a descriptor readable with nothing to read would make them pile up. */
static int wait_nb(const char *dev, long want, const char *how)
{
	pcap_t *p = open_dev(dev, 1000);
	char err[PCAP_ERRBUF_SIZE];
	EXPECT(pcap_setnonblock(p, 1, err) == 0, "%s", err);
	EXPECT(pcap_getnonblock(p, err) == 1, "nonblock");
	int fd = pcap_get_selectable_fd(p);
	EXPECT(fd >= 0, "selectable fd %d", fd);
	EXPECT(pcap_get_required_select_timeout(p) == NULL,
	       "a select timeout is required");
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	EXPECT(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl");
	printf("ready\n");
	fflush(stdout);
	long got = 0, full = 0, empty = 0;
	while (got < want) {
		int r;
		if (strcmp(how, "select") == 0) {
			fd_set rd;
			FD_ZERO(&rd);
			FD_SET(fd, &rd);
			r = select(fd + 1, &rd, NULL, NULL, NULL);
		} else if (strcmp(how, "poll") == 0) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			r = poll(&pfd, 1, -1);
		} else {
			r = epoll_wait(ep, &ev, 1, -1);
		}
		if (r < 0 && errno == EINTR)
			continue;
		EXPECT(r == 1, "%s: %d (%s)", how, r, strerror(errno));
		if (r != 1)
			break;
		int rc = pcap_dispatch(p, -1, count_cb, (u_char *)&got);
		if (rc < 0)
			break;
		if (rc)
			full++;
		else
			empty++;
	}
	EXPECT(empty <= full + 2, "%ld empty dispatches for %ld", empty, full);
	printf("got %ld\n", got);
	close(ep);
	pcap_close(p);
	return fails ? 1 : 0;
}

static pcap_t *breaker;

static void on_alarm(int sig)
{
	(void)sig;
	pcap_breakloop(breaker);
}

static int api(const char *dev)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_create(dev, err);
	int *list, n;

	if (!p) {
		fprintf(stderr, "pcap_create: %s\n", err);
		return 2;
	}
	EXPECT(pcap_datalink(p) == PCAP_ERROR_NOT_ACTIVATED, "datalink");
	EXPECT(pcap_snapshot(p) == PCAP_ERROR_NOT_ACTIVATED, "snapshot");
	EXPECT(pcap_set_snaplen(p, 128) == 0, "snaplen");
	EXPECT(pcap_set_timeout(p, 100) == 0, "timeout");
	EXPECT(pcap_set_promisc(p, 1) == 0, "promisc");
	EXPECT(pcap_set_immediate_mode(p, 1) == 0, "immediate");
	EXPECT(pcap_set_buffer_size(p, 1 << 20) == 0, "buffer");
	EXPECT(pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO) == 0,
	       "nano");
	EXPECT(pcap_can_set_rfmon(p) == 0, "rfmon");
	EXPECT(pcap_activate(p) == 0, "activate: %s", pcap_geterr(p));
	EXPECT(pcap_activate(p) == PCAP_ERROR_ACTIVATED, "activate twice");
	EXPECT(pcap_set_snaplen(p, 64) == PCAP_ERROR_ACTIVATED, "set after");
	EXPECT(pcap_datalink(p) == DLT_EN10MB, "datalink %d", pcap_datalink(p));
	EXPECT(pcap_snapshot(p) == 128, "snapshot %d", pcap_snapshot(p));
	EXPECT(pcap_get_tstamp_precision(p) == PCAP_TSTAMP_PRECISION_NANO,
	       "precision");
	n = pcap_list_datalinks(p, &list);
	EXPECT(n == 1 && list[0] == DLT_EN10MB, "list_datalinks %d", n);
	if (n > 0)
		pcap_free_datalinks(list);
	n = pcap_list_tstamp_types(p, &list);
	EXPECT(n == 1 && list[0] == PCAP_TSTAMP_HOST, "tstamp types %d", n);
	if (n > 0)
		pcap_free_tstamp_types(list);
	EXPECT(pcap_set_datalink(p, DLT_EN10MB) == 0, "set_datalink same");
	EXPECT(pcap_set_datalink(p, DLT_RAW) == PCAP_ERROR, "set_datalink raw");
	EXPECT(strstr(pcap_geterr(p), "not one of the DLTs") != NULL, "%s",
	       pcap_geterr(p));
	EXPECT(pcap_setdirection(p, PCAP_D_IN) == 0, "direction in");
	EXPECT(pcap_setdirection(p, PCAP_D_OUT) == PCAP_ERROR, "direction out");
	EXPECT(pcap_is_swapped(p) == 0, "swapped");
	EXPECT(pcap_major_version(p) == PCAP_VERSION_MAJOR, "major");
	EXPECT(pcap_file(p) == NULL, "file");
	EXPECT(pcap_get_selectable_fd(p) >= 0, "selectable fd");

	struct bpf_program prog;
	EXPECT(pcap_compile(p, &prog, "udp port", 1, 0) == PCAP_ERROR,
	       "bad filter compiled");
	EXPECT(strstr(pcap_geterr(p), "syntax error") != NULL, "%s",
	       pcap_geterr(p));
	EXPECT(pcap_compile(p, &prog, "udp port 9", 1, 0) == 0, "%s",
	       pcap_geterr(p));
	EXPECT(pcap_setfilter(p, &prog) == 0, "%s", pcap_geterr(p));
	pcap_freecode(&prog);

	/* Non-blocking: nothing there, 0 at once. */
	long got = 0;
	EXPECT(pcap_setnonblock(p, 1, err) == 0, "setnonblock");
	EXPECT(pcap_getnonblock(p, err) == 1, "getnonblock");
	EXPECT(pcap_dispatch(p, -1, count_cb, (u_char *)&got) == 0, "nonblock");
	EXPECT(pcap_setnonblock(p, 0, err) == 0, "setnonblock 0");
	/* A timeout: 0 packets after about 100 ms. */
	EXPECT(pcap_dispatch(p, -1, count_cb, (u_char *)&got) == 0, "timeout");
	/* breakloop from a signal handler ends pcap_loop with -2. */
	breaker = p;
	signal(SIGALRM, on_alarm);
	alarm(1);
	EXPECT(pcap_loop(p, -1, count_cb, (u_char *)&got) == PCAP_ERROR_BREAK,
	       "breakloop");
	EXPECT(got == 0, "got %ld", got);

	/* A dumper on a live handle writes our link type and snaplen. */
	char path[] = "/tmp/pcap_compat_prog.XXXXXX";
	int fd = mkstemp(path);
	pcap_dumper_t *dd = fd >= 0 ? pcap_dump_open(p, path) : NULL;
	EXPECT(dd != NULL, "dump_open: %s", pcap_geterr(p));
	if (dd) {
		pcap_dump_close(dd);
		pcap_t *r = pcap_open_offline(path, err);
		EXPECT(r && pcap_datalink(r) == DLT_EN10MB &&
			       pcap_snapshot(r) == 128,
		       "dump header: %s", r ? "" : err);
		if (r)
			pcap_close(r);
	}
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	pcap_close(p);

	/* Unknown devices: libpcap's status and words. */
	p = pcap_create("xdp:pmnosuch0", err);
	EXPECT(p != NULL, "create %s", err);
	if (p) {
		EXPECT(pcap_activate(p) == PCAP_ERROR_NO_SUCH_DEVICE, "%s",
		       pcap_geterr(p));
		pcap_close(p);
	}
	EXPECT(pcap_open_live("xdp:pmnosuch0", 100, 0, 0, err) == NULL,
	       "open_live");
	EXPECT(strstr(err, "xdp:pmnosuch0: No such device exists") == err,
	       "%s", err);
	EXPECT(strstr(pcap_lib_version(), "pktmap") != NULL, "%s",
	       pcap_lib_version());
	return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "inject") == 0)
		return inject(argv[2], argv[3]);
	if (argc >= 4 && strcmp(argv[1], "next") == 0)
		return next(argv[2], atol(argv[3]), argc > 4 ? argv[4] : NULL);
	if (argc >= 4 && strcmp(argv[1], "select") == 0)
		return sel(argv[2], atol(argv[3]));
	if (argc >= 5 && strcmp(argv[1], "wait") == 0)
		return wait_nb(argv[2], atol(argv[3]), argv[4]);
	if (argc >= 3 && strcmp(argv[1], "api") == 0)
		return api(argv[2]);
	fprintf(stderr, "usage: pcap_compat_prog inject DEV FILE | next DEV N "
			"[FILTER] | select DEV N | api DEV\n");
	return 2;
}
