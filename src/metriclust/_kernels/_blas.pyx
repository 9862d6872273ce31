"""scipy's BLAS for the C core, resolved on first use.

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
from libc.stdio cimport fflush, fprintf, stderr
from libc.signal cimport SIGINT, raise_
from libc.stdlib cimport abort

ctypedef void (*dgemm_t)(char *, char *, int *, int *, int *, double *, double *,
                         int *, double *, int *, double *, double *, int *) noexcept nogil
ctypedef void (*sgemm_t)(char *, char *, int *, int *, int *, float *, float *,
                         int *, float *, int *, float *, float *, int *) noexcept nogil
ctypedef void (*dsyrk_t)(char *, char *, int *, int *, double *, double *, int *,
                         double *, double *, int *) noexcept nogil

# Written once with the same values by whichever thread loads first; a second
# concurrent load only repeats the same stores.
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
    global _dgemm, _sgemm, _dsyrk
    if _dgemm == NULL or _sgemm == NULL or _dsyrk == NULL:
        capi = scipy_capi("cython_blas")
        _sgemm = <sgemm_t>_routine(capi, "sgemm")
        _dsyrk = <dsyrk_t>_routine(capi, "dsyrk")
        _dgemm = <dgemm_t>_routine(capi, "dgemm")
    return True


def loaded():
    """Whether scipy's routines have been resolved (for tests)."""
    return _dgemm != NULL and _sgemm != NULL and _dsyrk != NULL


cdef void _load_or_abort() noexcept nogil:
    # A BLAS call cannot report an error; scipy is a hard dependency, so a
    # failed lookup means a broken install: say so and stop rather than call
    # through a null pointer.
    cdef bint ok = False
    cdef bint interrupted = False
    with gil:
        for _ in range(3):
            try:
                ok = load()
                break
            except KeyboardInterrupt:
                # Ctrl-C landed while scipy's module was loading: finish the
                # load, then hand the interrupt on (below) to whoever handles
                # SIGINT now, rather than abort the process.
                interrupted = True
            except BaseException as exc:
                msg = f"metriclust: cannot load BLAS from scipy: {exc!r}\n".encode()
                fprintf(stderr, b"%s", <char *>msg)
                fflush(stderr)
                break
    if interrupted:
        raise_(SIGINT)
    if not ok:
        abort()


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
