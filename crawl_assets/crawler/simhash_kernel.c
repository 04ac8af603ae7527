/* SimHash fingerprint of a text in one pass over its UTF-8 bytes (read from the str's
 * code points, never copied): the compiled form of the numpy code in simhash.py
 * (_word_hashes, _shingle_hashes, _majority_bits), which stays the reference. Both give the same 64-bit value for every text; the tests compare
 * them on a varied corpus. Any change here must be made there too (and the other way).
 *
 * Words: runs of ASCII letters, digits, underscore and any non-ASCII byte, ASCII letters
 * lowercased. Word [s, e) of bytes c hashes to
 *     mix(((sum_i (c_i + 1) * B**(e-1-i)) ^ ((e - s) << 56)))       (Horner, mod 2**64)
 * and a word made only of digits hashes to NUMBER. Shingle k of s words combines
 * w[k] .. w[k+s-1] as h = h * SHINGLE_MULT + w[j], then mix; s = max(1, min(shingle, n)).
 * Bit j of the result is 1 when 2 * (shingles with bit j set) > shingles; no words -> 0.
 *
 * Built by setup.py as an optional extension: without a compiler simhash.py keeps
 * computing the same values with numpy. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define BASE 0x100000001B3ULL
#define SHINGLE_MULT 0x9E3779B97F4A7C15ULL
#define NUMBER 0x6E756D6265722121ULL
#define MIX_1 0xBF58476D1CE4E5B9ULL
#define MIX_2 0x94D049BB133111EBULL
#define STACK_WORDS 2048

static inline uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= MIX_1;
    x ^= x >> 27;
    x *= MIX_2;
    x ^= x >> 31;
    return x;
}

/* 1 for a word byte (ASCII letter, digit, underscore, every byte >= 0x80). */
static unsigned char word_byte[256];

static void init_tables(void)
{
    for (int b = 0; b < 256; b++)
        word_byte[b] = (b >= 0x80) || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') ||
                       (b >= 'A' && b <= 'Z') || b == '_';
}

/* The word hashes, in text order: a stack array first, the heap when it fills. */
struct words {
    uint64_t *data;
    Py_ssize_t count, capacity;
    int on_heap;
};

static int push(struct words *w, uint64_t h)
{
    if (w->count == w->capacity) {
        Py_ssize_t grown = w->capacity * 2;
        uint64_t *more = w->on_heap ? realloc(w->data, grown * sizeof(uint64_t))
                                    : malloc(grown * sizeof(uint64_t));
        if (more == NULL)
            return -1;
        if (!w->on_heap)
            memcpy(more, w->data, w->count * sizeof(uint64_t));
        w->data = more;
        w->capacity = grown;
        w->on_heap = 1;
    }
    w->data[w->count++] = h;
    return 0;
}

#define ADD(byte) (h = h * BASE + (uint64_t)(byte) + 1)

/* Word hashes of a str's code points p[0:n), read as the UTF-8 bytes they encode to
 * (without building them: .encode() would cost a third of the fingerprint). Every byte
 * of a non-ASCII character is a word byte and never a digit. Returns 0, -1 when memory
 * ran out, -2 at a surrogate (which UTF-8 cannot encode). */
#define DEFINE_SCAN(NAME, TYPE)                                                        \
    static int NAME(const TYPE *p, Py_ssize_t n, struct words *out)                   \
    {                                                                                  \
        uint64_t h = 0;                                                                \
        uint64_t len = 0;                                                              \
        int digits = 1;                                                                \
        for (Py_ssize_t i = 0; i < n; i++) {                                           \
            Py_UCS4 c = p[i];                                                          \
            if (c < 0x80) {                                                            \
                if (!word_byte[c]) {                                                   \
                    if (len) {                                                         \
                        if (push(out, digits ? NUMBER : mix(h ^ (len << 56))) < 0)     \
                            return -1;                                                 \
                        h = 0;                                                         \
                        len = 0;                                                       \
                        digits = 1;                                                    \
                    }                                                                  \
                    continue;                                                          \
                }                                                                      \
                if (c - 'A' < 26u)                                                     \
                    c += 'a' - 'A';                                                    \
                digits &= (c - '0' < 10u);                                             \
                ADD(c);                                                                \
                len++;                                                                 \
            } else if (c < 0x800) {                                                    \
                ADD(0xC0 | (c >> 6));                                                  \
                ADD(0x80 | (c & 0x3F));                                                \
                len += 2;                                                              \
                digits = 0;                                                            \
            } else if (c < 0x10000) {                                                  \
                if (c >= 0xD800 && c < 0xE000)                                         \
                    return -2;                                                         \
                ADD(0xE0 | (c >> 12));                                                 \
                ADD(0x80 | ((c >> 6) & 0x3F));                                         \
                ADD(0x80 | (c & 0x3F));                                                \
                len += 3;                                                              \
                digits = 0;                                                            \
            } else {                                                                   \
                ADD(0xF0 | (c >> 18));                                                 \
                ADD(0x80 | ((c >> 12) & 0x3F));                                        \
                ADD(0x80 | ((c >> 6) & 0x3F));                                         \
                ADD(0x80 | (c & 0x3F));                                                \
                len += 4;                                                              \
                digits = 0;                                                            \
            }                                                                          \
        }                                                                              \
        if (len && push(out, digits ? NUMBER : mix(h ^ (len << 56))) < 0)              \
            return -1;                                                                 \
        return 0;                                                                      \
    }

DEFINE_SCAN(scan_ucs1, Py_UCS1)
DEFINE_SCAN(scan_ucs2, Py_UCS2)
DEFINE_SCAN(scan_ucs4, Py_UCS4)

static uint64_t majority(const uint64_t *w, Py_ssize_t n, Py_ssize_t shingle)
{
    Py_ssize_t s = shingle < 1 ? 1 : (shingle > n ? n : shingle);
    Py_ssize_t m = n - s + 1;
    /* Votes counted eight bits at a time: byte i of lanes[j] counts bit 8 * i + j, so a
     * shingle costs 8 adds instead of 64; the byte counters are emptied into votes
     * every 255 shingles, before they can wrap. */
    uint64_t votes[64] = {0};
    uint64_t lanes[8] = {0};
    int pending = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        uint64_t h = w[k];
        for (Py_ssize_t j = 1; j < s; j++)
            h = h * SHINGLE_MULT + w[k + j];
        h = mix(h);
        for (int j = 0; j < 8; j++)
            lanes[j] += (h >> j) & 0x0101010101010101ULL;
        if (++pending == 255 || k == m - 1) {
            for (int j = 0; j < 8; j++) {
                for (int i = 0; i < 8; i++)
                    votes[8 * i + j] += (lanes[j] >> (8 * i)) & 0xFF;
                lanes[j] = 0;
            }
            pending = 0;
        }
    }
    uint64_t fp = 0;
    for (int b = 0; b < 64; b++)
        if (2 * votes[b] > (uint64_t)m)
            fp |= 1ULL << b;
    return fp;
}

static PyObject *fingerprint(PyObject *self, PyObject *args)
{
    PyObject *text, *shingle_obj;
    if (!PyArg_ParseTuple(args, "UO:fingerprint", &text, &shingle_obj))
        return NULL;
    /* A shingle beyond Py_ssize_t only means "all words": clamp instead of failing. */
    PyObject *index = PyNumber_Index(shingle_obj);
    if (index == NULL)
        return NULL;
    int overflow = 0;
    long long wide = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (wide == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t shingle = overflow > 0 ? PY_SSIZE_T_MAX
                       : overflow < 0 ? 1
                       : (wide > PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX
                          : (wide < 1 ? 1 : (Py_ssize_t)wide));

#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)   /* strings from the old wchar_t API (gone in 3.12) */
        return NULL;
#endif
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t size = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    uint64_t stack[STACK_WORDS];
    struct words w = {stack, 0, STACK_WORDS, 0};
    int status;
    uint64_t fp = 0;
    Py_BEGIN_ALLOW_THREADS
    status = kind == PyUnicode_1BYTE_KIND ? scan_ucs1(data, size, &w)
           : kind == PyUnicode_2BYTE_KIND ? scan_ucs2(data, size, &w)
           : scan_ucs4(data, size, &w);
    if (status == 0 && w.count > 0)
        fp = majority(w.data, w.count, shingle);
    Py_END_ALLOW_THREADS
    if (w.on_heap)
        free(w.data);
    if (status == -1)
        return PyErr_NoMemory();
    if (status == -2) {
        /* The same UnicodeEncodeError as the numpy code's text.encode("utf-8"). */
        PyObject *encoded = PyUnicode_AsUTF8String(text);
        if (encoded != NULL) {   /* cannot happen: the scan found a surrogate */
            Py_DECREF(encoded);
            PyErr_SetString(PyExc_SystemError, "simhash_kernel: surrogate not refused");
        }
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(fp);
}

static PyMethodDef methods[] = {
    {"fingerprint", fingerprint, METH_VARARGS,
     "fingerprint(text, shingle) -> int: 64-bit SimHash of the text's word shingles, "
     "0 .. 2**64-1 (0 for a text without words); the same value as simhash.py's numpy code."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "simhash_kernel",
    "Compiled SimHash fingerprint (see simhash.py, whose numpy code is the reference).",
    -1, methods,
};

PyMODINIT_FUNC PyInit_simhash_kernel(void)
{
    init_tables();
    return PyModule_Create(&module);
}
