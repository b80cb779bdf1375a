/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The cost of the XDP program attached to an interface, on one frame,
 * without a sender: BPF_PROG_TEST_RUN runs it REPEAT times on the frame
 * in FRAME (raw bytes, Ethernet header first) in this thread, with its
 * real maps, and the kernel reports the mean time a run. bench/scrub.sh
 * runs it on scrub's and xdp-filter's programs with the same denied
 * frame: their own cost, which a veth flood cannot show (its sender's
 * core bounds every cleaner).
 *
 * Usage: xdp_prog_cost IFACE FRAME [REPEAT]
 * Output: "NS RETVAL" (mean ns a run, the program's last XDP action).
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

int main(int argc, char **argv)
{
	char frame[4096];
	char out[4096 + 256];

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: xdp_prog_cost IFACE FRAME [REPEAT]\n");
		return 2;
	}
	unsigned ifindex = if_nametoindex(argv[1]);
	if (!ifindex) {
		fprintf(stderr, "xdp_prog_cost: no interface %s\n", argv[1]);
		return 1;
	}
	long repeat = argc == 4 ? strtol(argv[3], NULL, 10) : 1000000;
	if (repeat < 1 || repeat > 1000000000) {
		fprintf(stderr, "xdp_prog_cost: REPEAT is 1 to 1e9\n");
		return 2;
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		fprintf(stderr, "xdp_prog_cost: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	size_t len = fread(frame, 1, sizeof(frame), f);
	fclose(f);
	if (len < 14) {
		fprintf(stderr, "xdp_prog_cost: %s: not a frame\n", argv[2]);
		return 1;
	}
	__u32 id = 0;
	int ret = bpf_xdp_query_id((int)ifindex, 0, &id);
	if (ret || !id) {
		fprintf(stderr, "xdp_prog_cost: %s: no XDP program\n", argv[1]);
		return 1;
	}
	int fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0) {
		fprintf(stderr, "xdp_prog_cost: program %u: %s\n", id, strerror(-fd));
		return 1;
	}
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (__u32)len,
		    .data_out = out, .data_size_out = sizeof(out),
		    .repeat = (int)repeat);
	ret = bpf_prog_test_run_opts(fd, &o);
	close(fd);
	if (ret) {
		fprintf(stderr, "xdp_prog_cost: test run: %s\n", strerror(-ret));
		return 1;
	}
	printf("%u %u\n", o.duration, o.retval);
	return 0;
}
