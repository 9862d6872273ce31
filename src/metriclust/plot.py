"""Plots of clusterings and learned metrics (optional extra ``plot``: matplotlib).

Public functions and classes:

.. autosummary::

   plot_clusters            -- scatter of 2-D data (or its first two principal components)
   plot_learned_space       -- scatter of estimator.transform(X)
   plot_displacement_field  -- the CPD-UML deformation x -> x + v(x) on a grid
   plot_metric              -- heat map of a Mahalanobis matrix
   plot_history             -- objective per iteration from a fitted estimator
   plot_n_clusters          -- the criteria of select_n_clusters against K

matplotlib is imported inside each function, so ``import metriclust`` never
imports it. Every function takes an optional ``ax`` (or ``fig``) and returns
the matplotlib object it drew on, so plots compose into larger figures.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> from metriclust import KMeans
>>> from metriclust.datasets import make_moons
>>> from metriclust.plot import plot_clusters
>>> X, y = make_moons(200, random_state=0)
>>> ax = plot_clusters(X, KMeans(2, random_state=0).fit_predict(X))
"""

import numpy as np

from ._core.base import check_is_fitted
from ._core.validation import check_array

__all__ = [
    "plot_clusters",
    "plot_learned_space",
    "plot_displacement_field",
    "plot_metric",
    "plot_history",
    "plot_n_clusters",
]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "metriclust.plot needs matplotlib: pip install 'metriclust[plot]'"
        ) from exc
    return plt


def _axes(ax):
    if ax is None:
        _, ax = _pyplot().subplots(figsize=(4.5, 4))
    return ax


def _two_dimensions(X):
    """X itself if 2-D, else its first two principal components (and a note)."""
    X = check_array(X, name="X", dtype=np.float64)
    if X.shape[1] == 1:
        return np.column_stack([X[:, 0], np.zeros(len(X))]), ("x0", "")
    if X.shape[1] == 2:
        return X, ("x0", "x1")
    Xc = X - X.mean(axis=0)
    # Thin SVD of the N x p data: no p x p covariance, no N x N anything.
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    return Xc @ vt[:2].T, ("PC 1", "PC 2")


def plot_clusters(X, labels, ax=None, *, title=None, s=12):
    """Scatter 2-D data (or its first two principal components) coloured by label.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    labels : array-like of shape (n_samples,)
    ax : matplotlib Axes, optional
    title : str, optional
    s : float
        Marker size.

    Returns
    -------
    ax : matplotlib Axes
    """
    Z, (xlabel, ylabel) = _two_dimensions(X)
    labels = np.asarray(labels)
    if labels.shape != (Z.shape[0],):
        raise ValueError(f"labels must have shape ({Z.shape[0]},), got {labels.shape}.")
    ax = _axes(ax)
    _, codes = np.unique(labels, return_inverse=True)
    ax.scatter(Z[:, 0], Z[:, 1], c=codes.reshape(-1), cmap="tab10", s=s,
               vmin=0, vmax=9, linewidths=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax


def plot_learned_space(estimator, X, labels=None, ax=None, *, title=None):
    """Scatter ``estimator.transform(X)`` (first two principal components if wider).

    ``labels`` defaults to ``estimator.predict(X)`` when the estimator predicts.
    """
    check_is_fitted(estimator)
    Z = estimator.transform(X)
    if labels is None:
        labels = estimator.predict(X) if hasattr(estimator, "predict") else np.zeros(len(Z))
    return plot_clusters(Z, labels, ax=ax,
                         title=title or f"{type(estimator).__name__}: learned space")


def plot_displacement_field(cpduml, X, ax=None, *, grid=20, title=None):
    """The CPD-UML deformation ``x -> x + v(x)`` on a grid over 2-D data.

    Arrows go from each grid point to where the learned transformation moves
    it, as in the CPD-UML paper's Fig. 1(c-d). The training points are drawn
    ``X`` (usually the training data) is drawn underneath, coloured by the
    estimator's predictions.
    """
    check_is_fitted(cpduml)
    if cpduml.n_features_in_ != 2:
        raise ValueError("plot_displacement_field needs an estimator fitted on 2-D data, "
                         f"got n_features_in_={cpduml.n_features_in_}.")
    X = check_array(X, name="X", dtype=np.float64)
    ax = _axes(ax)
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = 0.05 * (hi - lo + 1e-12)
    gx, gy = np.meshgrid(np.linspace(lo[0] - pad[0], hi[0] + pad[0], grid),
                         np.linspace(lo[1] - pad[1], hi[1] + pad[1], grid))
    G = np.column_stack([gx.ravel(), gy.ravel()])
    V = np.asarray(cpduml.transform(G), dtype=np.float64) - G
    ax.scatter(X[:, 0], X[:, 1], c=cpduml.predict(X), cmap="tab10", vmin=0, vmax=9,
               s=10, linewidths=0, alpha=0.6)
    ax.quiver(G[:, 0], G[:, 1], V[:, 0], V[:, 1], angles="xy", scale_units="xy",
              scale=1, width=0.003, color="0.25")
    ax.set_title(title or "CPD-UML displacement field")
    return ax


def plot_metric(A, ax=None, *, feature_names=None, title=None):
    """Heat map of a Mahalanobis matrix (a 1-D array is drawn as its diagonal)."""
    A = np.asarray(A, dtype=np.float64)
    if A.ndim == 1:
        A = np.diag(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square matrix or a vector, got shape {A.shape}.")
    ax = _axes(ax)
    lim = float(np.abs(A).max()) or 1.0
    im = ax.imshow(A, cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    if feature_names is not None:
        ticks = np.arange(A.shape[0])
        ax.set_xticks(ticks, feature_names, rotation=90)
        ax.set_yticks(ticks, feature_names)
    ax.set_title(title or "learned metric A")
    return ax


def plot_history(estimator, ax=None, *, title=None):
    """Objective (blur ratio, J, ...) per iteration from ``estimator.history_``."""
    check_is_fitted(estimator)
    history = getattr(estimator, "history_", None)
    if history is None:
        raise ValueError(f"{type(estimator).__name__} records no history_.")
    h = np.asarray(history, dtype=np.float64).ravel()
    ax = _axes(ax)
    ax.plot(np.arange(len(h)), h, marker="o", ms=3)
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective")
    ax.set_title(title or f"{type(estimator).__name__}: history")
    return ax


def plot_n_clusters(selection, ax=None, *, title=None):
    """The criteria of :func:`metriclust.selection.select_n_clusters` against K.

    Distortion on the left axis; silhouette and gap (with its standard error)
    on a right axis; each criterion's suggested K marked by a dotted line.
    """
    ks = np.asarray(selection.n_clusters)
    ax = _axes(ax)
    ax.plot(ks, selection.distortion, marker="o", ms=3, color="C0", label="distortion")
    ax.set_xlabel("number of clusters K")
    ax.set_ylabel("within-cluster distortion")
    handles = ax.get_lines()[:]
    if selection.silhouette is not None or selection.gap is not None:
        right = ax.twinx()
        if selection.silhouette is not None:
            handles += right.plot(ks, selection.silhouette, marker="s", ms=3, color="C1",
                                  label="silhouette")
        if selection.gap is not None:
            handles.append(right.errorbar(ks, selection.gap, yerr=selection.gap_std,
                                          marker="^", ms=3, color="C2", capsize=2,
                                          label="gap").lines[0])
        right.set_ylabel("silhouette / gap")
    for i, (name, k) in enumerate(sorted(selection.best.items())):
        ax.axvline(k, ls=":", color=f"C{ {'distortion': 0, 'silhouette': 1, 'gap': 2}[name] }",
                   alpha=0.7)
    ax.legend(handles=handles, loc="upper center", fontsize="small")
    ax.set_title(title or "choosing K: " + ", ".join(f"{n} {k}" for n, k in
                                                    sorted(selection.best.items())))
    return ax
