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

/* What a code point below 256 does to the word it is in, as UTF-8 bytes (one for ASCII,
 * two for U+0080..U+00FF): the word hash becomes h * mult + add (Horner over its bytes,
 * each byte + 1, ASCII letters lowercased), its length grows by len; word is 0 for a
 * separator (which ends the word; its mult and add are 0, so h restarts at 0 without a
 * mask on the multiply chain that bounds the scan's speed), digit 1 for '0'..'9'. */
static uint64_t cp_mult[256], cp_add[256];
static unsigned char cp_len[256], cp_word[256], cp_digit[256];

static void init_tables(void)
{
    for (int c = 0; c < 256; c++) {
        int ascii_word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                         (c >= 'A' && c <= 'Z') || c == '_';
        if (c >= 0x80) {
            cp_mult[c] = BASE * BASE;
            cp_add[c] = (uint64_t)((0xC0 | (c >> 6)) + 1) * BASE + ((0x80 | (c & 0x3F)) + 1);
            cp_len[c] = 2;
            cp_word[c] = 1;
        } else if (ascii_word) {
            cp_mult[c] = BASE;
            cp_add[c] = (uint64_t)((c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c) + 1;
            cp_len[c] = 1;
            cp_word[c] = 1;
        }
        cp_digit[c] = c >= '0' && c <= '9';
    }
}

/* Words, in text order: the raw hash (h ^ len << 56, mixed later) and whether the word
 * is all digits. Stack arrays first, the heap when they fill. */
struct words {
    uint64_t *hash;
    unsigned char *digits;
    Py_ssize_t count, capacity;
    int on_heap;
};

static int grow(struct words *w)
{
    Py_ssize_t grown = w->capacity * 2;
    uint64_t *hash = malloc(grown * sizeof(uint64_t));
    unsigned char *digits = malloc(grown);
    if (hash == NULL || digits == NULL) {
        free(hash);
        free(digits);
        return -1;
    }
    memcpy(hash, w->hash, w->count * sizeof(uint64_t));
    memcpy(digits, w->digits, w->count);
    if (w->on_heap) {
        free(w->hash);
        free(w->digits);
    }
    w->hash = hash;
    w->digits = digits;
    w->capacity = grown;
    w->on_heap = 1;
    return 0;
}

/* The words of a str's code points p[0:n), read as the UTF-8 bytes they encode to
 * (without building them: .encode() would cost a third of the fingerprint). Branch-free
 * for code points below 256: every step stores the word so far at words[count] and counts
 * it only where a word ends, so word boundaries cost no mispredicted branch. Above 255,
 * every byte is a word byte and never a digit. Returns 0, -1 when memory ran out, -2 at
 * a surrogate (which UTF-8 cannot encode). */
#define DEFINE_SCAN(NAME, TYPE)                                                        \
    static int NAME(const TYPE *p, Py_ssize_t n, struct words *w)                     \
    {                                                                                  \
        uint64_t h = 0, len = 0;                                                       \
        unsigned digits = 1, in_word = 0, surrogate = 0;                               \
        Py_ssize_t i = 0;                                                              \
        while (i < n) {                                                                \
            /* A step ends at most one word and two steps cannot both end one, so a   \
             * chunk of 2 * room - 1 steps stores below capacity. */                  \
            Py_ssize_t room = w->capacity - w->count - 1;                              \
            if (room < 64) {                                                           \
                if (grow(w) < 0)                                                       \
                    return -1;                                                         \
                continue;                                                              \
            }                                                                          \
            Py_ssize_t end = i + 2 * room - 1 < n ? i + 2 * room - 1 : n;              \
            uint64_t *hash = w->hash;                                                  \
            unsigned char *dig = w->digits;                                            \
            Py_ssize_t count = w->count;                                               \
            for (; i < end; i++) {                                                     \
                Py_UCS4 c = p[i];                                                      \
                uint64_t mult, add;                                                    \
                unsigned step, word, digit;                                            \
                if (c < 256) {                                                         \
                    mult = cp_mult[c];                                                 \
                    add = cp_add[c];                                                   \
                    step = cp_len[c];                                                  \
                    word = cp_word[c];                                                 \
                    digit = cp_digit[c];                                               \
                } else {                                                               \
                    word = 1;                                                          \
                    digit = 0;                                                         \
                    if (c < 0x800) {                                                   \
                        step = 2;                                                      \
                        add = (uint64_t)((0xC0 | (c >> 6)) + 1) * BASE;                \
                        add += (0x80 | (c & 0x3F)) + 1;                                \
                    } else if (c < 0x10000) {                                          \
                        surrogate |= c >= 0xD800 && c < 0xE000;                        \
                        step = 3;                                                      \
                        add = (uint64_t)((0xE0 | (c >> 12)) + 1) * BASE;               \
                        add = (add + (0x80 | ((c >> 6) & 0x3F)) + 1) * BASE;           \
                        add += (0x80 | (c & 0x3F)) + 1;                                \
                    } else {                                                           \
                        step = 4;                                                      \
                        add = (uint64_t)((0xF0 | (c >> 18)) + 1) * BASE;               \
                        add = (add + (0x80 | ((c >> 12) & 0x3F)) + 1) * BASE;          \
                        add = (add + (0x80 | ((c >> 6) & 0x3F)) + 1) * BASE;           \
                        add += (0x80 | (c & 0x3F)) + 1;                                \
                    }                                                                  \
                    mult = step == 2 ? BASE * BASE                                     \
                         : step == 3 ? BASE * BASE * BASE : BASE * BASE * BASE * BASE; \
                }                                                                      \
                uint64_t keep = (uint64_t)0 - word;   /* all ones inside a word */     \
                hash[count] = h ^ (len << 56);                                         \
                dig[count] = (unsigned char)digits;                                    \
                count += in_word & (word ^ 1);                                         \
                h = h * mult + add;   /* a separator's mult and add are 0 */         \
                len = (len + step) & keep;                                             \
                digits = (digits & digit) | (word ^ 1);                                \
                in_word = word;                                                        \
            }                                                                          \
            w->count = count;                                                          \
        }                                                                              \
        if (surrogate)                                                                 \
            return -2;                                                                 \
        if (in_word) {                                                                 \
            if (w->count == w->capacity && grow(w) < 0)                                \
                return -1;                                                             \
            w->hash[w->count] = h ^ (len << 56);                                       \
            w->digits[w->count++] = (unsigned char)digits;                             \
        }                                                                              \
        return 0;                                                                      \
    }

DEFINE_SCAN(scan_ucs1, Py_UCS1)
DEFINE_SCAN(scan_ucs2, Py_UCS2)
DEFINE_SCAN(scan_ucs4, Py_UCS4)

/* Word hashes from the raw ones: mixed, or NUMBER for an all-digit word (dates, counters,
 * prices that change between fetches then leave the shingles alone). */
static void finish_words(struct words *w)
{
    for (Py_ssize_t k = 0; k < w->count; k++)
        w->hash[k] = w->digits[k] ? NUMBER : mix(w->hash[k]);
}

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
    unsigned char stack_digits[STACK_WORDS];
    struct words w = {stack, stack_digits, 0, STACK_WORDS, 0};
    int status;
    uint64_t fp = 0;
    Py_BEGIN_ALLOW_THREADS
    status = kind == PyUnicode_1BYTE_KIND ? scan_ucs1(data, size, &w)
           : kind == PyUnicode_2BYTE_KIND ? scan_ucs2(data, size, &w)
           : scan_ucs4(data, size, &w);
    if (status == 0 && w.count > 0) {
        finish_words(&w);
        fp = majority(w.hash, w.count, shingle);
    }
    Py_END_ALLOW_THREADS
    if (w.on_heap) {
        free(w.hash);
        free(w.digits);
    }
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
