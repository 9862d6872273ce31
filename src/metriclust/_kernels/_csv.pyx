"""Bridge to csrc/csvparse.c: the fast path of ``metriclust.datasets``' CSV reader.

Public classes and functions:

.. autosummary::

   parse_numeric  -- plain numeric CSV text to a float64 array (None if unusual)
"""

import numpy as np

cdef extern from "csvparse.h" nogil:
    Py_ssize_t ml_csv_count_lines(const char *buf, Py_ssize_t len)
    void ml_csv_line_starts(const char *buf, Py_ssize_t len, Py_ssize_t n_lines,
                            Py_ssize_t *starts)
    Py_ssize_t ml_csv_parse(const char *buf, const Py_ssize_t *starts, Py_ssize_t n_lines,
                            Py_ssize_t n_cols, Py_ssize_t skip_col, double *out,
                            unsigned char *blank, int n_threads)


def parse_numeric(const unsigned char[::1] buf, Py_ssize_t n_cols, Py_ssize_t skip_col=-1,
                  int n_threads=0):
    """Rows of plain numeric comma-separated fields, or None (see csvparse.h).

    ``buf`` must end with ``b"\\n"``. Blank lines are dropped. Column
    ``skip_col`` (text labels) is not converted and reads 0. Returns a float64
    array of shape ``(n_rows, n_cols)``, or None when some line is not plain
    numeric (the caller's careful parser then reads the file).
    """
    cdef Py_ssize_t n = buf.shape[0]
    if n_cols < 1:
        raise ValueError(f"n_cols must be >= 1, got {n_cols}")
    if skip_col >= n_cols:
        raise ValueError(f"skip_col={skip_col} is not a column (n_cols={n_cols})")
    if n == 0:
        return np.empty((0, n_cols))
    if buf[n - 1] != ord("\n"):
        raise ValueError("buf must end with a newline")
    cdef const char *p = <const char *> &buf[0]
    cdef Py_ssize_t n_lines
    with nogil:
        n_lines = ml_csv_count_lines(p, n)
    starts = np.empty(n_lines + 1, dtype=np.intp)
    out = np.empty((n_lines, n_cols), dtype=np.float64)
    blank = np.empty(n_lines, dtype=np.uint8)
    cdef Py_ssize_t[::1] sv = starts
    cdef double[:, ::1] ov = out
    cdef unsigned char[::1] bv = blank
    cdef Py_ssize_t bad
    with nogil:
        ml_csv_line_starts(p, n, n_lines, &sv[0])
        bad = ml_csv_parse(p, &sv[0], n_lines, n_cols, skip_col,
                           &ov[0, 0] if n_lines > 0 else NULL,
                           &bv[0] if n_lines > 0 else NULL, n_threads)
    if bad >= 0:
        return None
    if blank.any():
        out = out[blank == 0]
    return out
