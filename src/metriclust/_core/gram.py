"""Gaussian Gram machinery: the one owner of every Gram, Nystrom and eigen routine.

Public classes and functions:

.. autosummary::

   gaussian_gram               -- the Gaussian (RBF) Gram matrix
   gram_matmat                 -- ``G(X, Y) V`` without storing G
   median_pairwise_distance    -- median distance between distinct rows (sigma's scale)
   Nystrom                     -- rank-m Nystrom factor ``G ~= U U^T`` (a transformer)
   nystrom_factor              -- the factor ``U`` alone
   top_eigenpairs              -- largest eigenpairs of the dense Gram matrix
   null_eigval_rtol            -- THE cut-off for "numerically zero" eigenvalues
   drop_null_eigenpairs        -- eigenpairs in descending order, zero ones dropped
   null_singular_rtol          -- the rank cut-off for singular values of a data matrix
   span_coordinates            -- coordinates of centred rows in the span they occupy
   centered_gram_eigenpairs    -- exact kernel PCA (doubly centred Gram)
   centered_factor_eigenpairs  -- kernel PCA of a low-rank factor (Nystrom)
   factor_basis                -- :func:`orthonormalize_factor`'s ``(s, T)`` from ``U^T U``
   orthonormalize_factor       -- ``U U^T = Q diag(s) Q^T`` with orthonormal ``Q``

The public face is :mod:`metriclust.kernels`, which re-exports the first six;
the core (CPCM's kernel predictor, CPD-UML's Psi-step and kernel PCA) imports
them from here, with the others. Every routine that orders and trims
eigenpairs uses :func:`null_eigval_rtol`.

Everything runs on one C kernel (``csrc/gram.c``): tiles of the Gram matrix
computed in parallel with the exp fused into the tile loop.
"""

import numbers
import warnings

import numpy as np

from .._kernels import _gram
from .base import BaseEstimator, Interval, Options, TransformerMixin, check_is_fitted
from .kmeans import kmeans
from .threads import effective_n_threads, single_blas_thread
from .validation import check_array, check_n_features, check_random_state, check_scalar

__all__ = ["gaussian_gram", "gram_matmat", "median_pairwise_distance", "Nystrom",
           "nystrom_factor", "top_eigenpairs", "null_eigval_rtol", "drop_null_eigenpairs",
           "centered_gram_eigenpairs", "centered_factor_eigenpairs", "factor_basis",
           "orthonormalize_factor"]

def _check_sigma(sigma):
    if isinstance(sigma, bool) or not isinstance(sigma, numbers.Real):
        raise TypeError(f"sigma must be a positive finite float, got {sigma!r}.")
    sigma = float(sigma)
    if not (np.isfinite(sigma) and sigma > 0.0):
        raise ValueError(f"sigma must be a positive finite float, got {sigma!r}.")
    return sigma


def _check_pair(X, Y):
    """Validate X (and Y), give them one dtype (float32 only if both are)."""
    X = check_array(X, name="X")
    if Y is None:
        return X, None
    Y = check_array(Y, name="Y")
    if Y.shape[1] != X.shape[1]:
        raise ValueError(f"Y has {Y.shape[1]} features, but X has {X.shape[1]} features.")
    if X.dtype != Y.dtype:
        X, Y = X.astype(np.float64), Y.astype(np.float64)
    return X, Y


def gaussian_gram(X, Y=None, *, sigma, n_threads=None, out=None):
    r"""Gaussian (RBF) Gram matrix.

    .. math:: G_{ij} = \exp\left(-\frac{\lVert x_i - y_j \rVert^2}{2\sigma^2}\right)

    Computed in parallel tiles with the exponential fused into the tile loop.
    With ``Y=None`` only the upper triangle of tiles is computed and
    mirrored, so ``G`` is exactly symmetric with a unit diagonal. Squared
    distances come from direct differences for up to 8 features, and from
    the GEMM form :math:`\lVert x\rVert^2 - 2 x^\top y + \lVert y\rVert^2` on
    data centered by ``X``'s mean (limiting cancellation), clamped at 0, for
    wider data. Agrees with a direct float64 evaluation to about 1e-15
    (absolute) for well-scaled data; the result is bitwise identical for any
    thread count.

    Parameters
    ----------
    X : array-like of shape (n_x, p)
    Y : array-like of shape (n_y, p), default=None
        Out-of-sample points; None means ``Y = X``.
    sigma : float
        Kernel width, positive and finite.
    n_threads : int, default=None
        OpenMP threads; None uses OpenMP's default (``OMP_NUM_THREADS``,
        threadpoolctl).
    out : ndarray of shape (n_x, n_y), default=None
        Write the result here (C-contiguous, the result's dtype). Reusing a
        buffer skips the page faults of a fresh N x N array, which are about
        half the time of a large call (measured at N = 20000).

    Returns
    -------
    G : ndarray of shape (n_x, n_y)
        float32 when the inputs are float32, float64 otherwise (``out`` when
        given).

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.kernels import gaussian_gram
    >>> G = gaussian_gram(np.array([[0.0, 0.0], [3.0, 4.0]]), sigma=5.0)
    >>> np.round(G, 4)
    array([[1.    , 0.6065],
           [0.6065, 1.    ]])
    """
    sigma = _check_sigma(sigma)
    X, Y = _check_pair(X, Y)
    nt = effective_n_threads(n_threads)
    if X.shape[1] > _gram.DIRECT_MAX_D:
        with single_blas_thread():
            return _gram.gaussian_gram(X, Y, sigma, nt, True, out)
    return _gram.gaussian_gram(X, Y, sigma, nt, True, out)


def gram_matmat(X, V, *, sigma, Y=None, n_threads=None):
    r"""Product :math:`G(X, Y) V` without storing the Gram matrix.

    Each thread computes tiles of ``G`` (as in :func:`gaussian_gram`), applies
    them to the matching rows of ``V`` and discards them: memory
    ``O(n_x k + tile)``, time ``O(n_x n_y (p + k))``. Row blocks accumulate
    their tiles in a fixed order, so the result is identical for any thread
    count. This is the matvec of :func:`top_eigenpairs` and the large-``N``
    product for CPCM and CPD-UML.

    Parameters
    ----------
    X : array-like of shape (n_x, p)
    V : array-like of shape (n_y,) or (n_y, k)
    sigma : float
    Y : array-like of shape (n_y, p), default=None
        None means ``Y = X``.
    n_threads : int, default=None

    Returns
    -------
    ndarray of shape (n_x,) or (n_x, k)
        float32 when all inputs are float32, float64 otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.kernels import gaussian_gram, gram_matmat
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> v = np.ones(50)
    >>> np.allclose(gram_matmat(X, v, sigma=1.0), gaussian_gram(X, sigma=1.0) @ v)
    True
    """
    sigma = _check_sigma(sigma)
    X, Y = _check_pair(X, Y)
    ny = X.shape[0] if Y is None else Y.shape[0]
    V = check_array(V, name="V", ensure_2d=False, ensure_min_samples=0)
    if V.ndim not in (1, 2):
        raise ValueError(f"V must be 1-D or 2-D, got {V.ndim} dimensions.")
    if V.shape[0] != ny:
        raise ValueError(f"V has {V.shape[0]} rows, but the Gram matrix has {ny} columns.")
    vec = V.ndim == 1
    V2 = V[:, None] if vec else V
    if X.dtype != V2.dtype:
        X = X.astype(np.float64)
        Y = None if Y is None else Y.astype(np.float64)
        V2 = V2.astype(np.float64)
    V2 = np.ascontiguousarray(V2)
    with single_blas_thread():
        out = _gram.gram_matmat(X, Y, V2, sigma, effective_n_threads(n_threads))
    return out[:, 0] if vec else out


def median_pairwise_distance(X, *, max_samples=2000, random_state=None):
    r"""Median Euclidean distance between distinct rows of X.

    The scale-free default for ``sigma`` (results then depend on
    ``sigma / scale(X)`` only). Exact for ``n <= max_samples``; above that, the
    median over the pairs of a uniform random subset of ``max_samples`` rows
    (``max_samples (max_samples - 1) / 2`` pairs, about 2e6 by default), which
    estimates the population median with a relative error of order
    ``1 / max_samples``.

    Parameters
    ----------
    X : array-like of shape (n, p), n >= 2
    max_samples : int, default=2000
    random_state : None, int or numpy Generator
        Used only when ``n > max_samples``.

    Returns
    -------
    float
        Zero when at least half of the pairs coincide; callers that use it
        as a kernel width must handle that case.

    Examples
    --------
    >>> from metriclust.kernels import median_pairwise_distance
    >>> median_pairwise_distance([[0.0], [1.0], [3.0]])
    2.0
    """
    X = check_array(X, name="X", ensure_min_samples=2)
    if (isinstance(max_samples, bool) or not isinstance(max_samples, numbers.Integral)
            or max_samples < 2):
        raise ValueError(f"max_samples must be an int >= 2, got {max_samples!r}.")
    if X.shape[0] > max_samples:
        rng = check_random_state(random_state)
        X = X[np.sort(rng.choice(X.shape[0], max_samples, replace=False))]
    from scipy.spatial.distance import pdist

    return float(np.median(pdist(X.astype(np.float64, copy=False))))


def _check_n_components(n_components, n_samples, name="n_components"):
    if (isinstance(n_components, bool) or not isinstance(n_components, numbers.Integral)
            or n_components < 1):
        raise ValueError(f"{name} must be a positive int, got {n_components!r}.")
    return int(n_components)


class Nystrom(TransformerMixin, BaseEstimator):
    r"""Rank-m Nystrom factor of the Gaussian Gram matrix: :math:`G \approx U U^\top`.

    With landmarks :math:`Z` (m rows), :math:`K_{mm} = G(Z, Z) = V \Lambda V^\top`
    and :math:`K_{nm} = G(X, Z)`,

    .. math:: U = K_{nm} V_r \Lambda_r^{-1/2}, \qquad
              U U^\top = K_{nm} K_{mm}^{+} K_{mn} \approx G,

    where :math:`r` keeps the eigenvalues above ``rcond * max(Lambda)``: a
    rank-deficient :math:`K_{mm}` (duplicate or nearly coincident landmarks,
    or a wide kernel) loses only the directions it cannot resolve instead of
    dividing by rounding noise, so ``factor_`` may have fewer than
    ``n_components`` columns (``n_components_``). ``transform(Y)`` returns the
    same map for new points, :math:`G(Y, Z) V_r \Lambda_r^{-1/2}`, so
    out-of-sample kernel values are :math:`G(Y, X) \approx
    \mathrm{transform}(Y)\, U^\top`. The factor is computed in float64.

    Accuracy: exact (to rounding) when the landmarks are all of X; otherwise
    the error is the Schur complement :math:`G - U U^\top \succeq 0`, small
    in Frobenius norm but close to :math:`G_{ii} = 1` on the diagonal for
    points far from every landmark (outliers), so judge it by
    :math:`\lVert G - U U^\top\rVert_F / \lVert G\rVert_F`. k-means
    landmarks cover the data better (on 200 2-D normal points, sigma = 1,
    m = 40: relative Frobenius error 1.3e-2 random, 1.2e-3 k-means).

    Cost ``O(n m (p + m))`` time, ``O(n m)`` memory.

    Parameters
    ----------
    n_components : int, default=100
        Number of landmarks m (at most n; more is clipped to n).
    sigma : float or "median", default="median"
        Kernel width. "median": the median pairwise distance of the training
        data (:func:`median_pairwise_distance`, sampled above 2000 points
        with a fixed seed), or 1.0 if that is 0; the value used is ``sigma_``.
    landmarks : {"random", "kmeans"} or array of shape (m, p), default="random"
        "random": m distinct rows of X; "kmeans": the centers of k-means
        (the shared core, :func:`metriclust._core.kmeans.kmeans`) with m clusters, which
        usually gives a smaller error at the same m; an array: given landmarks.
    random_state : None, int or numpy Generator
    rcond : float, default=None
        Relative eigenvalue cut for :math:`K_{mm}`; None means the shared
        cut-off :func:`null_eigval_rtol` ``(m)``.
    n_threads : int, default=None

    Attributes
    ----------
    landmarks_ : ndarray (m, p)
    eigenvalues_ : ndarray (r,)
        Kept eigenvalues of :math:`K_{mm}`, descending.
    normalization_ : ndarray (m, r)
        :math:`V_r \Lambda_r^{-1/2}`.
    factor_ : ndarray (n, r)
        ``U`` for the training points.
    n_components_ : int
        r, the number of kept eigenvalues.
    sigma_ : float
        The kernel width used.
    n_features_in_ : int

    References
    ----------
    C. Williams and M. Seeger, "Using the Nystrom method to speed up kernel
    machines", NIPS 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.kernels import Nystrom, gaussian_gram
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> G = gaussian_gram(X, sigma=1.0)
    >>> U = Nystrom(40, sigma=1.0, landmarks="kmeans", random_state=0).fit(X).factor_
    >>> U.shape
    (200, 40)
    >>> bool(np.linalg.norm(U @ U.T - G) < 1e-2 * np.linalg.norm(G))
    True
    """

    # checked on entry to fit
    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None)],
        "sigma": [Options("median"), Interval(numbers.Real, 0, None, closed="neither",
                                              finite=True)],
        "landmarks": [Options("random", "kmeans"), "array-like"],
        "random_state": ["random_state"],
        "rcond": [None, Interval(numbers.Real, 0, None, finite=True)],
        "n_threads": [None, Interval(numbers.Integral, None, None)],
    }

    def __init__(self, n_components=100, *, sigma="median", landmarks="random",
                 random_state=None, rcond=None, n_threads=None):
        self.n_components = n_components
        self.sigma = sigma
        self.landmarks = landmarks
        self.random_state = random_state
        self.rcond = rcond
        self.n_threads = n_threads

    def fit(self, X, y=None):
        """Choose landmarks and compute the factor of X. Returns self."""
        X = check_array(X, name="X").astype(np.float64, copy=False)
        n = X.shape[0]
        # each parameter alone is checked on entry (_parameter_constraints)
        if isinstance(self.sigma, str):     # "median"
            med = median_pairwise_distance(X, random_state=0) if n > 1 else 0.0
            sigma = med if med > 0 else 1.0
        else:
            sigma = float(self.sigma)
        m = min(int(self.n_components), n)
        rng = check_random_state(self.random_state)
        if isinstance(self.landmarks, str) and self.landmarks == "random":
            Z = X[np.sort(rng.choice(n, m, replace=False))]
        elif isinstance(self.landmarks, str):   # "kmeans"
            Z = kmeans(X, m, random_state=rng, n_threads=self.n_threads).centers
        else:
            Z = check_array(self.landmarks, name="landmarks").astype(np.float64, copy=False)
            if Z.shape[1] != X.shape[1]:
                raise ValueError(f"landmarks has {Z.shape[1]} features, but X has "
                                 f"{X.shape[1]} features.")
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        m = Z.shape[0]
        rcond = null_eigval_rtol(m) if self.rcond is None else float(self.rcond)
        from scipy.linalg import eigh

        vals, vecs = drop_null_eigenpairs(
            *eigh(gaussian_gram(Z, sigma=sigma, n_threads=self.n_threads)), rtol=rcond)
        self.landmarks_ = Z
        self.eigenvalues_ = vals
        self.normalization_ = np.ascontiguousarray(vecs / np.sqrt(vals))
        self.n_components_ = int(vals.size)
        self.n_features_in_ = X.shape[1]
        self.sigma_ = sigma
        self.factor_ = gaussian_gram(X, Z, sigma=sigma, n_threads=self.n_threads) @ \
            self.normalization_
        return self

    @property
    def _n_features_out(self):
        # columns of ``transform`` (for ``get_feature_names_out``)
        return self.normalization_.shape[1]

    def transform(self, Y):
        """Rows of the factor for new points: ``G(Y, landmarks_) normalization_``."""
        check_is_fitted(self, "factor_")
        Y = check_array(Y, name="Y").astype(np.float64, copy=False)
        check_n_features(self, Y)
        return gaussian_gram(Y, self.landmarks_, sigma=self.sigma_,
                             n_threads=self.n_threads) @ self.normalization_


def nystrom_factor(X, n_components, *, sigma, random_state=None, landmarks="random"):
    """``U`` (n, r <= n_components) with ``G ~= U U^T``; see :class:`Nystrom`.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.kernels import nystrom_factor
    >>> nystrom_factor(np.random.default_rng(0).normal(size=(100, 2)), 10,
    ...                sigma=1.0, random_state=0).shape
    (100, 10)
    """
    return Nystrom(n_components, sigma=sigma, landmarks=landmarks,
                   random_state=random_state).fit(X).factor_


def top_eigenpairs(X, n_components, *, sigma, random_state=None, method="auto", tol=1e-10,
                   max_iter=300, dense_max_samples=3000, n_threads=None):
    r"""Largest eigenpairs of the dense Gaussian Gram matrix of X.

    ``G = Q diag(s) Q^T`` restricted to the ``n_components`` largest
    eigenvalues (the low-rank path of CPD-UML). Methods:

    - ``"dense"``: form ``G`` and call LAPACK (``scipy.linalg.eigh`` with a
      subset): ``O(N^2)`` memory, ``O(N^3)`` time; the default for
      ``N <= dense_max_samples``.
    - ``"subspace"``: block subspace iteration with Rayleigh-Ritz on a block of
      ``k = n_components + max(10, n_components // 2)`` vectors; each iteration
      is one :func:`gram_matmat` (``G`` recomputed tile by tile, never stored:
      ``O(N k)`` memory, ``O(N^2 (p + k))`` time per iteration). Stops when
      every wanted Ritz pair has residual ``||G q - s q|| <= tol * s_1``, which
      bounds each eigenvalue's error by ``tol * s_1``. The default above
      ``dense_max_samples``. Convergence of pair ``j`` goes like
      ``(s_{k+1} / s_j)^iter``: fast for the fast-decaying spectra of Gaussian
      kernels, slow when sigma is much smaller than the data's spacing.
    - ``"lanczos"``: ARPACK (``scipy.sparse.linalg.eigsh``) on a
      ``LinearOperator`` whose matvec is :func:`gram_matmat`; each matvec
      recomputes all ``N^2`` kernel values, so it is usually slower than
      ``"subspace"``.

    Parameters
    ----------
    X : array-like of shape (N, p)
    n_components : int
        Number of eigenpairs, ``1 <= n_components <= N`` (``< N`` for lanczos).
    sigma : float
    random_state : None, int or numpy Generator
        Starting block of the iterative methods.
    method : {"auto", "dense", "subspace", "lanczos"}, default="auto"
    tol : float, default=1e-10
        Relative residual tolerance of the iterative methods.
    max_iter : int, default=300
        Iterations of ``"subspace"`` (a warning if not converged).
    dense_max_samples : int, default=3000
    n_threads : int, default=None

    Returns
    -------
    eigvals : ndarray (n_components,), descending
    eigvecs : ndarray (N, n_components), orthonormal columns

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust.kernels import top_eigenpairs
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> s1, Q1 = top_eigenpairs(X, 5, sigma=1.0, method="dense")
    >>> s2, Q2 = top_eigenpairs(X, 5, sigma=1.0, method="subspace", random_state=0)
    >>> bool(np.allclose(s1, s2, rtol=0, atol=1e-8 * s1[0]))
    True
    """
    X = check_array(X, name="X").astype(np.float64, copy=False)
    sigma = _check_sigma(sigma)
    N = X.shape[0]
    m = _check_n_components(n_components, N)
    if m > N:
        raise ValueError(f"n_components={m} exceeds the number of samples {N}.")
    check_scalar(tol, "tol", numbers.Real, min_val=0)
    check_scalar(max_iter, "max_iter", numbers.Integral, min_val=1)
    check_scalar(dense_max_samples, "dense_max_samples", numbers.Integral, min_val=0)
    if method == "auto":
        method = "dense" if N <= dense_max_samples else "subspace"
    if method == "dense":
        from scipy.linalg import eigh

        vals, vecs = eigh(gaussian_gram(X, sigma=sigma, n_threads=n_threads),
                          subset_by_index=[N - m, N - 1])
        return vals[::-1].copy(), np.ascontiguousarray(vecs[:, ::-1])
    rng = check_random_state(random_state)
    if method == "lanczos":
        if m >= N:
            raise ValueError("method='lanczos' needs n_components < n_samples.")
        from scipy.sparse.linalg import LinearOperator, eigsh

        op = LinearOperator(
            (N, N), dtype=np.float64,
            matvec=lambda v: gram_matmat(X, np.ravel(v), sigma=sigma, n_threads=n_threads),
            matmat=lambda V: gram_matmat(X, V, sigma=sigma, n_threads=n_threads))
        with single_blas_thread():  # ARPACK's own steps are O(N ncv) (see below)
            vals, vecs = eigsh(op, k=m, which="LA", tol=tol, v0=rng.uniform(-1, 1, N))
        order = np.argsort(vals)[::-1]
        return vals[order], np.ascontiguousarray(vecs[:, order])
    if method != "subspace":
        raise ValueError(f"method must be 'auto', 'dense', 'subspace' or 'lanczos', "
                         f"got {method!r}.")
    # The dense steps are O(N k^2) against O(N^2 k) for the products; one BLAS
    # thread costs them little and avoids OpenBLAS's busy-waiting threads
    # fighting the OpenMP ones on a loaded machine (measured: 3x slower).
    with single_blas_thread():
        return _subspace_iteration(X, m, sigma, rng, tol, max_iter, n_threads)


def _subspace_iteration(X, m, sigma, rng, tol, max_iter, n_threads):
    """Block subspace iteration with Rayleigh-Ritz (see top_eigenpairs)."""
    from scipy.linalg import eigh, qr

    N = X.shape[0]
    k = min(N, m + max(10, m // 2))
    Q, _ = qr(rng.standard_normal((N, k)), mode="economic")
    W = gram_matmat(X, Q, sigma=sigma, n_threads=n_threads)
    for _ in range(max_iter):
        T = Q.T @ W
        vals, S = eigh((T + T.T) / 2)
        vals, S = vals[::-1], S[:, ::-1]
        Z, GZ = Q @ S, W @ S
        res = np.linalg.norm(GZ[:, :m] - Z[:, :m] * vals[:m], axis=0)
        if res.max() <= tol * abs(vals[0]):
            break
        Q, _ = qr(GZ, mode="economic")
        W = gram_matmat(X, Q, sigma=sigma, n_threads=n_threads)
    else:
        warnings.warn(f"top_eigenpairs: subspace iteration did not reach tol={tol} in "
                      f"{max_iter} iterations (largest relative residual "
                      f"{res.max() / abs(vals[0]):.2e}).", RuntimeWarning, stacklevel=3)
    return vals[:m].copy(), np.ascontiguousarray(Z[:, :m])


# ---------------------------------------------------------------------------
# Eigenpairs of Gram-type matrices: one cut-off for "numerically zero".
# ---------------------------------------------------------------------------

def null_eigval_rtol(n):
    r"""Relative size below which an eigenvalue of an ``n x n`` PSD matrix counts as zero.

    ``n * eps`` with ``eps`` the float64 machine epsilon: an eigenvalue
    :math:`\lambda_j \le n\,\epsilon\,\lambda_{max}` is dropped. LAPACK's
    symmetric eigensolvers return each eigenvalue with an absolute error of
    order :math:`n\,\epsilon\,\lambda_{max}` (Golub & Van Loan, *Matrix
    Computations*, Sec. 8.1), so smaller ones are rounding noise; this is also
    the default rank tolerance of ``numpy.linalg.matrix_rank``. Gaussian Gram
    spectra decay fast, so the cut usually removes many directions. A larger
    cut costs accuracy: on the test data sets (standardized, 60 landmarks) a
    Nystrom factor cut at ``1e-12`` instead had a 2 to 20 times larger relative
    Frobenius error (e.g. two-moons, sigma = 2 median distances: 37 kept
    directions and 6.5e-12 against 31 and 1.3e-10).

    This is the only cut-off for eigenvalues in the library: Nystrom's default
    ``rcond``, CPCM's kernel predictor, CPD-UML's kernel PCA, its Nystrom factor
    and its spectral start all use it. Singular values of a data matrix have
    their own, :func:`null_singular_rtol`.
    """
    return int(n) * np.finfo(np.float64).eps


def null_singular_rtol(n, p):
    r"""Relative size below which a singular value of an ``n x p`` matrix counts as zero.

    ``10 * max(n, p) * eps``: ten times the default rank tolerance of
    ``numpy.linalg.matrix_rank`` (the SVD's absolute error is of order
    :math:`\max(n, p)\,\epsilon\,s_{max}`). The factor ten is a margin kept
    from the first version of CPCM's linear predictors; it is not a measured
    figure, and it is kept because a different cut could change the rank that
    CPCM's whitening and LDA keep, and so their results. A singular value is
    the square root of an eigenvalue of the scatter matrix, so this cut is much
    tighter than :func:`null_eigval_rtol` would be on ``s**2``: it drops only
    exact dependencies (constant or collinear features, ``p > n``).

    Used by CPCM's whitening (:func:`metriclust._core.predictors.whitening`)
    and its LDA predictor.
    """
    return max(int(n), int(p)) * np.finfo(np.float64).eps * 10


def drop_null_eigenpairs(vals, vecs, rtol=None):
    """Eigenpairs in descending order without the numerically zero ones.

    Parameters
    ----------
    vals : ndarray (k,)
        Eigenvalues in ascending order (as ``scipy.linalg.eigh`` returns them).
    vecs : ndarray (n, k)
        The matching eigenvectors of an ``n x n`` symmetric PSD matrix.
    rtol : float, default=None
        Keep ``vals > rtol * max(vals.max(), 0)``; None means
        :func:`null_eigval_rtol` ``(n)``.

    Returns
    -------
    vals : ndarray (r,), descending, all positive
    vecs : ndarray (n, r)
    """
    vals, vecs = vals[::-1], vecs[:, ::-1]
    if rtol is None:
        rtol = null_eigval_rtol(vecs.shape[0])
    keep = vals > rtol * max(vals[0], 0.0) if vals.size else np.zeros(0, bool)
    return vals[keep], vecs[:, keep]


def span_coordinates(X):
    """Coordinates of the centered rows of X in the span they occupy.

    For ``X`` of shape ``(n, p)`` with ``p > n`` (wide data): an ``n x r`` array
    (``r <= n`` the rank) with the same pairwise distances and inner products of
    differences as X, from one ``n x n`` Gram matrix, ``O(n^2 p)``. Whatever
    depends on the points only through their distances -- a Gaussian Gram, a
    kNN graph, k-means -- is the same there (up to rounding) at the cost of
    ``n`` columns instead of ``p``.
    """
    Xc = X - X.mean(axis=0)
    vals, vecs = drop_null_eigenpairs(*np.linalg.eigh(Xc @ Xc.T))
    if not vals.size:           # all rows alike: one column of zeros, not none
        return np.zeros((X.shape[0], 1))
    return np.ascontiguousarray(vecs * np.sqrt(vals))


def centered_gram_eigenpairs(X, *, sigma, n_components=None):
    r"""Exact kernel PCA: eigenpairs of the doubly centered Gaussian Gram matrix.

    :math:`G_c = H G H` with :math:`H = I - \mathbf 1 \mathbf 1^\top / N`,
    formed in place from the row means of ``G`` (``O(N^2)`` memory, one array),
    then ``scipy.linalg.eigh`` (all eigenpairs, or the ``n_components``
    largest) and :func:`drop_null_eigenpairs`.

    Returns
    -------
    vals : ndarray (r,), descending, positive
    vecs : ndarray (N, r), orthonormal columns
    row_mean : ndarray (N,)
        Row means of ``G`` (``G`` is symmetric: also its column means).
    all_mean : float
        Mean of all entries of ``G``.
    """
    from scipy.linalg import eigh

    G = gaussian_gram(X, sigma=sigma).astype(np.float64, copy=False)
    n = G.shape[0]
    row_mean = G.mean(axis=1)
    all_mean = float(row_mean.mean())
    G -= row_mean[:, None]
    G -= row_mean[None, :]
    G += all_mean
    subset = {} if n_components is None else {
        "subset_by_index": [n - min(int(n_components), n), n - 1]}
    vals, vecs = eigh(G, overwrite_a=True, check_finite=False, **subset)
    del G
    vals, vecs = drop_null_eigenpairs(vals, vecs)
    return vals, vecs, row_mean, all_mean


def centered_factor_eigenpairs(F):
    r"""Kernel PCA from a low-rank factor ``G ~= F F^T`` (``F`` is centered in place).

    With :math:`F_c = F - \mathbf 1 \bar f^\top`, :math:`H G H \approx F_c F_c^\top`,
    whose nonzero eigenpairs come from the ``m x m`` matrix
    :math:`F_c^\top F_c = V \Lambda V^\top` (``O(N m^2)``): eigenvectors
    :math:`F_c V \Lambda^{-1/2}`. Numerically zero directions are dropped
    (:func:`drop_null_eigenpairs`).

    Returns
    -------
    mean : ndarray (m,)
        Column means of ``F`` (subtracted from ``F`` in place).
    vals : ndarray (r,), descending, positive
    V : ndarray (m, r)
    """
    from scipy.linalg import eigh

    mean = F.mean(axis=0)
    F -= mean
    vals, V = drop_null_eigenpairs(*eigh(F.T @ F, check_finite=False))
    return mean, vals, V


_CHUNK_ELEMS = 1 << 22  # ~32 MB of float64 per row block


def _row_blocks(n, width):
    step = max(1, _CHUNK_ELEMS // max(int(width), 1))
    return [(a, min(n, a + step)) for a in range(0, n, step)]


def factor_basis(UtU, *, rtol=None):
    """``(s, T)`` of :func:`orthonormalize_factor` from the ``m x m`` Gram ``U^T U`` alone.

    ``U^T U = V diag(s) V^T`` without its numerically zero eigenpairs, ``T = V
    diag(s)^{-1/2}``: ``Q = U T`` is orthonormal. Data read block by block sum
    ``U^T U`` over the blocks and apply ``T`` per block
    (:mod:`metriclust._core.cpd_blockwise`).
    """
    from scipy.linalg import eigh

    s, V = drop_null_eigenpairs(*eigh(UtU, check_finite=False), rtol=rtol)
    return s, V / np.sqrt(s)


def orthonormalize_factor(U, *, rtol=None):
    """Bring ``G ~= U U^T`` to ``G ~= Q diag(s) Q^T`` with orthonormal ``Q``, in place.

    ``U^T U = V diag(s) V^T`` (``m x m``), ``Q = U T`` with ``T = V diag(s)^{-1/2}``;
    numerically zero directions (``s <= rtol * max(s)``, ``rtol`` from
    :func:`null_eigval_rtol` when None) are dropped. ``O(N m^2)``.

    ``U`` (C-contiguous float64) is overwritten: ``Q``'s rows are written
    block by block into ``U``'s buffer (a block's output, ``r <= m`` wide, never
    reaches rows not yet read), so no second ``N x m`` array is allocated.
    Returns ``(Q, s, T)``; ``Q`` is a view of ``U``'s memory.
    """
    n, m = U.shape
    s, T = factor_basis(U.T @ U, rtol=rtol)
    r = T.shape[1]
    flat = U.reshape(-1)
    for a, b in _row_blocks(n, m):
        block = U[a:b] @ T
        flat[a * r:b * r] = block.reshape(-1)
    return flat[:n * r].reshape(n, r), s, T
