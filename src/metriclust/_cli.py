"""The ``metriclust`` command line: ``demo`` and ``cluster``.

Public classes and functions:

.. autosummary::

   main          -- the entry point: ``metriclust demo`` / ``metriclust cluster``
   CLIError      -- an error shown as one line (exit status 2)
   parse_params  -- ``--param NAME=VALUE`` items, typed by each parameter's default
   read_pairs    -- a pairs file of 0-based row indices, checked against the rows
   csv_to_npy    -- a numeric CSV converted to a float64 .npy in chunks

Guarantees of ``cluster`` (also in the README):

- It never destroys: an output must be a missing path or an existing regular
  file (never a device, FIFO, directory or symbolic link), never an input, and
  ``--output`` and ``--transform`` must differ (the out-of-core copy
  OUTPUT-stem.X.npy obeys the same rules). Existing files are replaced only
  with ``--force``.
- It never loses: every output location is checked (a temporary file is
  created next to it) before the data are read; all outputs are written to
  those temporary files and renamed into place only at the end, so a failure
  or Ctrl-C leaves either every output or none (and no temporary file). A
  numeric first line is never taken for a header; an empty label is an error
  unless ``--empty-labels unlabeled``; ``--param`` values are parsed by the
  type of the parameter's default (``diagonal=false`` is False).
- It never lies: every expected failure ends as one line on stderr naming the
  file, line and column, and exit status 2; Ctrl-C returns within a second
  (the fit runs in a worker thread) with exit status 130, and SIGTERM does the
  same clean-up with exit status 143 (128 + 15, as a shell reports it).
"""

import argparse
import ast
import contextlib
import inspect
import os
import signal
import stat
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

METHODS = ("kmeans", "cpcm", "mmc", "cpduml")
# MMC without --dissimilar uses every pair not in --similar: warn above this many.
_QUADRATIC_WARN_PAIRS = 10_000_000


class CLIError(Exception):
    """An error to report as one line, without a traceback."""


# Only these become one line (exit status 2): CLIError, raised by the command
# line's own up-front checks, and InputError, the library's refusal of input the
# user can fix (a malformed file, data or pairs a method cannot use). Anything
# else -- a ValueError about an internal array, a NaN in a kernel -- is a bug
# and keeps its traceback.
def _user_errors():
    from ._core.validation import InputError

    return (CLIError, InputError)


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
    cl.add_argument("input", metavar="INPUT.csv", help="UTF-8 CSV of numeric columns")
    cl.add_argument("--method", choices=METHODS, default="kmeans")
    cl.add_argument("--n-clusters", type=int, required=True, metavar="K")
    cl.add_argument("--output", required=True, metavar="labels.csv",
                    help="where to write one label per input row")
    cl.add_argument("--transform", metavar="FILE",
                    help="also write the learned-space coordinates of every row")
    head = cl.add_mutually_exclusive_group()
    head.add_argument("--header", dest="header", action="store_const", const=True,
                      default="infer", help="the first line holds column names (default: "
                      "it does unless all its fields are numbers)")
    head.add_argument("--no-header", dest="header", action="store_const", const=False,
                      help="every line is data; columns are named 1, 2, ...")
    cl.add_argument("--label-column", metavar="NAME",
                    help="column with known classes: excluded from the features, used to score")
    cl.add_argument("--empty-labels", choices=("error", "unlabeled"), default="error",
                    help="an empty --label-column field is an error (default) or marks an "
                    "unlabeled row, left out of the scores")
    cl.add_argument("--similar", metavar="pairs.csv", help="MMC: pairs of row indices (0-based) "
                    "known to belong together")
    cl.add_argument("--dissimilar", metavar="pairs.csv", help="MMC: pairs known to differ "
                    "(default: all pairs not in --similar, O(N^2) per iteration)")
    cl.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="estimator parameter, repeatable (e.g. --param predictor=kernel)")
    cl.add_argument("--random-state", type=int, default=None, metavar="N")
    cl.add_argument("--threads", type=int, metavar="N", help="OpenMP threads (default: all)")
    cl.add_argument("--force", action="store_true", help="replace existing output files")
    cl.add_argument("--verbose", action="store_true", help="progress on stderr")
    cl.add_argument("--out-of-core", action="store_true",
                    help="convert INPUT.csv once to OUTPUT-stem.X.npy beside --output and fit "
                    "on it memory-mapped, in blocks of rows (automatic when the CSV is larger "
                    "than a third of the available memory; --method kmeans)")
    return parser


def main(argv=None):
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    outputs = _Outputs()
    previous_term = _raise_on_sigterm()
    try:
        with _one_line_warnings():
            if args.command == "demo":
                _check_demo(args)
                with _thread_limit(args.threads):
                    from ._demo import run_demo

                    run_demo(plot_dir=args.plot, random_state=args.random_state)
            else:
                _cluster(args, outputs)
    except _user_errors() as exc:
        outputs.discard()
        print(f"metriclust: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, _Terminated) as exc:
        outputs.discard()
        status, what = (143, "terminated") if isinstance(exc, _Terminated) \
            else (130, "interrupted")
        print(f"metriclust: {what}; no output written", file=sys.stderr, flush=True)
        if outputs.worker_busy.is_set():
            # The fit is inside a C kernel that cannot be stopped from here;
            # leave without waiting for it (nothing of ours is left to clean).
            sys.stdout.flush()
            os._exit(status)
        return status
    except BaseException:
        outputs.discard()
        raise
    finally:
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
    return 0


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread like KeyboardInterrupt for SIGINT."""


def _raise_on_sigterm():
    """Make SIGTERM unwind like Ctrl-C (temporary files removed); the previous
    handler, or None where signals cannot be set (not the main thread)."""
    def handler(signum, frame):
        raise _Terminated()

    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:
        return None


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


@contextlib.contextmanager
def _one_line_warnings():
    """Warnings as one line on stderr, without the source line numpy would show."""
    def show(message, category, filename, lineno, file=None, line=None):
        print(f"metriclust: warning: {message}", file=sys.stderr, flush=True)

    saved = warnings.showwarning
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = saved


def _check_demo(args):
    """``--plot``, checked before the work (``--threads`` is checked by
    :func:`_thread_limit`)."""
    if args.plot is None:
        return
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise CLIError("--plot needs matplotlib: pip install 'metriclust[plot]'")
    try:
        os.makedirs(args.plot, exist_ok=True)
        with tempfile.TemporaryFile(dir=args.plot):
            pass
    except OSError as exc:
        raise CLIError(f"--plot {args.plot}: cannot write there: "
                       f"{exc.strerror or exc}") from None


# ---------------------------------------------------------------- cluster


def _cluster(args, outputs):
    if args.n_clusters < 1:
        raise CLIError(f"--n-clusters must be >= 1, got {args.n_clusters}")
    if args.threads is not None and args.threads < 1:
        raise CLIError(f"--threads must be >= 1, got {args.threads}")
    if args.method != "mmc" and (args.similar or args.dissimilar):
        raise CLIError("--similar/--dissimilar apply to --method mmc only")
    if args.method == "mmc" and not args.similar:
        raise CLIError("--method mmc needs --similar pairs.csv (side information)")
    params = parse_params(args.param, args.method)
    estimator = _make_estimator(args.method, args.n_clusters, args.random_state, params,
                                args.verbose)
    inputs = [p for p in (args.input, args.similar, args.dissimilar) if p]
    for path in inputs:
        _check_input(path)
    # Every output location is checked, and its temporary file made, before any data are read.
    outputs.add("--output", args.output, inputs, args.force)
    if args.transform:
        outputs.add("--transform", args.transform, inputs, args.force)

    log = _Progress(args.verbose)
    # The work runs in a worker thread so that Ctrl-C is seen at once by this
    # (main) thread even while a C kernel holds the CPU with the GIL released.
    # (Thread.is_alive can be wrong after a join interrupted by Ctrl-C: an Event says it.)
    result = {}
    done = threading.Event()

    def work():
        try:
            with _thread_limit(args.threads):
                result["value"] = _run(args, estimator, outputs, log)
        except BaseException as exc:  # handed to the main thread
            result["error"] = exc
        finally:
            outputs.worker_busy.clear()
            done.set()

    outputs.worker_busy.set()
    threading.Thread(target=work, name="metriclust-fit", daemon=True).start()
    while not done.wait(0.05):
        pass
    if "error" in result:
        raise result["error"]
    outputs.commit()
    summary, scores = result["value"]
    print(summary)
    if scores:
        print(scores)
    log(f"done: read {log.marks['read']:.2f} s, "
        f"fit {log.marks['fit'] - log.marks['read']:.2f} s, "
        f"wrote {len(outputs.written)} file(s); total {log.elapsed():.2f} s")


def _run(args, estimator, outputs, log):
    """Read, fit, write the temporary outputs; the summary lines to print."""
    from ._core.validation import check_pairs
    from .datasets import _read_csv

    if args.out_of_core or os.path.getsize(args.input) > _available_memory() / 3:
        return _run_out_of_core(args, estimator, outputs, log)
    log(f"reading {args.input} ({os.path.getsize(args.input) / 1e6:.1f} MB)")
    table = _read_csv(args.input, label_column=args.label_column, label_dtype=str,
                      header=args.header, empty_labels=args.empty_labels,
                      missing_label_hint="--label-column names the column of known classes; "
                      "leave it out for a file without one")
    X, y = table.X, table.y
    if table.header_inferred:
        print(f"metriclust: note: line {table.first_data_line} of {args.input} is all numbers: "
              "read as data, not as a header (--header says otherwise; --no-header silences "
              "this)", file=sys.stderr)
    if X.shape[1] == 0:
        raise CLIError(f"{args.input} has no feature columns besides --label-column")
    log.mark("read")
    log(f"read {X.shape[0]} rows x {X.shape[1]} features in {log.marks['read']:.2f} s; "
        f"method {args.method}, K = {args.n_clusters}")
    _check_magnitude(table)
    if args.n_clusters > X.shape[0]:
        raise CLIError(f"--n-clusters {args.n_clusters} is larger than the number of rows "
                       f"({X.shape[0]}) in {args.input}")
    similar = dissimilar = None
    if args.method == "mmc":
        similar = check_pairs(read_pairs(args.similar, X.shape[0]), X.shape[0],
                              name=f"--similar {args.similar}")
        if args.dissimilar:
            dissimilar = check_pairs(read_pairs(args.dissimilar, X.shape[0]), X.shape[0],
                                     name=f"--dissimilar {args.dissimilar}")
        else:
            n = X.shape[0]
            n_pairs = n * (n - 1) // 2
            if n_pairs > _QUADRATIC_WARN_PAIRS:
                print(f"metriclust: warning: without --dissimilar, MMC treats all {n_pairs:,} "
                      f"pairs of the {n:,} rows not in --similar as dissimilar: every iteration "
                      "costs O(N^2) (hours for N = 1e5); give --dissimilar pairs.csv to bound it",
                      file=sys.stderr, flush=True)

    log(f"fitting {type(estimator).__name__}")
    # Estimators report progress on stdout; the CLI keeps stdout for results.
    try:
        with contextlib.redirect_stdout(sys.stderr), _stop_on_overflow():
            if args.method == "mmc":
                labels, Z = _fit_mmc(estimator, X, args.n_clusters, similar, dissimilar,
                                     args.random_state, int(args.verbose))
            else:
                labels = estimator.fit_predict(X)
                Z = estimator.transform(X) if args.transform else None
    except _Overflow as exc:
        raise CLIError(_overflow_message(table, args.method, exc)) from None
    log.mark("fit")
    log(f"fitted in {log.marks['fit'] - log.marks['read']:.2f} s")

    outputs.write("--output", ["label"], labels.reshape(-1, 1), fmt="%d")
    if args.transform:
        names = [f"z{j}" for j in range(Z.shape[1])]
        outputs.write("--transform", names, Z, fmt="%.10g")
    sizes = np.bincount(np.unique(labels, return_inverse=True)[1].reshape(-1))
    wrote = f"labels written to {args.output}"
    if args.transform:
        wrote += f", coordinates to {args.transform}"
    summary = (f"{args.method}: {X.shape[0]} rows in {len(sizes)} clusters "
               f"(sizes {', '.join(map(str, sizes))}); {wrote}")
    scores = None
    if y is not None:
        from .metrics import adjusted_rand_index, clustering_accuracy, normalized_mutual_info

        known = y != ""
        note = "" if known.all() else f" ({int(known.sum())} labeled rows of {y.shape[0]})"
        if known.any():
            yk, lk = y[known], labels[known]
            scores = (f"against {args.label_column}{note}: "
                      f"ARI {adjusted_rand_index(yk, lk):.4f}, "
                      f"NMI {normalized_mutual_info(yk, lk):.4f}, "
                      f"accuracy {clustering_accuracy(yk, lk):.4f}")
    return summary, scores


def _available_memory():
    """MemAvailable from /proc/meminfo in bytes (infinity where unknown)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return float("inf")


_NPY_HEADER_BYTES = 128   # a fixed-size .npy header, rewritten with the row count at the end


def _npy_header(n_rows, n_cols):
    # .npy format 1.0: magic, version, header length, a dict padded with spaces to a newline.
    text = repr({"descr": "<f8", "fortran_order": False, "shape": (n_rows, n_cols)})
    length = _NPY_HEADER_BYTES - 10
    if len(text) + 1 > length:
        raise CLIError(f"too many rows or columns for a .npy header: {n_rows} x {n_cols}")
    return b"\x93NUMPY\x01\x00" + length.to_bytes(2, "little") + \
        (text.ljust(length - 1) + "\n").encode("latin1")


def csv_to_npy(csv_path, npy_path, *, header="infer", log=None, chunk_bytes=64 << 20):
    """Convert a plain numeric CSV to a float64 .npy, ``chunk_bytes`` of text at a time.

    The header rule is the reader's (``metriclust.datasets.load_csv``); each
    chunk ends at a line end and goes through the C CSV parser, so memory is a
    chunk of text and its numbers whatever the file size. Written to a
    temporary file beside ``npy_path`` and renamed into place when complete.
    Returns ``(n_rows, n_cols)``.
    """
    from ._kernels._csv import parse_numeric
    from .datasets import _first_row, _is_number

    first, first_line = _first_row(csv_path)
    if first is None:
        raise CLIError(f"{csv_path} is empty")
    has_header = header is True or (header == "infer" and not all(map(_is_number, first)))
    skip = first_line if has_header else first_line - 1
    n_cols = len(first)
    total = os.path.getsize(csv_path)
    n_rows = 0
    fd, tmp = tempfile.mkstemp(prefix=".metriclust-", suffix=".npy.tmp",
                               dir=os.path.dirname(os.path.abspath(npy_path)))
    try:
        with open(csv_path, "rb") as src, os.fdopen(fd, "wb") as dst:
            dst.write(_npy_header(0, n_cols))
            if src.read(3) != b"\xef\xbb\xbf":
                src.seek(0)
            for _ in range(skip):
                src.readline()
            while True:
                start = src.tell()
                buf = src.read(chunk_bytes)
                if not buf:
                    break
                if not buf.endswith(b"\n"):
                    buf += src.readline()
                    if not buf.endswith(b"\n"):
                        buf += b"\n"
                data = parse_numeric(memoryview(buf), n_cols)
                if data is None or not np.all(np.isfinite(data)):
                    raise CLIError(
                        f"{csv_path}: the lines after byte {start} are not all plain finite "
                        f"numbers in {n_cols} columns; a CSV read out of core (--out-of-core, "
                        "or larger than memory) must hold numbers only")
                data.tofile(dst)
                n_rows += data.shape[0]
                if log is not None:
                    log(f"converting {csv_path} to {npy_path}: {src.tell() / 1e6:.0f} of "
                        f"{total / 1e6:.0f} MB, {n_rows} rows")
            dst.seek(0)
            dst.write(_npy_header(n_rows, n_cols))
        os.replace(tmp, npy_path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return n_rows, n_cols


def _run_out_of_core(args, estimator, outputs, log):
    """The CSV converted once to a .npy beside --output, then fitted memory-mapped."""
    if args.method != "kmeans":
        raise CLIError(f"{args.input}: a CSV read out of core (--out-of-core, or larger than "
                       "memory) is supported for --method kmeans only")
    if args.label_column or args.transform:
        raise CLIError("--label-column and --transform are not supported for a CSV read out "
                       "of core (--out-of-core, or larger than memory)")
    npy = os.path.splitext(args.output)[0] + ".X.npy"
    # The converted copy is an output too: the same rules (never a link, device,
    # FIFO or directory, never an input); it is replaced when older than the CSV.
    st = _lstat(npy)
    if st is not None:
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
            raise CLIError(f"{npy} (the converted copy of {args.input}) exists and is not a "
                           "regular file; move it away or choose another --output")
        if os.path.samefile(npy, args.input):
            raise CLIError(f"{npy} (the converted copy) is the input file; choose another "
                           "--output")
    if st is not None and st.st_mtime >= os.path.getmtime(args.input):
        log(f"reusing {npy} (newer than {args.input})")
    else:
        log(f"converting {args.input} ({os.path.getsize(args.input) / 1e6:.1f} MB) to {npy}")
        csv_to_npy(args.input, npy, header=args.header, log=log)
    X = np.load(npy, mmap_mode="r")
    log.mark("read")
    log(f"{X.shape[0]} rows x {X.shape[1]} features memory-mapped from {npy}; "
        f"method {args.method}, K = {args.n_clusters}")
    if args.n_clusters > X.shape[0]:
        raise CLIError(f"--n-clusters {args.n_clusters} is larger than the number of rows "
                       f"({X.shape[0]}) in {args.input}")
    log(f"fitting {type(estimator).__name__} by blocks of rows")
    try:
        with contextlib.redirect_stdout(sys.stderr), _stop_on_overflow():
            labels = estimator.fit(X).labels_
    except _Overflow as exc:
        raise CLIError(f"{args.input}: overflow in the fit ({exc}); rescale the data") from None
    log.mark("fit")
    log(f"fitted in {log.marks['fit'] - log.marks['read']:.2f} s")
    outputs.write_lines("--output", "label", labels)
    from ._core.streaming import label_counts

    sizes = label_counts(labels, int(labels.max()) + 1)
    sizes = sizes[sizes > 0]
    summary = (f"{args.method}: {X.shape[0]} rows in {len(sizes)} clusters "
               f"(sizes {', '.join(map(str, sizes))}); labels written to {args.output}")
    return summary, None


def _overflow_message(table, method=None, exc=None):
    """Say where the largest value in magnitude is (the usual cause of an overflow).

    Without ``exc``: the data were refused before the fit.
    """
    X = np.abs(table.X)
    r, c = np.unravel_index(int(np.argmax(X)), X.shape)
    if exc is None:  # refused before the fit: squared distances would overflow
        where = f"{table.path}, line {table.line_of(int(r))}, column {table.columns[c]!r}"
        return (f"{where}: values up to {X[r, c]:.3g} overflow float64 once squared (as "
                "in every distance); rescale the data")
    hint = "; or similar pairs at distance ~0" if method == "mmc" else ""
    return (f"{table.path}: the {method} fit overflowed float64 ({exc}); the largest value "
            f"in magnitude is {X[r, c]:.3g} at line {table.line_of(int(r))}, column "
            f"{table.columns[c]!r}: values too far apart in scale{hint}")


def _check_magnitude(table):
    """Refuse, naming line and column, the data every estimator's input check
    would refuse as too large (:func:`~metriclust._core.validation.max_abs_value`),
    before fitting on them."""
    from ._core.validation import max_abs_value

    X = table.X
    if X.size and np.max(np.abs(X)) > max_abs_value(X.dtype, *X.shape):
        raise CLIError(_overflow_message(table))


class _Overflow(FloatingPointError):
    """A float64 overflow inside the fit: the data's scale, not a bug (the data
    were checked finite and below the overflow limit before the fit)."""


def _numpy_error(kind, flag):
    if kind == "overflow":
        raise _Overflow("overflow in a numpy operation")
    raise FloatingPointError(f"{kind} in a numpy operation inside the fit")


@contextlib.contextmanager
def _stop_on_overflow():
    """Stop the fit at the first float64 overflow, as :class:`_Overflow` (the
    user's to fix by rescaling); an invalid operation (0/0, inf - inf) raises a
    plain FloatingPointError, which keeps its traceback: a NaN from data that
    passed the checks is a bug. A C kernel's non-finite result
    (``NonFiniteResult``) counts as overflow: the kernels test for it because
    data within the limit can still overflow there (similar pairs at distance
    ~0 scale MMC's metric up)."""
    from ._kernels._status import NonFiniteResult

    with np.errstate(over="call", invalid="call", call=_numpy_error):
        try:
            yield
        except NonFiniteResult as exc:
            raise _Overflow(str(exc)) from exc


def _make_estimator(method, n_clusters, random_state, params, verbose):
    """The estimator, its parameters checked here (``_parameter_constraints``),
    before any data are read: a refusal names the parameter, as one line."""
    import metriclust

    cls = getattr(metriclust, _CLASS_NAMES[method])
    if method == "mmc":  # MMC learns the metric; constrained k-means clusters (see _fit_mmc)
        estimator = cls(random_state=random_state)
    else:
        estimator = cls(n_clusters=n_clusters, random_state=random_state)
    if verbose and "verbose" in estimator.get_params(deep=False):
        params.setdefault("verbose", 1)
    estimator.set_params(**params)
    try:
        estimator._validate_params()
    except (ValueError, TypeError) as exc:
        raise CLIError(f"--param: {exc}") from None
    return estimator


_CLASS_NAMES = {"kmeans": "KMeans", "cpcm": "CPCM", "mmc": "MMC", "cpduml": "CPDUML"}


def _fit_mmc(mmc, X, n_clusters, similar, dissimilar, random_state, verbose=0):
    """The MMC paper's variant 4: constrained k-means in the learned metric."""
    from .constraints import ConstrainedKMeans

    mmc.fit(X, similar=similar, dissimilar=dissimilar)
    Z = mmc.transform(X)
    ckm = ConstrainedKMeans(n_clusters=n_clusters, random_state=random_state, verbose=verbose)
    return ckm.fit(Z, must_link=similar).labels_, Z


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def parse_params(items, method):
    """``["a=1", "b=kernel"]`` -> ``{"a": 1, "b": "kernel"}``, typed by each parameter's default.

    A parameter whose default is a bool takes true/false/yes/no/on/off/1/0
    (any case) and nothing else; other values are Python literals, else strings,
    and the estimator checks them.
    """
    import metriclust

    signature = inspect.signature(getattr(metriclust, _CLASS_NAMES[method]).__init__)
    defaults = {name: p.default for name, p in signature.parameters.items() if name != "self"}
    params = {}
    for item in items:
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name.isidentifier():
            raise CLIError(f"--param expects NAME=VALUE, got {item!r}")
        if name not in defaults:
            raise CLIError(f"unknown parameter(s) {name} for {method}; valid: "
                           f"{', '.join(sorted(n for n in defaults if n != 'n_clusters'))}")
        if name == "n_clusters":
            raise CLIError("set the number of clusters with --n-clusters, not --param")
        if isinstance(defaults[name], bool):
            if text.lower() in _TRUE:
                value = True
            elif text.lower() in _FALSE:
                value = False
            else:
                raise CLIError(f"--param {name} takes true or false, got {text!r}")
        else:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                value = text
        params[name] = value
    return params


class _Progress:
    def __init__(self, enabled):
        self.enabled = enabled
        self.start = time.perf_counter()
        self.marks = {"read": 0.0, "fit": 0.0}

    def elapsed(self):
        return time.perf_counter() - self.start

    def mark(self, name):
        self.marks[name] = self.elapsed()

    def __call__(self, message):
        if self.enabled:
            print(f"[{self.elapsed():7.2f} s] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- files


def _check_input(path):
    if not os.path.exists(path):
        raise CLIError(f"{path}: CSV file not found")
    if not os.path.isfile(path):
        raise CLIError(f"{path} is not a regular file")
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise CLIError(f"{path}: cannot read it: {exc.strerror or exc}") from None


def read_pairs(path, n_rows):
    """Pairs of 0-based row indices: two integer columns, read like the data file.

    The header rule, BOM, quoting and error messages are those of the data
    reader; an integer may be written as a float (``2.0``).
    """
    from ._core.validation import InputError
    from .datasets import _read_csv

    try:
        table = _read_csv(path, header="infer")
    except InputError as exc:
        raise CLIError(f"{str(exc).rstrip('.')} (a pairs file holds two integer row indices "
                       "per line)") from None
    P = table.X
    if P.shape[1] != 2:
        raise CLIError(f"{path}: expected two columns of row indices, got {P.shape[1]}")
    bad = (P != np.floor(P)) | (P < 0) | (P >= n_rows)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        value = P[r, c]
        what = ("is not an integer row index" if value != np.floor(value)
                else f"is out of range: the data have {n_rows} rows (0-based indices)")
        raise CLIError(f"{path}, line {table.line_of(int(r))}, column {table.columns[c]!r}: "
                       f"{value:.17g} {what}")
    pairs = P.astype(np.int64)
    same = pairs[:, 0] == pairs[:, 1]
    if same.any():
        r = int(np.argmax(same))
        raise CLIError(f"{path}, line {table.line_of(r)}: pairs row {pairs[r, 0]} with itself")
    return pairs


class _Outputs:
    """Output files written all or none: temporary files renamed into place at the end.

    Symbolic links are refused rather than followed (write to the target
    directly): replacing a link by a file, or writing through it to a place the
    user did not name, would both surprise. A new file gets the mode
    ``0o666 & ~umask``; a replaced file keeps its mode.
    """

    def __init__(self):
        self.paths = {}   # flag -> (path, temporary path, mode)
        self.written = []
        self.worker_busy = threading.Event()   # set while the worker thread runs

    def add(self, flag, path, inputs, force):
        st = _lstat(path)
        if st is not None:
            if stat.S_ISLNK(st.st_mode):
                raise CLIError(f"{flag} {path} is a symbolic link; give the path of its target "
                               "(metriclust neither replaces nor follows links)")
            if not stat.S_ISREG(st.st_mode):
                raise CLIError(f"{flag} {path} exists and is not a regular file")
            for other in inputs:
                if os.path.samefile(path, other):
                    raise CLIError(f"{flag} {path} is an input file; choose another name")
            if not force:
                raise CLIError(f"{flag} {path} exists; pass --force to overwrite it")
        for other_flag, (other, _, _) in self.paths.items():
            if _same_path(path, other):
                raise CLIError(f"{flag} and {other_flag} name the same file {path}")
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            what = "is not a directory" if os.path.exists(directory) else "does not exist"
            raise CLIError(f"{flag} {path}: {directory} {what}")
        try:
            fd, tmp = tempfile.mkstemp(prefix=".metriclust-", suffix=".tmp", dir=directory)
        except OSError as exc:
            raise CLIError(f"{flag} {path}: cannot create a file in {directory}: "
                           f"{exc.strerror}") from None
        os.close(fd)
        self.paths[flag] = (path, tmp, stat.S_IMODE(st.st_mode) if st is not None
                            else 0o666 & ~_umask())

    def write(self, flag, header, values, *, fmt):
        path, tmp, mode = self.paths[flag]
        try:
            with open(tmp, "w") as fh:
                np.savetxt(fh, values, fmt=fmt, delimiter=",", header=",".join(header),
                           comments="")
            os.chmod(tmp, mode)
        except OSError as exc:
            raise CLIError(f"{flag} {path}: {exc.strerror}") from None

    def write_lines(self, flag, header, labels, *, rows_per_write=1 << 20):
        """Integer labels one per line, a million at a time (no N-row text in memory)."""
        path, tmp, mode = self.paths[flag]
        try:
            with open(tmp, "w") as fh:
                fh.write(header + "\n")
                for start in range(0, labels.shape[0], rows_per_write):
                    chunk = labels[start:start + rows_per_write].tolist()
                    fh.write("\n".join(map(str, chunk)) + "\n")
            os.chmod(tmp, mode)
        except OSError as exc:
            raise CLIError(f"{flag} {path}: {exc.strerror}") from None

    def commit(self):
        """Rename every temporary file into place (after every one was written)."""
        for flag, (path, tmp, _) in list(self.paths.items()):
            st = _lstat(path)
            if st is not None and not stat.S_ISREG(st.st_mode):  # changed since the check
                raise CLIError(f"{flag} {path} is no longer a regular file; nothing written")
        # Ctrl-C or SIGTERM now would leave a partial set: hold them until the
        # renames are done.
        previous = {sig: signal.signal(sig, signal.SIG_IGN)
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            for flag, (path, tmp, _) in list(self.paths.items()):
                os.replace(tmp, path)
                del self.paths[flag]
                self.written.append(path)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def discard(self):
        for _, tmp, _ in self.paths.values():
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self.paths.clear()


def _lstat(path):
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _same_path(a, b):
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    with contextlib.suppress(OSError):
        return os.path.samefile(a, b)
    return False


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
