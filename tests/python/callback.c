/* A C extension module for tests/e2e-python.sh: callback.call(f) calls f() from C, so a
 * profile shows Python calling C calling back into Python. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

__attribute__((noinline)) static PyObject *call_back(PyObject *function)
{
    return PyObject_CallNoArgs(function);
}

static PyObject *callback_call(PyObject *self, PyObject *function)
{
    (void)self;
    return call_back(function);
}

static PyMethodDef methods[] = {
    {"call", callback_call, METH_O, "Call a function from C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "callback", NULL, -1, methods};

PyMODINIT_FUNC PyInit_callback(void)
{
    return PyModule_Create(&module);
}
