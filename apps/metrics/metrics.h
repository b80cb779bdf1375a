/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap metrics: the counters of every port on the host in Prometheus'
 * text format (metrics.c), printed or served over HTTP (metrics_http.c).
 * Metric names and labels are listed in docs/metrics.md: they are stable.
 */
#ifndef PKTMAP_APPS_METRICS_H
#define PKTMAP_APPS_METRICS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Scan the host's ports and write the exposition to f. Returns 0 or -1
 * (out of memory). */
int metrics_write(FILE *f);

/* Serve GET /metrics on addr ("PORT", "ADDR:PORT", "[ADDR6]:PORT"; no
 * address: 127.0.0.1) until *stop, the page written by write_body(f)
 * (0, or -1 for out of memory: a 500) for each request. Many clients at
 * once, each request bounded in size and time (metrics_http.c). Prints
 * the address it listens on. Returns 0, or an exit status after a
 * one-line error (EXIT_USAGE: addr is not an address; EXIT_RUNTIME:
 * cannot listen on it). */
int metrics_serve(const char *addr, volatile sig_atomic_t *stop,
		  int (*write_body)(FILE *f));

/* The request head a client sent so far, buf[0, len) (metrics_req.c):
 * 0 while it is not complete (no empty line yet, and len < cap), else
 * the HTTP status to answer: 200 for GET or HEAD of /metrics (*head set
 * for HEAD), 400 malformed (or a NUL byte in it), 404 another path, 405
 * another method, 431 no end within cap bytes. */
int metrics_req_parse(const char *buf, size_t len, size_t cap, bool *head);

#endif /* PKTMAP_APPS_METRICS_H */
