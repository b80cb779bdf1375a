/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The module pktmap._pktmap (pymod.h): its types, constants and the
 * library's version.
 */
#include <poll.h>

#include "pymod.h"

/* _set_batch_class(cls): batches are made as instances of cls, a
 * subclass of Batch (the Python layer's, with the numpy helpers). */
static PyObject *set_batch_class(PyObject *mod, PyObject *cls)
{
	(void)mod;
	if (!PyType_Check(cls) ||
	    !PyType_IsSubtype((PyTypeObject *)cls, &PyBatch_Type)) {
		PyErr_SetString(PyExc_TypeError, "pktmap: not a Batch subclass");
		return NULL;
	}
	Py_INCREF(cls);
	Py_XSETREF(pm_batch_class, cls);
	Py_RETURN_NONE;
}

static PyObject *lib_version(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return PyUnicode_FromString(pktmap_version());
}

static PyMethodDef module_methods[] = {
	{ "_set_batch_class", set_batch_class, METH_O, NULL },
	{ "lib_version", lib_version, METH_NOARGS,
	  "The version of libpktmap in use." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "pktmap._pktmap",
	.m_doc = "pktmap ports and zero-copy batches (the C half of pktmap).",
	.m_size = -1,
	.m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__pktmap(void);
PyMODINIT_FUNC PyInit__pktmap(void)
{
	static const struct { const char *name; long v; } consts[] = {
		{ "POLLIN", POLLIN }, { "POLLOUT", POLLOUT },
		{ "POLLHUP", POLLHUP }, { "POLLERR", POLLERR },
		{ "DIR_RX", PKTMAP_DIR_RX }, { "DIR_TX", PKTMAP_DIR_TX },
		{ "DIR_BOTH", PKTMAP_DIR_BOTH },
		{ "NS_BUF_CHANGED", NS_BUF_CHANGED }, { "NS_REPORT", NS_REPORT },
		{ "NS_FORWARD", NS_FORWARD }, { "NS_MOREFRAG", NS_MOREFRAG },
	};
	PyObject *m;

	if (PyType_Ready(&PyPort_Type) < 0 || PyType_Ready(&PyBatch_Type) < 0 ||
	    PyType_Ready(&PyPacket_Type) < 0 || PyType_Ready(&PyBatchIter_Type) < 0 ||
	    pm_packet_init() < 0)
		return NULL;
	if (!(m = PyModule_Create(&module_def)))
		return NULL;
	Py_INCREF(&PyPort_Type);
	Py_INCREF(&PyBatch_Type);
	Py_INCREF(&PyPacket_Type);
	if (PyModule_AddObject(m, "Port", (PyObject *)&PyPort_Type) < 0 ||
	    PyModule_AddObject(m, "Batch", (PyObject *)&PyBatch_Type) < 0 ||
	    PyModule_AddObject(m, "Packet", (PyObject *)&PyPacket_Type) < 0 ||
	    PyModule_AddStringConstant(m, "VERSION", PKTMAP_VERSION) < 0)
		goto fail;
	for (size_t i = 0; i < sizeof(consts) / sizeof(consts[0]); i++)
		if (PyModule_AddIntConstant(m, consts[i].name, consts[i].v) < 0)
			goto fail;
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
