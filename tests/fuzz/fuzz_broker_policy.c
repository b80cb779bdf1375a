// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: pktmap broker's policy file (apps/broker/policy.c),
 * as policy_load() hands it over: the bytes read, at most
 * POLICY_MAX_BYTES. An accepted policy has sane rules (a known back end,
 * a 0-terminated interface, queues in order, some mode and direction)
 * that policy_check() and policy_names_iface() can be asked about; a
 * refused one has one line "FILE:LINE: what". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker_proto.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct policy pol;
	char err[300], why[300];
	if (policy_parse(&pol, "f", buf, size, err, sizeof(err)) == 0) {
		for (uint32_t i = 0; i < pol.n; i++) {
			const struct pol_rule *r = &pol.rules[i];
			if (r->backend < POL_XDP || r->backend > POL_TAP ||
			    !memchr(r->iface, 0, sizeof(r->iface)) || r->qlo > r->qhi ||
			    !r->modes || !r->dirs || r->line == 0)
				__builtin_trap();
			struct pol_client c = { .uid = r->id, .gid = r->id };
			struct pol_ask a = { r->backend, r->iface, r->qlo, 0,
					     PM_BK_DIR_RX, 4096, r->own_netns };
			int k = policy_check(&pol, &c, &a, why, sizeof(why));
			if (k >= (int)pol.n || (k < 0 && strchr(why, '\n')))
				__builtin_trap();
			/* a host rule names its own interface (or prefix) */
			if (!r->own_netns &&
			    !policy_names_iface(&pol, r->backend, r->iface))
				__builtin_trap();
		}
		policy_free(&pol);
	} else if (!memchr(err, 0, sizeof(err)) || strchr(err, '\n') ||
		   strncmp(err, "f:", 2) != 0) {
		__builtin_trap();
	}
	free(buf);
	return 0;
}
