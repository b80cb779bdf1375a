// SPDX-License-Identifier: BSD-2-Clause
/* The library's version, from meson's project version (version.h). */
#include <pktmap/pktmap.h>

const char *pktmap_version(void)
{
	return PKTMAP_VERSION;
}
