/* Byte searches the fetch path makes on every page, compiled: Python's `needle in haystack`
 * walks a 30 KB page at about 2 GB/s per needle here, glibc's memmem several times faster.
 *
 * contains_any(haystack, needles, fold_case=False) -> bool: whether any of the needles (a
 * tuple of bytes) occurs in the haystack, exactly as any(n in haystack for n in needles) says
 * (an empty needle occurs everywhere); with fold_case, in haystack.lower() (ASCII letters
 * lowered, as bytes.lower() does), without making that lowered copy: each needle's first and
 * last bytes are compared with 16 haystack bytes at a time, folded (SSE2), the rest only where
 * both match. volatile_parts.py searches a page so for its words (lower case) on every page.
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
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* bytes.lower()'s table: ASCII A-Z to a-z, every other byte itself */
static unsigned char lowered[256];

static void fill_lowered(void)
{
    for (int i = 0; i < 256; i++)
        lowered[i] = (unsigned char)(i >= 'A' && i <= 'Z' ? i + 32 : i);
}

/* whether n[0:m] occurs in h[0:len] lowered (m >= 1). A lowered haystack holds no upper-case
 * letter, so a needle with one never occurs. Otherwise a haystack byte x equals needle byte c
 * once lowered exactly when (x | 0x20) == c for a letter c (x is c or its upper case) and when
 * x == c for any other c: one OR and one compare a byte. */
static int contains_folded(const unsigned char *h, Py_ssize_t len, const unsigned char *n, Py_ssize_t m)
{
    if (m > len)
        return 0;
    for (Py_ssize_t k = 0; k < m; k++)
        if (n[k] >= 'A' && n[k] <= 'Z')
            return 0;
    const unsigned char first = n[0], last = n[m - 1];
    Py_ssize_t i = 0, end = len - m + 1;  /* candidate starts: [0, end) */
#ifdef __SSE2__
    const __m128i fold_first = _mm_set1_epi8(first >= 'a' && first <= 'z' ? 0x20 : 0);
    const __m128i fold_last = _mm_set1_epi8(last >= 'a' && last <= 'z' ? 0x20 : 0);
    const __m128i want_first = _mm_set1_epi8((char)first), want_last = _mm_set1_epi8((char)last);
    /* 16 starts at a time while the last byte's block stays inside the haystack */
    for (; i + 16 <= end; i += 16) {
        __m128i a = _mm_or_si128(_mm_loadu_si128((const __m128i *)(h + i)), fold_first);
        __m128i b = _mm_or_si128(_mm_loadu_si128((const __m128i *)(h + i + m - 1)), fold_last);
        unsigned int hits = (unsigned int)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, want_first),
                                                                          _mm_cmpeq_epi8(b, want_last)));
        while (hits) {
            Py_ssize_t at = i + __builtin_ctz(hits);
            Py_ssize_t k = 1;
            while (k < m - 1 && lowered[h[at + k]] == n[k])
                k++;
            if (k >= m - 1)
                return 1;
            hits &= hits - 1;
        }
    }
#endif
    for (; i < end; i++) {
        if (lowered[h[i]] != first || lowered[h[i + m - 1]] != last)
            continue;
        Py_ssize_t k = 1;
        while (k < m - 1 && lowered[h[i + k]] == n[k])
            k++;
        if (k >= m - 1)
            return 1;
    }
    return 0;
}

static PyObject *contains_any(PyObject *self, PyObject *args)
{
    Py_buffer haystack;
    PyObject *needles;
    int fold_case = 0;
    if (!PyArg_ParseTuple(args, "y*O!|p:contains_any", &haystack, &PyTuple_Type, &needles, &fold_case))
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
        const unsigned char *bytes = (const unsigned char *)PyBytes_AS_STRING(needle);
        if (size == 0)
            found = 1;
        else if (fold_case)
            found = contains_folded(haystack.buf, haystack.len, bytes, size);
        else
            found = size <= haystack.len && memmem(haystack.buf, haystack.len, bytes, size) != NULL;
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
     "contains_any(haystack, needles, fold_case=False) -> bool: any(needle in haystack for needle in "
     "needles), needles a tuple of bytes; with fold_case, in haystack.lower() (no copy made)."},
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
    fill_lowered();
    return PyModule_Create(&module);
}
