"""Thread count for the OpenMP kernels, and BLAS held to one thread around them.

Public classes and functions:

.. autosummary::

   effective_n_threads    -- OpenMP threads a kernel will use
   blas_threads           -- context holding BLAS to a number of threads
   single_blas_thread     -- context holding BLAS to one thread
   small_problem_threads  -- one thread below the cluster sums' serial threshold

The default follows OpenMP's own: ``OMP_NUM_THREADS`` and
``threadpoolctl.threadpool_limits(limits=n, user_api="openmp")`` both set it,
as they do for scikit-learn.
"""

import numbers

from .._kernels._blas import load as load_blas
from .._kernels._openmp import openmp_max_threads
from .._kernels._sums import MIN_PARALLEL as _SUM_MIN_PARALLEL

__all__ = ["blas_threads", "effective_n_threads", "single_blas_thread",
           "small_problem_threads"]


def effective_n_threads(n_threads=None):
    """Number of OpenMP threads a kernel will use.

    None means OpenMP's current maximum. A positive int is used as given;
    a negative int counts back from the maximum (-1 = all, -2 = all but one).
    """
    max_threads = openmp_max_threads()
    if n_threads is None:
        return max_threads
    if isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral):
        raise TypeError(f"n_threads must be None or an int, got {n_threads!r}.")
    if n_threads == 0:
        raise ValueError("n_threads must not be 0.")
    if n_threads < 0:
        return max(1, max_threads + 1 + int(n_threads))
    # The kernels take a C int (and cap it further at a few threads per core).
    return int(min(n_threads, 2**31 - 1))


_controller = None


def _threadpool_controller():
    # Built once: threadpoolctl's library scan costs ~0.8 ms per entry, a cached
    # controller's limit ~0.03 ms, and fits enter these contexts repeatedly.
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        load_blas()  # scipy's BLAS: loaded before the scan, resolved for the kernels

        _controller = ThreadpoolController()
    return _controller


def blas_threads(limits):
    """Context holding BLAS to ``limits`` threads."""
    return _threadpool_controller().limit(limits=limits, user_api="blas")


def single_blas_thread():
    """Hold BLAS to one thread, e.g. while OpenMP threads each call it."""
    return blas_threads(1)


def small_problem_threads(size, n_threads=None):
    """One thread below 1e6 entries, else ``n_threads`` (None: OpenMP's default, as
    :func:`effective_n_threads` reads it; 0 is not a thread count there).

    Used for the k-means runs of CPCM's search (many small fits in a row); the
    cluster-sum kernel applies the same rule itself: the threshold is its
    ``ML_SUM_MIN_PARALLEL`` (csrc/thresholds.h), read from the bridge.

    Measured on the shared 2-core machine under load: an OpenMP region costs
    ~10 ms of waiting for a second thread, so a 20000 x 20 cluster sum took
    12 ms on two threads and 0.3 ms on one; CPD-UML's warm Lloyd on 4e4 and 2e5
    entries took 1.1 and 5.5 ms on one thread, 6.7 and 18 ms on two (load 28).
    Results do not depend on it.
    """
    return 1 if size < _SUM_MIN_PARALLEL else n_threads
