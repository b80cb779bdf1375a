/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The counters `pktmap scrub` publishes for `pktmap top` and `pktmap
 * metrics`: by reason and by rule, one file per scrub process,
 * /dev/shm/pktmap-scrub.UID.PID (mode 0600: its owner and root read it),
 * rewritten whole once a second by the scrub's main thread (a new file
 * renamed over the old, so a reader never sees half of one):
 *
 *   0     struct sp_hdr
 *   then  uint64_t reason[nreasons]      (scrub_reason_name() order)
 *   then  struct sp_rule rule[nrules]
 *
 * A reader trusts nothing in it: the file's owner may write anything. It
 * is read once into private memory (at most SP_MAX_SIZE bytes), checked
 * whole (magic, version, every count and the size they imply, strings
 * cut at their field), and only the copy is used. Files of processes
 * that are gone are skipped (and removed when they are the reader's).
 */
#ifndef PKTMAP_APPS_SCRUBPUB_H
#define PKTMAP_APPS_SCRUBPUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_DIR "/dev/shm"
#define SP_PREFIX "pktmap-scrub."
#define SP_MAGIC 0x31726373746b706eull /* "nptkscr1" */
#define SP_VERSION 1u
#define SP_MAX_REASONS 64u
#define SP_MAX_RULES 4096u
#define SP_MAX_FILES 256u  /* files one scan reads */

struct sp_hdr {
	uint64_t magic;
	uint32_t version, size;       /* size: bytes of the whole file */
	int32_t pid;
	uint32_t uid;
	uint64_t start_ticks;         /* /proc/PID/stat field 22 */
	uint32_t nreasons, nrules;
	uint32_t workers, flags;      /* SP_F_* */
	uint64_t judged, passed, dropped;
	char in[128], out[128];
};

#define SP_F_DRY_RUN 1u
#define SP_F_KERNEL 2u

struct sp_rule {
	uint64_t hits;
	uint32_t line, pad;
	char text[96];
};

#define SP_MAX_SIZE (sizeof(struct sp_hdr) + SP_MAX_REASONS * 8 + \
		     SP_MAX_RULES * sizeof(struct sp_rule))

/* One scrub process, from its checked copy. */
struct sp_proc {
	struct sp_hdr h;              /* strings NUL-terminated */
	uint64_t reason[SP_MAX_REASONS];
	struct sp_rule *rule;         /* [h.nrules], malloc'ed */
};

struct sp_list {
	struct sp_proc *v;
	unsigned n;
};

/* Check buf[0..size) (a private copy) and fill p from it. 0, or -1 when
 * it is not a valid file (or out of memory). */
int sp_parse(const void *buf, size_t size, struct sp_proc *p);

/* Every live scrub this user may see (root: everyone's). 0 or -ENOMEM. */
int sp_scan(struct sp_list *l);
void sp_free(struct sp_list *l);

/* The name of reason k of a file (this build's names; a newer scrub's
 * extra reasons are "reasonK"). */
const char *sp_reason_name(uint32_t k);

/* Write the file of this process (image built by the caller, size
 * bytes): 0 or -errno. sp_remove() at exit. */
int sp_write(const void *image, size_t size);
void sp_remove(void);

#endif /* PKTMAP_APPS_SCRUBPUB_H */
