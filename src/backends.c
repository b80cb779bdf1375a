// SPDX-License-Identifier: BSD-2-Clause
/*
 * The table of back ends, above them all and below the name parser and
 * the public entry points: the one place that knows every back end.
 */
#include <string.h>

#include "port.h"
#include "util.h"

static const struct pm_port_ops *const known_backends[] = {
	&pm_null_ops,
	&pm_pipe_ops,
	&pm_pcap_ops,
	&pm_packet_ops,
	&pm_tap_ops,
	&pm_xdp_ops,
	&pm_vale_ops,
	&pm_memif_ops,
};

const struct pm_port_ops *pm_backend_find(const char *name)
{
	/* netmap's VALE grammar: "vale" followed by anything up to the ':'
	 * names a switch ("vale0:a", "valeX:port"). */
	if (strncmp(name, "vale", 4) == 0)
		return &pm_vale_ops;
	for (size_t i = 0; i < PM_ARRAY_SIZE(known_backends); i++)
		if (strcmp(known_backends[i]->desc.name, name) == 0)
			return known_backends[i];
	return NULL;
}

const struct pktmap_backend_desc *pktmap_backend(unsigned i)
{
	if (i >= PM_ARRAY_SIZE(known_backends))
		return NULL;
	return &known_backends[i]->desc;
}
