# BLAS routines for the bridges, with scipy.linalg.cython_blas's signatures.
# Each is a trampoline that resolves scipy's routine on its first call (see
# _blas.pyx), so cimporting them does not import scipy.linalg.

cdef void dgemm(char *transa, char *transb, int *m, int *n, int *k,
                double *alpha, double *a, int *lda, double *b, int *ldb,
                double *beta, double *c, int *ldc) noexcept nogil
cdef void sgemm(char *transa, char *transb, int *m, int *n, int *k,
                float *alpha, float *a, int *lda, float *b, int *ldb,
                float *beta, float *c, int *ldc) noexcept nogil
cdef void dsyrk(char *uplo, char *trans, int *n, int *k, double *alpha,
                double *a, int *lda, double *beta, double *c,
                int *ldc) noexcept nogil

# The lazy loader shared with the other routine tables (LAPACK in _mmc.pyx):
# ``resolve`` fills its table and is idempotent; both run it under one lock.
cdef int locked_load(int (*resolve)() except -1) except -1
cdef void load_or_abort(int (*resolve)() except -1, const char *what) noexcept nogil
