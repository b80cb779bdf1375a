// SPDX-License-Identifier: BSD-2-Clause
/*
 * The helpers of util.h that are not inline: printable names, IPv4
 * addresses.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

void pm_printable(char *dst, size_t len, const char *src)
{
	size_t i = 0;
	for (; len && src[i] && i + 1 < len; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	if (len)
		dst[i] = 0;
}

int pm_parse_ipv4(const char *s, uint32_t *ip, const char **end)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned long part;
		char *e;

		if (!isdigit((unsigned char)*s))
			return -1;
		part = strtoul(s, &e, 10);
		if (part > 255 || e - s > 3)
			return -1;
		v = v << 8 | (uint32_t)part;
		s = e;
		if (i < 3) {
			if (*s != '.')
				return -1;
			s++;
		}
	}
	*ip = v;
	*end = s;
	return 0;
}

void pm_user_dir_drop(const char *dir)
{
	/* Only a directory of the plain name /dev/shm/pktmap-UID (the uid
	 * our names use, src/userdir.c): a directory of another name (made
	 * while the name was taken, pktmap-UID.XXXXXX) stays, so that every
	 * process of the user keeps finding the same one. Not empty:
	 * nothing happens. */
	static const char pre[] = "/dev/shm/pktmap-";
	if (strncmp(dir, pre, sizeof(pre) - 1) != 0)
		return;
	const char *d = dir + sizeof(pre) - 1;
	if (!*d || strspn(d, "0123456789") != strlen(d))
		return;
	rmdir(dir);
}
