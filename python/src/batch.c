/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Batches (pymod.h): the slots of one sync, their packets (Packets for
 * RX, packet.c; revocable memoryviews for TX), their metadata copied
 * into caller-provided buffers (the Python layer's numpy arrays), and
 * their release.
 */
#include <string.h>

#include "pymod.h"

PyObject *pm_batch_class;

BatchObject *pm_batch_new(PortObject *port, int tx, uint32_t n)
{
	PyTypeObject *t = pm_batch_class ? (PyTypeObject *)pm_batch_class
					 : &PyBatch_Type;
	BatchObject *b = (BatchObject *)t->tp_alloc(t, 0);

	if (!b)
		return NULL;
	Py_INCREF(port);
	b->port = port;
	b->tx = tx;
	b->n = n;
	b->alive = 1;
	return b;
}

/* The i-th slot of the batch (i < n) and its ring. */
struct netmap_slot *pm_batch_slot(BatchObject *b, uint32_t i,
				  struct netmap_ring **ringp)
{
	PortObject *p = b->port;
	struct pyspan *sp = b->tx ? p->tx_span : p->rx_span;
	uint32_t nr = b->tx ? p->ntx : p->nrx;

	for (uint32_t r = 0; r < nr; r++) {
		if (i < sp[r].count) {
			uint32_t j = sp[r].first + i;
			if (j >= sp[r].ring->num_slots)
				j -= sp[r].ring->num_slots;
			*ringp = sp[r].ring;
			return &sp[r].ring->slot[j];
		}
		i -= sp[r].count;
	}
	return NULL;
}

/* Release every memoryview this batch handed out, then check that no
 * export is left. Returns 0, or -1 with BufferError set (the slots are
 * then kept: someone still holds a view of them). */
int pm_batch_revoke(BatchObject *b)
{
	static PyObject *release_str;
	PyObject *views = b->views;

	if (!release_str && !(release_str = PyUnicode_InternFromString("release")))
		return -1;
	if (views) {
		Py_ssize_t n = PyList_GET_SIZE(views);
		for (Py_ssize_t i = 0; i < n; i++) {
			PyObject *v = PyList_GET_ITEM(views, i);
			if (Py_REFCNT(v) == 1)
				continue; /* freed with the list below */
			PyObject *r = PyObject_CallMethodNoArgs(v, release_str);
			if (r)
				Py_DECREF(r);
			else
				PyErr_Clear(); /* it has exports: counted below */
		}
		b->views = NULL;
		Py_DECREF(views);
	}
	if (b->exports > 0) {
		PyErr_Format(PyExc_BufferError,
			     "pktmap: %zd view%s of this batch still in use "
			     "(memoryview() or a numpy array of a packet, a slice "
			     "of a TX view): "
			     "drop it, or copy what you keep with bytes()",
			     b->exports, b->exports == 1 ? " is" : "s are");
		return -1;
	}
	return 0;
}

/* Give the batch's slots back: RX slots are released (head moves past
 * them), filled TX slots are submitted and sent (txsync). */
int pm_batch_release(BatchObject *b)
{
	PortObject *p = b->port;

	if (!b->alive)
		return 0;
	if (pm_batch_revoke(b) < 0)
		return -1;
	b->alive = 0;
	if (b->tx) {
		uint32_t left = b->used;
		for (uint32_t r = 0; r < p->ntx && left; r++) {
			struct pyspan *s = &p->tx_span[r];
			uint32_t k = left < s->count ? left : s->count;
			uint32_t h = s->first + k;
			if (h >= s->ring->num_slots)
				h -= s->ring->num_slots;
			s->ring->head = s->ring->cur = h;
			left -= k;
		}
		if (p->tx_batch == b)
			p->tx_batch = NULL;
		int err = p->p ? pktmap_txsync(p->p) : 0;
		if (err < 0) {
			pm_raise(err, "txsync");
			return -1;
		}
		return 0;
	}
	for (uint32_t r = 0; r < p->nrx; r++) {
		struct pyspan *s = &p->rx_span[r];
		uint32_t h = s->first + s->count;
		if (h >= s->ring->num_slots)
			h -= s->ring->num_slots;
		s->ring->head = s->ring->cur = h;
	}
	if (p->rx_batch == b)
		p->rx_batch = NULL;
	return 0;
}

static int batch_check(BatchObject *b)
{
	if (!b->alive) {
		PyErr_SetString(PyExc_ValueError,
				"pktmap: this batch has been released");
		return -1;
	}
	return 0;
}

/* A memoryview of `len` bytes at `buf`, exported by the batch and
 * remembered so that releasing the batch releases it (TX buffers). */
static PyObject *batch_export(BatchObject *b, char *buf, Py_ssize_t len)
{
	PyObject *mv;

	if (!b->views && !(b->views = PyList_New(0)))
		return NULL;
	b->hand_buf = buf;
	b->hand_len = len;
	b->handing = 1;
	mv = PyMemoryView_FromObject((PyObject *)b);
	b->handing = 0;
	if (!mv)
		return NULL;
	if (PyList_Append(b->views, mv) < 0) {
		Py_DECREF(mv);
		return NULL;
	}
	return mv;
}

/* The i-th slot's buffer. The slots are the library's, written inside
 * its sync (the rings are private to the process) and out of Python's
 * reach: their indices need no second check here (pkt: RX frames are
 * indices past the pool, docs/packet.md). */
static char *batch_buf(BatchObject *b, uint32_t i, struct netmap_slot **sp)
{
	struct netmap_ring *ring;
	struct netmap_slot *s = pm_batch_slot(b, i, &ring);

	if (!s) {
		PyErr_SetString(PyExc_IndexError, "pktmap: packet index out of range");
		return NULL;
	}
	*sp = s;
	return NETMAP_BUF(ring, s->buf_idx);
}

static Py_ssize_t batch_len(BatchObject *b)
{
	return b->tx ? b->used : b->n;
}

static PyObject *batch_item(BatchObject *b, Py_ssize_t i)
{
	struct netmap_slot *s;
	char *buf;

	if (batch_check(b) < 0)
		return NULL;
	if (i < 0 || i >= batch_len(b)) {
		PyErr_SetString(PyExc_IndexError, "pktmap: packet index out of range");
		return NULL;
	}
	if (!(buf = batch_buf(b, (uint32_t)i, &s)))
		return NULL;
	if (!b->tx)
		return pm_packet_new(b, buf, s->len);
	return batch_export(b, buf, s->len);
}

/* RX: an iterator that walks the slots (packet.c); TX: the filled
 * slots' writable memoryviews, one batch_item() each. */
static PyObject *batch_iter(BatchObject *b)
{
	if (batch_check(b) < 0)
		return NULL;
	if (!b->tx)
		return pm_batch_iter(b);
	return PySeqIter_New((PyObject *)b);
}

static int batch_getbuffer(BatchObject *b, Py_buffer *view, int flags)
{
	if (!b->handing || !b->alive) {
		PyErr_SetString(PyExc_BufferError,
				"pktmap: a batch exports its packets only "
				"(iterate it, or batch[i])");
		return -1;
	}
	if (PyBuffer_FillInfo(view, (PyObject *)b, b->hand_buf, b->hand_len,
			      !b->tx, flags) < 0)
		return -1;
	b->exports++;
	return 0;
}

static void batch_releasebuffer(BatchObject *b, Py_buffer *view)
{
	(void)view;
	b->exports--;
}

/* Get a writable, C-contiguous buffer of at least `need` bytes. */
static int out_buffer(PyObject *o, Py_buffer *v, Py_ssize_t need)
{
	if (PyObject_GetBuffer(o, v, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
		return -1;
	if (v->len < need) {
		PyErr_Format(PyExc_ValueError,
			     "pktmap: output buffer holds %zd bytes, %zd needed",
			     v->len, need);
		PyBuffer_Release(v);
		return -1;
	}
	return 0;
}

enum meta_kind { META_LEN, META_TS, META_FLAGS, META_IDX };

/* Walks the first `n` slots of the batch in order, ring by ring, with
 * no per-slot search (pm_batch_slot() is for one slot):
 *     struct slot_walk w; slot_walk_start(&w, b);
 *     while ((s = slot_walk_next(&w, &ring)) != NULL) ... */
struct slot_walk {
	const struct pyspan *sp;
	uint32_t nr, r, j, left;
};

static void slot_walk_start(struct slot_walk *w, BatchObject *b)
{
	PortObject *p = b->port;

	w->sp = b->tx ? p->tx_span : p->rx_span;
	w->nr = b->tx ? p->ntx : p->nrx;
	w->r = 0;
	w->j = w->nr ? w->sp[0].first : 0;
	w->left = w->nr ? w->sp[0].count : 0;
}

static inline struct netmap_slot *slot_walk_next(struct slot_walk *w,
						 struct netmap_ring **ringp)
{
	while (w->left == 0) {
		if (++w->r >= w->nr)
			return NULL;
		w->j = w->sp[w->r].first;
		w->left = w->sp[w->r].count;
	}
	struct netmap_ring *ring = w->sp[w->r].ring;
	struct netmap_slot *s = &ring->slot[w->j];
	if (++w->j == ring->num_slots)
		w->j = 0;
	w->left--;
	*ringp = ring;
	return s;
}

/* Copy one field of every slot into `out` (uint32 lengths, uint64
 * timestamps in ns, uint16 flags, uint32 buffer indices). */
static PyObject *batch_meta_into(BatchObject *b, PyObject *out, enum meta_kind k)
{
	static const size_t width[] = { 4, 8, 2, 4 };
	Py_ssize_t n = batch_len(b);
	struct slot_walk w;
	Py_buffer v;

	if (batch_check(b) < 0 || out_buffer(out, &v, n * (Py_ssize_t)width[k]) < 0)
		return NULL;
	slot_walk_start(&w, b);
	char *at = v.buf;
	for (Py_ssize_t i = 0; i < n; i++, at += width[k]) {
		struct netmap_ring *ring;
		struct netmap_slot *s = slot_walk_next(&w, &ring);
		uint32_t u32 = k == META_LEN ? s->len : s->buf_idx;
		uint16_t u16 = s->flags;
		uint64_t u64 = s->ptr;
		/* memcpy: the caller's buffer need not be aligned */
		if (k == META_TS)
			memcpy(at, &u64, sizeof(u64));
		else if (k == META_FLAGS)
			memcpy(at, &u16, sizeof(u16));
		else
			memcpy(at, &u32, sizeof(u32));
	}
	PyBuffer_Release(&v);
	return PyLong_FromSsize_t(n);
}

static PyObject *batch_lengths_into(BatchObject *b, PyObject *out)
{
	return batch_meta_into(b, out, META_LEN);
}

static PyObject *batch_timestamps_into(BatchObject *b, PyObject *out)
{
	return batch_meta_into(b, out, META_TS);
}

static PyObject *batch_flags_into(BatchObject *b, PyObject *out)
{
	return batch_meta_into(b, out, META_FLAGS);
}

static PyObject *batch_indices_into(BatchObject *b, PyObject *out)
{
	return batch_meta_into(b, out, META_IDX);
}

/* The first hn bytes of a frame of len bytes at buf into row, zeroes
 * past its end. Inlined into gather_rows() for the usual header sizes as
 * constants: a whole row is then a few moves, no call. */
static inline __attribute__((always_inline)) void
header_row(char *row, const char *buf, uint32_t len, Py_ssize_t hn)
{
	if (len >= (uint32_t)hn) {
		memcpy(row, buf, (size_t)hn);
		return;
	}
	memcpy(row, buf, len);
	memset(row + len, 0, (size_t)(hn - (Py_ssize_t)len));
}

/* n rows of hn bytes into row, their lengths into lat (if not NULL),
 * walking the batch's slots (see batch_buf(): the library's slots, out
 * of Python's reach). */
static inline __attribute__((always_inline)) void
gather_rows(struct slot_walk *w, char *row, char *lat, Py_ssize_t n,
	    Py_ssize_t hn)
{
	for (Py_ssize_t i = 0; i < n; i++, row += hn) {
		struct netmap_ring *ring;
		struct netmap_slot *s = slot_walk_next(w, &ring);
		uint32_t len = s->len;
		header_row(row, NETMAP_BUF(ring, s->buf_idx), len, hn);
		if (lat) {
			memcpy(lat, &len, sizeof(len));
			lat += sizeof(len);
		}
	}
}

/* headers_into(out, n, lengths=None): row i of out (n bytes) gets the
 * first n bytes of packet i, zero-padded past its end, and, with
 * `lengths` (a writable buffer of len(batch) uint32), element i its
 * length, in the same pass: one copy, no per-packet object. */
static PyObject *batch_headers_into(BatchObject *b, PyObject *args, PyObject *kw)
{
	static char *kwl[] = { "out", "n", "lengths", NULL };
	PyObject *out, *lo = Py_None;
	Py_ssize_t hn, n = batch_len(b);
	struct slot_walk w;
	Py_buffer v, lv;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "On|O:headers_into", kwl,
					 &out, &hn, &lo))
		return NULL;
	if (hn < 0 || hn > 65535) {
		PyErr_SetString(PyExc_ValueError,
				"pktmap: header length is 0 to 65535 bytes");
		return NULL;
	}
	if (batch_check(b) < 0 || out_buffer(out, &v, n * hn) < 0)
		return NULL;
	int has_l = lo != Py_None;
	if (has_l && out_buffer(lo, &lv, n * 4) < 0) {
		PyBuffer_Release(&v);
		return NULL;
	}
	slot_walk_start(&w, b);
	char *row = v.buf, *lat = has_l ? lv.buf : NULL;
	/* Ethernet, 16, IPv4, TCP/IPv4, 64 bytes: constants, inlined */
	switch (hn) {
	case 14: gather_rows(&w, row, lat, n, 14); break;
	case 16: gather_rows(&w, row, lat, n, 16); break;
	case 34: gather_rows(&w, row, lat, n, 34); break;
	case 54: gather_rows(&w, row, lat, n, 54); break;
	case 64: gather_rows(&w, row, lat, n, 64); break;
	default: gather_rows(&w, row, lat, n, hn); break;
	}
	if (has_l)
		PyBuffer_Release(&lv);
	PyBuffer_Release(&v);
	return PyLong_FromSsize_t(n);
}

/* TX: the next free slot, its buffer and room, or NULL with an error. */
static char *tx_next_slot(BatchObject *b, Py_ssize_t len, uint64_t ts,
			  struct netmap_slot **sp)
{
	struct netmap_ring *ring;
	const struct pktmap_info *in = &b->port->info;

	if (batch_check(b) < 0)
		return NULL;
	if (!b->tx) {
		PyErr_SetString(PyExc_TypeError, "pktmap: not a TX batch");
		return NULL;
	}
	if (b->used >= b->n) {
		PyErr_SetString(PyExc_BufferError, "pktmap: the TX batch is full");
		return NULL;
	}
	uint32_t room = in->tx_max_len && in->tx_max_len < in->buf_usable ?
			in->tx_max_len : in->buf_usable;
	if (len < 0 || len > room) {
		PyErr_Format(PyExc_ValueError,
			     "pktmap: a frame of %zd bytes does not fit "
			     "(0 to %u bytes)", len, room);
		return NULL;
	}
	struct netmap_slot *s = pm_batch_slot(b, b->used, &ring);
	if (!s) {
		PyErr_SetString(PyExc_IndexError, "pktmap: TX slot out of range");
		return NULL;
	}
	s->len = (uint16_t)len;
	s->flags = 0;
	s->ptr = ts;
	b->used++;
	*sp = s;
	return NETMAP_BUF(ring, s->buf_idx);
}

/* next(length, timestamp=0): a writable view of the next TX buffer. */
static PyObject *batch_next(BatchObject *b, PyObject *args, PyObject *kw)
{
	static char *kwl[] = { "length", "timestamp", NULL };
	Py_ssize_t len;
	unsigned long long ts = 0;
	struct netmap_slot *s;
	char *buf;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "n|K:next", kwl, &len, &ts))
		return NULL;
	if (!(buf = tx_next_slot(b, len, ts, &s)))
		return NULL;
	return batch_export(b, buf, len);
}

/* append(data, timestamp=0): copy one frame into the next TX buffer. */
static PyObject *batch_append(BatchObject *b, PyObject *args, PyObject *kw)
{
	static char *kwl[] = { "data", "timestamp", NULL };
	unsigned long long ts = 0;
	struct netmap_slot *s;
	Py_buffer d;
	char *buf;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|K:append", kwl, &d, &ts))
		return NULL;
	buf = tx_next_slot(b, d.len, ts, &s);
	if (buf)
		memcpy(buf, d.buf, (size_t)d.len);
	PyBuffer_Release(&d);
	if (!buf)
		return NULL;
	return PyLong_FromUnsignedLong(b->used - 1);
}

static PyObject *batch_release_m(BatchObject *b, PyObject *unused)
{
	(void)unused;
	if (pm_batch_release(b) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *batch_enter(BatchObject *b, PyObject *unused)
{
	(void)unused;
	Py_INCREF(b);
	return (PyObject *)b;
}

static PyObject *batch_exit(BatchObject *b, PyObject *args)
{
	(void)args;
	if (pm_batch_release(b) < 0)
		return NULL;
	Py_RETURN_FALSE;
}

static PyObject *batch_get_alive(BatchObject *b, void *c)
{
	(void)c;
	return PyBool_FromLong(b->alive);
}

static PyObject *batch_get_capacity(BatchObject *b, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(b->n);
}

static PyObject *batch_get_port(BatchObject *b, void *c)
{
	(void)c;
	Py_INCREF(b->port);
	return (PyObject *)b->port;
}

static PyObject *batch_get_exports(BatchObject *b, void *c)
{
	(void)c;
	return PyLong_FromSsize_t(b->exports);
}

static int batch_traverse(BatchObject *b, visitproc visit, void *arg)
{
	Py_VISIT(b->views);
	Py_VISIT(b->port);
	return 0;
}

static int batch_clear(BatchObject *b)
{
	Py_CLEAR(b->views);
	return 0;
}

static void batch_dealloc(BatchObject *b)
{
	PyObject_GC_UnTrack(b);
	if (b->alive) {
		PyObject *t, *v, *tb;
		PyErr_Fetch(&t, &v, &tb);
		/* Nothing can still export from it (an export holds a
		 * reference): the release cannot be refused. */
		if (pm_batch_release(b) < 0)
			PyErr_WriteUnraisable((PyObject *)b);
		PyErr_Restore(t, v, tb);
	}
	Py_CLEAR(b->views);
	Py_CLEAR(b->port);
	Py_TYPE(b)->tp_free((PyObject *)b);
}

static PySequenceMethods batch_as_seq = {
	.sq_length = (lenfunc)batch_len,
	.sq_item = (ssizeargfunc)batch_item,
};

static PyBufferProcs batch_as_buffer = {
	.bf_getbuffer = (getbufferproc)batch_getbuffer,
	.bf_releasebuffer = (releasebufferproc)batch_releasebuffer,
};

static PyMethodDef batch_methods[] = {
	{ "release", (PyCFunction)batch_release_m, METH_NOARGS,
	  "Give the slots back (RX) or send the filled ones (TX); every view "
	  "handed out is released first. BufferError if one is still "
	  "exported (the slots are then kept)." },
	{ "lengths_into", (PyCFunction)batch_lengths_into, METH_O,
	  "Copy the packet lengths into a writable uint32 buffer." },
	{ "timestamps_into", (PyCFunction)batch_timestamps_into, METH_O,
	  "Copy the time stamps (ns since the epoch, 0 if none) into a "
	  "writable uint64 buffer." },
	{ "flags_into", (PyCFunction)batch_flags_into, METH_O,
	  "Copy the slot flags (NS_*) into a writable uint16 buffer." },
	{ "buffer_indices_into", (PyCFunction)batch_indices_into, METH_O,
	  "Copy the slots' buffer indices into a writable uint32 buffer." },
	{ "headers_into", (PyCFunction)(void (*)(void))batch_headers_into,
	  METH_VARARGS | METH_KEYWORDS,
	  "headers_into(out, n, lengths=None): the first n bytes of every "
	  "packet, one row each, zero-padded; with lengths (a writable "
	  "uint32 buffer), the packets' lengths in the same pass." },
	{ "next", (PyCFunction)(void (*)(void))batch_next,
	  METH_VARARGS | METH_KEYWORDS,
	  "next(length, timestamp=0): a writable view of the next TX buffer, "
	  "sent with the batch." },
	{ "append", (PyCFunction)(void (*)(void))batch_append,
	  METH_VARARGS | METH_KEYWORDS,
	  "append(data, timestamp=0): copy a frame into the next TX buffer; "
	  "returns its index." },
	{ "__enter__", (PyCFunction)batch_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)batch_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef batch_getset[] = {
	{ "alive", (getter)batch_get_alive, NULL,
	  "True until the batch is released.", NULL },
	{ "capacity", (getter)batch_get_capacity, NULL,
	  "Slots the batch holds (TX: free slots to fill).", NULL },
	{ "port", (getter)batch_get_port, NULL, "The port.", NULL },
	{ "exports", (getter)batch_get_exports, NULL,
	  "Views of the batch's buffers not yet released.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject PyBatch_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "pktmap._pktmap.Batch",
	.tp_basicsize = sizeof(BatchObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "The packets of one sync (made by Port.rx() and Port.tx()).",
	.tp_dealloc = (destructor)batch_dealloc,
	.tp_traverse = (traverseproc)batch_traverse,
	.tp_clear = (inquiry)batch_clear,
	.tp_as_sequence = &batch_as_seq,
	.tp_as_buffer = &batch_as_buffer,
	.tp_iter = (getiterfunc)batch_iter,
	.tp_methods = batch_methods,
	.tp_getset = batch_getset,
};
