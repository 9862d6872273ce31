#include "csvparse.h"

#include <stdlib.h>
#include <string.h>

/* Lines below this count are parsed on one thread (start-up costs more). */
#define ML_CSV_MIN_PARALLEL 20000

ptrdiff_t ml_csv_count_lines(const char *buf, ptrdiff_t len) {
    ptrdiff_t n = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) return n + 1;
        n++;
        p = nl + 1;
    }
    return n;
}

void ml_csv_line_starts(const char *buf, ptrdiff_t len, ptrdiff_t n_lines,
                        ptrdiff_t *starts) {
    const char *p = buf, *end = buf + len;
    for (ptrdiff_t i = 0; i < n_lines; i++) {
        starts[i] = p - buf;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    starts[n_lines] = len;
}

static int is_pad(char c) { return c == ' ' || c == '\t'; }

/* Characters a number may hold: digits, sign, point, exponent, and the
 * letters of "inf", "infinity" and "nan" (the caller rejects non-finite
 * values with a message). No 'x' or 'p': no hexadecimal floats, which
 * Python's float() refuses. */
static int is_number_char(char c) {
    if (c >= '0' && c <= '9') return 1;
    switch (c) {
    case '+': case '-': case '.': case 'e': case 'E':
    case 'i': case 'I': case 'n': case 'N': case 'f': case 'F':
    case 't': case 'T': case 'y': case 'Y': case 'a': case 'A':
        return 1;
    default:
        return 0;
    }
}

/* One line [s, e) without its '\n'. Returns 0 parsed, 1 blank, -1 not plain. */
static int parse_line(const char *s, const char *e, ptrdiff_t n_cols, ptrdiff_t skip_col,
                      double *row) {
    if (e > s && e[-1] == '\r') e--;
    const char *q = s;
    while (q < e && is_pad(*q)) q++;
    if (q == e) return 1;
    const char *f = s;
    for (ptrdiff_t j = 0; j < n_cols; j++) {
        if (f > e) return -1;                       /* fewer fields than n_cols */
        const char *fe = memchr(f, ',', (size_t)(e - f));
        if (fe == NULL) fe = e;
        const char *a = f, *b = fe;
        if (b - a >= 2 && *a == '"' && b[-1] == '"') {   /* a quoted field */
            a++;
            b--;
        }
        if (memchr(a, '"', (size_t)(b - a)) != NULL) return -1;
        if (j == skip_col) {
            row[j] = 0.0;
        } else {
            while (a < b && is_pad(*a)) a++;
            while (b > a && is_pad(b[-1])) b--;
            if (a == b) return -1;                  /* empty field */
            for (const char *c = a; c < b; c++)
                if (!is_number_char(*c)) return -1;
            char *stop;
            double v = strtod(a, &stop);
            if (stop != b) return -1;
            row[j] = v;
        }
        f = fe + 1;
    }
    return f == e + 1 ? 0 : -1;                     /* more fields than n_cols */
}

ptrdiff_t ml_csv_parse(const char *buf, const ptrdiff_t *starts, ptrdiff_t n_lines,
                       ptrdiff_t n_cols, ptrdiff_t skip_col, double *out,
                       unsigned char *blank, int n_threads) {
    ptrdiff_t first_bad = n_lines;
    ptrdiff_t i;
    #pragma omp parallel for schedule(static) reduction(min:first_bad) \
        if(n_lines >= ML_CSV_MIN_PARALLEL) num_threads(ml_threads(n_threads))
    for (i = 0; i < n_lines; i++) {
        const char *s = buf + starts[i];
        const char *e = buf + starts[i + 1];
        if (e > s && e[-1] == '\n') e--;
        int status = parse_line(s, e, n_cols, skip_col, out + i * n_cols);
        blank[i] = (unsigned char)(status == 1);
        if (status < 0 && i < first_bad) first_bad = i;
    }
    return first_bad == n_lines ? -1 : first_bad;
}
