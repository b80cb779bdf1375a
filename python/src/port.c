/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Ports (pymod.h): open, close, the event fd, poll, syncs into batches,
 * zero-copy forwarding between two ports, stats and info.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include "pymod.h"

static const struct { const char *kw; uint32_t flag; } open_flags[] = {
	{ "zerocopy", PKTMAP_OPEN_ZEROCOPY }, { "copy", PKTMAP_OPEN_COPY },
	{ "busy_poll", PKTMAP_OPEN_BUSY_POLL }, { "events", PKTMAP_OPEN_EVENTS },
	{ "rx_blocks", PKTMAP_OPEN_RX_BLOCKS },
	{ "exclusive", PKTMAP_OPEN_EXCLUSIVE },
	{ "tx_frames", PKTMAP_OPEN_TX_FRAMES }, { "nowait", PKTMAP_OPEN_NOWAIT },
};

/* Fill the open options from keyword arguments (pktmap.open() passes
 * only the ones given). */
static int port_opts(PyObject *kw, struct pktmap_open_opts *o, uint32_t *flags)
{
	static const struct { const char *kw; size_t off; } nums[] = {
		{ "dir", offsetof(struct pktmap_open_opts, dir) },
		{ "rings", offsetof(struct pktmap_open_opts, rings) },
		{ "slots", offsetof(struct pktmap_open_opts, slots) },
		{ "bufs", offsetof(struct pktmap_open_opts, bufs) },
		{ "buf_size", offsetof(struct pktmap_open_opts, buf_size) },
		{ "extra_bufs", offsetof(struct pktmap_open_opts, extra_bufs) },
		{ "rx_block_ms", offsetof(struct pktmap_open_opts, rx_block_ms) },
	};
	PyObject *k, *v;
	Py_ssize_t pos = 0;

	while (kw && PyDict_Next(kw, &pos, &k, &v)) {
		const char *name = PyUnicode_AsUTF8(k);
		size_t i;
		if (!name)
			return -1;
		for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
			if (!strcmp(name, nums[i].kw))
				break;
		if (i < sizeof(nums) / sizeof(nums[0])) {
			unsigned long x = PyLong_AsUnsignedLong(v);
			if (x == (unsigned long)-1 && PyErr_Occurred())
				return -1;
			if (x > UINT32_MAX) {
				PyErr_Format(PyExc_ValueError, "pktmap: %s is too large", name);
				return -1;
			}
			*(uint32_t *)(void *)((char *)o + nums[i].off) = (uint32_t)x;
			continue;
		}
		for (i = 0; i < sizeof(open_flags) / sizeof(open_flags[0]); i++)
			if (!strcmp(name, open_flags[i].kw))
				break;
		if (i < sizeof(open_flags) / sizeof(open_flags[0])) {
			int t = PyObject_IsTrue(v);
			if (t < 0)
				return -1;
			if (t)
				*flags |= open_flags[i].flag;
			continue;
		}
		if (!strcmp(name, "hugepages")) {
			if ((o->hugepages = PyObject_IsTrue(v)) < 0)
				return -1;
			continue;
		}
		PyErr_Format(PyExc_TypeError, "pktmap: unknown open option '%s'", name);
		return -1;
	}
	return 0;
}

/* The bound rings of one direction, from the port's info. */
static struct pyspan *port_spans(PortObject *self, int tx, uint32_t *n)
{
	uint32_t first = tx ? self->info.first_tx_ring : self->info.first_rx_ring;
	uint32_t last = tx ? self->info.last_tx_ring : self->info.last_rx_ring;
	int want = (self->info.dir & (tx ? PKTMAP_DIR_TX : PKTMAP_DIR_RX)) != 0;
	struct pyspan *s;

	*n = want && last != UINT32_MAX && last >= first ? last - first + 1 : 0;
	s = PyMem_Calloc(*n ? *n : 1, sizeof(*s));
	if (!s)
		return (struct pyspan *)PyErr_NoMemory();
	for (uint32_t i = 0; i < *n; i++)
		s[i].ring = tx ? NETMAP_TXRING(self->nifp, first + i)
			       : NETMAP_RXRING(self->nifp, first + i);
	return s;
}

static int port_init(PortObject *self, PyObject *args, PyObject *kw)
{
	struct pktmap_open_opts o = { .sz = sizeof(o) };
	const char *name;
	char region[64] = "", err[256] = "";
	PyObject *reg = NULL;
	uint32_t flags = 0;
	int r;

	if (self->p) {
		PyErr_SetString(PyExc_ValueError, "pktmap: the port is already open");
		return -1;
	}
	if (!PyArg_ParseTuple(args, "s:Port", &name))
		return -1;
	if (kw && (reg = PyDict_GetItemString(kw, "region")) != NULL) {
		const char *s = PyUnicode_AsUTF8(reg);
		if (!s)
			return -1;
		snprintf(region, sizeof(region), "%s", s);
		o.region = region;
		if (PyDict_DelItemString(kw, "region") < 0)
			return -1;
	}
	if (port_opts(kw, &o, &flags) < 0)
		return -1;
	o.flags = flags;
	o.errbuf = err;
	o.errbuf_len = sizeof(err);
	Py_BEGIN_ALLOW_THREADS
	r = pktmap_open(&self->p, name, &o);
	Py_END_ALLOW_THREADS
	if (r < 0) {
		self->p = NULL;
		/* OSError(errno, message): FileNotFoundError, PermissionError,
		 * ... as the errno says. */
		PyObject *a = Py_BuildValue("(is)", -r,
					    err[0] ? err : pktmap_strerror(r));
		if (a) {
			PyErr_SetObject(PyExc_OSError, a);
			Py_DECREF(a);
		}
		return -1;
	}
	self->nifp = pktmap_nifp(self->p);
	PyMem_Free(self->rx_span); /* a port opened again after close() */
	PyMem_Free(self->tx_span);
	self->rx_span = self->tx_span = NULL;
	self->info.sz = sizeof(self->info);
	pktmap_info(self->p, &self->info);
	if (!(self->rx_span = port_spans(self, 0, &self->nrx)) ||
	    !(self->tx_span = port_spans(self, 1, &self->ntx))) {
		pktmap_close(self->p);
		self->p = NULL;
		return -1;
	}
	return 0;
}

/* Release both live batches; -1 with BufferError if one is refused. */
static int port_release_batches(PortObject *self)
{
	if (self->rx_batch && pm_batch_release(self->rx_batch) < 0)
		return -1;
	if (self->tx_batch && pm_batch_release(self->tx_batch) < 0)
		return -1;
	return 0;
}

static PyObject *port_close(PortObject *self, PyObject *unused)
{
	(void)unused;
	if (!self->p)
		Py_RETURN_NONE;
	if (self->busy) {
		PyErr_SetString(PyExc_RuntimeError,
				"pktmap: the port is in use by another thread");
		return NULL;
	}
	if (port_release_batches(self) < 0)
		return NULL;
	pktmap_close(self->p);
	self->p = NULL;
	self->nrx = self->ntx = 0;
	Py_RETURN_NONE;
}

static void port_dealloc(PortObject *self)
{
	/* A live batch holds a reference: none is left here. */
	if (self->weaklist)
		PyObject_ClearWeakRefs((PyObject *)self);
	if (self->p)
		pktmap_close(self->p);
	PyMem_Free(self->rx_span);
	PyMem_Free(self->tx_span);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Wait for `events` with the GIL released: returns revents, 0 on
 * timeout, or -1 with an exception (a signal's, or the library's). */
static int port_wait(PortObject *self, short events, int timeout_ms)
{
	for (;;) {
		int r;
		self->busy = 1;
		Py_BEGIN_ALLOW_THREADS
		r = pktmap_poll(self->p, events, timeout_ms);
		Py_END_ALLOW_THREADS
		self->busy = 0;
		if (r < 0) {
			pm_raise(r, "poll");
			return -1;
		}
		if (PyErr_CheckSignals() < 0)
			return -1;
		if (r > 0 || timeout_ms >= 0)
			return r;
	}
}

static PyObject *port_poll(PortObject *self, PyObject *args)
{
	short events = POLLIN;
	int timeout = -1, r;

	if (!PyArg_ParseTuple(args, "|hi:poll", &events, &timeout))
		return NULL;
	if (pm_port_check(self) < 0)
		return NULL;
	if ((r = port_wait(self, events, timeout)) < 0)
		return NULL;
	return PyLong_FromLong(r);
}

/* Count what the bound rings of one direction hold from head, into the
 * spans, at most `max` (0: no limit). */
static uint32_t port_fill_spans(PortObject *self, int tx, uint32_t max)
{
	struct pyspan *sp = tx ? self->tx_span : self->rx_span;
	uint32_t nr = tx ? self->ntx : self->nrx, total = 0;

	for (uint32_t r = 0; r < nr; r++) {
		uint32_t k = nm_ring_space(sp[r].ring);
		if (max && k > max - total)
			k = max - total;
		sp[r].first = sp[r].ring->head;
		sp[r].count = k;
		total += k;
	}
	return total;
}

/* _batch(tx, timeout_ms=-1, max=0): release the live batch of that
 * direction, sync, wait for packets (RX) or room (TX) up to timeout_ms,
 * and return the new batch, or None (timeout; RX: the source ended). */
static PyObject *port_batch(PortObject *self, PyObject *args)
{
	int tx, timeout = -1, r;
	unsigned int max = 0;
	uint32_t n;

	if (!PyArg_ParseTuple(args, "p|iI:_batch", &tx, &timeout, &max))
		return NULL;
	if (pm_port_check(self) < 0)
		return NULL;
	if ((tx ? self->ntx : self->nrx) == 0) {
		PyErr_Format(PyExc_ValueError, "pktmap: the port is not open for %s",
			     tx ? "TX" : "RX");
		return NULL;
	}
	BatchObject *old = tx ? self->tx_batch : self->rx_batch;
	if (old && pm_batch_release(old) < 0)
		return NULL;
	r = tx ? pktmap_txsync(self->p) : pktmap_rxsync(self->p);
	if (r < 0)
		return pm_raise(r, tx ? "txsync" : "rxsync");
	while ((n = port_fill_spans(self, tx, max)) == 0) {
		if (timeout == 0)
			Py_RETURN_NONE;
		r = port_wait(self, tx ? POLLOUT : POLLIN, timeout);
		if (r < 0)
			return NULL;
		if (r == 0 || (r & POLLERR)) {
			if (r & POLLERR)
				return pm_raise(-EIO, "poll");
			Py_RETURN_NONE;
		}
		if (!tx && (r & POLLHUP) && !(r & POLLIN))
			Py_RETURN_NONE;
		timeout = timeout > 0 ? 0 : timeout;
	}
	BatchObject *b = pm_batch_new(self, tx, n);
	if (!b)
		return NULL;
	if (tx)
		self->tx_batch = b;
	else
		self->rx_batch = b;
	return (PyObject *)b;
}

static PyObject *port_fileno(PortObject *self, PyObject *unused)
{
	(void)unused;
	if (pm_port_check(self) < 0)
		return NULL;
	int fd = pktmap_fd(self->p);
	if (fd < 0)
		return pm_raise(fd, "fd");
	return PyLong_FromLong(fd);
}

static PyObject *port_sync(PortObject *self, PyObject *args)
{
	int tx, r;

	if (!PyArg_ParseTuple(args, "p:_sync", &tx) || pm_port_check(self) < 0)
		return NULL;
	r = tx ? pktmap_txsync(self->p) : pktmap_rxsync(self->p);
	if (r < 0)
		return pm_raise(r, tx ? "txsync" : "rxsync");
	Py_RETURN_NONE;
}

#define STAT(f) { #f, offsetof(struct pktmap_stats, f) }
static PyObject *port_stats(PortObject *self, PyObject *unused)
{
	static const struct { const char *k; size_t off; } f[] = {
		STAT(tx_packets), STAT(tx_bytes), STAT(rx_packets),
		STAT(rx_bytes), STAT(tx_syncs), STAT(rx_syncs),
		STAT(drop_invalid), STAT(drop_too_long), STAT(drop_backend),
		STAT(invalid_ring), STAT(poll_sleeps), STAT(wakeups_sent),
		STAT(rx_copied), STAT(rx_lent), STAT(peer_connects),
		STAT(peer_disconnects), STAT(peer_errors),
	};
	struct pktmap_stats st = { .sz = sizeof(st) };
	PyObject *d;
	int r;

	(void)unused;
	if (!self->p) {
		PyErr_SetString(PyExc_ValueError, "pktmap: the port is closed");
		return NULL;
	}
	if ((r = pktmap_stats(self->p, &st)) < 0)
		return pm_raise(r, "stats");
	if (!(d = PyDict_New()))
		return NULL;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		uint64_t v;
		memcpy(&v, (char *)&st + f[i].off, sizeof(v));
		PyObject *o = PyLong_FromUnsignedLongLong(v);
		if (!o || PyDict_SetItemString(d, f[i].k, o) < 0) {
			Py_XDECREF(o);
			Py_DECREF(d);
			return NULL;
		}
		Py_DECREF(o);
	}
	return d;
}
#undef STAT

static PyObject *port_info(PortObject *self, PyObject *unused)
{
	const struct pktmap_info *i = &self->info;

	(void)unused;
	if (!self->p) {
		PyErr_SetString(PyExc_ValueError, "pktmap: the port is closed");
		return NULL;
	}
	return Py_BuildValue(
		"{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
		"s:O,s:O,s:K,s:K}",
		"name", i->name, "backend", i->backend, "region", i->region,
		"mode", i->mode_name ? i->mode_name : "", "tx_rings", i->tx_rings,
		"rx_rings", i->rx_rings, "tx_slots", i->tx_slots,
		"rx_slots", i->rx_slots, "buf_size", i->buf_size,
		"buf_usable", i->buf_usable, "bufs", i->bufs,
		"linktype", i->linktype, "tx_max_len", i->tx_max_len,
		"dir", i->dir, "eof", (i->flags & PKTMAP_INFO_EOF) ? Py_True : Py_False,
		"rx_blocks", (i->flags & PKTMAP_INFO_RX_BLOCKS) ? Py_True : Py_False,
		"region_dev", (unsigned long long)i->region_dev,
		"region_ino", (unsigned long long)i->region_ino);
}

static PyObject *port_get_closed(PortObject *self, void *c)
{
	(void)c;
	return PyBool_FromLong(self->p == NULL);
}

static PyMethodDef port_methods[] = {
	{ "close", (PyCFunction)port_close, METH_NOARGS,
	  "Release the live batches (sending what a TX batch holds) and close "
	  "the port. BufferError, and the port stays open, while a view of a "
	  "batch is still exported." },
	{ "fileno", (PyCFunction)port_fileno, METH_NOARGS,
	  "The port's event descriptor (pktmap_fd()), for selectors and asyncio." },
	{ "poll", (PyCFunction)port_poll, METH_VARARGS,
	  "poll(events=POLLIN, timeout_ms=-1): sync and wait (pktmap_poll()); "
	  "returns revents, 0 on timeout." },
	{ "_batch", (PyCFunction)port_batch, METH_VARARGS,
	  "_batch(tx, timeout_ms=-1, max=0): the next batch, or None." },
	{ "_sync", (PyCFunction)port_sync, METH_VARARGS, "_sync(tx)" },
	{ "_forward", (PyCFunction)pm_port_forward, METH_VARARGS,
	  "_forward(batch, keep=None): move a batch's packets to this port's "
	  "TX rings (swapping buffers when both share one memory)." },
	{ "stats", (PyCFunction)port_stats, METH_NOARGS,
	  "The port's counters (pktmap_stats()) as a dict." },
	{ "info", (PyCFunction)port_info, METH_NOARGS,
	  "What the port is (pktmap_info()) as a dict." },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef port_getset[] = {
	{ "closed", (getter)port_get_closed, NULL, "True once closed.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject PyPort_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "pktmap._pktmap.Port",
	.tp_basicsize = sizeof(PortObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "Port(name, **options): an open pktmap port (pktmap_open()).",
	.tp_weaklistoffset = offsetof(PortObject, weaklist),
	.tp_init = (initproc)port_init,
	.tp_new = PyType_GenericNew,
	.tp_dealloc = (destructor)port_dealloc,
	.tp_methods = port_methods,
	.tp_getset = port_getset,
};
