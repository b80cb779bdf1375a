/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Command-line helpers shared by the subcommands: parsing of numbers with
 * SI suffixes, size ranges, IPv4 address/port ranges and MAC addresses,
 * and the one-line error convention ("pktmap: <message>", exit 2 for usage
 * errors, 1 for runtime errors).
 */
#ifndef PKTMAP_APPS_CLI_H
#define PKTMAP_APPS_CLI_H

#include <stdbool.h>
#include <stdint.h>

#define EXIT_USAGE 2
#define EXIT_RUNTIME 1

/* A subcommand: its entry point and the one line `pktmap --help` shows. */
struct cli_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
	void (*usage)(void); /* full help for `pktmap help NAME`; may be NULL */
};

/* The table lives in main.c. */
const struct cli_cmd *cli_find_cmd(const char *name);

/* Print "pktmap: <message>" to stderr, on one line whatever the values in
 * it hold (cli_one_line()). */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* While `where` is not NULL, cli_err() says it first ("pktmap: WHERE:
 * message"): the file and line the values being parsed came from
 * (`pktmap router --config`). The string must live until reset. */
void cli_err_where(const char *where);

/* Make s one printable line in place: control characters (a newline in
 * an argument, an escape sequence) become '?', as ls -q shows them. */
void cli_one_line(char *s);

/* An inclusive range of unsigned values. */
struct cli_range {
	uint64_t lo, hi;
};

/* An IPv4 address range with a port range, host byte order. */
struct cli_addr {
	uint32_t ip_lo, ip_hi;
	uint16_t port_lo, port_hi;
};

/* Parsers return 0 on success or -1 with a message in err (errlen bytes).
 * Suffixes k, M, G multiply by 1e3, 1e6, 1e9 (K, m, g accepted too). */
int cli_parse_u64(const char *s, uint64_t max, uint64_t *out, char *err,
		  unsigned errlen);
/* "A" or "A-B" with A <= B, each within [min, max]. */
int cli_parse_range(const char *s, uint64_t min, uint64_t max,
		    struct cli_range *out, char *err, unsigned errlen);
/* A non-negative number of seconds: "1", "0.5", "2.25". */
int cli_parse_seconds(const char *s, double max, double *out, char *err,
		      unsigned errlen);
/* An option's value, for the option parsers of the subcommands: parse a
 * number in [min, max] (or seconds up to max) into *out; on a bad value
 * print "pktmap: WHAT <why>" (WHAT like "gen: -b: batch") and return 1. */
int cli_opt_u64(const char *what, const char *arg, uint64_t min, uint64_t max,
		uint64_t *out);
int cli_opt_seconds(const char *what, const char *arg, double max, double *out);
/* CPUs first .. first + n - 1 (pinning -a CPU with n threads), or the n
 * CPUs of list cpus[] when cpus is not NULL: each must be one this
 * process may run on (sched_getaffinity(): online, in its cpuset). A CPU
 * that is not is a usage error, refused before anything is opened
 * (pktmap(8), EXIT STATUS): returns 0, or 1 with "pktmap: WHAT CPU C is
 * not one this process may run on (CPUs 0-3)" printed. */
int cli_cpus_ok(const char *what, int first, unsigned n, const int *cpus);
/* "10.0.0.1", "10.0.0.1-10.0.0.9", with an optional ":1234" or
 * ":1234-1240". When no port is given, *out's ports are left alone. */
int cli_parse_addr(const char *s, struct cli_addr *out, char *err,
		   unsigned errlen);
/* "aa:bb:cc:dd:ee:ff" (or with '-' separators). */
int cli_parse_mac(const char *s, uint8_t mac[6], char *err, unsigned errlen);

/* The name of the port a thread opens: `name` unchanged when there is one
 * thread, else with "-I" inserted before any "/" or "@" suffix (netmap's
 * one-ring form: "pipe:x{0@conf:rings=2" -> "pipe:x{0-1@conf:rings=2").
 * Ports of the "null" back end are opened unchanged. Returns 0, or -1 when
 * the result does not fit. */
int cli_thread_port(const char *name, unsigned nthreads, unsigned i,
		    char *out, unsigned outlen);

/* The back end of a port name ("pipe" for "pipe:x{0"), or "" when the
 * library cannot parse the name. */
void cli_backend_of(const char *name, char *out, unsigned outlen);

/* `name` with `what` inserted after its port part, before any "/FLAGS"
 * or "@..." options ("xdp:eth0@mem:x", "^" -> "xdp:eth0^@mem:x"), as the
 * library's parser (pktmap_name_parse) reads the name. Returns 0, or -1
 * when the name does not parse or the result does not fit. */
int cli_insert_after_port(const char *name, const char *what, char *out,
			  unsigned outlen);

/* Report what getopt_long() just refused (it returned `c`: '?' for an
 * unknown option, ':' for a missing argument; the option string must start
 * with ':'). Prints one line naming the subcommand. */
void cli_opt_error(const char *cmd, int c, char **argv);

/* Put `value` in front of the colon-separated list in environment
 * variable `var`. Returns 0 or -1 (errno set). */
int cli_env_prepend(const char *var, const char *value);

/* Preload library `name` of directory `dir` (LD_PRELOAD, in front of what
 * is there). The dynamic loader splits LD_PRELOAD at spaces, so a
 * directory with a space in its path goes in LD_LIBRARY_PATH instead and
 * LD_PRELOAD names the file alone. Returns 0 or -1 (errno set). */
int cli_env_preload(const char *dir, const char *name);

#endif /* PKTMAP_APPS_CLI_H */
