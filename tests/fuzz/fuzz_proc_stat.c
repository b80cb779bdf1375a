// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the /proc/PID/stat reader a pipe's lock waiter uses
 * to tell a holder from a process that got its pid (src/ports/pipe_lock.c,
 * pm_pipe_stat_parse()). The command name in it is whatever the process
 * set: the parser must never crash or read out of bounds, and must say
 * "no" to a text with no ") " followed by a state. The same bytes go
 * through the /proc/self/uid_map reader (src/userdir.c,
 * pm_uid_map_outside()), whose map a namespace's maker writes.
 *   tests/fuzz/run.sh proc_stat */
#include <stdint.h>
#include <string.h>

#include "ports/pipe.h"
#include "region.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char st[1024], state = 0;
	uint32_t start = 1;
	if (size >= sizeof(st))
		size = sizeof(st) - 1;
	memcpy(st, data, size);
	st[size] = 0;
	if (pm_pipe_stat_parse(st, &state, &start)) {
		const char *e = strrchr(st, ')');
		if (!e || e[1] != ' ' || e[2] != state || state == ' ' || !state)
			__builtin_trap();
	}
	uint32_t out = 0;
	for (uint32_t uid = 0; uid < 3; uid++)
		(void)pm_uid_map_outside(st, uid, &out);
	return 0;
}
