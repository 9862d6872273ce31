"""Symmetric eigendecomposition with fallbacks, and the projections MMC needs.

Public classes and functions:

.. autosummary::

   eigh_robust             -- eigenpairs of a symmetric matrix, with a fallback driver
   project_spectraplex     -- projection onto {B >= 0, tr B <= radius}
   project_capped_simplex  -- projection onto {x >= 0, sum x <= radius}
   psd_factor              -- ``Lt`` with ``Lt Lt^T`` the PSD matrix, tiny eigenvalues dropped

``eigh_robust`` guards against LAPACK's occasional "eigenvalues did not
converge" (metric-learn issue #306): numpy's ``syevd`` first (no scipy import
on the way: a solver calls this every iteration and a fresh process pays for
``scipy.linalg``'s import), then scipy's drivers "evr" and "ev", then an SVD of
the symmetrized matrix. ``project_spectraplex`` is the exact Euclidean
projection onto ``{B >= 0, tr B <= 1}``: one eigendecomposition, then the
eigenvalues are projected onto the capped simplex (Duchi et al. 2008).
"""

import numpy as np

__all__ = ["eigh_robust", "project_capped_simplex", "project_spectraplex",
           "psd_factor"]


def eigh_robust(M):
    """Eigenvalues (ascending) and eigenvectors of the symmetric part of ``M``."""
    S = 0.5 * (M + M.T)
    if not np.all(np.isfinite(S)):
        raise FloatingPointError("eigh_robust: matrix has non-finite entries")
    try:
        return np.linalg.eigh(S)
    except np.linalg.LinAlgError:
        pass
    from scipy import linalg

    for driver in ("evr", "ev"):
        try:
            return linalg.eigh(S, driver=driver, check_finite=False)
        except (linalg.LinAlgError, ValueError):
            continue
    # Last resort: for symmetric S = U diag(s) V^T, eigenvalue i is s_i * sign(u_i . v_i).
    U, s, Vt = linalg.svd(S, lapack_driver="gesvd", check_finite=False)
    lam = s * np.sign(np.einsum("ij,ji->i", U.T, Vt.T))
    order = np.argsort(lam)
    return lam[order], U[:, order]


def project_capped_simplex(v, radius=1.0):
    """Euclidean projection of ``v`` onto ``{x >= 0, sum x <= radius}``."""
    v = np.asarray(v, dtype=np.float64)
    pos = np.maximum(v, 0.0)
    if pos.sum() <= radius:
        return pos
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - radius
    k = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    tau = css[rho] / (rho + 1.0)
    return np.maximum(v - tau, 0.0)


def project_spectraplex(B, radius=1.0):
    """Projection onto ``{B >= 0, tr B <= radius}``; returns ``(P, eigvals, eigvecs)``."""
    lam, V = eigh_robust(B)
    lp = project_capped_simplex(lam, radius)
    return (V * lp) @ V.T, lp, V


def psd_factor(lam, V, rtol=1e-13):
    """``Lt`` (p x r) with ``Lt @ Lt.T = V diag(lam) V^T``, dropping tiny eigenvalues.

    Columns are ordered by decreasing eigenvalue; at least one column is kept.
    """
    lam = np.maximum(lam, 0.0)
    order = np.argsort(lam)[::-1]
    top = lam[order[0]] if lam.size else 0.0
    keep = order[lam[order] > rtol * top] if top > 0 else order[:1]
    return np.ascontiguousarray(V[:, keep] * np.sqrt(lam[keep]))
