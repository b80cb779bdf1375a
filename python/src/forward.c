/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Port._forward(): the packets of an RX batch into a port's TX rings, as
 * `pktmap bridge` moves them (src/fwd/bridge.c): when both ports' buffers
 * are one memory the RX slot and the TX slot swap buffer indices (both
 * marked NS_BUF_CHANGED) and no byte moves; otherwise the frame is copied.
 * The batch is released: what was not forwarded is dropped.
 *
 * `keep` is resolved into a list of packet indices before anything is
 * revoked or moved: reading it runs Python code (a sequence's items'
 * __index__ or __bool__), which must not see the batch's packets while
 * their buffers change hands, nor change the sequence under the walk.
 */
#include <string.h>

#include "pymod.h"

/* Which packets to keep: NULL (all), or a bytes-like mask of one byte per
 * packet (a numpy bool array), or a sequence of bools, one per packet,
 * or a sequence of indices. */
struct keep {
	Py_buffer mask;
	int has_mask;
	int bools;     /* seq holds one bool per packet */
	PyObject *seq; /* a tuple of indices or bools (a copy: fixed) */
};

static int keep_parse(PyObject *o, uint32_t n, struct keep *k)
{
	memset(k, 0, sizeof(*k));
	if (o == Py_None)
		return 0;
	if (PyObject_CheckBuffer(o)) {
		if (PyObject_GetBuffer(o, &k->mask, PyBUF_C_CONTIGUOUS) < 0)
			return -1;
		k->has_mask = 1;
		if (k->mask.itemsize != 1 || k->mask.len != (Py_ssize_t)n) {
			PyBuffer_Release(&k->mask);
			k->has_mask = 0;
			PyErr_Format(PyExc_ValueError,
				     "pktmap: keep mask needs %u one-byte items", n);
			return -1;
		}
		return 0;
	}
	PyObject *f = PySequence_Fast(o, "pktmap: keep is a mask or a sequence of indices");
	if (!f)
		return -1;
	k->seq = PySequence_Tuple(f);
	Py_DECREF(f);
	if (!k->seq)
		return -1;
	Py_ssize_t m = PySequence_Fast_GET_SIZE(k->seq);
	if (m > 0 && PyBool_Check(PySequence_Fast_GET_ITEM(k->seq, 0))) {
		if (m != (Py_ssize_t)n) {
			Py_CLEAR(k->seq);
			PyErr_Format(PyExc_ValueError,
				     "pktmap: keep mask needs %u items", n);
			return -1;
		}
		k->bools = 1;
	}
	return 0;
}

static void keep_done(struct keep *k)
{
	if (k->has_mask)
		PyBuffer_Release(&k->mask);
	Py_CLEAR(k->seq);
}

/* The next RX packet to forward, or -1 at the end, -2 on error. */
static Py_ssize_t keep_next(struct keep *k, Py_ssize_t *pos, uint32_t n)
{
	if (k->bools) {
		while (*pos < (Py_ssize_t)n) {
			Py_ssize_t i = (*pos)++;
			int t = PyObject_IsTrue(PySequence_Fast_GET_ITEM(k->seq, i));
			if (t < 0)
				return -2;
			if (t)
				return i;
		}
		return -1;
	}
	if (k->seq) {
		if (*pos >= PySequence_Fast_GET_SIZE(k->seq))
			return -1;
		Py_ssize_t i = PyNumber_AsSsize_t(
			PySequence_Fast_GET_ITEM(k->seq, (*pos)++), PyExc_IndexError);
		if (i == -1 && PyErr_Occurred())
			return -2;
		if (i < 0 || i >= (Py_ssize_t)n) {
			PyErr_SetString(PyExc_IndexError, "pktmap: packet index out of range");
			return -2;
		}
		return i;
	}
	while (*pos < (Py_ssize_t)n) {
		Py_ssize_t i = (*pos)++;
		if (!k->has_mask || ((const char *)k->mask.buf)[i])
			return i;
	}
	return -1;
}

/* The packets to forward, in order, as an array of *np indices
 * (PyMem_Free() it), or NULL with an exception (a bad index). */
static uint32_t *keep_resolve(struct keep *k, uint32_t n, Py_ssize_t *np)
{
	Py_ssize_t cap = k->seq && !k->bools ? PySequence_Fast_GET_SIZE(k->seq) : n;
	Py_ssize_t pos = 0, i, m = 0;
	uint32_t *v = PyMem_Malloc((size_t)(cap ? cap : 1) * sizeof(*v));

	if (!v)
		return (uint32_t *)PyErr_NoMemory();
	/* at most one index a packet (or an item of the tuple) */
	while (m < cap && (i = keep_next(k, &pos, n)) >= 0)
		v[m++] = (uint32_t)i;
	if (PyErr_Occurred()) {
		PyMem_Free(v);
		return NULL;
	}
	*np = m;
	return v;
}

/* Both ports' buffers are one pool, and the source lets its RX buffers
 * be swapped. */
static int same_memory(const PortObject *a, const PortObject *b)
{
	return a->info.region_dev && a->info.region_ino &&
	       a->info.region_dev == b->info.region_dev &&
	       a->info.region_ino == b->info.region_ino &&
	       !(a->info.flags & PKTMAP_INFO_RX_BLOCKS);
}

/* Move one RX slot into one TX slot; returns 1 moved, 0 dropped. */
static int move_one(struct netmap_ring *rr, struct netmap_slot *rs,
		    struct netmap_ring *tr, struct netmap_slot *ts, int zc,
		    const PortObject *dst)
{
	if (zc) {
		uint32_t idx = ts->buf_idx;
		ts->buf_idx = rs->buf_idx;
		rs->buf_idx = idx;
		ts->len = rs->len;
		ts->flags = NS_BUF_CHANGED;
		ts->ptr = rs->ptr;
		rs->flags |= NS_BUF_CHANGED;
		return 1;
	}
	if (rs->len > dst->info.buf_usable)
		return 0;
	memcpy(NETMAP_BUF(tr, ts->buf_idx), NETMAP_BUF(rr, rs->buf_idx), rs->len);
	ts->len = rs->len;
	ts->flags = 0;
	ts->ptr = rs->ptr;
	return 1;
}

/* _forward(batch, keep=None) -> packets moved. */
PyObject *pm_port_forward(PortObject *self, PyObject *args)
{
	BatchObject *b;
	PyObject *keepo = Py_None;
	struct keep k;
	Py_ssize_t x = 0, nidx = 0;
	uint32_t moved = 0, r = 0, *idx;
	int err = 0;

	if (!PyArg_ParseTuple(args, "O!|O:_forward", &PyBatch_Type, &b, &keepo) ||
	    pm_port_check(self) < 0 || pm_port_check(b->port) < 0)
		return NULL;
	if (!b->alive || b->tx) {
		PyErr_SetString(PyExc_ValueError,
				"pktmap: forward takes a live RX batch");
		return NULL;
	}
	if (self->ntx == 0 || self->tx_batch) {
		PyErr_SetString(PyExc_ValueError, self->ntx ?
				"pktmap: release this port's TX batch first" :
				"pktmap: the port is not open for TX");
		return NULL;
	}
	if (keep_parse(keepo, b->n, &k) < 0)
		return NULL;
	idx = keep_resolve(&k, b->n, &nidx);
	keep_done(&k);
	if (!idx)
		return NULL; /* refused before anything moved */
	/* The buffers change hands: no view of them may outlive this. From
	 * here on no Python code runs until the batch is released. */
	if (pm_batch_revoke(b) < 0 || (err = pktmap_txsync(self->p)) < 0) {
		PyMem_Free(idx);
		return PyErr_Occurred() ? NULL : pm_raise(err, "txsync");
	}
	int zc = same_memory(b->port, self);
	for (r = 0; r < self->ntx; r++) {
		self->tx_span[r].first = self->tx_span[r].ring->head;
		self->tx_span[r].count = 0;
	}
	r = 0;
	while (x < nidx && r < self->ntx) {
		struct pyspan *t = &self->tx_span[r];
		struct netmap_ring *rr;
		struct netmap_slot *rs = pm_batch_slot(b, idx[x], &rr);
		uint32_t j = t->first + t->count;
		if (j >= t->ring->num_slots)
			j -= t->ring->num_slots;
		if (t->count >= nm_ring_space(t->ring)) {
			r++; /* this ring is full: the next one */
			continue;
		}
		if (move_one(rr, rs, t->ring, &t->ring->slot[j], zc, self)) {
			t->count++;
			moved++;
		}
		x++;
	}
	PyMem_Free(idx);
	for (r = 0; r < self->ntx; r++) {
		struct pyspan *t = &self->tx_span[r];
		uint32_t h = t->first + t->count;
		if (h >= t->ring->num_slots)
			h -= t->ring->num_slots;
		t->ring->head = t->ring->cur = h;
		t->count = 0;
	}
	if (pm_batch_release(b) < 0)
		return NULL;
	if ((err = pktmap_txsync(self->p)) < 0)
		return pm_raise(err, "txsync");
	return PyLong_FromUnsignedLong(moved);
}
