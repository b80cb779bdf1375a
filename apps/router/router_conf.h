/* SPDX-License-Identifier: BSD-2-Clause
 *
 * `pktmap router --config FILE`: the file holds the router's options, one
 * "KEY VALUE" line each, KEY being the long option's name ("port
 * pipe:r{0", "mode lpm", "routes edge.routes", "copy"); '#' starts a
 * comment (at the start of a line, or after a blank). This reads the
 * lines and checks their shape and keys; the values go through the
 * command line's own option parser (router.c), so a file means exactly
 * what the same options would. Relative `routes` paths are taken from
 * the file's directory.
 */
#ifndef PKTMAP_APPS_ROUTER_CONF_H
#define PKTMAP_APPS_ROUTER_CONF_H

#include <stddef.h>

/* The router's long options without a short one (router.c). */
enum {
	OPT_MAP = 256, OPT_OUTPUTS, OPT_QUEUE, OPT_STASH, OPT_SEED, OPT_DURATION,
	OPT_IDLE, OPT_COPY, OPT_JSON,
};

#define ROUTER_CONF_MAX_BYTES (64 * 1024) /* a larger file is refused */
#define ROUTER_CONF_MAX_LINE 1024         /* bytes of a line, newline too */
#define ROUTER_CONF_MAX_ITEMS 128         /* KEY VALUE lines */

struct router_conf_item {
	int opt;            /* the option ('i', OPT_MAP, ...) */
	const char *key;    /* as in the file */
	const char *value;  /* NULL for a key without one ("copy") */
	unsigned line;
};

struct router_conf {
	char *text;         /* the file's bytes, the lines cut in place */
	char *routes;       /* a relative routes path made absolute */
	struct router_conf_item item[ROUTER_CONF_MAX_ITEMS];
	unsigned n;
};

/* Cut buf[0..len) (a config file's bytes, with room for one more: it is
 * written to, buf[len] too) into c's items. Returns 0, or -1 with *line the line (0: the whole file) and a
 * message in err: an unknown key, a value missing or one given to a key
 * that takes none, a control character or NUL byte, a line or file too
 * long, too many lines. */
int router_conf_parse(struct router_conf *c, char *buf, size_t len,
		      unsigned *line, char *err, size_t errlen);

/* Read and parse file `path` into *c (zeroed first). Returns 0, or -1
 * with "PATH:LINE: message" (or "PATH: message") in err; nothing is
 * left allocated then. */
int router_conf_read(const char *path, struct router_conf *c, char *err,
		     size_t errlen);

void router_conf_free(struct router_conf *c);

#endif /* PKTMAP_APPS_ROUTER_CONF_H */
