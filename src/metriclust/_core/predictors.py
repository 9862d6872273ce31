"""Predictors of cluster membership for CPCM (Gupta, Foster & Ungar 2008).

Public classes and functions:

.. autosummary::

   Linear          -- least squares with an intercept (Sec. 3.1)
   Stepwise        -- forward stepwise least squares shared by the K responses
   LDA             -- LDA directions of the partition
   Kernel          -- Gaussian kernel ridge regression (exact or Nystrom)
   PredictorFit    -- a fitted predictor for one partition
   thin_r          -- R of the thin QR of the centered data, by blocks
   whitening       -- rank-revealing whitening map
   whitened_input  -- whitened coordinates of the input

Each predictor is factored ONCE from the data ``X`` and then, for any
partition ``labels``, returns the predictions ``Zhat`` (N x d) of the one-hot
membership matrix ``Z`` — the "prediction space" in which CPCM clusters —
together with the small model that maps new points into that space.
Per iteration the data enter only through per-cluster row sums (the
``cluster_sums`` C kernel computes ``Z^T F`` for a factor ``F``) and one GEMM
``F @ coef``: no refit, no N x N work, no Python loop over points.

=================  ==============================================  ===========
predictor          ``Zhat`` for a partition (``Z`` one-hot)         dim ``d``
=================  ==============================================  ===========
:class:`Linear`    ``H Z``, H = hat matrix of ``[1, X]``            K
:class:`Kernel`    ``(J + G_c (G_c + N alpha I)^-1) Z``             K
:class:`Stepwise`  ``H_S Z`` on forward-selected features ``S``     K
:class:`LDA`       ``X_c b``, ``S_c b = l (S_m + ridge) b``         K - 1
=================  ==============================================  ===========

All of them return a :class:`PredictorFit`; ``Zhat = transform(X)`` for the
training rows; :func:`metriclust._core.partition.blur_ratio` evaluates the CPCM
criterion in that space.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from .gram import (Nystrom, centered_factor_eigenpairs, centered_gram_eigenpairs,
                   gaussian_gram, null_singular_rtol)
from .partition import cluster_sums as one_hot_sums

__all__ = ["PredictorFit", "Linear", "Kernel", "Stepwise", "LDA", "thin_r", "whitening"]

# Rows per block when streaming over X (bounded extra memory: block x p floats).
_BLOCK = 65536


@dataclass
class PredictorFit:
    """A fitted predictor for one partition: ``Zhat = phi(X) @ coef + intercept``.

    ``phi`` is the identity for the linear predictors and the centered kernel
    feature map for :class:`Kernel`. ``Zhat`` holds the training predictions.
    """

    Zhat: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------
# Shared factorization: thin R of the centered data, streamed in row blocks.
# ---------------------------------------------------------------------------

def thin_r(X, mean):
    """R factor of the thin QR of ``X - mean``, by blocks (TSQR): ``R^T R = X_c^T X_c``.

    Householder QR of each block of rows, then of the stacked R's: backward
    stable like one QR of the whole matrix, with extra memory of one block.
    ``R`` is ``min(N, p) x p``: when ``p > N`` (wide data) it is ``X_c``
    itself (float64), never padded to ``p x p``, so everything built on it
    (whitening, principal components, LDA, stepwise) costs ``O(N^2 p)``, not
    ``O(p^3)``.
    """
    n, p = X.shape
    if n < p:
        # wide: X_c itself is such an R (N x p); its QR would cost O(N^2 p) for nothing
        return np.subtract(X, mean, dtype=np.float64)
    from scipy.linalg import get_lapack_funcs   # scipy.linalg on first fit, not on import
    geqrf = get_lapack_funcs("geqrf", dtype=np.float64)
    buf = np.empty((min(n, _BLOCK), p), dtype=np.float64, order="F")
    stack = []
    for start in range(0, n, _BLOCK):
        stop = min(n, start + _BLOCK)
        b = buf[: stop - start]
        np.subtract(X[start:stop], mean, out=b)
        qr, _, _, info = geqrf(b, overwrite_a=True)
        if info != 0:
            raise np.linalg.LinAlgError(f"geqrf failed with info={info}")
        stack.append(np.triu(qr[: min(stop - start, p)]))
    R = np.vstack(stack)
    if R.shape[0] > p:
        qr, _, _, info = geqrf(np.asfortranarray(R), overwrite_a=True)
        R = np.triu(qr[:p])
    return R


def whitening(R, n_samples, rtol=None):
    """Rank-revealing whitening ``W`` (p x r): ``(X - mean) W`` has orthonormal columns.

    Columns are first scaled to unit norm (so the rank decision does not
    depend on the features' units), then the SVD of the scaled ``R`` cuts
    directions with singular value below ``rtol * s_max``. Constant features
    (zero column) and exactly collinear ones drop out here. ``R`` may be
    ``N x p`` with ``N < p`` (:func:`thin_r`): the thin SVD then costs
    ``O(N^2 p)`` and ``r <= N - 1``.
    """
    p = R.shape[1]
    norms = np.sqrt(np.einsum("ij,ij->j", R, R))
    scale = np.where(norms > 0, norms, 1.0)
    _, s, Vt = np.linalg.svd(R / scale, full_matrices=False)
    if rtol is None:
        rtol = null_singular_rtol(n_samples, p)
    keep = s > rtol * (s[0] if s.size and s[0] > 0 else 1.0)
    keep &= s > 0
    W = (Vt[keep].T / s[keep]) / scale[:, None]
    W[norms == 0] = 0.0
    return W


# ---------------------------------------------------------------------------
# LSR (the paper's default predictor)
# ---------------------------------------------------------------------------

def whitened_input(X):
    """``(X - mean) W`` with orthonormal columns (:func:`whitening`): the input in
    coordinates that do not depend on its basis, for the kernel predictor's
    search starts (the linear predictors keep theirs in :class:`_Centered`)."""
    mean = X.mean(axis=0, dtype=np.float64)
    W = whitening(thin_r(X, mean), X.shape[0])
    return _affine(X, W, -(mean @ W))


class _Centered:
    """Shared by the linear predictors: mean, thin R and whitening of X, once."""

    def __init__(self, X, *, n_threads=0):
        self.X = X
        self.n_threads = n_threads
        self.n_samples = X.shape[0]
        self.mean = X.mean(axis=0, dtype=np.float64)
        self.R = thin_r(X, self.mean)
        self.W = whitening(self.R, self.n_samples)
        self.rank = self.W.shape[1]

    def whitened(self):
        """``Q = (X - mean) W`` (N x r), formed on request (search starts only)."""
        return _affine(self.X, self.W, -(self.mean @ self.W))

    def kmeans_coordinates(self, n_clusters):
        """The space of CPCM's k-means starts: all ``r`` whitened coordinates.

        They all have unit variance, so none leads and none is dropped
        (``n_clusters`` matters only to the kernel predictor's ordered ones).
        """
        return self.whitened()

    def components(self, n_components):
        """Leading principal-component scores of X (N x n), from the SVD of R.

        Wide ``R`` (N x p, N < p): the leading right singular vectors from the
        N x N Gram ``R R^T`` (one GEMM and a partial ``eigh``) instead of a second
        full thin SVD (8 of the 29 CPU seconds of a stepwise search at
        1000 x 20000); the leading pairs are well separated from rounding there.
        """
        m = min(int(n_components), self.rank)
        R = self.R
        if 0 < m and R.shape[0] < R.shape[1]:
            from scipy.linalg import eigh
            n = R.shape[0]
            s2, U = eigh(R @ R.T, subset_by_index=[n - m, n - 1])
            keep = s2[::-1] > 0
            V = (R.T @ U[:, ::-1][:, keep]) / np.sqrt(s2[::-1][keep])
        else:
            _, _, Vt = np.linalg.svd(R, full_matrices=False)
            V = Vt[:m].T
        return _affine(self.X, V, -(self.mean @ V))

    def transform(self, X, fit):
        return _affine(X, fit.coef, fit.intercept)


class Linear(_Centered):
    r"""Least squares with an intercept: ``Zhat = H Z`` (Gupta et al., Sec. 3.1).

    With ``X_c = X - mean`` and ``W`` from :func:`whitening`, ``Q = X_c W`` is
    an orthonormal basis of the centered column space, so
    ``H = 1 1^T / N + Q Q^T`` and

    .. math:: \hat Z = X B + \mathbf 1 b_0^T, \qquad
              B = W W^T X_c^T Z, \qquad b_0 = n / N - B^T \bar x,

    where ``X_c^T Z`` comes from the per-cluster row sums of ``X``. ``Q`` is
    never stored: each iteration costs one ``cluster_sums`` pass and one
    ``N x p x K`` GEMM, with no extra N x p memory.
    """

    name = "linear"

    def coef_for(self, labels, n_clusters, sums=None):
        """``(B, b0, n)`` of the least-squares fit of one-hot ``Z``."""
        if sums is None:
            sums, counts = one_hot_sums(self.X, labels, n_clusters, self.n_threads)
        else:
            sums, counts = sums
        ZtXc = sums - counts[:, None] * self.mean[None, :]        # K x p
        B = self.W @ (ZtXc @ self.W).T                           # p x K
        b0 = counts / self.n_samples - self.mean @ B
        return B, b0, counts

    def fit(self, labels, n_clusters):
        B, b0, _ = self.coef_for(labels, n_clusters)
        return PredictorFit(_affine(self.X, B, b0), B, b0)


def _affine(X, B, b0):
    """``X @ B + b0`` in X's precision (float32 stays float32)."""
    out = X @ B.astype(X.dtype, copy=False)
    out += b0.astype(X.dtype, copy=False)
    return out


# ---------------------------------------------------------------------------
# Forward stepwise LSR (the paper's LSRstep, Sec. 5.1)
# ---------------------------------------------------------------------------

class Stepwise(_Centered):
    r"""Forward stepwise least squares shared by all K responses (LSRstep).

    Works on the ``(p + K) x (p + K)`` centered cross-product matrix

    .. math:: C = \begin{pmatrix} X_c^T X_c & X_c^T Z \\ Z^T X_c & Z_c^T Z_c \end{pmatrix},

    with ``X_c^T X_c`` formed once and ``X_c^T Z`` from cluster sums, so each
    selection step costs ``O((p + K)^2)``, independent of N. At each step the
    feature with the largest reduction of the summed residual sum of squares
    ``sum_k C_{jk}^2 / C_{jj}`` (on the swept matrix) enters, if its partial
    F statistic over the ``K - 1`` free responses exceeds the penalty
    (RIC ``2 log p``, BIC ``log N`` or AIC ``2``; Foster & George 1994); the
    first feature always enters. The final fit is LSR on the chosen features.

    Wide data (``p > N``): the ``p x p`` block would cost ``O(p^2)`` memory and
    time per step (3.2 GB at p = 20000). The same selection then runs on the
    data: only the entries the rule reads -- the swept diagonal ``C_jj`` (the
    residual squared norm of each feature) and the swept block ``C[:p, p:]``
    -- are kept, and entering feature ``j`` updates them by the rank-one term
    of its Gram-Schmidt residual ``q``: ``u = X_c^T q``, ``C_jj -= u_j^2``,
    ``C[:p, p:] -= u (Z_c^T q)^T``. That is the sweep of ``C`` on ``j`` (in
    exact arithmetic) at ``O(N p)`` per step.
    """

    name = "stepwise"

    def __init__(self, X, *, criterion="ric", max_features=None, n_threads=0):
        super().__init__(X, n_threads=n_threads)
        n, p = X.shape
        self.col_sq = np.einsum("ij,ij->j", self.R, self.R)    # ||x_j - mean_j||^2
        self.wide = p > n
        # p > N: selection on the centred data (R is X_c then; O(N p) a step), no p x p
        self.Cxx = None if self.wide else self.R.T @ self.R
        self.penalty = {"ric": 2.0 * math.log(max(p, 2)), "bic": math.log(n),
                        "aic": 2.0}[criterion]
        self.max_features = p if max_features is None else min(int(max_features), p)

    def select(self, ZtXc, counts, labels=None):
        """Forward selection; returns the chosen feature indices (sorted).

        ``labels`` is needed by the wide path (``p > N``) only.
        """
        p = self.col_sq.shape[0]
        n = self.n_samples
        K = counts.shape[0]
        q = max(int(np.count_nonzero(counts)) - 1, 1)          # free responses
        if self.wide:
            state = _ProjectedSelection(self.R, self.col_sq, ZtXc, counts, labels)
        else:
            state = _SweptSelection(self.Cxx, ZtXc, counts, n)
        diag0 = self.col_sq
        rss = float(n - np.sum(counts * counts) / n)           # tr(Z_c^T Z_c)
        chosen = []
        free = diag0 > 0
        while len(chosen) < self.max_features and free.any():
            d, cross = state.diagonal(), state.cross()
            ok = free & (d > 1e-10 * diag0)
            if not ok.any():
                break
            gain = np.einsum("jk,jk->j", cross, cross)
            np.divide(gain, d, out=gain, where=ok)
            gain[~ok] = -1.0
            j = int(np.argmax(gain))
            new_rss = rss - gain[j]
            dof = n - len(chosen) - 2
            if chosen and (dof <= 0 or new_rss <= 0 or
                           gain[j] / (new_rss / (dof * q)) <= self.penalty * q):
                break
            state.enter(j)
            chosen.append(j)
            free[j] = False
            rss = new_rss
        return np.array(sorted(chosen), dtype=np.int64)

    def fit(self, labels, n_clusters):
        sums, counts = one_hot_sums(self.X, labels, n_clusters, self.n_threads)
        ZtXc = sums - counts[:, None] * self.mean[None, :]
        S = self.select(ZtXc, counts, labels)
        B = np.zeros((self.X.shape[1], n_clusters))
        if S.size:
            if self.Cxx is not None:
                Css = self.Cxx[np.ix_(S, S)]
            else:
                Xs = self.R[:, S]                                # R = X_c (wide)
                Css = Xs.T @ Xs
            from scipy.linalg import lstsq
            B[S] = lstsq(Css, ZtXc[:, S].T, cond=1e-12)[0]
        b0 = counts / self.n_samples - self.mean[S] @ B[S]
        # the unselected rows of B are zero: predict from the chosen columns only
        Zhat = _affine(np.ascontiguousarray(self.X[:, S]), B[S], b0)
        return PredictorFit(Zhat, B, b0, {"selected": S})


class _SweptSelection:
    """Stepwise state as the swept ``(p + K)^2`` cross-product matrix (``p <= N``)."""

    def __init__(self, Cxx, ZtXc, counts, n):
        p, K = Cxx.shape[0], counts.shape[0]
        C = np.empty((p + K, p + K))
        C[:p, :p] = Cxx
        C[:p, p:] = ZtXc.T
        C[p:, :p] = ZtXc
        C[p:, p:] = np.diag(counts) - np.outer(counts, counts) / n
        self.C, self.p = C, p

    def diagonal(self):
        return np.diag(self.C)[: self.p]

    def cross(self):
        return self.C[: self.p, self.p:]

    def enter(self, j):
        _sweep(self.C, j)


class _ProjectedSelection:
    """Stepwise state from the data (``p > N``): the same numbers as the swept
    matrix's diagonal and ``C[:p, p:]``, updated by Gram-Schmidt, ``O(N p)`` a step."""

    def __init__(self, Xc, col_sq, ZtXc, counts, labels):
        self.Xc, self.labels, self.counts = Xc, labels, counts
        self.n = Xc.shape[0]
        self.d = col_sq.copy()
        self.C = np.ascontiguousarray(ZtXc.T)                    # p x K
        self.basis = []                                          # orthonormal residuals

    def diagonal(self):
        return self.d

    def cross(self):
        return self.C

    def enter(self, j):
        r = self.Xc[:, j].copy()
        if self.basis:
            Qb = np.column_stack(self.basis)
            for _ in range(2):                                   # twice is enough (Kahan)
                r = r - Qb @ (Qb.T @ r)
        q = r / np.linalg.norm(r)
        self.basis.append(q)
        s = float(q.sum())
        u = self.Xc.T @ q                                        # X_c^T q
        zq = (np.bincount(self.labels, weights=q, minlength=self.counts.shape[0])
              - self.counts * (s / self.n))                      # Z_c^T q
        self.C -= np.outer(u, zq)
        self.d -= u * u


def _sweep(C, j):
    """Sweep the symmetric matrix C on pivot j in place (Goodnight 1979)."""
    d = C[j, j]
    row = C[j].copy()
    C -= np.outer(row / d, row)  # not outer(row, row) / d: that squares X^T X (overflow)
    C[j, :] = row / d
    C[:, j] = row / d
    C[j, j] = -1.0 / d


# ---------------------------------------------------------------------------
# CPCM-LDA (Sec. 4.1; Ding & Li's LDA-km)
# ---------------------------------------------------------------------------

class LDA(_Centered):
    r"""LDA directions of the partition: ``S_c b = l (S_m + rho I) b``, K-1 smallest ``l``.

    ``S_m = X_c^T X_c`` and the within-cluster scatter
    ``S_c = S_m - sum_k n_k (mu_k - mu)(mu_k - mu)^T`` from the cluster sums.
    The ridge ``rho = alpha * tr(S_m) / p`` keeps ``S_m + rho I`` positive
    definite. Prediction space: ``Zhat = X_c b`` (N x (K-1)), scaled so that
    ``b^T (S_m + rho I) b = I``.

    The problem is solved in the row space of ``X_c``: with its thin SVD
    ``X_c = U diag(s) V^T`` (``r`` kept directions) and ``b = V c`` it is the
    ``r x r`` problem ``(diag(s^2) - V^T S_b V) c = l (diag(s^2) + rho I) c``,
    ``O(r^3 + p r K)`` per fit instead of ``O(p^3)`` (``r <= N - 1`` when
    ``p >= N``). Directions ``b`` outside that space (constant or collinear
    features; all but ``r`` directions of wide data) would have ``S_c b = 0``,
    hence ``l = 0``, while predicting nothing (``X_c b = 0``): they are
    excluded, and when ``r < K - 1`` the missing columns of ``b`` are zero.
    """

    name = "lda"

    def __init__(self, X, *, alpha=1e-6, n_threads=0):
        super().__init__(X, n_threads=n_threads)
        n, p = X.shape
        _, s, Vt = np.linalg.svd(self.R, full_matrices=False)
        tr = float(np.sum(s * s))                                   # tr(S_m)
        self.ridge = alpha * (tr / p if tr > 0 else 1.0)
        keep = s > (s[0] if s.size else 0.0) * null_singular_rtol(n, p)
        self.V = np.ascontiguousarray(Vt[keep].T)                   # p x r
        self.s2 = s[keep] ** 2
        self.St = self.s2 + self.ridge                              # diagonal in V

    def fit(self, labels, n_clusters):
        sums, counts = one_hot_sums(self.X, labels, n_clusters, self.n_threads)
        nz = counts > 0
        dev = (sums[nz] / counts[nz, None] - self.mean[None, :]) @ self.V   # K' x r
        Sc = np.diag(self.s2) - (dev * counts[nz, None]).T @ dev
        p, r = self.V.shape
        d = max(1, min(n_clusters - 1, p))
        b = np.zeros((p, d))
        m = min(d, r)
        if m:
            from scipy.linalg import eigh
            _, c = eigh((Sc + Sc.T) / 2, np.diag(self.St), subset_by_index=[0, m - 1])
            b[:, :m] = self.V @ c
        b0 = -(self.mean @ b)
        return PredictorFit(_affine(self.X, b, b0), b, b0)


# ---------------------------------------------------------------------------
# RKHS: kernel ridge regression with an intercept (Sec. 3.3)
# ---------------------------------------------------------------------------

class Kernel:
    r"""Kernel ridge regression of ``Z`` on ``X`` with a Gaussian kernel and intercept.

    Hat matrix ``J + G_c (G_c + N alpha I)^{-1}`` with ``J = 1 1^T / N`` and
    ``G_c`` the doubly centered Gram matrix. Factored once as
    ``G_c ~= Q diag(l) Q^T`` with orthonormal ``Q`` (N x m):

    - exact (``n_components=None``): eigendecomposition of the N x N ``G_c``
      (:func:`metriclust._core.gram.centered_gram_eigenpairs`, which drops the
      numerically zero eigenvalues), keeping the eigenpairs whose shrinkage
      ``l / (l + N alpha)`` exceeds ``1e-8`` (the rest change ``Zhat`` by less
      than that);
    - Nystrom (``n_components=m``): ``G ~= U U^T`` with ``U`` from
      :class:`metriclust._core.gram.Nystrom`; centering ``U`` and an ``m x m``
      eigendecomposition of ``U_c^T U_c`` give ``Q`` in ``O(N m^2)``.

    Then ``Zhat = n^T / N + Q diag(l / (l + N alpha)) Q^T Z``: each iteration
    is one ``cluster_sums`` pass over ``Q`` and one ``N x m x K`` GEMM.
    ``alpha`` is per sample (the loss is averaged over the N points), so one
    value means the same smoothness for any N. The effective degrees of
    freedom are ``sum l / (l + N alpha)``.
    """

    name = "kernel"

    def __init__(self, X, *, sigma, alpha, n_components=None, random_state=None,
                 n_threads=0):
        self.n_threads = n_threads
        n = X.shape[0]
        self.n_samples = n
        self.sigma = float(sigma)
        lam = n * float(alpha)
        if n_components is None:
            l, U, self.row_mean, self.all_mean = centered_gram_eigenpairs(X, sigma=self.sigma)
            keep = l / (l + lam) > 1e-8
            self.Q = np.ascontiguousarray(U[:, keep])
            self.l = l[keep]
            self.X_train = X
            self.nystrom = None
        else:
            self.nystrom = Nystrom(int(n_components), sigma=self.sigma,
                                   random_state=random_state).fit(X)
            F = np.asarray(self.nystrom.factor_, dtype=np.float64)
            self.f_mean, self.l, self.V = centered_factor_eigenpairs(F)
            self.Q = np.ascontiguousarray((F @ self.V) / np.sqrt(self.l))
        self.shrink = self.l / (self.l + lam)
        self.lam = lam
        self.effective_dof = float(self.shrink.sum())

    def fit(self, labels, n_clusters):
        QtZ, counts = one_hot_sums(self.Q, labels, n_clusters, self.n_threads)   # K x m
        Zhat = self.Q @ (self.shrink[:, None] * QtZ.T)
        b0 = counts / self.n_samples
        Zhat += b0
        if self.nystrom is None:
            # dual coefficients (G_c + N alpha I)^{-1} Z_c on the kept eigenspace
            coef = self.Q @ ((1.0 / (self.l + self.lam))[:, None] * QtZ.T)
        else:
            coef = self.V @ ((np.sqrt(self.l) / (self.l + self.lam))[:, None] * QtZ.T)
        return PredictorFit(Zhat, coef, b0)

    def features(self, X):
        """Centered kernel features of new rows (cross Gram or Nystrom map)."""
        if self.nystrom is None:
            g = gaussian_gram(X, self.X_train, sigma=self.sigma).astype(np.float64, copy=False)
            g -= g.mean(axis=1)[:, None]
            g -= self.row_mean[None, :]
            g += self.all_mean
            return g
        return np.asarray(self.nystrom.transform(X), dtype=np.float64) - self.f_mean

    def transform(self, X, fit):
        return self.features(X) @ fit.coef + fit.intercept

    def whitened(self, n_coords=None):
        """Leading kernel-PCA coordinates ``Q_j sqrt(l_j)`` (search starts)."""
        d = self.l.size if n_coords is None else min(int(n_coords), self.l.size)
        return np.ascontiguousarray(self.Q[:, :d] * np.sqrt(self.l[:d]))

    def kmeans_coordinates(self, n_clusters):
        """The space of CPCM's k-means starts: the ``n_clusters`` leading
        kernel-PCA coordinates (ordered by eigenvalue, unlike whitened ones)."""
        return self.whitened(n_clusters)

    def components(self, n_components):
        """Leading kernel-PCA coordinates: the columns of ``Q``.

        At least ``n_components``, and every coordinate the smoother passes with
        shrinkage above 1% (any of them can carry the clusters: on concentric
        circles the radial function is the 3rd to the 11th depending on the sample),
        up to ``10 * n_components``: the spectrum of high-dimensional data is
        flat (1000 x 2000 noise-like data: 994 of 999 coordinates pass 1%, and
        their starts were 90% of a 120 s search).
        """
        n = int(n_components)
        n = max(n, min(int(np.count_nonzero(self.shrink > 0.01)), 10 * n))
        return np.ascontiguousarray(self.Q[:, : min(n, self.l.size)])

    def release(self):
        """Drop the N x m factor once fitting is over (transform keeps working)."""
        self.Q = None
