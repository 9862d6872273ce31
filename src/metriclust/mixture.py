"""Gaussian mixture models fitted by EM (the notes' mixture decomposition).

Public class:

.. autosummary::

   GaussianMixture  -- full, diagonal or spherical covariances, fitted by EM
"""

import numbers
import warnings

import numpy as np

from ._core.base import (BaseEstimator, ClusterMixin, ConvergenceWarning, Interval, Options,
                         _with_sklearn_twin)
from ._core.kmeans import kmeans
from ._core.scaling import rescaled_input, standardise
from ._core.threads import effective_n_threads
from ._core.validation import check_array, check_fit_input
from ._kernels import _mixture

__all__ = ["GaussianMixture"]

_COV_TYPES = ("full", "diag", "spherical")
_LOG_2PI = np.log(2.0 * np.pi)


class GaussianMixture(ClusterMixin, BaseEstimator):
    r"""Gaussian mixture fitted by expectation-maximisation.

    The density is :math:`f(x) = \sum_k \pi_k \mathcal{N}(x; \mu_k, \Sigma_k)`.
    Each iteration runs the notes' two steps (Unsupervised Learning notes,
    Sec. 4.3): the E-step computes the posteriors

    .. math::

        p^{(i)}_\ell = \frac{\pi_\ell \mathcal{N}(x_i; \mu_\ell, \Sigma_\ell)}
                            {\sum_k \pi_k \mathcal{N}(x_i; \mu_k, \Sigma_k)},

    the M-step re-estimates :math:`\pi_\ell = \sum_i p^{(i)}_\ell / N`,
    :math:`\mu_\ell = \sum_i p^{(i)}_\ell x_i / \sum_i p^{(i)}_\ell` and
    :math:`\Sigma_\ell = \sum_i p^{(i)}_\ell (x_i - \mu_\ell)(x_i - \mu_\ell)^T /
    \sum_i p^{(i)}_\ell`. As the notes suggest, EM starts from a k-means
    partition (the library's one k-means core), and a floor ``reg_covar`` on
    the covariances' diagonal keeps EM away from the unbounded likelihood of a
    collapsing component. The E-step's Mahalanobis distances, log-sum-exp and
    the M-step's weighted moments run in C (``csrc/mixture.c``), one pass over
    the data each, with results independent of the thread count.

    Parameters
    ----------
    n_components : int, default=1
        Number of mixture components.
    covariance_type : {"full", "diag", "spherical"}, default="full"
        One full covariance matrix per component, a diagonal one, or a single
        variance per component.
    tol : float, default=1e-3
        EM stops when the mean log-likelihood per sample changes by less than
        ``tol`` between iterations.
    reg_covar : float, default=1e-6
        Added to the diagonal of every covariance, **in units of the mean
        feature variance of X**, so that the fit does not depend on the scale
        of X. scikit-learn's ``reg_covar`` is absolute: its model with
        ``reg_covar * mean(var(X, axis=0))`` is the same as this one.
    max_iter : int, default=100
        Maximum number of EM iterations per initialisation.
    n_init : int, default=1
        Number of initialisations; the one with the highest final lower bound
        is kept.
    init_params : {"kmeans", "random"}, default="kmeans"
        Initial responsibilities: one-hot k-means labels (k-means++ seeding,
        one Lloyd run) or random ones.
    weights_init, means_init, precisions_init : array-like, default=None
        Optional initial parameters (as in scikit-learn); given ones replace
        those of the initial M-step. ``precisions_init`` has shape
        (n_components, d, d), (n_components, d) or (n_components,) for the
        three covariance types.
    random_state : None, int or numpy.random.Generator, default=None
        Randomness of the initialisation.
    verbose : int, default=0
        Print one line per iteration when positive.

    Attributes
    ----------
    weights_ : ndarray of shape (n_components,)
    means_ : ndarray of shape (n_components, n_features)
    covariances_ : ndarray
        (n_components, d, d), (n_components, d) or (n_components,).
    precisions_ : ndarray
        Inverses of the covariances, same shapes.
    precisions_cholesky_ : ndarray
        Upper-triangular ``U`` with ``precision = U U^T`` (full), or the
        square roots of the precisions (diag, spherical).
    converged_ : bool
    n_iter_ : int
        EM iterations of the kept initialisation.
    lower_bound_ : float
        Mean log-likelihood per sample at the last E-step of the kept run.
    lower_bounds_ : list of float
        The mean log-likelihood per sample at every E-step of the kept run
        (non-decreasing: EM's monotonicity).
    labels_ : ndarray of shape (n_samples,)
        Most probable component of each training row.
    n_features_in_ : int

    Notes
    -----
    X is centred and divided by the square root of its mean feature variance
    before EM (and the parameters mapped back), which makes the fit invariant
    to the scale of X and keeps the moments accurate for data far from the
    origin; log-likelihoods are reported in X's units. Computations are in
    float64.

    References
    ----------
    A. P. Dempster, N. M. Laird and D. B. Rubin, "Maximum likelihood from
    incomplete data via the EM algorithm", J. R. Stat. Soc. B 39(1), 1977.

    Examples
    --------
    >>> import numpy as np
    >>> from metriclust import GaussianMixture
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 6]
    >>> gm = GaussianMixture(2, random_state=0).fit(X)
    >>> sorted(np.round(gm.weights_, 2).tolist())
    [0.5, 0.5]
    >>> float(gm.predict_proba(X[:1]).max().round(3))
    1.0
    """

    # each parameter alone, checked on entry to fit; _check_params adds what depends on X
    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None)],
        "covariance_type": [Options(*_COV_TYPES)],
        "tol": [Interval(numbers.Real, 0, None)],
        "reg_covar": [Interval(numbers.Real, 0, None, finite=True)],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "init_params": [Options("kmeans", "random")],
        "weights_init": [None, "array-like"],
        "means_init": [None, "array-like"],
        "precisions_init": [None, "array-like"],
        "random_state": ["random_state"],
        "verbose": [Interval(numbers.Integral, 0, None)],
    }

    def __init__(self, n_components=1, *, covariance_type="full", tol=1e-3, reg_covar=1e-6,
                 max_iter=100, n_init=1, init_params="kmeans", weights_init=None,
                 means_init=None, precisions_init=None, random_state=None, verbose=0):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.weights_init = weights_init
        self.means_init = means_init
        self.precisions_init = precisions_init
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ checks
    def _check_params(self, X, K):
        d = X.shape[1]
        w0 = m0 = p0 = None
        if self.weights_init is not None:
            w0 = check_array(self.weights_init, name="weights_init", dtype=np.float64,
                             ensure_2d=False)
            if w0.shape != (K,) or np.any(w0 < 0) or not np.isclose(w0.sum(), 1.0):
                raise ValueError(f"weights_init must be {K} non-negative numbers summing "
                                 f"to 1, got {w0!r}.")
        if self.means_init is not None:
            m0 = check_array(self.means_init, name="means_init", dtype=np.float64)
            if m0.shape != (K, d):
                raise ValueError(f"means_init must have shape ({K}, {d}), got {m0.shape}.")
        if self.precisions_init is not None:
            p0 = check_array(self.precisions_init, name="precisions_init", dtype=np.float64,
                             ensure_2d=False)
            shape = {"full": (K, d, d), "diag": (K, d), "spherical": (K,)}[
                self.covariance_type]
            if p0.shape != shape:
                raise ValueError(f"precisions_init must have shape {shape} for "
                                 f"covariance_type={self.covariance_type!r}, got {p0.shape}.")
            if self.covariance_type == "full":
                if not np.allclose(p0, np.swapaxes(p0, 1, 2)):
                    raise ValueError("precisions_init must be symmetric.")
                if np.any(np.linalg.eigvalsh(p0) <= 0):
                    raise ValueError("precisions_init must be positive definite.")
            elif np.any(p0 <= 0):
                raise ValueError("precisions_init must be positive.")
        return w0, m0, p0

    # ----------------------------------------------------- scaled parameters
    def _factors(self, cov, reg):
        """Covariances (scaled units) + reg -> (prec factors for C, log det U)."""
        ct = self.covariance_type
        if ct == "full":
            d = cov.shape[1]
            c = cov + reg * np.eye(d)
            try:
                L = np.linalg.cholesky(c)
            except np.linalg.LinAlgError:
                raise ValueError(
                    "Fitting the mixture model failed because some components have "
                    "ill-defined empirical covariance; increase reg_covar.") from None
            U = np.swapaxes(np.linalg.inv(L), 1, 2)  # inv(L)^T: upper triangular
            U = np.triu(U)
            logdet = -np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
            return np.ascontiguousarray(U), logdet
        if ct == "diag":
            var = cov + reg
        else:  # spherical: one variance per component, shared by the features
            var = np.repeat(cov.mean(axis=1, keepdims=True) + reg, cov.shape[1], axis=1)
        if np.any(var <= 0):
            raise ValueError("Fitting the mixture model failed because some components "
                             "have zero variance; increase reg_covar.")
        prec = 1.0 / np.sqrt(var)
        return np.ascontiguousarray(prec), np.log(prec).sum(axis=1)

    def _log_norm(self, weights, logdet, d):
        with np.errstate(divide="ignore"):
            return np.ascontiguousarray(np.log(weights) + logdet - 0.5 * d * _LOG_2PI)

    def _mstep(self, Xs, resp, reg, nt):
        nk, means, cov = _mixture.mstep(Xs, resp, self.covariance_type == "full", nt)
        weights = nk / nk.sum()
        prec, logdet = self._factors(cov, reg)
        return weights, means, cov, prec, logdet

    # --------------------------------------------------------------------- fit
    def fit(self, X, y=None):
        """Estimate the mixture's parameters by EM.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : GaussianMixture
        """
        X, K, rng = check_fit_input(X, self.n_components, self.random_state,
                                    name="n_components")
        w0, m0, p0 = self._check_params(X, K)
        n, d = X.shape
        Xs, mean, scale = standardise(X)
        reg = float(self.reg_covar)
        nt = effective_n_threads()
        best = None
        for init in range(int(self.n_init)):
            if self.init_params == "kmeans":
                labels = kmeans(Xs, K, random_state=rng, n_init=1).labels
                resp = np.zeros((n, K))
                resp[np.arange(n), labels] = 1.0
            else:
                resp = rng.uniform(size=(n, K))
                resp /= resp.sum(axis=1, keepdims=True)
            weights, means, cov, prec, logdet = self._mstep(Xs, resp, reg, nt)
            if w0 is not None:
                weights = w0.copy()
            if m0 is not None:
                means = np.ascontiguousarray((m0 - mean) / scale)
            if p0 is not None:
                cov_init = self._precisions_to_cov(p0, d) / scale**2
                prec, logdet = self._factors(cov_init, 0.0)
            run = self._em(Xs, weights, means, prec, logdet, reg, nt, init)
            if best is None or run["lower_bound"] > best["lower_bound"]:
                best = run
        # a final E-step so that labels_ agree with predict(X)
        resp, _, _ = _mixture.estep(Xs, best["means"], best["prec"],
                                    self._log_norm(best["weights"], best["logdet"], d),
                                    True, False, nt)
        if not best["converged"]:
            warnings.warn(f"EM did not converge in max_iter={self.max_iter} iterations "
                          f"(tol={self.tol}); increase max_iter or tol.",
                          _with_sklearn_twin(ConvergenceWarning),
                          stacklevel=2)
        shift = d * np.log(scale)
        self._set_params(best, mean, scale)
        self.converged_ = best["converged"]
        self.n_iter_ = best["n_iter"]
        self.lower_bound_ = best["lower_bound"] - shift
        self.lower_bounds_ = [lb - shift for lb in best["history"]]
        self.labels_ = resp.argmax(axis=1)
        self.n_features_in_ = d
        return self

    def _precisions_to_cov(self, p0, d):
        if self.covariance_type == "full":
            return np.linalg.inv(p0)
        if self.covariance_type == "diag":
            return 1.0 / p0
        return np.repeat((1.0 / p0)[:, None], d, axis=1)

    def _em(self, Xs, weights, means, prec, logdet, reg, nt, init):
        n, d = Xs.shape
        lower_bound = -np.inf
        history = []
        converged = False
        n_iter = 0
        for n_iter in range(1, int(self.max_iter) + 1):
            prev = lower_bound
            resp, _, total = _mixture.estep(Xs, means, prec,
                                            self._log_norm(weights, logdet, d), True, False, nt)
            lower_bound = total / n
            history.append(lower_bound)
            weights, means, cov, prec, logdet = self._mstep(Xs, resp, reg, nt)
            if self.verbose:
                print(f"init {init} iteration {n_iter}: mean log-likelihood "
                      f"{lower_bound:.10g} (scaled units)")
            if abs(lower_bound - prev) < self.tol:
                converged = True
                break
        return dict(weights=weights, means=means, cov=cov, prec=prec, logdet=logdet,
                    lower_bound=lower_bound, history=history, converged=converged,
                    n_iter=n_iter)

    def _set_params(self, run, mean, scale):
        ct = self.covariance_type
        self._mean, self._scale = mean, scale
        self._prec_s, self._logdet_s = run["prec"], run["logdet"]
        self.weights_ = run["weights"]
        self._weights_s = run["weights"]
        self._means_s = run["means"]
        self.means_ = run["means"] * scale + mean
        prec = run["prec"] / scale
        if ct == "full":
            self.precisions_cholesky_ = prec
            self.precisions_ = prec @ np.swapaxes(prec, 1, 2)
            self.covariances_ = np.linalg.inv(self.precisions_)
            self.covariances_ = 0.5 * (self.covariances_ + np.swapaxes(self.covariances_, 1, 2))
        elif ct == "diag":
            self.precisions_cholesky_ = prec
            self.precisions_ = prec**2
            self.covariances_ = 1.0 / self.precisions_
        else:
            self.precisions_cholesky_ = prec[:, 0].copy()
            self.precisions_ = self.precisions_cholesky_**2
            self.covariances_ = 1.0 / self.precisions_

    # ------------------------------------------------------------ inference
    def _estep_new(self, X, want_resp, want_sll):
        Xs = rescaled_input(self, X, "means_")
        d = Xs.shape[1]
        return _mixture.estep(Xs, self._means_s, self._prec_s,
                              self._log_norm(self._weights_s, self._logdet_s, d),
                              want_resp, want_sll, effective_n_threads())

    def predict_proba(self, X):
        """Posterior probability of each component for each row, shape (n_samples, K)."""
        return self._estep_new(X, True, False)[0]

    def predict(self, X):
        """Most probable component of each row."""
        return self.predict_proba(X).argmax(axis=1)

    def score_samples(self, X):
        """Log-density :math:`\\log f(x_i)` of each row (in X's units)."""
        _, sll, _ = self._estep_new(X, False, True)
        return sll - self.n_features_in_ * np.log(self._scale)

    def score(self, X, y=None):
        """Mean log-likelihood per sample of X."""
        return float(np.mean(self.score_samples(X)))

    def _n_parameters(self):
        K, d = self.means_.shape
        cov = {"full": K * d * (d + 1) / 2, "diag": K * d, "spherical": K}[self.covariance_type]
        return int(cov + K * d + K - 1)

    def bic(self, X):
        """Bayesian information criterion of the model on X (lower is better)."""
        n = check_array(X).shape[0]
        return -2.0 * self.score(X) * n + self._n_parameters() * np.log(n)

    def aic(self, X):
        """Akaike information criterion of the model on X (lower is better)."""
        n = check_array(X).shape[0]
        return -2.0 * self.score(X) * n + 2.0 * self._n_parameters()

