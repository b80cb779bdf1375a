/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The bottom of pktmap: small helpers that know nothing of ports, used by
 * the library, the forwarding component (src/fwd) and the commands alike.
 * Built once as its own static library (libpktmap_util, src/util.c) and
 * linked into each of them; nothing here is exported from libpktmap.
 */
#ifndef PKTMAP_UTIL_H
#define PKTMAP_UTIL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* C11 atomics on an object declared without _Atomic: a layout another
 * party fixes (the kernel's AF_XDP rings, memif's rings, the published
 * counters), or a word read without a lock and written under one. The
 * atomic_*_explicit() calls take PM_ATOMIC(p): p seen as a pointer to the
 * _Atomic twin of its type, which GCC and clang lay out as the plain type
 * (the asserts below), so both name the same bytes. */
#define PM_ATOMIC(p) ((_Atomic __typeof__(*(p)) *)(p))
_Static_assert(sizeof(_Atomic uint16_t) == sizeof(uint16_t) &&
	       sizeof(_Atomic uint32_t) == sizeof(uint32_t) &&
	       sizeof(_Atomic uint64_t) == sizeof(uint64_t) &&
	       sizeof(void *_Atomic) == sizeof(void *),
	       "an _Atomic integer or pointer is its plain type's size");

#define pm_likely(x) __builtin_expect(!!(x), 1)
#define pm_unlikely(x) __builtin_expect(!!(x), 0)
/* Tell the CPU we are spinning. */
static inline void pm_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

#define PM_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The clocks, read one way: clock c (CLOCK_MONOTONIC, its _COARSE twin
 * for a tick of a few ms at no syscall's cost, CLOCK_REALTIME for a
 * timestamp) in nanoseconds, milliseconds or whole seconds. */
static inline uint64_t pm_clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int64_t pm_clock_ms(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t pm_clock_sec(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec;
}

/* Copy src into dst with control characters replaced by '?', so a name
 * can be echoed in a one-line message. */
void pm_printable(char *dst, size_t len, const char *src);

/* Parse a dotted quad at s into *ip (host order); *end gets the first
 * character after it. Returns 0 or -1. The one IPv4 parser of the
 * router's routes files and the commands' address options. */
int pm_parse_ipv4(const char *s, uint32_t *ip, const char **end);

/* xorshift64*: a fast generator for random outputs (not for secrets).
 * The state must not be 0. */
static inline uint64_t pm_rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Remove the user's directory /dev/shm/pktmap-EUID if it is empty (its
 * last file has just gone; the next open makes it again). A directory of
 * another name (src/userdir.c: made while the name was taken) stays. */
void pm_user_dir_drop(const char *dir);

#endif /* PKTMAP_UTIL_H */
