/* SPDX-License-Identifier: BSD-2-Clause
 *
 * pktmap._pktmap, the C half of the Python package (python/pktmap/):
 * ports and batches over the public libpktmap API (<pktmap/pktmap.h>).
 *
 * Lifetimes. A Batch is the slots one sync handed over: [head, tail) of
 * each bound RX ring, or free TX slots. An RX batch hands its packets out
 * as Packets (packet.c): small objects, not tracked by the GC, taken from
 * a free list, that hold the batch, a buffer pointer and a length, and
 * check that the batch is alive on every access (ValueError once it is
 * released; closing a port releases its batches first). A Packet's
 * buffer exports (bytes(), memoryview(), numpy.frombuffer()) are counted
 * in the batch's exports; its slices are copies (bytes). A TX batch's
 * buffers are memoryviews whose exporter is the Batch itself: Batch's
 * getbuffer only answers while the batch is handing one out
 * (batch_export()), so no one else can export from it, and every
 * export is counted. Releasing the batch (its `with` block, the next
 * rx()/tx(), close()) first releases every memoryview it handed out
 * (memoryview.release(): a stale view then raises ValueError), then
 * gives the slots back only if no export is left (memoryview() of a
 * Packet or a slice of one, a numpy array over a Packet):
 * otherwise it raises BufferError and keeps the slots, so that no Python
 * object ever reads a buffer the ring has reused. The numpy arrays of a
 * batch (lengths, headers) are copies, never views of the shared buffers.
 */
#ifndef PKTMAP_PYMOD_H
#define PKTMAP_PYMOD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include <pktmap/pktmap.h>

/* The slots of one ring a batch holds: [first, first + count). */
struct pyspan {
	struct netmap_ring *ring;
	uint32_t first, count;
};

typedef struct PortObject PortObject;
typedef struct BatchObject BatchObject;

struct PortObject {
	PyObject_HEAD
	struct pktmap_port *p;
	struct netmap_if *nifp;
	struct pktmap_info info;
	int busy;             /* a call runs with the GIL released */
	BatchObject *rx_batch; /* the live batch of each direction, or NULL */
	BatchObject *tx_batch;
	uint32_t nrx, ntx;    /* bound rings */
	struct pyspan *rx_span, *tx_span; /* the live batches' slots */
	PyObject *weaklist;
};

struct BatchObject {
	PyObject_HEAD
	PortObject *port;     /* strong */
	int tx;               /* 1: TX batch (writable buffers) */
	int alive;
	uint32_t n;           /* packets (RX) or free slots (TX) */
	uint32_t used;        /* TX: slots filled */
	Py_ssize_t exports;   /* buffers exported and not released */
	PyObject *views;      /* the memoryviews handed out (list) */
	/* What getbuffer exports while batch_view() runs. */
	char *hand_buf;
	Py_ssize_t hand_len;
	int handing;
};

extern PyTypeObject PyPort_Type;
extern PyTypeObject PyBatch_Type;
extern PyTypeObject PyPacket_Type;
extern PyTypeObject PyBatchIter_Type;
extern PyObject *pm_batch_class; /* the Python subclass to create */

/* common.c: raise OSError for a -errno from the library, with its
 * words; check that a port is open and not waiting in another thread
 * (-1 with ValueError or RuntimeError). */
PyObject *pm_raise(int err, const char *what);
int pm_port_check(PortObject *self);

/* batch.c */
BatchObject *pm_batch_new(PortObject *port, int tx, uint32_t n);
int pm_batch_release(BatchObject *b);
struct netmap_slot *pm_batch_slot(BatchObject *b, uint32_t i,
				  struct netmap_ring **ringp);
int pm_batch_revoke(BatchObject *b);

/* packet.c: its start (module init); a Packet of `len` bytes at `buf`
 * in batch b (alive, RX); the iterator of an RX batch. */
int pm_packet_init(void);
PyObject *pm_packet_new(BatchObject *b, char *buf, Py_ssize_t len);
PyObject *pm_batch_iter(BatchObject *b);

/* forward.c: Port._forward(batch, keep=None) */
PyObject *pm_port_forward(PortObject *self, PyObject *args);

#endif /* PKTMAP_PYMOD_H */
