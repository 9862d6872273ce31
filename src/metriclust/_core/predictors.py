"""Predictors of cluster membership for CPCM (SPEC 2; Gupta, Foster & Ungar 2008).

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
training rows. :func:`blur_ratio` evaluates the CPCM criterion in that space.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from .._kernels._sums import cluster_sums

__all__ = ["PredictorFit", "Linear", "Kernel", "Stepwise", "LDA", "blur_ratio",
           "one_hot_sums", "thin_r", "whitening", "small_problem_threads"]

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


def small_problem_threads(size, n_threads=0):
    """One thread below 1e6 entries, else ``n_threads`` (0 or None: the default).

    Used for the k-means runs of the search (many small fits in a row); the
    cluster-sum kernel applies the same rule itself.

    Measured on the shared 2-core machine under load: an OpenMP region costs
    ~10 ms of waiting for a second thread, so a 20000 x 20 cluster sum took
    12 ms on two threads and 0.3 ms on one. Results do not depend on it.
    """
    return 1 if size < 1_000_000 else n_threads


def one_hot_sums(F, labels, n_clusters, n_threads=0):
    """``Z^T F`` (K x m) and cluster sizes ``n`` for one-hot ``Z`` of ``labels``."""
    sums = cluster_sums(F, labels, n_clusters, n_threads)  # small sums run serially in C
    counts = np.bincount(labels, minlength=n_clusters).astype(np.float64)
    return sums, counts


def blur_ratio(Zhat, labels, n_clusters, n_threads=0):
    r"""Blur ratio ``SSC / SST`` of a partition in the prediction space ``Zhat``.

    .. math:: BR = \frac{\sum_i \|\hat z_i - \theta_{c(i)}\|^2}
                         {\sum_i \|\hat z_i - \bar z\|^2},
              \qquad \theta_k = \mathrm{mean}_{c(i)=k}\, \hat z_i

    (Gupta et al. 2008, Sec. 2). Computed as ``1 - SSB / SST`` from the
    per-cluster sums (one pass for the sums, one for SST). Returns 1.0 when the
    prediction space has no spread at all.
    """
    sums, counts = one_hot_sums(Zhat, labels, n_clusters, n_threads)
    n = float(counts.sum())
    mean = sums.sum(axis=0) / n
    sst = 0.0
    for start in range(0, Zhat.shape[0], _BLOCK):            # blocks: no N x d temporary
        c = Zhat[start:start + _BLOCK] - mean
        sst += float(np.einsum("ij,ij->", c, c))
    nz = counts > 0
    dev = sums[nz] - counts[nz, None] * mean[None, :]
    ssb = float(np.sum(dev * dev / counts[nz, None]))
    if not sst > 0.0:
        return 1.0
    return min(1.0, max(0.0, (sst - ssb) / sst))


# ---------------------------------------------------------------------------
# Shared factorization: thin R of the centered data, streamed in row blocks.
# ---------------------------------------------------------------------------

def thin_r(X, mean):
    """R factor of the thin QR of ``X - mean`` (p x p), by blocks (TSQR).

    Householder QR of each block of rows, then of the stacked R's: backward
    stable like one QR of the whole matrix, with extra memory of one block.
    """
    n, p = X.shape
    geqrf = scipy.linalg.get_lapack_funcs("geqrf", dtype=np.float64)
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
    if R.shape[0] < p:
        R = np.vstack([R, np.zeros((p - R.shape[0], p))])
    return R


def whitening(R, n_samples, rtol=None):
    """Rank-revealing whitening ``W`` (p x r): ``(X - mean) W`` has orthonormal columns.

    Columns are first scaled to unit norm (so the rank decision does not
    depend on the features' units), then the SVD of the scaled ``R`` cuts
    directions with singular value below ``rtol * s_max``. Constant features
    (zero column) and exactly collinear ones drop out here.
    """
    p = R.shape[1]
    norms = np.sqrt(np.einsum("ij,ij->j", R, R))
    scale = np.where(norms > 0, norms, 1.0)
    _, s, Vt = np.linalg.svd(R / scale, full_matrices=False)
    if rtol is None:
        rtol = max(n_samples, p) * np.finfo(np.float64).eps * 10
    keep = s > rtol * (s[0] if s.size and s[0] > 0 else 1.0)
    keep &= s > 0
    W = (Vt[keep].T / s[keep]) / scale[:, None]
    W[norms == 0] = 0.0
    return W


# ---------------------------------------------------------------------------
# LSR (the paper's default predictor)
# ---------------------------------------------------------------------------

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

    def whitened(self, n_coords=None):
        """``Q = (X - mean) W`` (N x r), formed on request (search starts only)."""
        return _affine(self.X, self.W, -(self.mean @ self.W))

    def components(self, n_components):
        """Leading principal-component scores of X (N x n), from the SVD of R."""
        _, _, Vt = np.linalg.svd(self.R, full_matrices=False)
        V = Vt[: min(int(n_components), self.rank)].T
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
    """

    name = "stepwise"

    def __init__(self, X, *, criterion="ric", max_features=None, n_threads=0):
        super().__init__(X, n_threads=n_threads)
        n, p = X.shape
        self.Cxx = self.R.T @ self.R
        self.penalty = {"ric": 2.0 * math.log(max(p, 2)), "bic": math.log(n),
                        "aic": 2.0}[criterion]
        self.max_features = p if max_features is None else min(int(max_features), p)

    def select(self, ZtXc, counts):
        """Forward selection by sweeping; returns the chosen feature indices."""
        p = self.Cxx.shape[0]
        n = self.n_samples
        K = counts.shape[0]
        q = max(int(np.count_nonzero(counts)) - 1, 1)          # free responses
        C = np.empty((p + K, p + K))
        C[:p, :p] = self.Cxx
        C[:p, p:] = ZtXc.T
        C[p:, :p] = ZtXc
        C[p:, p:] = np.diag(counts) - np.outer(counts, counts) / n
        diag0 = np.diag(self.Cxx).copy()
        rss = float(np.trace(C[p:, p:]))
        chosen = []
        free = np.ones(p, dtype=bool)
        free &= diag0 > 0
        while len(chosen) < self.max_features and free.any():
            d = np.diag(C)[:p]
            ok = free & (d > 1e-10 * diag0)
            if not ok.any():
                break
            gain = np.zeros(p)
            gain[ok] = np.einsum("jk,jk->j", C[:p, p:][ok], C[:p, p:][ok]) / d[ok]
            j = int(np.argmax(np.where(ok, gain, -1.0)))
            new_rss = rss - gain[j]
            dof = n - len(chosen) - 2
            if chosen and (dof <= 0 or new_rss <= 0 or
                           gain[j] / (new_rss / (dof * q)) <= self.penalty * q):
                break
            _sweep(C, j)
            chosen.append(j)
            free[j] = False
            rss = new_rss
        return np.array(sorted(chosen), dtype=np.int64)

    def fit(self, labels, n_clusters):
        sums, counts = one_hot_sums(self.X, labels, n_clusters, self.n_threads)
        ZtXc = sums - counts[:, None] * self.mean[None, :]
        S = self.select(ZtXc, counts)
        B = np.zeros((self.X.shape[1], n_clusters))
        if S.size:
            Css = self.Cxx[np.ix_(S, S)]
            B[S] = scipy.linalg.lstsq(Css, ZtXc[:, S].T, cond=1e-12)[0]
        b0 = counts / self.n_samples - self.mean @ B
        return PredictorFit(_affine(self.X, B, b0), B, b0, {"selected": S})


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

    ``S_m = X_c^T X_c`` (formed once from the thin R) and the within-cluster
    scatter ``S_c = S_m - sum_k n_k (mu_k - mu)(mu_k - mu)^T`` from the
    cluster sums. The ridge ``rho = alpha * tr(S_m) / p`` keeps ``S_m + rho I``
    positive definite (constant or collinear features). Prediction space:
    ``Zhat = X_c b`` (N x (K-1)), scaled so that ``b^T (S_m + rho I) b = I``.
    """

    name = "lda"

    def __init__(self, X, *, alpha=1e-6, n_threads=0):
        super().__init__(X, n_threads=n_threads)
        self.Sm = self.R.T @ self.R
        p = self.Sm.shape[0]
        tr = float(np.trace(self.Sm))
        self.alpha = alpha
        self.ridge = alpha * (tr / p if tr > 0 else 1.0)

    def fit(self, labels, n_clusters):
        sums, counts = one_hot_sums(self.X, labels, n_clusters, self.n_threads)
        nz = counts > 0
        dev = sums[nz] / counts[nz, None] - self.mean[None, :]
        Sb = (dev * counts[nz, None]).T @ dev
        p = self.Sm.shape[0]
        St = self.Sm + self.ridge * np.eye(p)
        Sc = self.Sm - Sb
        d = max(1, min(n_clusters - 1, p))
        try:
            _, b = scipy.linalg.eigh((Sc + Sc.T) / 2, St, subset_by_index=[0, d - 1])
        except np.linalg.LinAlgError:  # St singular: only possible without a ridge
            raise ValueError(
                f"predictor='lda' with alpha={self.alpha!r}: the total scatter of X is "
                "singular (constant or collinear features); use alpha > 0."
            ) from None
        b0 = -(self.mean @ b)
        return PredictorFit(_affine(self.X, b, b0), b, b0)


# ---------------------------------------------------------------------------
# RKHS: kernel ridge regression with an intercept (Sec. 3.3)
# ---------------------------------------------------------------------------

class Kernel:
    r"""Kernel ridge regression of ``Z`` on ``X`` with a Gaussian kernel and intercept.

    Hat matrix ``J + G_c (G_c + N alpha I)^{-1}`` with ``J = 1 1^T / N`` and
    ``G_c`` the doubly centered Gram matrix (SPEC 0.2). Factored once as
    ``G_c ~= Q diag(l) Q^T`` with orthonormal ``Q`` (N x m):

    - exact (``n_components=None``): eigendecomposition of the N x N ``G_c``,
      keeping the eigenpairs whose shrinkage ``l / (l + N alpha)`` exceeds
      ``1e-8`` (the rest change ``Zhat`` by less than that);
    - Nystrom (``n_components=m``): ``G ~= U U^T`` with ``U`` from
      :class:`metriclust.kernels.Nystrom`; centering ``U`` and an ``m x m``
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
        from ..kernels import Nystrom, gaussian_gram

        self.n_threads = n_threads
        n = X.shape[0]
        self.n_samples = n
        self.sigma = float(sigma)
        lam = n * float(alpha)
        if n_components is None:
            G = gaussian_gram(X, sigma=self.sigma).astype(np.float64, copy=False)
            self.row_mean = G.mean(axis=1)
            self.all_mean = float(self.row_mean.mean())
            G -= self.row_mean[:, None]
            G -= self.row_mean[None, :]
            G += self.all_mean
            l, U = scipy.linalg.eigh(G, overwrite_a=True, check_finite=False)
            del G
            keep = (l > 0) & (l / (l + lam) > 1e-8)
            self.Q = np.ascontiguousarray(U[:, keep][:, ::-1])
            self.l = l[keep][::-1]
            self.X_train = X
            self.nystrom = None
        else:
            self.nystrom = Nystrom(int(n_components), sigma=self.sigma,
                                   random_state=random_state).fit(X)
            F = np.asarray(self.nystrom.factor_, dtype=np.float64)
            self.f_mean = F.mean(axis=0)
            F -= self.f_mean
            l, V = scipy.linalg.eigh(F.T @ F)
            keep = l > l.max() * 1e-10 if l.size and l.max() > 0 else np.zeros(l.shape, bool)
            self.V = V[:, keep][:, ::-1]
            self.l = l[keep][::-1]
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
        from ..kernels import gaussian_gram

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

    def components(self, n_components):
        """Leading kernel-PCA coordinates: the columns of ``Q``.

        At least ``n_components``, and every coordinate the smoother passes with
        shrinkage above 1% (any of them can carry the clusters: on concentric
        circles the radial function is the 3rd to the 11th depending on the sample).
        """
        n = max(int(n_components), int(np.count_nonzero(self.shrink > 0.01)))
        return np.ascontiguousarray(self.Q[:, : min(n, self.l.size)])

    def release(self):
        """Drop the N x m factor once fitting is over (transform keeps working)."""
        self.Q = None
