/* SPDX-License-Identifier: BSD-2-Clause
 *
 * systemd's service protocol without libsystemd: the readiness messages
 * of sd_notify(3) (Type=notify units) and the descriptors of socket
 * activation, sd_listen_fds(3). Both read only the environment systemd
 * sets (NOTIFY_SOCKET; LISTEN_PID and LISTEN_FDS), and do nothing when it
 * is not set, so a daemon calls them unconditionally.
 */
#ifndef PKTMAP_APPS_NOTIFY_H
#define PKTMAP_APPS_NOTIFY_H

/* The first descriptor socket activation passes (SD_LISTEN_FDS_START). */
#define NOTIFY_LISTEN_FDS_START 3
/* At most this many activated descriptors are taken (a unit passes one
 * or two; a larger LISTEN_FDS is refused as garbage). */
#define NOTIFY_LISTEN_FDS_MAX 64

/* Send one datagram of "KEY=VALUE" lines to $NOTIFY_SOCKET: a path
 * ("/run/systemd/notify") or an abstract name ("@name"). Never blocks
 * (a datagram to a local socket; MSG_DONTWAIT). Returns 1 when sent, 0
 * when NOTIFY_SOCKET is not set (not run by systemd: nothing to do), or
 * -errno: -EINVAL for a NOTIFY_SOCKET that is neither form or does not
 * fit a socket address, else what socket() or sendmsg() failed with. */
int notify_send(const char *msg);

/* "READY=1": the data path is up (ports open, threads running, sockets
 * bound). */
int notify_ready(void);

/* "RELOADING=1" with "MONOTONIC_USEC=N" (CLOCK_MONOTONIC now, in
 * microseconds), as systemd 253+ wants for Type=notify-reload; older
 * systemd ignores the second line. Send READY=1 when the reload is done. */
int notify_reloading(void);

/* "STOPPING=1": the service is shutting down. */
int notify_stopping(void);

/* "STATUS=..." (printf format): one line systemctl status shows. Control
 * characters of the result (a newline would start another KEY=VALUE
 * line) become '?'; it is cut at 255 bytes. */
int notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The descriptors socket activation passed to this process: when
 * LISTEN_PID is this process's pid, the LISTEN_FDS descriptors from
 * NOTIFY_LISTEN_FDS_START on, each made close-on-exec. Both variables
 * (and LISTEN_FDNAMES) are removed from the environment so that a child
 * does not take them for its own. Returns how many (0 when none were
 * passed, or they were passed to another process), -EINVAL when a value
 * is not a number in range, -EBADF when a passed descriptor is not open. */
int listen_fds(void);

#endif /* PKTMAP_APPS_NOTIFY_H */
