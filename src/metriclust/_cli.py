"""The ``metriclust`` command line: ``demo`` and ``cluster``.

Every expected failure (bad file, bad value, bad parameter) ends as one line on
stderr and exit status 2 — never a traceback.
"""

import argparse
import ast
import contextlib
import os
import sys
import tempfile
import time

import numpy as np

METHODS = ("kmeans", "cpcm", "mmc", "cpduml")


class CLIError(Exception):
    """An error to report as one line, without a traceback."""


def _build_parser():
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="metriclust",
        description="Clustering with learned distance metrics (CPCM, MMC, CPD-UML).",
    )
    parser.add_argument("--version", action="version", version=f"metriclust {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="show k-means against the learned metrics on paper data")
    demo.add_argument("--plot", metavar="DIR", help="write one PNG per data set into DIR")
    demo.add_argument("--random-state", type=int, default=0, metavar="N")
    demo.add_argument("--threads", type=int, metavar="N", help="OpenMP threads (default: all)")

    cl = sub.add_parser("cluster", help="cluster the rows of a CSV file")
    cl.add_argument("input", metavar="INPUT.csv", help="CSV with a header line, numeric columns")
    cl.add_argument("--method", choices=METHODS, default="kmeans")
    cl.add_argument("--n-clusters", type=int, required=True, metavar="K")
    cl.add_argument("--output", required=True, metavar="labels.csv",
                    help="where to write one label per input row")
    cl.add_argument("--transform", metavar="FILE",
                    help="also write the learned-space coordinates of every row")
    cl.add_argument("--label-column", metavar="NAME",
                    help="column with known classes: excluded from the features, used to score")
    cl.add_argument("--similar", metavar="pairs.csv", help="MMC: pairs of row indices (0-based) "
                    "known to belong together")
    cl.add_argument("--dissimilar", metavar="pairs.csv", help="MMC: pairs known to differ "
                    "(default: all pairs not in --similar)")
    cl.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="estimator parameter, repeatable (e.g. --param predictor=kernel)")
    cl.add_argument("--random-state", type=int, default=None, metavar="N")
    cl.add_argument("--threads", type=int, metavar="N", help="OpenMP threads (default: all)")
    cl.add_argument("--force", action="store_true", help="overwrite existing output files")
    cl.add_argument("--verbose", action="store_true", help="progress on stderr")
    return parser


def main(argv=None):
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        with _thread_limit(args.threads):
            if args.command == "demo":
                from ._demo import run_demo

                run_demo(plot_dir=args.plot, random_state=args.random_state)
            else:
                _cluster(args)
    except CLIError as exc:
        print(f"metriclust: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, OSError, ImportError) as exc:
        print(f"metriclust: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("metriclust: interrupted", file=sys.stderr)
        return 130
    return 0


@contextlib.contextmanager
def _thread_limit(threads):
    if threads is None:
        yield
        return
    if threads < 1:
        raise CLIError(f"--threads must be >= 1, got {threads}")
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads):
        yield


# ---------------------------------------------------------------- cluster


def _cluster(args):
    from ._core.validation import check_pairs

    outputs = [args.output] + ([args.transform] if args.transform else [])
    for path in outputs:
        if os.path.exists(path) and not args.force:
            raise CLIError(f"{path} exists; pass --force to overwrite it")
    from .datasets import load_csv

    X, y = load_csv(args.input, label_column=args.label_column, label_dtype=str)
    if args.n_clusters < 1:
        raise CLIError(f"--n-clusters must be >= 1, got {args.n_clusters}")
    if args.n_clusters > X.shape[0]:
        raise CLIError(f"--n-clusters {args.n_clusters} is larger than the number of rows "
                       f"({X.shape[0]}) in {args.input}")
    if args.method != "mmc" and (args.similar or args.dissimilar):
        raise CLIError("--similar/--dissimilar apply to --method mmc only")
    similar = dissimilar = None
    if args.method == "mmc":
        if not args.similar:
            raise CLIError("--method mmc needs --similar pairs.csv (side information)")
        similar = check_pairs(read_pairs(args.similar), X.shape[0], name=f"--similar {args.similar}")
        if args.dissimilar:
            dissimilar = check_pairs(read_pairs(args.dissimilar), X.shape[0],
                                     name=f"--dissimilar {args.dissimilar}")

    estimator = _make_estimator(args.method, args.n_clusters, args.random_state,
                                parse_params(args.param), args.verbose)
    log = _Progress(args.verbose)
    log(f"{args.input}: {X.shape[0]} rows x {X.shape[1]} features; method {args.method}, "
        f"K = {args.n_clusters}")
    # Estimators report progress on stdout; the CLI keeps stdout for results.
    with contextlib.redirect_stdout(sys.stderr):
        if args.method == "mmc":
            labels, Z = _fit_mmc(estimator, X, args.n_clusters, similar, dissimilar,
                                 args.random_state)
        else:
            labels = estimator.fit_predict(X)
            Z = estimator.transform(X) if args.transform else None
    log(f"fitted in {log.elapsed():.2f} s")

    write_atomic(args.output, ["label"], labels.reshape(-1, 1), fmt="%d")
    if args.transform:
        names = [f"z{j}" for j in range(Z.shape[1])]
        write_atomic(args.transform, names, Z, fmt="%.10g")
    sizes = np.bincount(np.unique(labels, return_inverse=True)[1].reshape(-1))
    print(f"{args.method}: {X.shape[0]} rows in {len(sizes)} clusters "
          f"(sizes {', '.join(map(str, sizes))}); labels written to {args.output}")
    if y is not None:
        from .metrics import adjusted_rand_index, clustering_accuracy, normalized_mutual_info

        print(f"against {args.label_column}: ARI {adjusted_rand_index(y, labels):.4f}, "
              f"NMI {normalized_mutual_info(y, labels):.4f}, "
              f"accuracy {clustering_accuracy(y, labels):.4f}")


def _make_estimator(method, n_clusters, random_state, params, verbose):
    import metriclust

    name = {"kmeans": "KMeans", "cpcm": "CPCM", "mmc": "MMC", "cpduml": "CPDUML"}[method]
    cls = getattr(metriclust, name)
    if method == "mmc":  # MMC learns the metric; constrained k-means clusters (see _fit_mmc)
        estimator = cls(random_state=random_state)
    else:
        estimator = cls(n_clusters=n_clusters, random_state=random_state)
    valid = estimator.get_params(deep=False)
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise CLIError(f"unknown parameter(s) {', '.join(unknown)} for {method}; valid: "
                       f"{', '.join(sorted(valid))}")
    if "n_clusters" in params:
        raise CLIError("set the number of clusters with --n-clusters, not --param")
    if verbose and "verbose" in valid:
        params.setdefault("verbose", 1)
    return estimator.set_params(**params)


def _fit_mmc(mmc, X, n_clusters, similar, dissimilar, random_state):
    """The MMC paper's variant 4: constrained k-means in the learned metric."""
    from .constraints import ConstrainedKMeans

    mmc.fit(X, similar=similar, dissimilar=dissimilar)
    Z = mmc.transform(X)
    ckm = ConstrainedKMeans(n_clusters=n_clusters, random_state=random_state)
    return ckm.fit(Z, must_link=similar).labels_, Z


def parse_params(items):
    """``["a=1", "b=kernel"]`` -> ``{"a": 1, "b": "kernel"}`` (Python literals, else strings)."""
    params = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise CLIError(f"--param expects NAME=VALUE, got {item!r}")
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            value = text.strip()
        params[name] = value
    return params


class _Progress:
    def __init__(self, enabled):
        self.enabled = enabled
        self.start = time.perf_counter()

    def elapsed(self):
        return time.perf_counter() - self.start

    def __call__(self, message):
        if self.enabled:
            print(f"[{self.elapsed():7.2f} s] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- files


def read_pairs(path):
    """Read pairs of 0-based row indices: two integer columns, optional header."""
    if not os.path.isfile(path):
        raise CLIError(f"{path}: no such file")
    with open(path) as fh:
        lines = [(i, ln.strip()) for i, ln in enumerate(fh, start=1) if ln.strip()]
    pairs = []
    for k, (line_no, text) in enumerate(lines):
        fields = [f.strip() for f in text.split(",")]
        try:
            values = [int(f) for f in fields]
        except ValueError:
            if k == 0:
                continue  # a header line
            raise CLIError(f"{path}, line {line_no}: expected two integer indices, "
                           f"got {text!r}") from None
        if len(values) != 2:
            raise CLIError(f"{path}, line {line_no}: expected two indices, got {len(values)}")
        pairs.append(values)
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def write_atomic(path, header, values, *, fmt):
    """Write a CSV next to ``path`` and rename it into place (no half-written files)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".metriclust-", suffix=".csv", dir=directory)
    try:
        with os.fdopen(fd, "w") as fh:
            np.savetxt(fh, values, fmt=fmt, delimiter=",", header=",".join(header), comments="")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
