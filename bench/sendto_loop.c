/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The baseline a user would write without pktmap: an AF_PACKET raw socket
 * and one sendto() per frame, in a loop, until SIGINT/SIGTERM. The frame is
 * the first record of a pcap file (pktmap gen writes one through its pcap:
 * port), so the receiver sees the same bytes from every sender.
 *
 *   sendto_loop IFACE FRAME.pcap
 *
 * Prints the number of frames the kernel accepted.
 */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The first record of a classic pcap file (either byte order). */
static int read_frame(const char *path, unsigned char *buf, size_t cap)
{
	unsigned char hdr[24], rec[16];
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	int n = -1;
	if (fread(hdr, 1, 24, f) == 24 && fread(rec, 1, 16, f) == 16) {
		uint32_t magic, incl;
		memcpy(&magic, hdr, 4);
		memcpy(&incl, rec + 8, 4);
		if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1)
			incl = ntohl(incl);
		if (incl <= cap && fread(buf, 1, incl, f) == incl)
			n = (int)incl;
	}
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	unsigned char frame[9000];
	if (argc != 3) {
		fprintf(stderr, "usage: sendto_loop IFACE FRAME.pcap\n");
		return 2;
	}
	int len = read_frame(argv[2], frame, sizeof(frame));
	if (len <= 0) {
		fprintf(stderr, "sendto_loop: %s: no frame\n", argv[2]);
		return 1;
	}
	int fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		perror("socket(AF_PACKET)");
		return 1;
	}
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_ifindex = (int)if_nametoindex(argv[1]),
		.sll_halen = ETH_ALEN,
	};
	if (sll.sll_ifindex == 0) {
		fprintf(stderr, "sendto_loop: %s: no such interface\n", argv[1]);
		return 1;
	}
	memcpy(sll.sll_addr, frame, ETH_ALEN);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	unsigned long long sent = 0;
	while (!stop) {
		if (sendto(fd, frame, (size_t)len, 0, (struct sockaddr *)&sll,
			   sizeof(sll)) == len)
			sent++;
	}
	printf("%llu\n", sent);
	close(fd);
	return 0;
}
