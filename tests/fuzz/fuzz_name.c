// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the port-name parser must never crash, read out of
 * bounds or accept a name without filling a sane result.
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -I include -I src tests/fuzz/fuzz_name.c src/name.c src/conf.c ... */
#include <stdint.h>
#include <string.h>

#include "name.h"
#include "port.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[PM_NAME_MAX + 8], err[400];
	struct pm_name nm;
	if (size >= sizeof(name))
		size = sizeof(name) - 1;
	memcpy(name, data, size);
	name[size] = 0;
	if (pm_name_parse(name, &nm, err, sizeof(err)) == 0) {
		if (!memchr(nm.body, 0, sizeof(nm.body)) ||
		    !memchr(nm.backend, 0, sizeof(nm.backend)) ||
		    !pm_backend_find(nm.backend))
			__builtin_trap();
		/* what the @conf tables (src/conf.h) let through */
		if (!memchr(nm.conf.region, 0, sizeof(nm.conf.region)) ||
		    !memchr(nm.conf.secret, 0, sizeof(nm.conf.secret)) ||
		    nm.conf.spin_us < -1 || nm.conf.spin_us > 1000000 ||
		    nm.conf.tx_rings > PM_MAX_RINGS ||
		    nm.conf.rx_slots > PM_MAX_SLOTS)
			__builtin_trap();
	} else if (!memchr(err, 0, sizeof(err)) || strchr(err, '\n')) {
		__builtin_trap();
	}
	return 0;
}
