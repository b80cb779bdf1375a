// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target: the config files of `pktmap router --config`
 * (apps/router/router_conf.c), as router_conf_read() holds them: the
 * file's bytes in a buffer one byte longer. A file is refused with a line
 * number within the file, or cut into items that each name a key of the
 * table, with a NUL-terminated value free of control characters but tabs
 * and of comments (or none), on lines in order within the file; nothing is read
 * or written outside the buffer. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "router_conf.h"

static unsigned lines_of(const uint8_t *data, size_t len)
{
	unsigned n = 0;

	for (size_t i = 0; i < len; i++)
		n += data[i] == '\n';
	return n + (len && data[len - 1] != '\n');
}

static bool value_ok(const char *v)
{
	for (; *v; v++)
		if (((unsigned char)*v < 0x20 && *v != '\t') || *v == 0x7f)
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static struct router_conf c;
	char *buf = malloc(len + 1), err[256];
	unsigned line, lines = lines_of(data, len);

	if (!buf)
		return 0;
	memcpy(buf, data, len);
	if (router_conf_parse(&c, buf, len, &line, err, sizeof(err))) {
		if (line > lines || strlen(err) == 0)
			abort();
		free(buf);
		return 0;
	}
	for (unsigned k = 0; k < c.n; k++) {
		const struct router_conf_item *it = &c.item[k];

		if (!it->key || it->line == 0 || it->line > lines ||
		    (k && it->line <= c.item[k - 1].line))
			abort();
		if (it->value && (!*it->value || !value_ok(it->value) ||
				  strstr(it->value, " #") ||
				  (it->value < buf || it->value > buf + len)))
			abort();
	}
	free(buf);
	return 0;
}
