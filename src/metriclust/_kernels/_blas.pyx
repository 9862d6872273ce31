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

    The extension is loaded from its file without running the ``__init__`` of
    ``scipy`` or ``scipy.linalg`` (see :func:`_load_extension`); the module is
    registered under its usual name, so a later ``import scipy.linalg`` uses
    it. If ``scipy.linalg`` imported it already, that module is used. Falls
    back to the ordinary import. Called under the loader lock.
    """
    import sys

    full = "scipy.linalg." + name
    module = sys.modules.get(full)
    if module is None:
        try:
            module = _load_extension(full)
        except Exception:                    # another layout: the ordinary import
            import importlib

            module = importlib.import_module(full)
    return module.__pyx_capi__


def _extension_file(str folder, str name):
    import importlib.machinery
    import os

    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(folder, name + suffix)
        if os.path.isfile(path):
            return path
    raise ImportError(f"no extension module {name!r} in {folder}")


def _load_extension(str full):
    """Load scipy's extension module ``full`` from its file, without the
    packages' ``__init__``.

    Measured (cold process, numpy imported; shared 2-core machine, load ~16):
    scipy's package ``__init__`` is ~14 ms CPU / 30-50 ms wall (it imports
    ``scipy._lib._testutils`` and through it Cython, sysconfig, subprocess),
    ``scipy.linalg``'s several hundred ms. Loading the extension file skips
    ``scipy.linalg``'s; scipy's is run by the module's own init, which imports
    scipy's shared Cython utility module (``scipy._cyutility``, scipy >= 1.16)
    with ``PyImport_ImportModule``, i.e. ``__import__(name, fromlist=[])``:
    that also imports the top-level package, which such a call returns.
    ``scipy._cyutility`` is therefore loaded from its file first (its init
    imports nothing), and while the module runs its init,
    :func:`_top_package_not_imported` answers that call from ``sys.modules``
    (``PyImport_ImportModule`` takes its result from there anyway).
    If ``scipy`` is imported already, its package is not touched at all.
    """
    import importlib.util
    import os
    import sys

    root = importlib.util.find_spec("scipy").submodule_search_locations[0]
    package, _, name = full.rpartition(".")
    if "scipy" not in sys.modules and "scipy._cyutility" not in sys.modules:
        try:
            path = _extension_file(root, "_cyutility")
        except ImportError:                  # older scipy: no shared utility module
            path = None
        if path is not None:
            _exec_extension("scipy._cyutility", path)
    folder = os.path.join(root, *package.split(".")[1:])
    return _exec_extension(full, _extension_file(folder, name))


def _exec_extension(str full, str path):
    import importlib.machinery
    import importlib.util
    import sys

    loader = importlib.machinery.ExtensionFileLoader(full, path)
    spec = importlib.util.spec_from_file_location(full, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    _top_package_not_imported(loader, module)
    sys.modules[full] = module
    return module


def _top_package_not_imported(loader, module):
    """``loader.exec_module(module)`` with, in this thread only, an
    ``__import__(name, fromlist=[])`` of a ``scipy.*`` module that is in
    ``sys.modules`` while ``scipy`` is not answered from ``sys.modules``
    instead of importing ``scipy`` for the return value.

    Only the calling thread is affected: any other thread's import goes to the
    original ``__import__`` unchanged, and the original is back when this
    returns or raises (Ctrl-C included).
    """
    import builtins
    import sys
    import threading

    real = builtins.__import__
    me = threading.get_ident()

    def imports(name, globals=None, locals=None, fromlist=(), level=0):
        if (level == 0 and not fromlist and name.startswith("scipy.")
                and "scipy" not in sys.modules and threading.get_ident() == me):
            found = sys.modules.get(name)
            if found is not None:
                return found
        return real(name, globals, locals, fromlist, level)

    try:
        builtins.__import__ = imports
        loader.exec_module(module)
    finally:
        if builtins.__import__ is imports:
            builtins.__import__ = real


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
