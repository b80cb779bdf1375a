/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap top: the ports of the host (apps/common/hostports.c), their rates
 * from two scans, sorted and filtered (top_view.c), drawn live on a
 * terminal or printed once as text or JSON (top.c).
 */
#ifndef PKTMAP_APPS_TOP_H
#define PKTMAP_APPS_TOP_H

#include <stdbool.h>
#include <stdio.h>

#include "hostports.h"
#include "scrubpub.h"

enum top_sort { TOP_SORT_RATE, TOP_SORT_DROPS, TOP_SORT_NAME, TOP_SORT_PID };

struct top_opts {
	double interval;        /* seconds between scans */
	enum top_sort sort;
	const char *filter;     /* substring of port, program, command, pid */
	bool rings;             /* a line per bound ring */
	bool color;
};

/* Per-second rates of one port or ring between two scans. */
struct top_rate {
	double rx_pps, tx_pps, bps, drops;
};

/* One row of the view: a port, its rates (valid when have_rate). */
struct top_row {
	const struct hp_port *p;
	const struct hp_port *prev;  /* the same port in the previous scan */
	struct top_rate r;
	bool have_rate;
};

/* Rows of `cur` that pass the filter, with rates against `prev` (NULL:
 * none) over dt seconds, sorted. Returns the row count; *rows is
 * malloc'ed (NULL when 0), or -1 when out of memory. */
int top_rows(const struct top_opts *o, const struct hp_list *cur,
	     const struct hp_list *prev, double dt, struct top_row **rows);

/* The text table: a header line and a line per row (and per ring with
 * o->rings), at most max_lines lines (0: no limit), 79 columns each, with
 * colour escapes when o->color; live: a title line, and each line ends
 * by clearing the rest of the terminal's line. */
void top_text(FILE *f, const struct top_opts *o, const struct top_row *rows,
	      int n, double dt, unsigned max_lines, bool live);

/* The JSON document: every row with its counters, rings and rates, and
 * how many counters files the scan left unread (struct hp_list). */
void top_json(FILE *f, const struct top_row *rows, int n, double dt,
	      unsigned skipped, const struct sp_list *scrub);
/* The scrub processes (apps/common/scrubpub.h): a line each, at most max,
 * 79 columns: what was judged, passed and dropped, and the drops by
 * reason. */
void top_scrub_text(FILE *f, const struct sp_list *l, unsigned max, bool live);

#endif /* PKTMAP_APPS_TOP_H */
