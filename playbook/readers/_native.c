/* The readers' optional C helpers (readers/native.py loads them; each has a Python path that gives the same result):
 * parse_rows (below), newlines (the offsets of a block's newline bytes), transpose (a table's columns moved into
 * GPU-major order straight from a reader's pieces, frames._build).
 *
 * parse_rows: a one-pass parser of clean nvidia-smi --query-gpu CSV rows (the fast path of nvidia_smi/convert.py).
 *
 * The Python path parses a piece with pyarrow into text columns, then trims units, casts numbers and parses
 * timestamps with Arrow kernels: four passes over millions of strings. This parser does it in one pass over the
 * bytes, with the GIL released (two pieces parse at once on the reader's two workers), and writes straight into
 * the caller's numpy arrays. It reads only the simple, common case and refuses anything else (the caller then
 * takes the Python path, which also names every bad value): so it changes the speed, never the table.
 *
 * Per field kind (one byte per field in `kinds`):
 *   'f'  a number with an optional unit ("79 %", "250.55 W", "1410 MHz"): units trimmed as convert._strip trims
 *        them; an empty value or one starting with "[" ("[N/A]", "[Not Supported]") is NaN; float64, correctly
 *        rounded (Clinger's exact path: at most 15 significant digits, |exponent| <= 22; anything else refused);
 *   'i'  a GPU index: a number as 'f' that is a non-negative integer; int64;
 *   't'  a timestamp "YYYY/MM/DD HH:MM:SS[.f{1,9}]" ('-' also accepted between date parts); int64 ns since the
 *        Unix epoch of that naive wall time (the caller applies the time zone);
 *   'd'  text (bus id, UUID, product name, a hex mask or a flag), trimmed of ASCII whitespace: int64 code of each
 *        distinct value in order of first appearance; the distinct values come back as a list of str;
 *   '-'  not read.
 * Refused (None returned): a row with another number of fields, a row count other than n_rows, a byte >= 0x80 in
 * a text field, a value of another form, more than MAX_DISTINCT distinct values of one text field.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define MAX_FIELDS 256
#define MAX_DISTINCT (1 << 16)

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

static int is_unit(char c) {  /* the characters convert._strip trims from the right: " \t%MiBKGWHzC" */
    switch (c) {
    case ' ': case '\t': case '%': case 'M': case 'i': case 'B': case 'K': case 'G': case 'W': case 'H':
    case 'z': case 'C':
        return 1;
    default:
        return 0;
    }
}

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
                                 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A decimal number filling [s, e): -?digits(.digits)?([eE][+-]?digits)?. 0 and *out on success, -1 otherwise. */
static int parse_decimal(const char *s, const char *e, double *out) {
    const char *p = s;
    int neg = 0, exp10 = 0;
    uint64_t m = 0;
    if (p < e && *p == '-') {
        neg = 1;
        p++;
    }
    const char *int_start = p;
    for (; p < e && *p >= '0' && *p <= '9'; p++) {
        if (m >= 100000000000000ULL) return -1;  /* a 16th significant digit: not the exact path */
        m = m * 10 + (uint64_t)(*p - '0');
    }
    if (p == int_start) return -1;
    if (p < e && *p == '.') {
        const char *frac_start = ++p;
        for (; p < e && *p >= '0' && *p <= '9'; p++) {
            if (m >= 100000000000000ULL) return -1;
            m = m * 10 + (uint64_t)(*p - '0');
            exp10--;
        }
        if (p == frac_start) return -1;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        int eneg = 0, ev = 0;
        const char *exp_start;
        p++;
        if (p < e && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        exp_start = p;
        for (; p < e && *p >= '0' && *p <= '9' && p - exp_start < 4; p++) ev = ev * 10 + (*p - '0');
        if (p == exp_start) return -1;
        exp10 += eneg ? -ev : ev;
    }
    if (p != e) return -1;
    double v = (double)m;  /* exact: m < 10^15 < 2^53 */
    if (m != 0) {
        if (exp10 > 22 || exp10 < -22) return -1;
        v = exp10 >= 0 ? v * POW10[exp10] : v / POW10[-exp10];  /* one correctly rounded operation */
    }
    *out = neg ? -v : v;
    return 0;
}

static int parse_number(const char *s, const char *e, double *out) {
    while (s < e && is_space(*s)) s++;
    while (e > s && is_unit(e[-1])) e--;
    if (s == e || *s == '[') {
        *out = NAN;
        return 0;
    }
    return parse_decimal(s, e, out);
}

static int digits_at(const char *p, int n, int *out) {
    int v = 0;
    for (int k = 0; k < n; k++) {
        if (p[k] < '0' || p[k] > '9') return -1;
        v = v * 10 + (p[k] - '0');
    }
    *out = v;
    return 0;
}

static int64_t days_from_civil(int64_t y, int m, int d) {  /* days since 1970-01-01 (H. Hinnant's algorithm) */
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int parse_time(const char *s, const char *e, int64_t *out) {
    static const int MDAYS[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, sec;
    while (s < e && is_space(*s)) s++;
    while (e > s && is_space(e[-1])) e--;
    if (e - s < 19) return -1;
    if (digits_at(s, 4, &y) || (s[4] != '/' && s[4] != '-') || digits_at(s + 5, 2, &mo) ||
        (s[7] != '/' && s[7] != '-') || digits_at(s + 8, 2, &d) || s[10] != ' ' || digits_at(s + 11, 2, &h) ||
        s[13] != ':' || digits_at(s + 14, 2, &mi) || s[16] != ':' || digits_at(s + 17, 2, &sec))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > MDAYS[mo - 1] || h > 23 || mi > 59 || sec > 59) return -1;
    if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return -1;
    if (y < 1678 || y > 2261) return -1;  /* int64 ns holds 1677-09-21 .. 2262-04-11 */
    int64_t ns = 0;
    const char *p = s + 19;
    if (p < e) {
        if (*p != '.') return -1;
        int n = 0;
        for (p++; p < e && *p >= '0' && *p <= '9'; p++, n++) {
            if (n == 9) return -1;
            ns = ns * 10 + (*p - '0');
        }
        if (n == 0 || p != e) return -1;
        for (; n < 9; n++) ns *= 10;
    }
    int64_t secs = days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 + mi * 60 + sec;
    *out = secs * 1000000000LL + ns;
    return 0;
}

/* Distinct text values of one field: open addressing over (offset, length) spans of the data. */
typedef struct {
    Py_ssize_t *start, *len;  /* per code */
    int32_t *slots;           /* code + 1 per slot, 0 = empty */
    Py_ssize_t n, cap;        /* codes used; slot count (a power of two) */
} Dict;

static uint64_t hash_bytes(const char *s, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ULL;  /* FNV-1a */
    for (Py_ssize_t k = 0; k < n; k++) h = (h ^ (unsigned char)s[k]) * 1099511628211ULL;
    return h;
}

static int dict_grow(Dict *t, const char *base) {
    Py_ssize_t cap = t->cap ? t->cap * 2 : 64;
    int32_t *slots = calloc((size_t)cap, sizeof(int32_t));
    Py_ssize_t *start = realloc(t->start, (size_t)(cap / 2) * sizeof(Py_ssize_t));
    if (start) t->start = start;
    Py_ssize_t *len = realloc(t->len, (size_t)(cap / 2) * sizeof(Py_ssize_t));
    if (len) t->len = len;
    if (!slots || !start || !len) {
        free(slots);
        return -1;
    }
    for (Py_ssize_t c = 0; c < t->n; c++) {
        uint64_t h = hash_bytes(base + t->start[c], t->len[c]) & (uint64_t)(cap - 1);
        while (slots[h]) h = (h + 1) & (uint64_t)(cap - 1);
        slots[h] = (int32_t)(c + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* The code of [s, e) (trimmed of ASCII whitespace), adding it when new; -1 when refused. */
static int64_t dict_code(Dict *t, const char *base, const char *s, const char *e) {
    while (s < e && is_space(*s)) s++;
    while (e > s && is_space(e[-1])) e--;
    Py_ssize_t n = e - s;
    for (Py_ssize_t k = 0; k < n; k++)  /* ASCII text only: no question of how Unicode spaces trim */
        if ((unsigned char)s[k] >= 0x80 || ((unsigned char)s[k] < 0x20 && s[k] != '\t')) return -1;
    if (t->cap == 0 && dict_grow(t, base)) return -1;
    uint64_t mask = (uint64_t)(t->cap - 1), h = hash_bytes(s, n) & mask;
    for (; t->slots[h]; h = (h + 1) & mask) {
        Py_ssize_t c = t->slots[h] - 1;
        if (t->len[c] == n && memcmp(base + t->start[c], s, (size_t)n) == 0) return c;
    }
    if (t->n >= MAX_DISTINCT) return -1;
    Py_ssize_t c = t->n++;
    t->start[c] = s - base;
    t->len[c] = n;
    t->slots[h] = (int32_t)(c + 1);
    if (t->n * 2 >= t->cap && dict_grow(t, base)) return -1;  /* keeps n < cap / 2, the codes' room */
    return c;
}

/* The number at *pp, the field's common form read as it is scanned: spaces, -?digits(.digits)?, unit characters up
 * to the delimiter. 1 when read (*pp at the delimiter), 0 when the field needs parse_number (a bracket, an
 * exponent, a long mantissa, anything else), *pp unchanged. */
static int scan_number(const char **pp, const char *end, double *out) {
    const char *p = *pp;
    int neg = 0, exp10 = 0;
    uint64_t m = 0;
    while (p < end && *p == ' ') p++;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    const char *int_start = p;
    for (; p < end && (unsigned)(*p - '0') < 10; p++) {
        if (m >= 100000000000000ULL) return 0;
        m = m * 10 + (uint64_t)(*p - '0');
    }
    if (p == int_start) return 0;
    if (p < end && *p == '.') {
        const char *frac_start = ++p;
        for (; p < end && (unsigned)(*p - '0') < 10; p++) {
            if (m >= 100000000000000ULL) return 0;
            m = m * 10 + (uint64_t)(*p - '0');
            exp10--;
        }
        if (p == frac_start) return 0;
    }
    while (p < end && *p != ',' && *p != '\n') {
        if (!is_unit(*p)) return 0;  /* an exponent, or anything else: the general path decides */
        p++;
    }
    double v = (double)m;  /* exact: m < 10^15 < 2^53; 10^-exp10 exact for exp10 >= -22 */
    if (exp10 < -22) return 0;
    if (exp10) v /= POW10[-exp10];
    *out = neg ? -v : v;
    *pp = p;
    return 1;
}

/* Parse every row; 0 on success, -1 when refused. */
static int parse_all(const char *data, Py_ssize_t size, const char *kinds, int n_fields, void **outs, Dict *dicts,
                     Py_ssize_t n_rows) {
    const char *p = data, *end = data + size, *last_time = NULL;
    Py_ssize_t row = 0, time_len = 0;
    int64_t time_ns = 0;
    while (p < end) {
        if (row == n_rows || *p == '\n') return -1;  /* more rows than lines; a blank line */
        for (int f = 0; f < n_fields; f++) {
            const char *s = p;
            char kind = kinds[f];
            if (kind == 'f' && scan_number(&p, end, (double *)outs[f] + row)) {
                kind = 0;  /* read */
            } else {
                while (p < end && *p != ',' && *p != '\n') p++;
            }
            const char *e = p;
            if (f < n_fields - 1) {
                if (p == end || *p != ',') return -1;  /* too few fields */
            } else if (p < end && *p != '\n') {
                return -1;  /* too many fields */
            }
            if (p < end) p++;  /* past the comma or newline */
            switch (kind) {
            case 'f':
                if (parse_number(s, e, (double *)outs[f] + row)) return -1;
                break;
            case 'i': {
                double v;
                if (parse_number(s, e, &v) || !(v >= 0) || v != floor(v) || v > 9.0e15) return -1;
                ((int64_t *)outs[f])[row] = (int64_t)v;
                break;
            }
            case 't':  /* the GPUs of one poll share its stamp: parsed once */
                if (last_time == NULL || e - s != time_len || memcmp(s, last_time, (size_t)time_len) != 0) {
                    if (parse_time(s, e, &time_ns)) return -1;
                    last_time = s;
                    time_len = e - s;
                }
                ((int64_t *)outs[f])[row] = time_ns;
                break;
            case 'd': {
                int64_t c = dict_code(&dicts[f], data, s, e);
                if (c < 0) return -1;
                ((int64_t *)outs[f])[row] = c;
                break;
            }
            default:
                break;
            }
        }
        row++;
    }
    return row == n_rows ? 0 : -1;
}

static PyObject *parse_rows(PyObject *self, PyObject *args) {
    Py_buffer data, kinds;
    PyObject *outs_list;
    Py_ssize_t n_rows;
    if (!PyArg_ParseTuple(args, "y*y*O!n", &data, &kinds, &PyList_Type, &outs_list, &n_rows)) return NULL;
    PyObject *result = NULL;
    Py_buffer views[MAX_FIELDS];
    void *outs[MAX_FIELDS];
    Dict dicts[MAX_FIELDS];
    int n_fields = (int)kinds.len, held = 0, ok = -1;
    const char *k = kinds.buf;
    memset(dicts, 0, sizeof(dicts));
    if (n_fields < 1 || n_fields > MAX_FIELDS || PyList_GET_SIZE(outs_list) != n_fields) {
        PyErr_SetString(PyExc_ValueError, "parse_rows: one output per field (at most 256 fields)");
        goto done;
    }
    for (; held < n_fields; held++) {
        PyObject *o = PyList_GET_ITEM(outs_list, held);
        outs[held] = NULL;
        views[held].obj = NULL;
        if (k[held] == '-') continue;
        if (PyObject_GetBuffer(o, &views[held], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)) goto done;
        if (views[held].len < n_rows * 8) {
            PyErr_SetString(PyExc_ValueError, "parse_rows: an output array is shorter than n_rows");
            held++;
            goto done;
        }
        outs[held] = views[held].buf;
    }
    Py_BEGIN_ALLOW_THREADS
    ok = parse_all(data.buf, data.len, k, n_fields, outs, dicts, n_rows);
    Py_END_ALLOW_THREADS
    if (ok) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    result = PyList_New(n_fields);
    if (!result) goto done;
    for (int f = 0; f < n_fields; f++) {
        PyObject *item = Py_None;
        Py_INCREF(item);
        if (k[f] == 'd') {
            Py_DECREF(item);
            item = PyList_New(dicts[f].n);
            for (Py_ssize_t c = 0; item && c < dicts[f].n; c++) {
                PyObject *s = PyUnicode_DecodeASCII((const char *)data.buf + dicts[f].start[c], dicts[f].len[c],
                                                    "strict");
                if (!s) {
                    Py_CLEAR(item);
                    break;
                }
                PyList_SET_ITEM(item, c, s);
            }
            if (!item) {
                Py_CLEAR(result);
                goto done;
            }
        }
        PyList_SET_ITEM(result, f, item);
    }
done:
    for (int f = 0; f < held; f++)
        if (views[f].obj) PyBuffer_Release(&views[f]);
    for (int f = 0; f < MAX_FIELDS; f++) {
        free(dicts[f].start);
        free(dicts[f].len);
        free(dicts[f].slots);
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&kinds);
    return result;
}

static PyObject *newlines(PyObject *self, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
    const char *base = data.buf, *end = base + data.len, *p;
    Py_ssize_t n = 0, cap = data.len / 32 + 1024;  /* one pass: the offsets grow in a buffer of our own */
    int64_t *offsets = malloc((size_t)cap * sizeof(int64_t)), *grown;
    int failed = offsets == NULL;
    Py_BEGIN_ALLOW_THREADS
    for (p = base; !failed && (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) {
        if (n == cap) {
            cap *= 2;
            grown = realloc(offsets, (size_t)cap * sizeof(int64_t));
            if (grown == NULL) {
                failed = 1;
                break;
            }
            offsets = grown;
        }
        offsets[n++] = p - base;
    }
    Py_END_ALLOW_THREADS
    PyObject *out = failed ? PyErr_NoMemory() : PyBytes_FromStringAndSize((const char *)offsets, n * 8);
    free(offsets);
    PyBuffer_Release(&data);
    return out;
}

/* out[g * ticks + t] = src[t * width + perm[g]], src the pieces' items joined (itemsize 4 or 8): rows written
 * tick by tick, moved into GPU-major order in one pass, without joining the pieces first. */
static PyObject *transpose(PyObject *self, PyObject *args) {
    PyObject *pieces;
    Py_ssize_t width, itemsize, total = 0, n = 0;
    Py_buffer perm, out;
    if (!PyArg_ParseTuple(args, "O!nny*w*", &PyList_Type, &pieces, &width, &itemsize, &perm, &out)) return NULL;
    Py_ssize_t n_pieces = PyList_GET_SIZE(pieces), held = 0;
    Py_buffer *views = PyMem_Calloc((size_t)(n_pieces ? n_pieces : 1), sizeof(Py_buffer));
    Py_ssize_t *base = PyMem_Malloc((size_t)(width > 0 ? width : 1) * sizeof(Py_ssize_t));
    PyObject *result = NULL;
    if (!views || !base) {
        PyErr_NoMemory();
        goto done;
    }
    if (width < 1 || (itemsize != 4 && itemsize != 8) || perm.len != width * 8) {
        PyErr_SetString(PyExc_ValueError, "transpose: width >= 1, itemsize 4 or 8, one int64 per column in perm");
        goto done;
    }
    for (; held < n_pieces; held++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(pieces, held), &views[held], PyBUF_C_CONTIGUOUS)) goto done;
        if (views[held].len % itemsize) {
            PyErr_SetString(PyExc_ValueError, "transpose: a piece is not a whole number of items");
            held++;
            goto done;
        }
        total += views[held].len / itemsize;
    }
    if (total % width || out.len != total * itemsize) {
        PyErr_SetString(PyExc_ValueError, "transpose: the items are not whole ticks, or out's size differs");
        goto done;
    }
    const Py_ssize_t ticks = total / width;
    const int64_t *pm = perm.buf;
    for (Py_ssize_t j = 0; j < width; j++) base[j] = -1;
    for (Py_ssize_t g = 0; g < width; g++) {
        if (pm[g] < 0 || pm[g] >= width || base[pm[g]] >= 0) {
            PyErr_SetString(PyExc_ValueError, "transpose: perm is not a permutation of the columns");
            goto done;
        }
        base[pm[g]] = g * ticks;
    }
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t j = 0, t = 0;
    for (Py_ssize_t k = 0; k < n_pieces; k++) {
        n = views[k].len / itemsize;
        if (itemsize == 8) {
            const uint64_t *src = views[k].buf;
            uint64_t *dst = out.buf;
            for (Py_ssize_t i = 0; i < n; i++) {
                dst[base[j] + t] = src[i];
                if (++j == width) j = 0, t++;
            }
        } else {
            const uint32_t *src = views[k].buf;
            uint32_t *dst = out.buf;
            for (Py_ssize_t i = 0; i < n; i++) {
                dst[base[j] + t] = src[i];
                if (++j == width) j = 0, t++;
            }
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    for (Py_ssize_t k = 0; k < held; k++) PyBuffer_Release(&views[k]);
    PyMem_Free(views);
    PyMem_Free(base);
    PyBuffer_Release(&perm);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef METHODS[] = {
    {"parse_rows", parse_rows, METH_VARARGS,
     "parse_rows(data, kinds, outs, n_rows) -> list | None: parse clean nvidia-smi CSV rows into `outs` (one "
     "writable 8-byte-per-row array per field, None for '-'); the distinct values of each 'd' field, or None when "
     "the rows are not the simple case."},
    {"transpose", transpose, METH_VARARGS,
     "transpose(pieces, width, itemsize, perm, out): out[g*ticks + t] = joined pieces[t*width + perm[g]]."},
    {"newlines", newlines, METH_VARARGS,
     "newlines(data) -> bytes: the offsets of the newline bytes of `data`, as native int64."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_native", "The readers' C helpers (readers/native.py).", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&MODULE); }
