# Declarations shared by the Cython bridges (csrc/common.h), written once.

cdef extern from "common.h" nogil:
    # BLAS entry points passed to the C core (Fortran calling convention); the
    # bridges hand it scipy.linalg.cython_blas's routines.
    ctypedef void (*ml_dgemm_fn)(char *, char *, int *, int *, int *, double *,
                                 double *, int *, double *, int *, double *,
                                 double *, int *)
    ctypedef void (*ml_sgemm_fn)(char *, char *, int *, int *, int *, float *,
                                 float *, int *, float *, int *, float *,
                                 float *, int *)

ctypedef fused real:
    float
    double
