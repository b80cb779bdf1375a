// SPDX-License-Identifier: BSD-2-Clause
/*
 * pub_racer FILE: the owner of a counters file (src/pub.h) changing it
 * under its readers, as fast as it can until it is killed. It maps FILE
 * shared and flips the header's words a reader checks and then uses
 * between a good and a bad value: ring_offset to far outside the file,
 * the ring counts to a huge sum, size beyond the file. A reader that
 * checks a word in the shared file and reads it again to use it follows
 * the bad value (pktmap top, pktmap metrics before issue 30); one that
 * copies the file once and uses only its copy sees a good file or a bad
 * one, never a mix.
 *
 * Prints "racing" once it has started. At SIGTERM it puts the good
 * values back and exits 0; exits 1 (with a line) when FILE cannot be
 * mapped.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pub.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: pub_racer FILE\n");
		return 2;
	}
	int fd = open(argv[1], O_RDWR | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 ||
	    st.st_size < (off_t)sizeof(struct pm_pub_hdr)) {
		perror(argv[1]);
		return 1;
	}
	struct pm_pub_hdr *h = mmap(NULL, (size_t)st.st_size,
				    PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	const uint32_t good_ofs = h->ring_ofs, good_ntx = h->ntx,
		       good_size = h->size;
	struct sigaction sa = { .sa_handler = on_term };
	sigaction(SIGTERM, &sa, NULL);
	printf("racing\n");
	fflush(stdout);
	for (uint64_t i = 0; !stop; i++) {
		bool bad = i & 1;
		__atomic_store_n(&h->ring_ofs, bad ? 0x7fffffc0u : good_ofs,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&h->ntx, bad ? 0x7ffffff0u : good_ntx,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&h->size, bad ? 0xffffffc0u : good_size,
				 __ATOMIC_RELAXED);
	}
	h->ring_ofs = good_ofs, h->ntx = good_ntx, h->size = good_size;
	return 0;
}
