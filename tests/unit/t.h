/* SPDX-License-Identifier: BSD-2-Clause
 * A tiny test harness: CHECK() records a failure and goes on; main()
 * returns t_done(), which is 0 only when at least one check ran and every
 * check passed: a test whose setup failed before its first check fails. */
#ifndef PKTMAP_TEST_T_H
#define PKTMAP_TEST_T_H

#include <stdio.h>
#include <stdlib.h>

static int t_failed, t_checks;

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		t_checks++;                                                  \
		if (!(cond)) {                                               \
			t_failed++;                                          \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, \
				#cond);                                      \
			fprintf(stderr, __VA_ARGS__);                        \
			fprintf(stderr, "\n");                               \
		}                                                            \
	} while (0)

#define CHECK_EQ(a, b)                                                       \
	CHECK((long long)(a) == (long long)(b), "%lld != %lld",              \
	      (long long)(a), (long long)(b))

static inline int t_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, t_checks, t_failed);
	if (t_checks == 0) {
		fprintf(stderr, "FAIL %s: no check ran\n", name);
		return 1;
	}
	return t_failed ? 1 : 0;
}

#endif
