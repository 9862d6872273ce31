"""Bridge to csrc/mmc_solver.c: MMC's full-A solver loop and its face Newton sums.

Public classes and functions:

.. autosummary::

   FullSPG      -- the C state of the full-A spectral projected gradient solver
   face_sums    -- the face Newton step's gradient and Hessian sums over pairs
   face_newton  -- Newton steps on the face factor C = M M^T
   load_lapack  -- resolve scipy's LAPACK now (idempotent)

``FullSPG`` owns the C solver state. Every entry point checks shapes and pair
indices before the C side touches memory, releases the GIL around the C call
and maps its status to an exception. LAPACK's ``dsyevd`` / ``dsyevr`` come
from ``scipy.linalg.cython_lapack`` through trampolines resolved on first
call (as ``_blas`` does for BLAS), so importing this module imports no scipy.
"""

import numpy as np

from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer
from libc.stdint cimport int64_t
from metriclust._kernels._blas cimport dgemm, dsyrk, load_or_abort, locked_load
from metriclust._kernels._common cimport ml_dgemm_fn
from metriclust._kernels._interrupt cimport ML_ERR_INTERRUPTED, interrupt_enter, interrupt_leave
from metriclust._kernels._status cimport check_status

from metriclust._kernels._blas import scipy_capi

cdef extern from "mmc_solver.h" nogil:
    ctypedef void (*ml_dsyrk_fn)(char *, char *, int *, int *, double *, double *,
                                 int *, double *, double *, int *)
    ctypedef void (*ml_dsyevd_fn)(char *, char *, int *, double *, int *, double *,
                                  double *, int *, int *, int *, int *)
    ctypedef void (*ml_dsyevr_fn)(char *, char *, char *, int *, double *, int *,
                                  double *, double *, int *, int *, double *, int *,
                                  double *, double *, int *, int *, double *, int *,
                                  int *, int *, int *)
    int ML_ERR_EIGEN
    int ML_MMC_DIRECT, ML_MMC_LAPLACIAN, ML_MMC_ALLPAIRS, ML_MMC_CALLBACK
    ctypedef int (*ml_mmc_eval_fn)(void *ctx, const double *Lt, Py_ssize_t p, Py_ssize_t r,
                                   double *h, double *G)
    int ML_MMC_CONVERGED, ML_MMC_STALLED, ML_MMC_MAX_ITER, ML_MMC_NONSMOOTH, ML_MMC_FACE
    int ML_MMC_LOG_FULL
    ctypedef struct ml_mmc_problem:
        const double *E
        Py_ssize_t n, p
        int form
        const int64_t *pairs
        Py_ssize_t m
        const int64_t *close
        Py_ssize_t m_close
        ml_dgemm_fn dgemm
        ml_dsyrk_fn dsyrk
        ml_dsyevd_fn dsyevd
        ml_dsyevr_fn dsyevr
        int n_threads
        ml_mmc_eval_fn eval
        void *eval_ctx
    ctypedef struct ml_mmc_settings:
        Py_ssize_t max_iter
        double tol
        int memory
        int window
        double stall_gap
        double face_gap
        int newton_ok
        int verbose
    ctypedef struct ml_mmc_spg:
        pass
    ctypedef struct ml_mmc_spg_info:
        Py_ssize_t it, n_iter, next_face
        double h, n_zero, best_h, upper, gap
        Py_ssize_t n_log, n_eval
    ml_mmc_spg *ml_mmc_spg_new(const ml_mmc_problem *pb, const ml_mmc_settings *settings)
    void ml_mmc_spg_free(ml_mmc_spg *s)
    int ml_mmc_spg_evaluate(ml_mmc_spg *s, const double *B, double *h, double *G,
                            double *G_zero, double *n_zero)
    int ml_mmc_spg_set_point(ml_mmc_spg *s, const double *B, double h, const double *G,
                             const double *G_zero, double n_zero, int reset)
    int ml_mmc_spg_run(ml_mmc_spg *s, int *event)
    void ml_mmc_spg_get_info(const ml_mmc_spg *s, ml_mmc_spg_info *info)
    void ml_mmc_spg_set_counters(ml_mmc_spg *s, Py_ssize_t it, Py_ssize_t next_face,
                                 double upper)
    const double *ml_mmc_spg_current(const ml_mmc_spg *s, int which)
    const double *ml_mmc_spg_log(const ml_mmc_spg *s)
    void ml_mmc_spg_clear_log(ml_mmc_spg *s)
    int ml_mmc_face_sums(const double *F, Py_ssize_t m, Py_ssize_t r, const double *C,
                         const unsigned char *free_mask, double *h, double *gh, double *H,
                         ml_dsyrk_fn dsyrk, int n_threads)
    int ml_mmc_face_newton(const double *F0, Py_ssize_t m, Py_ssize_t r, double *mu,
                           double *Q, double tol, double decrement, int max_steps,
                           int *steps, ml_dgemm_fn dgemm, ml_dsyrk_fn dsyrk,
                           ml_dsyevd_fn dsyevd, ml_dsyevr_fn dsyevr, int n_threads)

# What FullSPG.run returns.
CONVERGED = ML_MMC_CONVERGED
STALLED = ML_MMC_STALLED
MAX_ITER = ML_MMC_MAX_ITER
NONSMOOTH = ML_MMC_NONSMOOTH
FACE = ML_MMC_FACE
LOG_FULL = ML_MMC_LOG_FULL
FORMS = {"direct": ML_MMC_DIRECT, "laplacian": ML_MMC_LAPLACIAN, "allpairs": ML_MMC_ALLPAIRS,
         "callback": ML_MMC_CALLBACK}
# Status of a callback that raised (the exception is re-raised by the bridge).
cdef int _CALLBACK_RAISED = -6
# LAPACK takes int sizes (workspace 2 p^2 + 6 p + 1).
MAX_FEATURES = 20000

# ---- LAPACK trampolines (resolved on first call; see _blas.pyx) ------------------

cdef ml_dsyevd_fn _dsyevd = NULL
cdef ml_dsyevr_fn _dsyevr = NULL


def load_lapack():
    """Resolve scipy's dsyevd / dsyevr (``scipy.linalg.cython_lapack``, without
    ``scipy.linalg``'s ``__init__``: see ``_blas.scipy_capi``)."""
    if _dsyevd == NULL or _dsyevr == NULL:
        locked_load(_resolve_lapack)
    return True


cdef int _resolve_lapack() except -1:
    global _dsyevd, _dsyevr
    if _dsyevd == NULL or _dsyevr == NULL:
        capi = scipy_capi("cython_lapack")
        _dsyevr = <ml_dsyevr_fn>PyCapsule_GetPointer(capi["dsyevr"],
                                                    PyCapsule_GetName(capi["dsyevr"]))
        _dsyevd = <ml_dsyevd_fn>PyCapsule_GetPointer(capi["dsyevd"],
                                                    PyCapsule_GetName(capi["dsyevd"]))
    return 0


cdef inline void _load_or_abort() noexcept nogil:
    load_or_abort(_resolve_lapack, b"LAPACK")


cdef void dsyevd(char *jobz, char *uplo, int *n, double *a, int *lda, double *w,
                 double *work, int *lwork, int *iwork, int *liwork, int *info) noexcept nogil:
    if _dsyevd == NULL:
        _load_or_abort()
    _dsyevd(jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork, info)


cdef void dsyevr(char *jobz, char *range_, char *uplo, int *n, double *a, int *lda,
                 double *vl, double *vu, int *il, int *iu, double *abstol, int *m,
                 double *w, double *z, int *ldz, int *isuppz, double *work, int *lwork,
                 int *iwork, int *liwork, int *info) noexcept nogil:
    if _dsyevr == NULL:
        _load_or_abort()
    _dsyevr(jobz, range_, uplo, n, a, lda, vl, vu, il, iu, abstol, m, w, z, ldz, isuppz,
            work, lwork, iwork, liwork, info)


cdef int _raise(int status, str where) except -1:
    # The solver's own code (LAPACK did not converge), then the one mapping of
    # every other code (unknown ones included) in _status.check_status.
    if status == ML_ERR_EIGEN:
        raise np.linalg.LinAlgError(f"{where}: the eigendecomposition did not converge "
                                    "(LAPACK dsyevd and dsyevr)")
    return check_status(status, where, "a size or pair index is out of range")


cdef void _check_pairs(const int64_t[:, ::1] pairs, Py_ssize_t n, str name) except *:
    if pairs.shape[1] != 2:
        raise ValueError(f"{name} must have shape (m, 2), got ({pairs.shape[0]}, "
                         f"{pairs.shape[1]})")
    cdef Py_ssize_t k
    for k in range(pairs.shape[0]):
        if pairs[k, 0] < 0 or pairs[k, 0] >= n or pairs[k, 1] < 0 or pairs[k, 1] >= n:
            raise ValueError(f"{name}[{k}] = ({pairs[k, 0]}, {pairs[k, 1]}) is out of "
                             f"range for {n} samples")


cdef int _eval_trampoline(void *ctx, const double *Lt, Py_ssize_t p, Py_ssize_t r,
                          double *h, double *G) noexcept nogil:
    # ML_MMC_CALLBACK: the solver (running without the GIL) asks Python for h, G.
    cdef int status
    with gil:
        status = (<FullSPG>ctx)._call_evaluator(Lt, p, r, h, G)
    return status


cdef class FullSPG:
    """The spectral projected gradient of MMC's full-A problem, in C.

    Maximizes ``h(B) = sum_D ||e||_B`` over ``{B >= 0, tr B <= 1}`` for the
    whitened data ``E`` (n x p). ``form``: "direct" (``pairs`` = D),
    "laplacian" (``pairs`` = the far pairs of D, ``close`` = the close ones),
    "allpairs" (``pairs`` = the unique similar pairs; D = all others). The
    caller sets the start with :meth:`set_point`, calls :meth:`run` and
    handles its events (``NONSMOOTH``, ``FACE``); see ``metriclust._core.mahalanobis``.
    """

    cdef ml_mmc_spg *s
    cdef object arrays          # keeps E and the pairs alive for the C side
    cdef readonly Py_ssize_t p
    cdef object evaluator       # form "callback": Lt (p x r) -> (h, G)
    cdef object error           # what the evaluator raised, re-raised by the bridge

    def __cinit__(self, const double[:, ::1] E, str form, const int64_t[:, ::1] pairs,
                  close=None, *, Py_ssize_t max_iter, double tol, int memory, int window,
                  double stall_gap, double face_gap, bint newton_ok, bint verbose=False,
                  int n_threads=0, evaluator=None):
        cdef Py_ssize_t n = E.shape[0], p = E.shape[1]
        if form not in FORMS:
            raise ValueError(f"form must be one of {sorted(FORMS)}, got {form!r}")
        if p < 1 or p > MAX_FEATURES:
            raise ValueError(f"E must have 1 to {MAX_FEATURES} columns, got {p}")
        if max_iter < 1:
            raise ValueError(f"max_iter must be >= 1, got {max_iter}")
        if memory < 1 or window < 1:
            raise ValueError("memory and window must be >= 1")
        _check_pairs(pairs, n, "pairs")
        cdef const int64_t[:, ::1] cl
        cdef ml_mmc_problem pb
        pb.E = &E[0, 0] if n > 0 else NULL
        pb.n, pb.p, pb.form = n, p, FORMS[form]
        pb.m = pairs.shape[0]
        pb.pairs = &pairs[0, 0] if pb.m > 0 else NULL
        pb.close, pb.m_close = NULL, 0
        if form == "laplacian":
            if close is None:
                raise ValueError("the laplacian form needs the close pairs")
            cl = close
            _check_pairs(cl, n, "close")
            pb.m_close = cl.shape[0]
            pb.close = &cl[0, 0] if pb.m_close > 0 else NULL
        if form not in ("direct", "callback") and n < 1:
            raise ValueError("E needs at least one row")
        pb.eval, pb.eval_ctx = NULL, NULL
        self.evaluator, self.error = None, None
        if form == "callback":
            # The sums come from ``evaluator(Lt) -> (h, G)`` (data read block by
            # block); E only gives p, the pairs are unused.
            if not callable(evaluator):
                raise TypeError("the callback form needs a callable evaluator")
            self.evaluator = evaluator
            pb.eval, pb.eval_ctx = _eval_trampoline, <void *>self
        pb.dgemm, pb.dsyrk = dgemm, dsyrk
        pb.dsyevd, pb.dsyevr = dsyevd, dsyevr
        pb.n_threads = n_threads
        cdef ml_mmc_settings st
        st.max_iter, st.tol, st.memory, st.window = max_iter, tol, memory, window
        st.stall_gap, st.face_gap, st.newton_ok = stall_gap, face_gap, newton_ok
        st.verbose = verbose
        self.arrays = (E, pairs, close)
        self.p = p
        self.s = ml_mmc_spg_new(&pb, &st)
        if self.s == NULL:
            raise MemoryError("FullSPG: allocation failed")

    def __dealloc__(self):
        ml_mmc_spg_free(self.s)

    cdef int _call_evaluator(self, const double *Lt, Py_ssize_t p, Py_ssize_t r,
                             double *h, double *G) noexcept:
        cdef Py_ssize_t t, u
        cdef double[:, ::1] Gv, ltv
        try:
            lt = np.empty((p, r))
            ltv = lt
            for t in range(p):
                for u in range(r):
                    ltv[t, u] = Lt[t * r + u]
            hv, Gm = self.evaluator(lt)
            Gm = np.ascontiguousarray(Gm, dtype=np.float64)
            if Gm.shape != (p, p):
                raise ValueError(f"the evaluator returned G of shape {Gm.shape}, "
                                 f"expected ({p}, {p})")
            Gv = Gm
            for t in range(p):
                for u in range(p):
                    G[t * p + u] = Gv[t, u]
            h[0] = float(hv)
            return 0
        except KeyboardInterrupt:
            return ML_ERR_INTERRUPTED       # interrupt_leave raises it again
        except BaseException as exc:
            self.error = exc
            return _CALLBACK_RAISED

    cdef void _reraise(self) except *:
        if self.error is not None:
            exc, self.error = self.error, None
            raise exc

    cdef void _check_square(self, const double[:, ::1] M, str name) except *:
        if M.shape[0] != self.p or M.shape[1] != self.p:
            raise ValueError(f"{name} must have shape ({self.p}, {self.p}), got "
                             f"({M.shape[0]}, {M.shape[1]})")

    def evaluate(self, const double[:, ::1] B):
        """``(h, G, G_zero, n_zero)`` at ``B >= 0`` (its factor drops eigenvalues
        below 1e-13 of the largest, as ``psd_factor``)."""
        self._check_square(B, "B")
        G = np.empty((self.p, self.p))
        Gz = np.empty((self.p, self.p))
        cdef double[:, ::1] Gv = G, Gzv = Gz
        cdef double h = 0.0, nz = 0.0
        cdef int status
        entered = interrupt_enter()
        with nogil:
            status = ml_mmc_spg_evaluate(self.s, &B[0, 0], &h, &Gv[0, 0], &Gzv[0, 0], &nz)
        interrupt_leave(entered, status)
        self._reraise()
        _raise(status, "FullSPG.evaluate")
        return h, G, Gz, int(nz)

    def set_point(self, const double[:, ::1] B, double h, const double[:, ::1] G,
                  const double[:, ::1] G_zero, double n_zero, bint reset):
        """Make ``B`` the current point (``reset``: also the best, history and bound restart)."""
        self._check_square(B, "B")
        self._check_square(G, "G")
        self._check_square(G_zero, "G_zero")
        _raise(ml_mmc_spg_set_point(self.s, &B[0, 0], h, &G[0, 0], &G_zero[0, 0], n_zero,
                                    reset), "FullSPG.set_point")

    def set_counters(self, Py_ssize_t it, Py_ssize_t next_face, double upper):
        ml_mmc_spg_set_counters(self.s, it, next_face, upper)

    def run(self):
        """Iterate until an event: CONVERGED, STALLED, MAX_ITER, NONSMOOTH, FACE, LOG_FULL."""
        cdef int status, event = -1
        entered = interrupt_enter()
        with nogil:
            status = ml_mmc_spg_run(self.s, &event)
        interrupt_leave(entered, status)
        self._reraise()
        _raise(status, "FullSPG.run")
        return event

    def info(self):
        """Counters and scalars of the state, as a dict."""
        cdef ml_mmc_spg_info i
        ml_mmc_spg_get_info(self.s, &i)
        return dict(it=i.it, n_iter=i.n_iter, next_face=i.next_face, h=i.h,
                    n_zero=int(i.n_zero), best_h=i.best_h, upper=i.upper, gap=i.gap,
                    n_log=i.n_log, n_eval=i.n_eval)

    def matrix(self, str which):
        """A copy of "B", "G", "G_zero", "best_B" or "best_G"."""
        names = ("B", "G", "G_zero", "best_B", "best_G")
        if which not in names:
            raise ValueError(f"which must be one of {names}, got {which!r}")
        cdef const double *src = ml_mmc_spg_current(self.s, names.index(which))
        out = np.empty((self.p, self.p))
        cdef double[:, ::1] ov = out
        cdef Py_ssize_t t
        for t in range(self.p * self.p):
            (&ov[0, 0])[t] = src[t]
        return out

    def clear_log(self):
        """Empty the log (after a ``LOG_FULL`` event)."""
        ml_mmc_spg_clear_log(self.s)

    def log(self, Py_ssize_t start=0):
        """``(it, h, gap)`` rows of the iterations run in C since ``start`` (verbose only;
        1024 entries at a time, then ``run`` returns ``LOG_FULL``)."""
        cdef ml_mmc_spg_info i
        ml_mmc_spg_get_info(self.s, &i)
        cdef const double *lg = ml_mmc_spg_log(self.s)
        start = max(0, min(start, i.n_log))
        out = np.empty((i.n_log - start, 3))
        cdef double[:, ::1] ov = out
        cdef Py_ssize_t k, c
        for k in range(i.n_log - start):
            for c in range(3):
                ov[k, c] = lg[3 * (start + k) + c]
        return out


def face_sums(const double[:, ::1] F, const double[:, ::1] C, free=None,
              bint gradient=True, bint hessian=True, int n_threads=0):
    """Face Newton sums over the rows ``f_k`` of ``F`` (m x r) at ``C`` (r x r).

    Returns ``(h, gh, H)``: ``h = sum_k sqrt(f_k^T C f_k)``; ``gh`` (None unless
    ``gradient``) ``= sum_k z_k / (2 d_k)`` over ``d_k > 0``, with ``z_k`` the
    symmetric vectorization of ``f_k f_k^T`` (``triu_indices`` order,
    off-diagonal entries times sqrt 2); ``H`` (None unless ``hessian``) the
    ``free`` block of ``sum_k 2 w_k^3 z_k z_k^T`` with ``w_k = 1 / (2 d_k)``.
    """
    cdef Py_ssize_t m = F.shape[0], r = F.shape[1], s_len = r * (r + 1) // 2
    if r < 1 or r > 4096:
        raise ValueError(f"F must have 1 to 4096 columns, got {r}")
    if C.shape[0] != r or C.shape[1] != r:
        raise ValueError(f"C must have shape ({r}, {r}), got ({C.shape[0]}, {C.shape[1]})")
    if hessian and not gradient:
        raise ValueError("hessian needs gradient=True")
    mask = np.ones(s_len, dtype=np.uint8) if free is None else \
        np.ascontiguousarray(free, dtype=np.uint8)
    if mask.shape != (s_len,):
        raise ValueError(f"free must have {s_len} entries, got shape {mask.shape}")
    cdef const unsigned char[::1] mv = mask
    cdef Py_ssize_t nf = int(np.count_nonzero(mask))
    gh = np.empty(s_len) if gradient else None
    H = np.empty((nf, nf)) if hessian else None
    cdef double[::1] gv
    cdef double[:, ::1] Hv
    cdef double *gp = NULL
    cdef double *Hp = NULL
    cdef double dummy = 0.0
    if gradient:
        gv = gh
        gp = &gv[0]
    if hessian:
        if nf > 0:
            Hv = H
            Hp = &Hv[0, 0]
        else:
            Hp = &dummy
    cdef double h = 0.0
    cdef int status
    entered = interrupt_enter()
    with nogil:
        status = ml_mmc_face_sums(&F[0, 0] if m > 0 else NULL, m, r, &C[0, 0], &mv[0],
                                  &h, gp, Hp, dsyrk, n_threads)
    interrupt_leave(entered, status)
    _raise(status, "face_sums")
    return h, gh, H


def face_newton(const double[:, ::1] F0, mu, Q, double tol, double decrement,
                int max_steps, int n_threads=0):
    """Newton for ``min tr C - log sum_k sqrt(f_k^T C f_k)`` over ``C >= 0``, on the
    factor of C (``C = M M^T``, M lower triangular in C's eigenbasis).

    ``F0`` (m x r): the pair differences in the face's coordinates; the start
    ``C = Q diag(mu) Q^T``. Returns ``(mu, Q, steps)`` at the last accepted
    point, ``mu`` descending (see ``metriclust._core.mahalanobis._face_solve``).
    """
    cdef Py_ssize_t m = F0.shape[0], r = F0.shape[1]
    if r < 1 or r > 64:
        raise ValueError(f"F0 must have 1 to 64 columns, got {r}")
    mu_out = np.array(mu, dtype=np.float64, order="C")
    Q_out = np.array(Q, dtype=np.float64, order="C")
    if mu_out.shape != (r,) or Q_out.shape != (r, r):
        raise ValueError(f"mu must have shape ({r},) and Q ({r}, {r}), got "
                         f"{mu_out.shape} and {Q_out.shape}")
    if not (np.all(np.isfinite(mu_out)) and np.all(np.isfinite(Q_out))):
        raise ValueError("mu and Q must be finite")
    if max_steps < 0:
        raise ValueError(f"max_steps must be >= 0, got {max_steps}")
    cdef double[::1] mv = mu_out
    cdef double[:, ::1] qv = Q_out
    cdef int steps = 0, status
    entered = interrupt_enter()
    with nogil:
        status = ml_mmc_face_newton(&F0[0, 0] if m > 0 else NULL, m, r, &mv[0], &qv[0, 0],
                                    tol, decrement, max_steps, &steps, dgemm, dsyrk, dsyevd,
                                    dsyevr, n_threads)
    interrupt_leave(entered, status)
    _raise(status, "face_newton")
    return mu_out, Q_out, steps
