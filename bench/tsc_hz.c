// SPDX-License-Identifier: BSD-2-Clause
/* Print the TSC frequency in Hz, measured against CLOCK_MONOTONIC_RAW
 * over 200 ms. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void)
{
	double t0 = now();
	uint64_t c0 = __rdtsc();
	while (now() - t0 < 0.2)
		;
	uint64_t c1 = __rdtsc();
	double t1 = now();
	printf("%.0f\n", (double)(c1 - c0) / (t1 - t0));
	return 0;
}
