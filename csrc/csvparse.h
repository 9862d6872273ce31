/* The fast path of metriclust's CSV reader (metriclust.datasets).
 *
 * A "plain numeric" line is fields separated by commas, each a decimal number
 * (optionally between double quotes, optionally padded with spaces or tabs),
 * ending in "\n" or "\r\n". Anything else -- a quote inside a field, a word,
 * a hexadecimal float, a ragged line -- is not parsed here: the caller then
 * reads the file with its careful parser, which accepts or explains it. So
 * this parser may refuse more than the careful one, never accept more.
 *
 * Numbers are converted by strtod (correctly rounded, like Python's float()).
 * Lines are independent, so the result does not depend on the thread count. */
#ifndef METRICLUST_CSVPARSE_H
#define METRICLUST_CSVPARSE_H
#include "common.h"

/* Number of lines in buf[0 .. len): '\n' count, plus one for a last line
 * without a '\n'. */
ptrdiff_t ml_csv_count_lines(const char *buf, ptrdiff_t len);

/* starts[i] = offset of line i, for i < n_lines, and starts[n_lines] = len. */
void ml_csv_line_starts(const char *buf, ptrdiff_t len, ptrdiff_t n_lines,
                        ptrdiff_t *starts);

/* Parse lines 0 .. n_lines-1 into out (n_lines x n_cols, row-major). Column
 * skip_col (or none when < 0) is checked for its place only, not converted
 * (it holds text labels) and set to 0. blank[i] = 1 marks a line of spaces
 * and tabs only (its row of out is undefined). buf[len - 1] must be '\n' (so
 * that strtod never reads past the buffer).
 * Returns -1 when every line parsed, else the index of the first line that
 * is not plain numeric. */
ptrdiff_t ml_csv_parse(const char *buf, const ptrdiff_t *starts, ptrdiff_t n_lines,
                       ptrdiff_t n_cols, ptrdiff_t skip_col, double *out,
                       unsigned char *blank, int n_threads);

#endif
