/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The broker's policy file (docs/broker.md, "Policy"): one rule a line,
 *
 *   allow WHO BACKEND:IFACE [queues=N|N-M] [modes=copy,zc,live]
 *                           [dir=rx,tx] [umem=SIZE] [netns=host|own]
 *
 * WHO is user:NAME|UID, group:NAME|GID or any; IFACE is a name, or a
 * prefix ending in '*'. '#' starts a comment. The first rule that names
 * the client and the port decides; a request no rule names is refused.
 * Read once (at most POLICY_MAX_BYTES), every line checked; an error is
 * "FILE:LINE: what".
 */
#ifndef PKTMAP_APPS_BROKER_POLICY_H
#define PKTMAP_APPS_BROKER_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define POLICY_MAX_BYTES (1u << 20)
#define POLICY_MAX_RULES 4096u
#define POLICY_MAX_LINE 1024u
#define POLICY_MAX_GROUPS 64u
#define POLICY_DEFAULT_UMEM (64ull << 20)

enum pol_backend { POL_XDP = 1, POL_PKT, POL_TAP };
enum pol_who { POL_ANY, POL_USER, POL_GROUP };

struct pol_rule {
	uint32_t line;
	enum pol_who who;
	uint32_t id;          /* uid or gid */
	enum pol_backend backend;
	char iface[16];
	bool prefix;          /* iface ends in '*': a prefix */
	uint32_t qlo, qhi;    /* queues [qlo, qhi] */
	uint32_t modes;       /* PM_BK_MODE_* (xdp:) */
	uint32_t dirs;        /* PM_BK_DIR_* */
	uint64_t umem;        /* bytes of UMEM at most (xdp:) */
	bool own_netns;       /* netns=own: the client's own namespaces */
};

struct policy {
	char file[256];
	struct pol_rule *rules;
	uint32_t n;
};

/* Who asks: from SO_PEERCRED and SO_PEERGROUPS. */
struct pol_client {
	uid_t uid;
	gid_t gid;
	gid_t groups[POLICY_MAX_GROUPS];
	uint32_t ngroups;
};

/* What is asked. */
struct pol_ask {
	enum pol_backend backend;
	const char *iface;
	uint32_t queue;       /* xdp: */
	uint32_t mode;        /* xdp: one PM_BK_MODE_* (0: copy or zc) */
	uint32_t dir;         /* PM_BK_DIR_* */
	uint64_t umem;        /* xdp: */
	bool own_netns;       /* in a network namespace the client owns */
};

/* Parse text[0..len) (the file's contents, named `file` in messages).
 * Returns 0, or -EINVAL with "FILE:LINE: what" in err. */
int policy_parse(struct policy *pol, const char *file, const char *text,
		 size_t len, char *err, size_t errlen);
/* Read and parse a file. Returns 0 or -errno with the one line in err. */
int policy_load(struct policy *pol, const char *path, char *err,
		size_t errlen);
void policy_free(struct policy *pol);

/* The rule that allows `a` for `c` (its index), or -1 with the reason in
 * why: the first rule naming both that refuses it ("FILE:LINE: queue 3
 * is not in 0-1"), or that no rule names them. */
int policy_check(const struct policy *pol, const struct pol_client *c,
		 const struct pol_ask *a, char *why, size_t whylen);

/* Does a rule of the host's network namespace (not netns=own) name
 * `backend`:`iface`, whoever it allows? */
bool policy_names_iface(const struct policy *pol, enum pol_backend backend,
			const char *iface);

const char *policy_backend_name(enum pol_backend b);

#endif /* PKTMAP_APPS_BROKER_POLICY_H */
