/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap broker: a departed client's AF_XDP sockets closed aside.
 *
 * When the broker's copy is the last reference to an AF_XDP socket (its
 * client has gone), close() releases it, and the kernel's release waits
 * for an RCU grace period (synchronize_net() when it unbinds): 3 to 15 ms
 * on a busy machine, during which a broker that serves one thing at a
 * time would keep every other client's grant waiting. So those closes
 * are handed to one thread of their own, through a pipe: the broker
 * writes the descriptor and goes on; the thread closes them in order.
 * The two share a count of the descriptors closed (under a mutex), so
 * that a request for a queue whose socket is still being closed can wait
 * for it (broker_closer_wait()) instead of being answered "busy". When
 * the pipe is full or the thread could not start, the broker closes the
 * descriptor itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"

/* How long a request waits for the sockets being closed. */
#define CLOSER_WAIT_MS 1000

static pthread_mutex_t closer_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t closer_cv = PTHREAD_COND_INITIALIZER;
static uint64_t closer_done;   /* closed by the thread (closer_mu) */
static uint64_t closer_handed; /* handed to it (the broker's thread only) */

static void *closer_main(void *arg)
{
	int rfd = (int)(intptr_t)arg, fd;
	ssize_t n;
	while ((n = read(rfd, &fd, sizeof(fd))) == (ssize_t)sizeof(fd) ||
	       (n < 0 && errno == EINTR)) {
		if (n < 0)
			continue;
		close(fd);
		pthread_mutex_lock(&closer_mu);
		closer_done++;
		pthread_cond_broadcast(&closer_cv);
		pthread_mutex_unlock(&closer_mu);
	}
	close(rfd);
	return NULL;
}

void broker_closer_start(struct broker *b)
{
	int p[2];
	b->close_fd = -1;
	if (pipe2(p, O_CLOEXEC) != 0)
		return;
	/* (a write of a descriptor's 4 bytes is atomic: under PIPE_BUF) */
	(void)fcntl(p[1], F_SETFL, O_NONBLOCK);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int ret = pthread_create(&b->closer, NULL, closer_main,
				 (void *)(intptr_t)p[0]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret != 0) {
		broker_log("cannot start the thread that closes released "
			   "sockets (%s): the broker closes them itself",
			   strerror(ret));
		close(p[0]);
		close(p[1]);
		return;
	}
	b->close_fd = p[1];
}

void broker_close_later(struct broker *b, int fd)
{
	if (fd < 0)
		return;
	if (b->close_fd < 0 ||
	    write(b->close_fd, &fd, sizeof(fd)) != (ssize_t)sizeof(fd))
		close(fd);
	else
		closer_handed++;
}

bool broker_closer_wait(struct broker *b)
{
	if (b->close_fd < 0)
		return false;
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += CLOSER_WAIT_MS / 1000;
	pthread_mutex_lock(&closer_mu);
	bool waited = closer_done < closer_handed;
	while (closer_done < closer_handed &&
	       pthread_cond_timedwait(&closer_cv, &closer_mu, &dl) != ETIMEDOUT)
		;
	bool drained = closer_done >= closer_handed;
	pthread_mutex_unlock(&closer_mu);
	return waited && drained;
}

void broker_closer_stop(struct broker *b)
{
	if (b->close_fd < 0)
		return;
	close(b->close_fd);
	b->close_fd = -1;
	pthread_join(b->closer, NULL);
}
