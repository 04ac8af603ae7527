/* Byte searches the fetch path makes on every page, compiled: Python's `needle in haystack`
 * walks a 30 KB page at about 2 GB/s per needle here, glibc's memmem several times faster.
 *
 * contains_any(haystack, needles) -> bool: whether any of the needles (a tuple of bytes)
 * occurs in the haystack, exactly as any(n in haystack for n in needles) says (an empty
 * needle occurs everywhere). Callers that search without regard to case lower the
 * haystack first, as volatile_parts.py does.
 *
 * Built by setup.py as an optional extension: without a compiler the callers fall back to
 * the Python expression above, which stays the reference.
 *
 * b32encode(data) -> str: base64.b32encode(data).decode("ascii") (RFC 4648, "=" padded),
 * for the WARC digests of every record (base64's is a Python loop: about 2 us a digest). */

#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static PyObject *contains_any(PyObject *self, PyObject *args)
{
    Py_buffer haystack;
    PyObject *needles;
    if (!PyArg_ParseTuple(args, "y*O!:contains_any", &haystack, &PyTuple_Type, &needles))
        return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(needles);
    int found = 0;
    for (Py_ssize_t i = 0; i < count && !found; i++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, i);
        if (!PyBytes_Check(needle)) {
            PyBuffer_Release(&haystack);
            PyErr_SetString(PyExc_TypeError, "contains_any: every needle must be bytes");
            return NULL;
        }
        Py_ssize_t size = PyBytes_GET_SIZE(needle);
        found = size == 0 || (size <= haystack.len &&
                              memmem(haystack.buf, haystack.len, PyBytes_AS_STRING(needle), size) != NULL);
    }
    PyBuffer_Release(&haystack);
    return PyBool_FromLong(found);
}

static PyObject *b32encode(PyObject *self, PyObject *args)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*:b32encode", &data))
        return NULL;
    const unsigned char *in = data.buf;
    Py_ssize_t groups = (data.len + 4) / 5;
    PyObject *out = PyUnicode_New(groups * 8, 127);
    if (out == NULL) {
        PyBuffer_Release(&data);
        return NULL;
    }
    Py_UCS1 *o = PyUnicode_1BYTE_DATA(out);
    for (Py_ssize_t g = 0; g < groups; g++) {
        unsigned char block[5] = {0, 0, 0, 0, 0};
        Py_ssize_t left = data.len - 5 * g, take = left < 5 ? left : 5;
        memcpy(block, in + 5 * g, take);
        unsigned long long bits = 0;
        for (int i = 0; i < 5; i++)
            bits = (bits << 8) | block[i];
        /* characters carrying input bits: 2, 4, 5, 7 or 8 for 1..5 input bytes; "=" after */
        static const int used[6] = {0, 2, 4, 5, 7, 8};
        for (int i = 0; i < 8; i++)
            o[8 * g + i] = i < used[take] ? alphabet[(bits >> (35 - 5 * i)) & 31] : '=';
    }
    PyBuffer_Release(&data);
    return out;
}

static PyMethodDef methods[] = {
    {"contains_any", contains_any, METH_VARARGS,
     "contains_any(haystack, needles) -> bool: any(needle in haystack for needle in needles), "
     "needles a tuple of bytes."},
    {"b32encode", b32encode, METH_VARARGS,
     "b32encode(data) -> str: base64.b32encode(data).decode('ascii')."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "bytes_kernel",
    "Compiled byte searches for the fetch path (each has a Python reference in its caller).",
    -1, methods,
};

PyMODINIT_FUNC PyInit_bytes_kernel(void)
{
    return PyModule_Create(&module);
}
