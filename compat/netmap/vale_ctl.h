// SPDX-License-Identifier: BSD-2-Clause
/*
 * vale-ctl's requests (NETMAP_REQ_VALE_*), served by the running `pktmap
 * switch` the request names (vale_ctl.c).
 */
#ifndef PKTMAP_COMPAT_NETMAP_VALE_CTL_H
#define PKTMAP_COMPAT_NETMAP_VALE_CTL_H

#include <stddef.h>
#include <stdint.h>

/* Serve request reqtype for nr_name `name` (NETMAP_REQ_IFNAMSIZ bytes,
 * rewritten by LIST) with its body (NULL allowed for DETACH and DELIF).
 * Returns 0, or -errno with one line in err. */
int nme_vale_request(uint16_t reqtype, char *name, void *body, char *err,
		     size_t errlen);

#endif
