"""Benchmark: metriclust.GaussianMixture vs scikit-learn's GaussianMixture, per EM iteration.

Both start from the same explicit parameters (weights, means, precisions), so
neither runs k-means; the time of one EM iteration is
``(t(max_iter = 1 + m) - t(max_iter = 1)) / m`` (the difference cancels the
validation and the initial M-step), with ``tol=0`` so that both run every
iteration. Repeats are interleaved (ours, sklearn, ours, ...); medians are
reported with their ratio. The log-likelihoods of the two fitted models are
printed too (they agree to rounding: same init, same EM).

Usage: python benchmarks/bench_mixture.py [--n N] [--d D] [--k K] [--repeats R] [--iters M]
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse
import warnings

import numpy as np


def make_data(n, d, k, rng):
    centers = rng.normal(scale=4.0, size=(k, d))
    labels = rng.integers(k, size=n)
    A = rng.normal(size=(k, d, d)) / np.sqrt(d) + np.eye(d)
    X = centers[labels] + np.einsum("nd,nde->ne", rng.normal(size=(n, d)), A[labels])
    return np.ascontiguousarray(X)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--cov", nargs="+", default=["full", "diag"])
    args = ap.parse_args()

    from sklearn.mixture import GaussianMixture as SKGM

    from metriclust import GaussianMixture

    from metriclust._core.threads import effective_n_threads

    header, _ = _common.machine_header("bench_mixture", effective_n_threads())
    print("\n".join(header))
    print(f"N = {args.n}, K = {args.k}, {args.iters} EM iterations timed by difference, "
          f"{args.repeats} interleaved repeats, medians\n")
    print(_common.markdown_table(["d", "covariance", "metriclust s/iter",
                                  "scikit-learn s/iter", "ratio", "score difference", "load"]))
    rng = np.random.default_rng(0)
    for d in args.d:
        X = make_data(args.n, d, args.k, rng)
        var = float(np.mean(np.var(X, axis=0)))
        for cov in args.cov:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                init = GaussianMixture(args.k, covariance_type=cov, max_iter=1, tol=0,
                                       random_state=0).fit(X[:100_000])
            common = dict(weights_init=init.weights_, means_init=init.means_,
                          precisions_init=init.precisions_, covariance_type=cov, tol=0)

            def ours(m):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # tol=0: "did not converge"
                    return GaussianMixture(args.k, max_iter=m, **common).fit(X)

            def theirs(m):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return SKGM(args.k, max_iter=m, reg_covar=1e-6 * var, **common).fit(X)

            m = 1 + args.iters
            med = _common.medians(_common.interleaved(
                {"ours 1": lambda: ours(1), "ours m": lambda: ours(m),
                 "sklearn 1": lambda: theirs(1), "sklearn m": lambda: theirs(m)},
                args.repeats, warmup=False))
            a = (med["ours m"] - med["ours 1"]) / args.iters
            b = (med["sklearn m"] - med["sklearn 1"]) / args.iters
            diff = abs(ours(m).score(X) - theirs(m).score(X))
            print(_common.markdown_row([d, cov, a, b, f"{b / a:.2f}x", f"{diff:.1e}",
                                        _common.load_average()]), flush=True)


if __name__ == "__main__":
    main()
