/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The bottom of the extension (pymod.h): errors, and the check every call
 * on a port makes first.
 */
#include "pymod.h"

PyObject *pm_raise(int err, const char *what)
{
	int e = err < 0 ? -err : err;
	PyObject *a = Py_BuildValue("(iN)", e, PyUnicode_FromFormat(
		"pktmap: %s: %s", what, pktmap_strerror(-e)));

	if (a) {
		PyErr_SetObject(PyExc_OSError, a);
		Py_DECREF(a);
	}
	return NULL;
}

int pm_port_check(PortObject *self)
{
	if (!self->p) {
		PyErr_SetString(PyExc_ValueError, "pktmap: the port is closed");
		return -1;
	}
	if (self->busy) {
		PyErr_SetString(PyExc_RuntimeError,
				"pktmap: the port is in use by another thread");
		return -1;
	}
	return 0;
}
