/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Packets (pymod.h): a read-only view of one packet of an RX batch, what
 * iterating a batch and batch[i] hand out, and the batch's iterator.
 *
 * A memoryview per packet costs two GC objects (a managed buffer and the
 * view), a getbuffer and a place in the batch's list of views to revoke;
 * a Packet is one small object, not tracked by the GC (it holds only its
 * batch, which never holds it), taken from a free list, and it needs no
 * revoking: every access checks that its batch is alive, so once the
 * batch is released (its slots may be reused) the Packet raises
 * ValueError and never reads the buffer again. Closing a port releases
 * its batches first (port.c), so a live batch means an open port.
 *
 * What a Packet exports (bytes(p), memoryview(p), numpy.frombuffer(p))
 * is counted in the batch's exports, as a memoryview of the batch was:
 * a batch with an export left refuses its release (BufferError). A
 * slice is a copy (bytes). The GIL guards the free list and the counts.
 */
#include <string.h>

#include "pymod.h"

typedef struct {
	PyObject_HEAD
	BatchObject *batch;  /* strong; NULL once release()d */
	char *buf;
	Py_ssize_t len;
	Py_ssize_t exports;  /* buffers exported from this packet */
} PacketObject;

/* Freed Packets, ready to be handed out again: the per-packet loop
 * takes one and gives one back a packet, with no allocation. Not in
 * interpreters without a GIL (the list would need a lock). */
#ifdef Py_GIL_DISABLED
#define PACKET_FREE_MAX 0
#else
#define PACKET_FREE_MAX 256
#endif
static PacketObject *packet_free[PACKET_FREE_MAX + 1];
static int packet_nfree;

/* The ints 0 to 255 (the interpreter's cached small ints): a byte read
 * is a reference taken. */
static PyObject *byte_int[256];

int pm_packet_init(void)
{
	for (int i = 0; i < 256; i++)
		if (!byte_int[i] && !(byte_int[i] = PyLong_FromLong(i)))
			return -1;
	return 0;
}

static inline PyObject *packet_make(BatchObject *b, char *buf, Py_ssize_t len)
{
	PacketObject *p;

	if (packet_nfree > 0) {
		p = packet_free[--packet_nfree];
#if PY_VERSION_HEX < 0x030D0000 && !defined(Py_REF_DEBUG) && !defined(Py_TRACE_REFS)
		/* what PyObject_Init() does to an object of a static type
		 * that kept its type: one reference (tracemalloc keeps the
		 * block's first trace) */
		Py_SET_REFCNT(p, 1);
#else
		(void)PyObject_Init((PyObject *)p, &PyPacket_Type);
#endif
	} else if (!(p = PyObject_New(PacketObject, &PyPacket_Type))) {
		return NULL;
	}
	Py_INCREF(b);
	p->batch = b;
	p->buf = buf;
	p->len = len;
	p->exports = 0;
	return (PyObject *)p;
}

PyObject *pm_packet_new(BatchObject *b, char *buf, Py_ssize_t len)
{
	return packet_make(b, buf, len);
}

static void packet_dealloc(PacketObject *p)
{
	BatchObject *b = p->batch;

	p->batch = NULL;
	Py_XDECREF(b); /* may release the batch: its last reference */
	if (packet_nfree < PACKET_FREE_MAX)
		packet_free[packet_nfree++] = p;
	else
		PyObject_Free(p);
}

/* 0 while the packet may be read, else -1 with ValueError: its batch
 * was released (the slots may be reused) or the packet was. */
static inline int packet_check(PacketObject *p)
{
	if (p->batch && p->batch->alive)
		return 0;
	PyErr_SetString(PyExc_ValueError,
			"pktmap: operation forbidden on a released packet (its "
			"batch was released: keep a copy, bytes(pkt), instead)");
	return -1;
}

static Py_ssize_t packet_len(PacketObject *p)
{
	if (packet_check(p) < 0)
		return -1;
	return p->len;
}

static PyObject *packet_byte(PacketObject *p, Py_ssize_t i)
{
	if (packet_check(p) < 0)
		return NULL;
	if (i < 0)
		i += p->len;
	if (i < 0 || i >= p->len) {
		PyErr_SetString(PyExc_IndexError, "pktmap: packet index out of range");
		return NULL;
	}
	PyObject *r = byte_int[((const unsigned char *)p->buf)[i]];
	Py_INCREF(r);
	return r;
}

/* The sequence protocol's item (iteration, PySequence_GetItem(), which
 * has already counted a negative index from the end). */
static PyObject *packet_sq_item(PacketObject *p, Py_ssize_t i)
{
	if (i < 0 && packet_check(p) == 0) {
		PyErr_SetString(PyExc_IndexError, "pktmap: packet index out of range");
		return NULL;
	}
	return packet_byte(p, i);
}

/* p[a:b:c]: a copy, bytes, as a slice of bytes is: what a header field
 * needs (==, struct, int.from_bytes(), a dict key), valid after the
 * batch, and cheaper than a view (memoryview(p)[a:b] is the zero-copy
 * one, an export the batch counts). */
static PyObject *packet_slice(PacketObject *p, PyObject *key)
{
	Py_ssize_t start, stop, step, n;
	PyObject *r;

	if (PySlice_Unpack(key, &start, &stop, &step) < 0)
		return NULL;
	n = PySlice_AdjustIndices(p->len, &start, &stop, step);
	if (step == 1)
		return PyBytes_FromStringAndSize(p->buf + start, n);
	if (!(r = PyBytes_FromStringAndSize(NULL, n)))
		return NULL;
	char *out = PyBytes_AS_STRING(r);
	for (Py_ssize_t i = 0, j = start; i < n; i++, j += step)
		out[i] = p->buf[j];
	return r;
}

/* An int key that fits a digit (every index of a packet), its value. */
static inline int small_index(PyObject *k, Py_ssize_t *i)
{
#if PY_VERSION_HEX >= 0x030C0000
	if (!PyUnstable_Long_IsCompact((PyLongObject *)k))
		return 0;
	*i = PyUnstable_Long_CompactValue((PyLongObject *)k);
#else
	Py_ssize_t sz = Py_SIZE(k);
	if (sz < -1 || sz > 1)
		return 0;
	*i = sz ? sz * (Py_ssize_t)((PyLongObject *)k)->ob_digit[0] : 0;
#endif
	return 1;
}

/* Out of line: the fast path below then saves no registers. */
static __attribute__((noinline)) PyObject *
packet_subscript_other(PacketObject *p, PyObject *key)
{
	if (PyLong_CheckExact(key)) {
		Py_ssize_t i = PyLong_AsSsize_t(key);
		if (i == -1 && PyErr_Occurred()) {
			PyErr_SetString(PyExc_IndexError,
					"pktmap: packet index out of range");
			return NULL;
		}
		return packet_byte(p, i);
	}
	if (packet_check(p) < 0)
		return NULL;
	if (PySlice_Check(key))
		return packet_slice(p, key);
	if (PyIndex_Check(key)) {
		Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
		if (i == -1 && PyErr_Occurred())
			return NULL;
		return packet_byte(p, i);
	}
	PyErr_Format(PyExc_TypeError,
		     "pktmap: packet indices must be integers or slices, not %.100s",
		     Py_TYPE(key)->tp_name);
	return NULL;
}

/* p[i] (the per-packet loop's read: a few loads and a reference to a
 * cached int) and p[a:b]. */
static PyObject *packet_subscript(PacketObject *p, PyObject *key)
{
	Py_ssize_t i;

	if (PyLong_CheckExact(key) && small_index(key, &i)) {
		const BatchObject *b = p->batch;
		Py_ssize_t at = i < 0 ? i + p->len : i;
		if (b && b->alive && (size_t)at < (size_t)p->len) {
			PyObject *r = byte_int[((const unsigned char *)p->buf)[at]];
			Py_INCREF(r);
			return r;
		}
		return packet_byte(p, i); /* the error */
	}
	return packet_subscript_other(p, key);
}

static int packet_getbuffer(PacketObject *p, Py_buffer *view, int flags)
{
	if (packet_check(p) < 0)
		return -1;
	if (PyBuffer_FillInfo(view, (PyObject *)p, p->buf, p->len, 1, flags) < 0)
		return -1;
	p->exports++;
	p->batch->exports++;
	return 0;
}

/* An export holds the packet, and release() refuses while one is left:
 * the batch is still there. */
static void packet_releasebuffer(PacketObject *p, Py_buffer *view)
{
	(void)view;
	p->exports--;
	p->batch->exports--;
}

static PyObject *packet_tobytes(PacketObject *p, PyObject *args, PyObject *kw)
{
	static char *kwl[] = { "order", NULL };
	const char *order = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|z:tobytes", kwl, &order))
		return NULL;
	if (order && strcmp(order, "C") && strcmp(order, "F") && strcmp(order, "A")) {
		PyErr_SetString(PyExc_ValueError, "order must be 'C', 'F' or 'A'");
		return NULL;
	}
	if (packet_check(p) < 0)
		return NULL;
	return PyBytes_FromStringAndSize(p->buf, p->len);
}

/* hex(sep=..., bytes_per_sep=...): bytes.hex() of a copy. */
static PyObject *packet_hex(PacketObject *p, PyObject *args, PyObject *kw)
{
	PyObject *copy, *fn, *r;

	if (packet_check(p) < 0)
		return NULL;
	if (!(copy = PyBytes_FromStringAndSize(p->buf, p->len)))
		return NULL;
	fn = PyObject_GetAttrString(copy, "hex");
	Py_DECREF(copy);
	if (!fn)
		return NULL;
	r = PyObject_Call(fn, args, kw);
	Py_DECREF(fn);
	return r;
}

static PyObject *packet_tolist(PacketObject *p, PyObject *unused)
{
	PyObject *l;

	(void)unused;
	if (packet_check(p) < 0 || !(l = PyList_New(p->len)))
		return NULL;
	for (Py_ssize_t i = 0; i < p->len; i++)
		PyList_SET_ITEM(l, i, PyLong_FromLong(((unsigned char *)p->buf)[i]));
	return l;
}

/* release(): this packet is done with (as memoryview.release()); its
 * batch is no longer held by it. BufferError while an export is left. */
static PyObject *packet_release(PacketObject *p, PyObject *unused)
{
	(void)unused;
	if (p->exports > 0) {
		PyErr_Format(PyExc_BufferError,
			     "pktmap: %zd export%s of this packet still in use",
			     p->exports, p->exports == 1 ? " is" : "s are");
		return NULL;
	}
	Py_CLEAR(p->batch);
	Py_RETURN_NONE;
}

static PyObject *packet_enter(PacketObject *p, PyObject *unused)
{
	(void)unused;
	if (packet_check(p) < 0)
		return NULL;
	Py_INCREF(p);
	return (PyObject *)p;
}

static PyObject *packet_exit(PacketObject *p, PyObject *args)
{
	(void)args;
	return packet_release(p, NULL);
}

/* ==, != as a read-only memoryview of unsigned bytes: bytes, bytearray
 * and Packets byte for byte; other buffers as memoryview compares them
 * (on a copy: no view of the shared buffer leaves this call). */
static PyObject *packet_richcompare(PacketObject *p, PyObject *o, int op)
{
	const char *ob;
	Py_ssize_t olen;
	PyObject *copy, *mv, *r;

	if ((op != Py_EQ && op != Py_NE) || !PyObject_CheckBuffer(o))
		Py_RETURN_NOTIMPLEMENTED;
	if (packet_check(p) < 0)
		return NULL;
	if (Py_TYPE(o) == &PyPacket_Type) {
		if (packet_check((PacketObject *)o) < 0)
			return NULL;
		ob = ((PacketObject *)o)->buf;
		olen = ((PacketObject *)o)->len;
	} else if (PyBytes_Check(o)) {
		ob = PyBytes_AS_STRING(o);
		olen = PyBytes_GET_SIZE(o);
	} else if (PyByteArray_Check(o)) {
		ob = PyByteArray_AS_STRING(o);
		olen = PyByteArray_GET_SIZE(o);
	} else {
		if (!(copy = PyBytes_FromStringAndSize(p->buf, p->len)))
			return NULL;
		mv = PyMemoryView_FromObject(copy);
		Py_DECREF(copy);
		if (!mv)
			return NULL;
		r = PyObject_RichCompare(mv, o, op);
		Py_DECREF(mv);
		return r;
	}
	int eq = olen == p->len && memcmp(p->buf, ob, (size_t)olen) == 0;
	return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

/* As a read-only memoryview of bytes: the hash of the same bytes. */
static Py_hash_t packet_hash(PacketObject *p)
{
	PyObject *copy;
	Py_hash_t h;

	if (packet_check(p) < 0 ||
	    !(copy = PyBytes_FromStringAndSize(p->buf, p->len)))
		return -1;
	h = PyObject_Hash(copy);
	Py_DECREF(copy);
	return h;
}

static PyObject *packet_repr(PacketObject *p)
{
	if (!p->batch || !p->batch->alive)
		return PyUnicode_FromString("<pktmap.Packet released>");
	return PyUnicode_FromFormat("<pktmap.Packet of %zd bytes at %p>",
				    p->len, (void *)p);
}

static PyObject *packet_get_nbytes(PacketObject *p, void *c)
{
	(void)c;
	if (packet_check(p) < 0)
		return NULL;
	return PyLong_FromSsize_t(p->len);
}

static PyObject *packet_get_readonly(PacketObject *p, void *c)
{
	(void)c;
	if (packet_check(p) < 0)
		return NULL;
	Py_RETURN_TRUE;
}

static PyObject *packet_get_batch(PacketObject *p, void *c)
{
	(void)c;
	if (!p->batch)
		Py_RETURN_NONE;
	Py_INCREF(p->batch);
	return (PyObject *)p->batch;
}

static PyObject *packet_get_released(PacketObject *p, void *c)
{
	(void)c;
	return PyBool_FromLong(!p->batch || !p->batch->alive);
}

static PySequenceMethods packet_as_seq = {
	.sq_length = (lenfunc)packet_len,
	.sq_item = (ssizeargfunc)packet_sq_item,
};

static PyMappingMethods packet_as_map = {
	.mp_length = (lenfunc)packet_len,
	.mp_subscript = (binaryfunc)packet_subscript,
};

static PyBufferProcs packet_as_buffer = {
	.bf_getbuffer = (getbufferproc)packet_getbuffer,
	.bf_releasebuffer = (releasebufferproc)packet_releasebuffer,
};

static PyMethodDef packet_methods[] = {
	{ "tobytes", (PyCFunction)(void (*)(void))packet_tobytes,
	  METH_VARARGS | METH_KEYWORDS, "The packet's bytes (a copy)." },
	{ "hex", (PyCFunction)(void (*)(void))packet_hex,
	  METH_VARARGS | METH_KEYWORDS,
	  "hex(sep=..., bytes_per_sep=...): the bytes in hexadecimal, as bytes.hex()." },
	{ "tolist", (PyCFunction)packet_tolist, METH_NOARGS,
	  "The bytes as a list of ints." },
	{ "release", (PyCFunction)packet_release, METH_NOARGS,
	  "Done with the packet: it no longer holds its batch, and any use "
	  "raises ValueError. BufferError while an export of it is left." },
	{ "__enter__", (PyCFunction)packet_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)packet_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef packet_getset[] = {
	{ "nbytes", (getter)packet_get_nbytes, NULL, "The length in bytes.", NULL },
	{ "readonly", (getter)packet_get_readonly, NULL, "True.", NULL },
	{ "batch", (getter)packet_get_batch, NULL,
	  "The batch the packet belongs to (None once release()d).", NULL },
	{ "released", (getter)packet_get_released, NULL,
	  "True once its batch (or the packet) is released.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject PyPacket_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "pktmap._pktmap.Packet",
	.tp_basicsize = sizeof(PacketObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A read-only view of one packet in the shared buffers, valid "
		  "while its batch is (ValueError after): len(), p[i], p[a:b], "
		  "the buffer protocol (bytes(p), memoryview(p), numpy), "
		  "tobytes(), hex(), ==.",
	.tp_dealloc = (destructor)packet_dealloc,
	.tp_repr = (reprfunc)packet_repr,
	.tp_as_sequence = &packet_as_seq,
	.tp_as_mapping = &packet_as_map,
	.tp_as_buffer = &packet_as_buffer,
	.tp_hash = (hashfunc)packet_hash,
	.tp_richcompare = (richcmpfunc)packet_richcompare,
	.tp_methods = packet_methods,
	.tp_getset = packet_getset,
};

/* The iterator of an RX batch: its slots in order, ring by ring, a
 * Packet each; ValueError if the batch is released meanwhile. The
 * current ring's slots and buffers are kept at hand (what slot_walk
 * and NETMAP_BUF() would look up a packet). */
typedef struct {
	PyObject_HEAD
	BatchObject *batch; /* strong; NULL at the end */
	const struct pyspan *sp;
	uint32_t nr, r;     /* rings, the current one */
	uint32_t j, here;   /* its next slot, slots left in it */
	uint32_t nslots, bufsz;
	const struct netmap_slot *slot;
	char *base;         /* buffer 0 of the ring's pool */
	uint32_t left;      /* packets left, all rings */
} BatchIterObject;

/* Move to ring r: 0 if there is none. */
static int batchiter_ring(BatchIterObject *it, uint32_t r)
{
	for (; r < it->nr; r++) {
		const struct pyspan *sp = &it->sp[r];
		if (sp->count == 0)
			continue;
		it->r = r;
		it->j = sp->first;
		it->here = sp->count;
		it->nslots = sp->ring->num_slots;
		it->bufsz = sp->ring->nr_buf_size;
		it->slot = sp->ring->slot;
		it->base = NETMAP_BUF(sp->ring, 0);
		return 1;
	}
	it->here = 0;
	return 0;
}

PyObject *pm_batch_iter(BatchObject *b)
{
	BatchIterObject *it = PyObject_New(BatchIterObject, &PyBatchIter_Type);
	PortObject *p = b->port;

	if (!it)
		return NULL;
	Py_INCREF(b);
	it->batch = b;
	it->sp = p->rx_span;
	it->nr = p->nrx;
	it->left = b->n;
	batchiter_ring(it, 0);
	return (PyObject *)it;
}

static PyObject *batchiter_next(BatchIterObject *it)
{
	BatchObject *b = it->batch;

	if (!b)
		return NULL;
	if (!b->alive) {
		Py_CLEAR(it->batch);
		PyErr_SetString(PyExc_ValueError, "pktmap: this batch has been released");
		return NULL;
	}
	if (it->left == 0 ||
	    (it->here == 0 && !batchiter_ring(it, it->r + 1))) {
		Py_CLEAR(it->batch);
		return NULL;
	}
	/* the library's slots, out of Python's reach (batch.c, batch_buf()) */
	const struct netmap_slot *s = &it->slot[it->j];
	if (++it->j == it->nslots)
		it->j = 0;
	it->here--;
	it->left--;
	return packet_make(b, it->base + (size_t)s->buf_idx * it->bufsz, s->len);
}

static PyObject *batchiter_length_hint(BatchIterObject *it, PyObject *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLong(it->batch && it->batch->alive ? it->left : 0);
}

static void batchiter_dealloc(BatchIterObject *it)
{
	Py_CLEAR(it->batch);
	PyObject_Free(it);
}

static PyMethodDef batchiter_methods[] = {
	{ "__length_hint__", (PyCFunction)batchiter_length_hint, METH_NOARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject PyBatchIter_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "pktmap._pktmap.BatchIterator",
	.tp_basicsize = sizeof(BatchIterObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The packets of an RX batch, in order.",
	.tp_dealloc = (destructor)batchiter_dealloc,
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = (iternextfunc)batchiter_next,
	.tp_methods = batchiter_methods,
};
