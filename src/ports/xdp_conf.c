// SPDX-License-Identifier: BSD-2-Clause
/*
 * xdp:'s @conf keys (conf.h), in every build: a build without AF_XDP
 * (xdp_none.c) parses xdp: names as the real back end (xdp.c) does.
 */
#include <stddef.h>

#include "name.h"
#include "port.h"

static const struct pm_conf_word tx_words[] = {
	{ "live", 1, "BPF_PROG_RUN live frames" },
	{ "xsk", 0, "AF_XDP" },
	{ NULL, 0, NULL },
};

static const struct pm_conf_word prog_words[] = {
	{ "redirect", 0, "every frame to the queue's socket" },
	{ "scrub", 1, "pktmap scrub's deny-list and bans first" },
	{ NULL, 0, NULL },
};

static const struct pm_conf_key xdp_keys[] = {
	{ "tx", PM_CONF_WORD, offsetof(struct pm_conf, tx_live), 0, 0, 0,
	  tx_words, NULL, "how the NIC rings' TX reaches the device (default "
	  "xsk)", 0 },
	{ "prog", PM_CONF_WORD, offsetof(struct pm_conf, xdp_prog), 0, 0, 0,
	  prog_words, NULL, "the XDP program on the interface (default "
	  "redirect)", 0 },
	{ "host-rings", PM_CONF_PAIR, offsetof(struct pm_conf, host_tx_rings),
	  offsetof(struct pm_conf, host_rx_rings), 0, 1, NULL, NULL,
	  "host ring pairs: an interface has one (bound by ^ and *)", 0 },
	{ "host-tx-rings", PM_CONF_U32, offsetof(struct pm_conf, host_tx_rings),
	  0, 0, 1, NULL, NULL, "host TX rings", 0 },
	{ "host-rx-rings", PM_CONF_U32, offsetof(struct pm_conf, host_rx_rings),
	  0, 0, 1, NULL, NULL, "host RX rings", 0 },
	{ NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, 0 },
};

/* An interface has the queues it has (ethtool -L): no rings keys. */
const struct pm_conf_keys pm_xdp_conf = {
	.common = (PM_CK_ALL & ~PM_CK_RINGS) | PM_CK_BROKER,
	.own = xdp_keys,
};
