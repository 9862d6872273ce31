"""OpenMP runtime queries (the thread count every kernel defaults to).

Public classes and functions:

.. autosummary::

   openmp_max_threads  -- OpenMP's default thread count
   openmp_enabled      -- whether the build has OpenMP
"""

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int ml_omp_max_threads(void) { return omp_get_max_threads(); }
    static int ml_omp_enabled(void) { return 1; }
    #else
    static int ml_omp_max_threads(void) { return 1; }
    static int ml_omp_enabled(void) { return 0; }
    #endif
    """
    int ml_omp_max_threads() nogil
    int ml_omp_enabled() nogil


def openmp_max_threads():
    """OpenMP's current default thread count (honours OMP_NUM_THREADS and threadpoolctl)."""
    return ml_omp_max_threads()


def openmp_enabled():
    """Whether the extension was compiled with OpenMP."""
    return bool(ml_omp_enabled())
