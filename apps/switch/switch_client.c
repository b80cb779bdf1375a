/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap switch's requests to a running switch (the control protocol of
 * src/vale_proto.h, client side): --list prints its ports and counters,
 * -d detaches a port, -a attaches one.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "stats.h"
#include "switch/switch_app.h"

static int ctl_connect(const char *sw, bool quiet_if_absent)
{
	char dir[64], err[300];
	if (pktmap_user_dir(dir, sizeof(dir), err, sizeof(err)) != 0) {
		if (!quiet_if_absent)
			cli_err("switch %s: %s", sw, err);
		return -1;
	}
	int fd = vale_ctl_connect(dir, sw);
	if (fd < 0 && !quiet_if_absent) {
		if (fd == -ECONNREFUSED)
			cli_err("switch %s is not running (start it with 'pktmap "
				"switch %s')", sw, sw);
		else if (fd == -EPERM)
			cli_err("switch %s: its socket belongs to another user",
				sw);
		else
			cli_err("switch %s: %s", sw, strerror(-fd));
	}
	return fd < 0 ? -1 : fd;
}

bool swa_running(const char *sw)
{
	int fd = ctl_connect(sw, true);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static int ctl_recv(int fd, const char *sw, struct vale_rep *rp)
{
	ssize_t n = recv(fd, rp, sizeof(*rp), 0);
	if (n < 0 || vale_rep_take(rp, n)) {
		cli_err("switch %s did not answer (%s)", sw,
			n < 0 ? strerror(errno) : "bad reply");
		return -1;
	}
	return 0;
}

#define U(x) ((unsigned long long)(x))

/* One port of a --list reply, as a table row or a JSON object. */
static void list_port(const struct vale_rep *rp, bool json, bool first)
{
	if (!json) {
		printf("%-16s %-7s %12llu %12llu %10llu %10llu %10llu %10llu  %s\n",
		       rp->port, rp->kind, U(rp->c.rx_frames), U(rp->c.tx_frames),
		       U(rp->c.drop_nospace), U(rp->c.drop_invalid),
		       U(rp->c.drop_unknown), U(rp->c.filtered), rp->attached);
		return;
	}
	printf("%s{\"port\":", first ? "" : ",");
	stats_json_str(stdout, rp->port);
	printf(",\"kind\":");
	stats_json_str(stdout, rp->kind);
	printf(",\"attached\":");
	stats_json_str(stdout, rp->attached);
	printf(",\"pid\":%d,\"zerocopy\":%s,\"rx_frames\":%llu,"
	       "\"rx_bytes\":%llu,\"tx_frames\":%llu,\"tx_bytes\":%llu,"
	       "\"drop_nospace\":%llu,\"drop_invalid\":%llu,"
	       "\"drop_unknown\":%llu,\"filtered\":%llu,\"sync_errors\":%llu,"
	       "\"tx_moved\":%llu}",
	       rp->pid, rp->zerocopy ? "true" : "false", U(rp->c.rx_frames),
	       U(rp->c.rx_bytes), U(rp->c.tx_frames), U(rp->c.tx_bytes),
	       U(rp->c.drop_nospace), U(rp->c.drop_invalid),
	       U(rp->c.drop_unknown), U(rp->c.filtered), U(rp->c.sync_errors),
	       U(rp->c.tx_moved));
}

/* The end of a --list reply: the switch's totals. */
static void list_end(const char *sw, const struct vale_rep *rp, bool json)
{
	if (json)
		printf("],\"nports\":%u,\"pid\":%d,\"mac_entries\":%llu,"
		       "\"mac_capacity\":%llu,\"mac_learned\":%llu,"
		       "\"mac_moved\":%llu,\"mac_aged\":%llu}\n", rp->nports,
		       rp->switch_pid, U(rp->mac_entries), U(rp->mac_capacity),
		       U(rp->mac_learned), U(rp->mac_moved), U(rp->mac_aged));
	else
		printf("switch %s (pid %d): %u port%s; MAC table %llu of %llu "
		       "(learned %llu, moved %llu, aged %llu)\n", sw,
		       rp->switch_pid, rp->nports, rp->nports == 1 ? "" : "s",
		       U(rp->mac_entries), U(rp->mac_capacity),
		       U(rp->mac_learned), U(rp->mac_moved), U(rp->mac_aged));
}

int swa_client_list(const char *sw, bool json)
{
	int fd = ctl_connect(sw, false);
	if (fd < 0)
		return EXIT_RUNTIME;
	struct vale_req rq = { .magic = VALE_MAGIC, .version = VALE_VERSION,
			       .op = VALE_LIST };
	if (send(fd, &rq, sizeof(rq), MSG_NOSIGNAL) != sizeof(rq)) {
		cli_err("switch %s: %s", sw, strerror(errno));
		close(fd);
		return EXIT_RUNTIME;
	}
	struct vale_rep rp;
	unsigned n = 0;
	if (json)
		printf("{\"switch\":\"%s\",\"ports\":[", sw);
	else
		printf("%-16s %-7s %12s %12s %10s %10s %10s %10s  %s\n", "PORT",
		       "KIND", "RX", "TX", "NOSPACE", "INVALID", "UNKNOWN",
		       "FILTERED", "ATTACHED");
	for (;;) {
		if (ctl_recv(fd, sw, &rp)) {
			close(fd);
			return EXIT_RUNTIME;
		}
		if (rp.op != VALE_PORT)
			break;
		list_port(&rp, json, n++ == 0);
	}
	close(fd);
	if (rp.op != VALE_END) {
		cli_err("switch %s: bad reply to --list", sw);
		return EXIT_RUNTIME;
	}
	list_end(sw, &rp, json);
	return 0;
}

int swa_client_op(const char *sw, enum vale_op op, const char *port,
		  const char *arg)
{
	int fd = ctl_connect(sw, false);
	if (fd < 0)
		return EXIT_RUNTIME;
	struct vale_req rq = { .magic = VALE_MAGIC, .version = VALE_VERSION,
			       .op = op };
	snprintf(rq.port, sizeof(rq.port), "%s", port ? port : "");
	snprintf(rq.arg, sizeof(rq.arg), "%s", arg ? arg : "");
	struct vale_rep rp;
	if (send(fd, &rq, sizeof(rq), MSG_NOSIGNAL) != sizeof(rq) ||
	    ctl_recv(fd, sw, &rp)) {
		close(fd);
		return EXIT_RUNTIME;
	}
	close(fd);
	if (rp.op != VALE_OK) {
		cli_err("switch %s: %s", sw, rp.msg);
		return EXIT_RUNTIME;
	}
	return 0;
}
