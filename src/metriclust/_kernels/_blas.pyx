"""scipy's BLAS for the C core, resolved on first use.

Public classes and functions:

.. autosummary::

   scipy_capi  -- ``__pyx_capi__`` of scipy.linalg.cython_blas or cython_lapack
   load        -- resolve scipy's BLAS routines now (idempotent)
   loaded      -- whether they are resolved

``cimport scipy.linalg.cython_blas`` makes the importing extension import
``scipy.linalg`` (~175 ms) when it is loaded, although most calls (k-means with
few features, the direct Gram path) never reach BLAS. The bridges cimport
these trampolines instead: each looks up scipy's routine in
``scipy.linalg.cython_blas.__pyx_capi__`` the first time it is called, then
forwards to it. The Python layer calls :func:`load` (through
``_core.threads``) before it enters a BLAS path, so the lookup normally happens
with the GIL held; a raw bridge called first triggers it from inside the C call,
which is safe because every bridge releases the GIL around its C call.
"""

from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer
from cpython.pythread cimport (PyThread_acquire_lock, PyThread_allocate_lock,
                                 PyThread_release_lock, PyThread_type_lock, WAIT_LOCK)
from libc.stdio cimport fflush, fprintf, stderr
from libc.signal cimport SIGINT, raise_
from libc.stdlib cimport abort

ctypedef void (*dgemm_t)(char *, char *, int *, int *, int *, double *, double *,
                         int *, double *, int *, double *, double *, int *) noexcept nogil
ctypedef void (*sgemm_t)(char *, char *, int *, int *, int *, float *, float *,
                         int *, float *, int *, float *, float *, int *) noexcept nogil
ctypedef void (*dsyrk_t)(char *, char *, int *, int *, double *, double *, int *,
                         double *, double *, int *) noexcept nogil

# Written once, under the loader lock (below).
cdef dgemm_t _dgemm = NULL
cdef sgemm_t _sgemm = NULL
cdef dsyrk_t _dsyrk = NULL


cdef void *_routine(dict capi, str name) except NULL:
    capsule = capi[name]
    return PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))


def scipy_capi(str name):
    """``__pyx_capi__`` of ``scipy.linalg.<name>`` (``cython_blas``, ``cython_lapack``).

    The extension is loaded from its file without running ``scipy.linalg``'s
    ``__init__`` (measured under load ~15 on the shared machine: 70-90 ms for
    both modules against 800-900 ms for ``import scipy.linalg``, most of a cold
    MMC fit); the module is registered under its usual name, so a later
    ``import scipy.linalg`` uses it. Falls back to the ordinary import.
    """
    import sys

    full = "scipy.linalg." + name
    module = sys.modules.get(full)
    if module is None:
        try:
            import glob
            import importlib.machinery
            import importlib.util
            import os

            import scipy

            folder = os.path.join(os.path.dirname(scipy.__file__), "linalg")
            path = None
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                found = glob.glob(os.path.join(glob.escape(folder), name + suffix))
                if found:
                    path = found[0]
                    break
            loader = importlib.machinery.ExtensionFileLoader(full, path)
            spec = importlib.util.spec_from_file_location(full, path, loader=loader)
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            sys.modules[full] = module
        except Exception:                    # another layout: the ordinary import
            import importlib

            module = importlib.import_module(full)
    return module.__pyx_capi__


def load():
    """Resolve scipy's BLAS routines (``scipy.linalg.cython_blas``, see :func:`scipy_capi`).

    Idempotent and cheap after the first call. Returns True.
    """
    if not loaded():
        locked_load(_load_blas)
    return True


cdef int _load_blas() except -1:
    global _dgemm, _sgemm, _dsyrk
    if not loaded():
        capi = scipy_capi("cython_blas")
        _sgemm = <sgemm_t>_routine(capi, "sgemm")
        _dsyrk = <dsyrk_t>_routine(capi, "dsyrk")
        _dgemm = <dgemm_t>_routine(capi, "dgemm")
    return 0


def loaded():
    """Whether scipy's routines have been resolved (for tests)."""
    return _dgemm != NULL and _sgemm != NULL and _dsyrk != NULL


# One thread at a time resolves a routine table. The OpenMP threads of a C
# kernel reach their first BLAS call together; with several of them inside
# Python's import machinery at once, one could be handed scipy's
# half-initialised module, and under AddressSanitizer with 16 threads they
# deadlocked on import locks. A waiter holds neither the GIL nor anything the
# loading thread needs.
cdef PyThread_type_lock _load_lock = PyThread_allocate_lock()


cdef int locked_load(int (*resolve)() except -1) except -1:
    """Run ``resolve`` (idempotent: fills a table of scipy routines) under the
    loader lock, from Python (the GIL held); errors propagate."""
    with nogil:
        PyThread_acquire_lock(_load_lock, WAIT_LOCK)
    try:
        resolve()
    finally:
        PyThread_release_lock(_load_lock)
    return 0


cdef void load_or_abort(int (*resolve)() except -1, const char *what) noexcept nogil:
    """``locked_load`` from inside a C kernel, where a routine call cannot report
    an error: scipy is a hard dependency, so a failure means a broken install;
    say so and stop rather than call through a null pointer. A Ctrl-C that
    lands during the load finishes the load first and is then handed on with
    ``raise(SIGINT)`` to whoever handles SIGINT now."""
    cdef bint ok = False
    cdef bint interrupted = False
    cdef int attempt
    PyThread_acquire_lock(_load_lock, WAIT_LOCK)
    with gil:
        for attempt in range(3):
            try:
                resolve()
                ok = True
                break
            except KeyboardInterrupt:
                interrupted = True
            except BaseException as exc:
                msg = f"metriclust: cannot load {what.decode()} from scipy: {exc!r}\n".encode()
                fprintf(stderr, b"%s", <char *>msg)
                fflush(stderr)
                break
    PyThread_release_lock(_load_lock)
    if interrupted:
        raise_(SIGINT)
    if not ok:
        abort()


cdef inline void _load_or_abort() noexcept nogil:
    load_or_abort(_load_blas, b"BLAS")


cdef void dgemm(char *transa, char *transb, int *m, int *n, int *k,
                double *alpha, double *a, int *lda, double *b, int *ldb,
                double *beta, double *c, int *ldc) noexcept nogil:
    if _dgemm == NULL:
        _load_or_abort()
    _dgemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)


cdef void sgemm(char *transa, char *transb, int *m, int *n, int *k,
                float *alpha, float *a, int *lda, float *b, int *ldb,
                float *beta, float *c, int *ldc) noexcept nogil:
    if _sgemm == NULL:
        _load_or_abort()
    _sgemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)


cdef void dsyrk(char *uplo, char *trans, int *n, int *k, double *alpha,
                double *a, int *lda, double *beta, double *c,
                int *ldc) noexcept nogil:
    if _dsyrk == NULL:
        _load_or_abort()
    _dsyrk(uplo, trans, n, k, alpha, a, lda, beta, c, ldc)
