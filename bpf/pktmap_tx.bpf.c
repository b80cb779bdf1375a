/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0
 *
 * pktmap's live-frames TX (xdp:IFACE@conf:tx=live): user space runs
 * pktmap_tx with BPF_PROG_RUN, BPF_F_TEST_XDP_LIVE_FRAMES and repeat = N;
 * the kernel runs it N times, each time on a fresh page, and frame k of
 * the run becomes the bytes user space left in slot k of pktmap_tx_frames
 * (an mmapable array the port fills from its TX slots). Each frame is
 * redirected to the interface: the device's ndo_xdp_xmit, in batches, no
 * skb.
 *
 * A frame the program cannot send (a length out of range, more frames
 * than were filled) is counted in the queue's control block, never lost
 * without a trace.
 *
 * A redirected frame can still be dropped inside the kernel, after the
 * program returned (the device's ring is full; a veth whose peer has no
 * XDP program), and BPF_PROG_RUN does not say so. Two raw tracepoint
 * programs make that visible: the kernel reports every redirected frame
 * exactly once, in xdp_redirect_err (the redirect failed at once) or in
 * xdp_devmap_xmit (a bulk of frames was flushed to the device: the first
 * `sent` taken, the remaining `drops` freed). pktmap_tx records, in a
 * per-CPU FIFO, the length of each frame it redirected; the tracepoint
 * programs consume the FIFO and add sent and dropped frames and bytes to
 * the queue's control block. A test run's batch runs with bottom halves
 * and migration disabled and ends with the flush, so on this CPU nothing
 * but our own frames is redirected or flushed while the FIFO holds
 * entries; a flush seen while it is empty is somebody else's.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* The longest frame: slot value is 2048 bytes with its header. */
#define LIVE_MAX 2040
#define FIFO 256 /* >= the kernel's largest test-run batch (256) */

struct live_frame {
	__u32 len;
	__u32 pad;
	__u8 d[LIVE_MAX];
};

/* One per queue, a cache line each (queues run in their own threads). */
struct live_ctl {
	__u32 next;       /* frame of this run the next program run sends */
	__u32 end;        /* frames user space filled for this run */
	__u32 base;       /* this queue's first slot in pktmap_tx_frames */
	__u32 ifindex;    /* where frames go */
	__u32 batch;      /* the run's batch size: a new batch starts at 0 */
	__u32 pad;
	__u64 redirected; /* frames handed to bpf_redirect */
	__u64 bad;        /* frames the program refused (length, cursor) */
	__u64 sent, sent_bytes;       /* the device took them */
	__u64 dropped, dropped_bytes; /* the kernel freed them */
	__u64 pad2[7];    /* 128 bytes: no line shared between queues */
};

/* Which queue a run sends for: user space puts it in the frame's
 * metadata (in live-frames mode the kernel reports every frame as
 * received on queue 0, so the context cannot say it), with the port's
 * cookie; the program takes the metadata off before it sends. */
struct live_meta {
	__u32 q;
	__u32 cookie;
};
const volatile __u32 pm_cookie = 0;

struct live_mark {
	__u32 q;          /* the queue whose frames are in flight */
	__u32 head, tail; /* FIFO of their lengths, oldest at head */
	__u32 pad;
	__u16 len[FIFO];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* sized by user space at load */
	__type(key, __u32);
	__type(value, struct live_frame);
} pktmap_tx_frames SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 64); /* PM_MAX_RINGS */
	__type(key, __u32);
	__type(value, struct live_ctl);
} pktmap_tx_ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct live_mark);
} pktmap_tx_mark SEC(".maps");

SEC("xdp")
int pktmap_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	struct live_meta *mt = (void *)(long)ctx->data_meta;
	/* Not one of our runs (the copy that keeps the program in the
	 * kernel's XDP dispatcher sits on an idle device): let it be. */
	if ((void *)(mt + 1) > data)
		return XDP_PASS;
	__u32 q = mt->q & (64 - 1), zero = 0;
	if (mt->cookie != pm_cookie) {
		/* Metadata overwritten (a receiver wrote into a recycled
		 * page): the frame is lost, and counted (user space sees
		 * fewer frames run than it asked for). */
		return XDP_DROP;
	}
	if (bpf_xdp_adjust_meta(ctx, (int)sizeof(*mt)))
		return XDP_DROP;
	struct live_ctl *c = bpf_map_lookup_elem(&pktmap_tx_ctl, &q);
	struct live_mark *m = bpf_map_lookup_elem(&pktmap_tx_mark, &zero);
	if (!c || !m)
		return XDP_DROP;
	__u32 k = c->next++;
	if (c->batch && k % c->batch == 0) {
		/* A new batch: the last one's flush has run. Anything
		 * left means a frame the kernel did not report; user
		 * space counts redirected - sent - dropped as dropped. */
		m->head = m->tail = 0;
		m->q = q;
	}
	if (k >= c->end) {
		c->bad++;
		return XDP_DROP;
	}
	__u32 key = c->base + k;
	struct live_frame *f = bpf_map_lookup_elem(&pktmap_tx_frames, &key);
	if (!f) {
		c->bad++;
		return XDP_DROP;
	}
	__u32 len = f->len;
	if (len < 14 || len > LIVE_MAX) {
		c->bad++;
		return XDP_DROP;
	}
	int delta = (int)len - (int)(ctx->data_end - ctx->data);
	if (delta && bpf_xdp_adjust_tail(ctx, delta)) {
		c->bad++;
		return XDP_DROP;
	}
	if (bpf_xdp_store_bytes(ctx, 0, f->d, len)) {
		c->bad++;
		return XDP_DROP;
	}
	m->q = q;
	m->len[m->tail & (FIFO - 1)] = (__u16)len;
	m->tail++;
	c->redirected++;
	return bpf_redirect(c->ifindex, 0);
}

/* Account n frames of the FIFO's head: the first `sent` as sent. */
static __always_inline void account(struct live_mark *m, __u32 n, __u32 sent)
{
	__u32 q = m->q;
	struct live_ctl *c = bpf_map_lookup_elem(&pktmap_tx_ctl, &q);
	if (!c)
		return;
	__u64 sb = 0, db = 0;
	__u32 i, h = m->head;
	for (i = 0; i < FIFO; i++) {
		if (i >= n || h == m->tail)
			break;
		__u32 l = m->len[h & (FIFO - 1)];
		if (i < sent)
			sb += l;
		else
			db += l;
		h++;
	}
	m->head = h;
	__u32 s = i < sent ? i : sent;
	c->sent += s;
	c->sent_bytes += sb;
	c->dropped += i - s;
	c->dropped_bytes += db;
}

/* xdp_devmap_xmit(from_dev, to_dev, int sent, int drops, int err) */
SEC("raw_tracepoint/xdp_devmap_xmit")
int pktmap_tx_xmit(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 zero = 0;
	struct live_mark *m = bpf_map_lookup_elem(&pktmap_tx_mark, &zero);
	if (!m || m->head == m->tail)
		return 0;
	int sent = (int)ctx->args[2], drops = (int)ctx->args[3];
	if (sent < 0 || drops < 0)
		return 0;
	account(m, (__u32)sent + (__u32)drops, (__u32)sent);
	return 0;
}

/* xdp_redirect_err(dev, xdp, tgt, err, ...): the frame just redirected
 * was refused at once (no such device, device down, no ndo_xdp_xmit). */
SEC("raw_tracepoint/xdp_redirect_err")
int pktmap_tx_rerr(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 zero = 0;
	struct live_mark *m = bpf_map_lookup_elem(&pktmap_tx_mark, &zero);
	if (!m || m->head == m->tail)
		return 0;
	/* The newest entry is the frame just refused. */
	__u32 q = m->q;
	struct live_ctl *c = bpf_map_lookup_elem(&pktmap_tx_ctl, &q);
	m->tail--;
	if (c) {
		c->dropped++;
		c->dropped_bytes += m->len[m->tail & (FIFO - 1)];
	}
	return 0;
}

char _license[] SEC("license") = "Dual BSD/GPL";
