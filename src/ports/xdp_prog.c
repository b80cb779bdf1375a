/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap's XDP program on an interface: loaded from the object embedded
 * in the library (bpf/pktmap_xdp.bpf.c, built at build time), attached in
 * native mode where the driver has it and in generic mode otherwise, and
 * shared by every pktmap process that binds queues of the interface.
 *
 * The program is attached through a BPF link (BPF_LINK_CREATE), not the
 * netlink call: a link lives exactly as long as some process holds a
 * descriptor of it, so the kernel detaches the program when the last
 * pktmap process that uses it closes the port, exits, is killed with
 * SIGKILL, or has dropped the privileges a detach would need (tcpdump -Z,
 * dumpcap). A second process that finds our program attached takes a
 * descriptor of the same link (by id) and adds its sockets to the
 * program's XSKMAP; nothing else is shared, so no lock file and no
 * bpffs pin is needed (`ip netns exec` has no bpffs). A pktmap program
 * attached without a link (by an older pktmap that was killed) has no
 * owner and is replaced, with a message.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "xdp.h"

extern const unsigned char pm_xdp_bpf_obj[];
extern const size_t pm_xdp_bpf_obj_len;
extern const unsigned char pm_xdp_scrub_bpf_obj[];
extern const size_t pm_xdp_scrub_bpf_obj_len;

/* The programs a port may ask for (@conf:prog=), by pr->scrub: the plain
 * redirect (bpf/pktmap_xdp.bpf.c) and scrub's (bpf/pktmap_scrub.bpf.c,
 * the same redirect behind scrub's deny-list and bans). Their names are
 * how a later run, or another process, recognises them. */
struct prog_kind {
	const char *name;
	const char *conf;
	const unsigned char *obj;
	const size_t *len;
};

static const struct prog_kind prog_kinds[2] = {
	{ "pktmap_xdp", "redirect", pm_xdp_bpf_obj, &pm_xdp_bpf_obj_len },
	{ "pktmap_scrub", "scrub", pm_xdp_scrub_bpf_obj,
	  &pm_xdp_scrub_bpf_obj_len },
};

#define MAP_NAME "pktmap_xsks"
/* Maps a program of ours may have (the XSKMAP is looked for among them). */
#define MAX_PROG_MAPS 16
/* Tries at attaching when another process attaches or detaches at the
 * same moment (each try sees one of them finished). */
#define ATTACH_TRIES 16

/* libbpf logs through one process-wide callback. While we call it, its
 * messages go to the port's log (at debug level: our own error line says
 * what failed), and the last one is kept to explain a failure. Messages
 * from other threads go wherever they went before. */
static _Thread_local const struct pktmap_port *libbpf_port;
static _Thread_local char libbpf_last[256];
static libbpf_print_fn_t libbpf_prev;

__attribute__((format(printf, 2, 0)))
static int libbpf_forward(enum libbpf_print_level level, const char *fmt,
			  va_list ap)
{
	if (!libbpf_port) {
		if (libbpf_prev)
			return libbpf_prev(level, fmt, ap);
		return 0;
	}
	if (level == LIBBPF_DEBUG)
		return 0;
	char line[400];
	vsnprintf(line, sizeof(line), fmt, ap);
	size_t n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == ' '))
		line[--n] = 0;
	pm_log(libbpf_port, PKTMAP_LOG_DEBUG, "%s: %s", libbpf_port->name, line);
	const char *k = strstr(line, "Kernel error message: ");
	if (k)
		snprintf(libbpf_last, sizeof(libbpf_last), "%s", k + 22);
	return 0;
}

void pm_xdp_libbpf_enter(const struct pktmap_port *p)
{
	libbpf_port = p;
	libbpf_last[0] = 0;
	libbpf_print_fn_t old = libbpf_set_print(libbpf_forward);
	if (old != libbpf_forward)
		libbpf_prev = old;
}

void pm_xdp_libbpf_leave(void)
{
	libbpf_port = NULL;
}

const char *pm_xdp_libbpf_last(void)
{
	return libbpf_last;
}

void pm_xdp_prog_init(struct pm_xdp_prog *pr)
{
	bool scrub = pr->scrub;
	memset(pr, 0, sizeof(*pr));
	pr->link_fd = pr->prog_fd = pr->map_fd = -1;
	pr->scrub = scrub;
}

/* Which of our programs is named `name`, or NULL. */
static const struct prog_kind *kind_named(const char *name)
{
	for (size_t i = 0; i < PM_ARRAY_SIZE(prog_kinds); i++)
		if (strcmp(prog_kinds[i].name, name) == 0)
			return &prog_kinds[i];
	return NULL;
}

/* The id of the XDP link that attaches program prog_id on ifindex, or 0
 * when the program there was attached without one. */
static uint32_t xdp_link_of(int ifindex, uint32_t prog_id)
{
	uint32_t id = 0;
	while (bpf_link_get_next_id(id, &id) == 0) {
		int fd = bpf_link_get_fd_by_id(id);
		if (fd < 0)
			continue;
		struct bpf_link_info li;
		uint32_t len = sizeof(li);
		memset(&li, 0, sizeof(li));
		int r = bpf_obj_get_info_by_fd(fd, &li, &len);
		close(fd);
		/* Links are global but ifindexes are per network
		 * namespace: the program id (global) tells ours from a
		 * link on another namespace's interface of that index. */
		if (r == 0 && li.type == BPF_LINK_TYPE_XDP &&
		    (int)li.xdp.ifindex == ifindex && li.prog_id == prog_id)
			return id;
	}
	return 0;
}

static uint32_t mode_flags_of(uint8_t attach_mode)
{
	switch (attach_mode) {
	case XDP_ATTACHED_DRV: return XDP_FLAGS_DRV_MODE;
	case XDP_ATTACHED_SKB: return XDP_FLAGS_SKB_MODE;
	case XDP_ATTACHED_HW: return XDP_FLAGS_HW_MODE;
	default: return 0;
	}
}

/* Not allowed: usually a tool that dropped its capabilities before it
 * opened the port (dumpcap keeps only CAP_NET_RAW and CAP_NET_ADMIN). */
static int perm_error(struct pktmap_port *p, int err)
{
	return pm_open_error(p, err, "attaching the XDP program needs CAP_BPF "
			     "(or CAP_SYS_ADMIN) and CAP_NET_ADMIN, which this "
			     "process does not have (some tools drop them before "
			     "opening): run it with them, or use pkt:");
}

/* Reuse the pktmap program a live process attached: find its XSKMAP
 * among its maps (map_ids[0..n)). */
static int reuse(struct pktmap_port *p, struct pm_xdp_prog *pr, int fd,
		 const uint32_t *map_ids, uint32_t n)
{
	for (uint32_t i = 0; i < n && i < MAX_PROG_MAPS; i++) {
		struct bpf_map_info mi;
		uint32_t len = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(map_ids[i]);
		if (mfd < 0)
			continue;
		memset(&mi, 0, sizeof(mi));
		if (bpf_obj_get_info_by_fd(mfd, &mi, &len) == 0 &&
		    mi.type == BPF_MAP_TYPE_XSKMAP) {
			pr->prog_fd = fd;
			pr->map_fd = mfd;
			return 0;
		}
		close(mfd);
	}
	return pm_open_error(p, -EPROTO, "the pktmap XDP program attached "
			     "has no socket map: detach it (ip link set "
			     "dev IFACE xdp off)");
}

static int insert_all(struct pktmap_port *p, struct pm_xdp_prog *pr,
		      const uint32_t *qids, const int *fds, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		int ret = bpf_map_update_elem(pr->map_fd, &qids[i], &fds[i], BPF_ANY);
		if (ret)
			return pm_open_error(p, ret, "cannot steer queue %u to its "
					     "socket: %s", qids[i], strerror(-ret));
	}
	return 0;
}

/* Attach pr's program to ifindex through a new BPF link, in the mode of
 * pr->mode_flags. Returns 0 (pr->link_fd set) or -errno. */
static int link_attach(struct pm_xdp_prog *pr, int ifindex)
{
	LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = pr->mode_flags);
	int fd = bpf_link_create(pr->prog_fd, ifindex, BPF_XDP, &lo);
	if (fd < 0)
		return fd;
	pr->link_fd = fd;
	return 0;
}

/* Load our program and attach it: native mode first, generic mode when
 * the driver has no native XDP (or refuses it for this configuration). */
static int load_attach(struct pktmap_port *p, struct pm_xdp_prog *pr,
		       int ifindex, const char *driver,
		       bool need_native, const uint32_t *qids, const int *fds,
		       uint32_t n)
{
	const struct prog_kind *k = &prog_kinds[pr->scrub];
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = k->name);
	int ret;

	pm_xdp_libbpf_enter(p);
	struct bpf_object *obj = bpf_object__open_mem(k->obj, *k->len, &oo);
	if (!obj) {
		ret = -errno;
		pm_xdp_libbpf_leave();
		return pm_open_error(p, ret, "cannot open the embedded XDP "
				     "program: %s", strerror(-ret));
	}
	ret = bpf_object__load(obj);
	if (ret) {
		pm_xdp_libbpf_leave();
		bpf_object__close(obj);
		if (ret == -EPERM || ret == -EACCES)
			return perm_error(p, ret);
		return pm_open_error(p, ret, "cannot load the XDP program: %s%s%s",
				     strerror(-ret), libbpf_last[0] ? ": " : "",
				     libbpf_last);
	}
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, k->name);
	struct bpf_map *map = bpf_object__find_map_by_name(obj, MAP_NAME);
	if (!prog || !map) {
		pm_xdp_libbpf_leave();
		bpf_object__close(obj);
		return pm_open_error(p, -ENOENT, "the embedded XDP object has no "
				     "%s", prog ? MAP_NAME : k->name);
	}
	/* Keep only the two file descriptors; the object goes. */
	pr->prog_fd = fcntl(bpf_program__fd(prog), F_DUPFD_CLOEXEC, 3);
	pr->map_fd = fcntl(bpf_map__fd(map), F_DUPFD_CLOEXEC, 3);
	bpf_object__close(obj);
	if (pr->prog_fd < 0 || pr->map_fd < 0) {
		pm_xdp_libbpf_leave();
		return pm_open_error(p, -errno, "dup: %s", strerror(errno));
	}

	/* Sockets first: from its first frame on, the program finds them. */
	ret = insert_all(p, pr, qids, fds, n);
	if (ret) {
		pm_xdp_libbpf_leave();
		return ret;
	}
	pr->mode_flags = XDP_FLAGS_DRV_MODE;
	ret = link_attach(pr, ifindex);
	if (ret && ret != -EPERM && ret != -EBUSY && ret != -EEXIST &&
	    !need_native) {
		char why[256];
		snprintf(why, sizeof(why), "%s", libbpf_last[0] ? libbpf_last :
			 ret == -EOPNOTSUPP ? "no native XDP" : strerror(-ret));
		pr->mode_flags = XDP_FLAGS_SKB_MODE;
		ret = link_attach(pr, ifindex);
		pr->generic = ret == 0;
		if (ret == 0)
			pm_log(p, PKTMAP_LOG_WARN,
			       "%s: driver %s refuses native XDP (%s): the XDP "
			       "program runs in generic (SKB) mode", p->name,
			       driver, why);
	}
	pm_xdp_libbpf_leave();
	if (ret == -EPERM || ret == -EACCES)
		return perm_error(p, ret);
	if (ret == -EBUSY || ret == -EEXIST)
		return -EAGAIN; /* attached meanwhile: the caller looks again */
	if (ret)
		return pm_open_error(p, ret, "driver %s: cannot attach the XDP "
				     "program: %s%s%s", driver, strerror(-ret),
				     libbpf_last[0] ? ": " : "", libbpf_last);
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(pr->prog_fd, &info, &len) == 0)
		pr->prog_id = info.id;
	return 0;
}

/* A program of ours is attached to ifindex: take a descriptor of its
 * link and add our sockets to its map. Returns 0, -EAGAIN when it went
 * away meanwhile (look again), or -errno with the open error set. */
static int join(struct pktmap_port *p, struct pm_xdp_prog *pr, int ifindex,
		const char *ifname, uint32_t id, uint8_t attach_mode,
		const uint32_t *qids, const int *fds, uint32_t n)
{
	uint32_t map_ids[MAX_PROG_MAPS] = { 0 };
	int fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0) {
		if (fd == -EPERM || fd == -EACCES)
			return perm_error(p, fd);
		return fd == -ENOENT ? -EAGAIN :
			pm_open_error(p, fd, "cannot open XDP program %u: %s", id,
				      strerror(-fd));
	}
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = MAX_PROG_MAPS;
	info.map_ids = (uint64_t)(uintptr_t)map_ids;
	const struct prog_kind *k = NULL;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
		k = kind_named(info.name);
	if (!k) {
		close(fd);
		return pm_open_error(p, -EBUSY,
				     "another XDP program ('%s', id %u) is attached "
				     "to %s: remove it (ip link set dev %s xdp off) "
				     "or use pkt:%s",
				     info.name, id, ifname, ifname, ifname);
	}
	uint32_t link_id = xdp_link_of(ifindex, id);
	if (link_id && k != &prog_kinds[pr->scrub]) {
		close(fd);
		return pm_open_error(p, -EBUSY, "%s runs pktmap's XDP program "
				     "'%s' for another port (@conf:prog=%s): "
				     "open every port of %s with the same "
				     "@conf:prog=", ifname, k->name, k->conf,
				     ifname);
	}
	if (!link_id) {
		/* Attached without a link: nobody owns it any more. */
		pm_log(p, PKTMAP_LOG_WARN,
		       "%s: replacing the pktmap XDP program (id %u) that an "
		       "earlier run left attached to %s", p->name, id, ifname);
		LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = fd);
		int ret = bpf_xdp_detach(ifindex, mode_flags_of(attach_mode), &ao);
		close(fd);
		if (ret && ret != -EEXIST)
			return pm_open_error(p, ret, "cannot detach the stale XDP "
					     "program %u: %s", id, strerror(-ret));
		return -EAGAIN;
	}
	int lfd = bpf_link_get_fd_by_id(link_id);
	if (lfd < 0) {
		close(fd);
		return -EAGAIN; /* its last holder just left */
	}
	int ret = reuse(p, pr, fd, map_ids, info.nr_map_ids);
	if (ret) {
		close(fd);
		close(lfd);
		return ret;
	}
	pr->link_fd = lfd;
	pr->prog_id = id;
	pr->mode_flags = mode_flags_of(attach_mode);
	pr->generic = pr->mode_flags == XDP_FLAGS_SKB_MODE;
	return insert_all(p, pr, qids, fds, n);
}

/* Forget a half-made attempt (descriptors only: nothing was attached). */
static void attempt_drop(struct pm_xdp_prog *pr)
{
	if (pr->map_fd >= 0)
		close(pr->map_fd);
	if (pr->prog_fd >= 0)
		close(pr->prog_fd);
	if (pr->link_fd >= 0)
		close(pr->link_fd);
	pm_xdp_prog_init(pr);
}

int pm_xdp_prog_attach(struct pktmap_port *p, struct pm_xdp_prog *pr,
		       int ifindex, const char *ifname, const char *driver,
		       bool need_native, const uint32_t *qids, const int *fds,
		       uint32_t n)
{
	for (int tries = 0; tries < ATTACH_TRIES; tries++) {
		LIBBPF_OPTS(bpf_xdp_query_opts, qo);
		int ret = bpf_xdp_query(ifindex, 0, &qo);
		if (ret) {
			if (ret == -EPERM || ret == -EACCES)
				return perm_error(p, ret);
			return pm_open_error(p, ret, "cannot query the XDP program "
					     "of %s: %s", ifname, strerror(-ret));
		}
		if (qo.attach_mode == XDP_ATTACHED_MULTI)
			return pm_open_error(p, -EBUSY, "%s has XDP programs in "
					     "several modes: remove them (ip link set "
					     "dev %s xdp off; ... xdpgeneric off)",
					     ifname, ifname);
		if (qo.prog_id)
			ret = join(p, pr, ifindex, ifname, qo.prog_id, qo.attach_mode,
				   qids, fds, n);
		else
			ret = load_attach(p, pr, ifindex, driver, need_native, qids,
					  fds, n);
		if (ret != -EAGAIN)
			return ret;
		attempt_drop(pr);
	}
	return pm_open_error(p, -EBUSY, "the XDP program of %s kept changing "
			     "while we attached ours: try again", ifname);
}

void pm_xdp_prog_release(struct pktmap_port *p, struct pm_xdp_prog *pr,
			 int ifindex, const uint32_t *qids, uint32_t n)
{
	(void)p;
	(void)ifindex;
	if (pr->map_fd >= 0)
		for (uint32_t i = 0; i < n; i++)
			(void)bpf_map_delete_elem(pr->map_fd, &qids[i]);
	/* Our hold on the link: the last one detaches the program. */
	attempt_drop(pr);
}
