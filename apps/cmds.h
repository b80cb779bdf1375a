/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The subcommands, one file each; the table that dispatches to them is in
 * main.c.
 */
#ifndef PKTMAP_APPS_CMDS_H
#define PKTMAP_APPS_CMDS_H

int cmd_gen(int argc, char **argv);
void usage_gen(void);
int cmd_recv(int argc, char **argv);
void usage_recv(void);
int cmd_ports(int argc, char **argv);
void usage_ports(void);
int cmd_bridge(int argc, char **argv);
void usage_bridge(void);
int cmd_router(int argc, char **argv);
void usage_router(void);
int cmd_scrub(int argc, char **argv);
void usage_scrub(void);
int cmd_capture(int argc, char **argv);
void usage_capture(void);
int cmd_switch(int argc, char **argv);
void usage_switch(void);
int cmd_pcap_run(int argc, char **argv);
void usage_pcap_run(void);
int cmd_netmap_run(int argc, char **argv);
void usage_netmap_run(void);
int cmd_top(int argc, char **argv);
void usage_top(void);
int cmd_metrics(int argc, char **argv);
void usage_metrics(void);
int cmd_broker(int argc, char **argv);
void usage_broker(void);

#endif /* PKTMAP_APPS_CMDS_H */
