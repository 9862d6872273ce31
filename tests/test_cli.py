"""The command line, run as a user runs it: a subprocess, exit codes, files, messages."""

import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "metriclust", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def assert_clean_error(proc, *fragments):
    """Non-zero exit, one line on stderr naming the problem, no traceback."""
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture
def blobs_csv(tmp_path):
    rng = np.random.default_rng(0)
    centers = np.array([[0, 0], [6, 0], [0, 6]])
    X = np.vstack([c + rng.normal(size=(30, 2)) for c in centers])
    y = np.repeat(["a", "b", "c"], 30)
    path = tmp_path / "blobs.csv"
    with open(path, "w") as fh:
        fh.write("x,y,species\n")
        for row, label in zip(X, y):
            fh.write(f"{row[0]:.6f},{row[1]:.6f},{label}\n")
    return path, X, y


def test_version():
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("metriclust ")


def test_cluster_kmeans_writes_labels_and_scores(blobs_csv, tmp_path):
    path, X, y = blobs_csv
    out, coords = tmp_path / "labels.csv", tmp_path / "z.csv"
    proc = run("cluster", path, "--method", "kmeans", "--n-clusters", 3, "--label-column",
               "species", "--output", out, "--transform", coords, "--random-state", 0)
    assert proc.returncode == 0, proc.stderr
    labels = np.loadtxt(out, skiprows=1, dtype=int)
    assert labels.shape == (90,)
    # Three well-separated blobs: every class is one cluster.
    for cls in "abc":
        assert len(set(labels[y == cls])) == 1
    assert "ARI 1.0000" in proc.stdout
    Z = np.loadtxt(coords, delimiter=",", skiprows=1)
    assert Z.shape == (90, 3)  # k-means' transform: distances to the 3 centers


def test_refuses_to_overwrite_without_force(blobs_csv, tmp_path):
    path, _, _ = blobs_csv
    out = tmp_path / "labels.csv"
    out.write_text("keep me\n")
    proc = run("cluster", path, "--n-clusters", 2, "--label-column", "species", "--output", out)
    assert_clean_error(proc, "exists", "--force")
    assert out.read_text() == "keep me\n"
    proc = run("cluster", path, "--n-clusters", 2, "--label-column", "species", "--output", out,
               "--force")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("label\n")


def test_missing_file(tmp_path):
    proc = run("cluster", tmp_path / "nope.csv", "--n-clusters", 2, "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "nope.csv", "not found")


@pytest.mark.parametrize("body, fragments", [
    ("a,b\n1,2\n3\n", ["line 3", "expected 2 fields", "got 1"]),
    ("a,b\n1,2\n3,x\n", ["line 3", "column 'b'", "could not convert 'x'"]),
    ("a,b\n1,2\n,4\n", ["line 3", "column 'a'", "empty field"]),
    ("a,b\n1,2\nnan,4\n", ["line 3", "column 'a'", "non-finite"]),
    ("", ["is empty"]),
    ("a,b\n", ["no data rows"]),
])
def test_bad_csv(tmp_path, body, fragments):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    proc = run("cluster", path, "--n-clusters", 1, "--output", tmp_path / "o.csv")
    assert_clean_error(proc, *fragments)
    assert not (tmp_path / "o.csv").exists()


def test_too_many_clusters(blobs_csv, tmp_path):
    path, _, _ = blobs_csv
    proc = run("cluster", path, "--n-clusters", 500, "--label-column", "species",
               "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "--n-clusters 500", "90")


def test_unknown_label_column(blobs_csv, tmp_path):
    path, _, _ = blobs_csv
    proc = run("cluster", path, "--n-clusters", 2, "--label-column", "kind",
               "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "no column named 'kind'", "species")


def test_unknown_and_malformed_params(blobs_csv, tmp_path):
    path, _, _ = blobs_csv
    proc = run("cluster", path, "--n-clusters", 2, "--label-column", "species",
               "--param", "colour=blue", "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "unknown parameter", "colour", "max_iter")
    proc = run("cluster", path, "--n-clusters", 2, "--label-column", "species",
               "--param", "max_iter", "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "NAME=VALUE")
    proc = run("cluster", path, "--n-clusters", 2, "--label-column", "species",
               "--param", "max_iter=-3", "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "max_iter")


def test_param_is_passed_through(blobs_csv, tmp_path):
    path, _, _ = blobs_csv
    proc = run("cluster", path, "--n-clusters", 3, "--label-column", "species",
               "--param", "init='random'", "--param", "n_init=3", "--output", tmp_path / "o.csv",
               "--random-state", 1)
    assert proc.returncode == 0, proc.stderr


def test_mmc_pairs_out_of_range_and_missing(blobs_csv, tmp_path):
    path, _, _ = blobs_csv
    pairs = tmp_path / "similar.csv"
    pairs.write_text("i,j\n0,1\n2,90\n")
    proc = run("cluster", path, "--method", "mmc", "--n-clusters", 3, "--label-column",
               "species", "--similar", pairs, "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "similar.csv", "90", "out of range")
    proc = run("cluster", path, "--method", "mmc", "--n-clusters", 3, "--label-column",
               "species", "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "--similar")
    pairs.write_text("0,1\n2,x\n")
    proc = run("cluster", path, "--method", "mmc", "--n-clusters", 3, "--label-column",
               "species", "--similar", pairs, "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "line 2", "integer")


def test_mmc_end_to_end(blobs_csv, tmp_path):
    path, _, y = blobs_csv
    pairs = tmp_path / "similar.csv"
    idx = {c: np.flatnonzero(y == c) for c in "abc"}
    rows = [(idx[c][k], idx[c][k + 1]) for c in "abc" for k in range(0, 10, 2)]
    pairs.write_text("".join(f"{i},{j}\n" for i, j in rows))
    out = tmp_path / "o.csv"
    proc = run("cluster", path, "--method", "mmc", "--n-clusters", 3, "--label-column",
               "species", "--similar", pairs, "--output", out, "--random-state", 0,
               "--param", "diagonal=True")
    assert proc.returncode == 0, proc.stderr
    labels = np.loadtxt(out, skiprows=1, dtype=int)
    # Must-linked points end up together (constrained k-means in the learned metric).
    for i, j in rows:
        assert labels[i] == labels[j]


@pytest.mark.parametrize("method", ["cpcm", "cpduml"])
def test_unsupervised_methods_end_to_end(blobs_csv, tmp_path, method):
    path, _, _ = blobs_csv
    out = tmp_path / "o.csv"
    proc = run("cluster", path, "--method", method, "--n-clusters", 3, "--label-column",
               "species", "--output", out, "--random-state", 0, "--verbose", "--threads", 1)
    assert proc.returncode == 0, proc.stderr
    assert "fitted in" in proc.stderr  # progress goes to stderr
    assert "ARI" in proc.stdout
    assert np.loadtxt(out, skiprows=1, dtype=int).shape == (90,)


def test_bad_threads(blobs_csv, tmp_path):
    path, _, _ = blobs_csv
    proc = run("cluster", path, "--n-clusters", 2, "--label-column", "species",
               "--threads", 0, "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "--threads")


def test_demo_runs_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    proc = run("demo", "--plot", tmp_path / "plots")
    assert proc.returncode == 0, proc.stderr
    for heading in ("Two parallel lines", "Xing", "Two moons", "Three clouds"):
        assert heading in proc.stdout
    # The point of the demo: on each case, the method made for it beats k-means.
    tables = parse_demo_tables(proc.stdout)
    winners = {"Two parallel lines": "CPCM", "Xing": "MMC full", "Two moons": "CPD-UML",
               "Three clouds": "CPCM"}
    for case, method in winners.items():
        (title,) = [t for t in tables if t.startswith(case)]
        rows = tables[title]
        kmeans_acc = rows["k-means (Euclidean)"][0]
        best = max(acc for name, (acc, *_rest) in rows.items() if name.startswith(method))
        assert best >= 0.95 and best > kmeans_acc + 0.1, (title, rows)
    pngs = sorted((tmp_path / "plots").glob("*.png"))
    assert len(pngs) == 4
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def parse_demo_tables(text):
    """{title: {method: (accuracy, ARI, blur ratio, seconds)}} from the demo's markdown."""
    tables, title = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:]
            tables[title] = {}
        elif line.startswith("| ") and title and not line.startswith("| method"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            tables[title][cells[0]] = tuple(float(c) for c in cells[1:])
    return tables


# ------------------------------------------------------------------ issue #22
# The command line never destroys, never loses, never lies. Device nodes are
# stood in for by FIFOs and symbolic links in the test's own directory.


def write_csv(path, X, header="a,b", labels=None):
    with open(path, "w") as fh:
        if header is not None:
            fh.write(header + "\n")
        for i, row in enumerate(X):
            fields = [f"{v:.6f}" for v in row] + ([str(labels[i])] if labels is not None else [])
            fh.write(",".join(fields) + "\n")
    return path


def leftovers(directory):
    """Temporary files the CLI would leave behind."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".metriclust-"))


def cluster(path, out, *more, k=2):
    return run("cluster", path, "--n-clusters", k, "--output", out, "--random-state", 0, *more)


@pytest.fixture
def data_csv(tmp_path):
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8])
    return write_csv(tmp_path / "data.csv", X)


# -- destroys or overwrites ---------------------------------------------------

def test_output_fifo_is_refused_even_with_force(data_csv, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = cluster(data_csv, fifo, "--force")
    assert_clean_error(proc, str(fifo), "not a regular file")
    assert proc.returncode == 2
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert leftovers(tmp_path) == []


def test_input_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "in.csv"
    os.mkfifo(fifo)  # reading it would block: it is refused before any open
    proc = cluster(fifo, tmp_path / "o.csv")
    assert_clean_error(proc, "in.csv", "not a regular file")


def test_output_directory_is_refused(data_csv, tmp_path):
    proc = cluster(data_csv, tmp_path, "--force")
    assert_clean_error(proc, "not a regular file")


@pytest.mark.parametrize("target_exists", [True, False])
def test_output_symlink_is_refused_and_left_alone(data_csv, tmp_path, target_exists):
    # A link to a device node (/dev/null) would be the dangerous case; a link to a
    # file of ours shows the same decision without touching system files.
    target = tmp_path / "target.csv"
    if target_exists:
        target.write_text("precious\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    proc = cluster(data_csv, link, "--force")
    assert_clean_error(proc, "symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert (target.read_text() == "precious\n") if target_exists else not target.exists()


@pytest.mark.parametrize("kind", ["fifo", "symlink", "input"])
def test_out_of_core_copy_follows_the_output_rules(tmp_path, kind):
    # --out-of-core writes OUTPUT-stem.X.npy beside --output: a FIFO, a link or
    # the input itself in that place is refused and left as it was.
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 2))
    out = tmp_path / "o.csv"
    npy = tmp_path / "o.X.npy"
    if kind == "fifo":
        os.mkfifo(npy)
        data = write_csv(tmp_path / "data.csv", X)
    elif kind == "symlink":
        target = tmp_path / "precious.npy"
        target.write_bytes(b"precious")
        npy.symlink_to(target)
        data = write_csv(tmp_path / "data.csv", X)
    else:
        data = write_csv(npy, X)   # a CSV that happens to be named like the copy
    before = None if kind == "fifo" else data.read_bytes()
    proc = cluster(data, out, "--out-of-core")
    assert_clean_error(proc, "o.X.npy")
    assert not out.exists() and leftovers(tmp_path) == []
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(npy).st_mode)
    elif kind == "symlink":
        assert npy.is_symlink() and target.read_bytes() == b"precious"
    else:
        assert data.read_bytes() == before


def test_output_equal_to_input_is_refused(data_csv, tmp_path):
    before = data_csv.read_bytes()
    proc = cluster(data_csv, data_csv, "--force")
    assert_clean_error(proc, "input")
    assert data_csv.read_bytes() == before
    # also through another name for the same file (a hard link)
    alias = tmp_path / "alias.csv"
    os.link(data_csv, alias)
    proc = cluster(data_csv, alias, "--force")
    assert_clean_error(proc, "input")
    assert data_csv.read_bytes() == before


def test_pairs_file_is_an_input_too(data_csv, tmp_path):
    pairs = tmp_path / "similar.csv"
    pairs.write_text("0,1\n")
    proc = run("cluster", data_csv, "--method", "mmc", "--similar", pairs, "--n-clusters", 2,
               "--output", pairs, "--force")
    assert_clean_error(proc, "input")
    assert pairs.read_text() == "0,1\n"


def test_transform_equal_to_output_is_refused(data_csv, tmp_path):
    out = tmp_path / "o.csv"
    proc = cluster(data_csv, out, "--transform", tmp_path / "." / "o.csv")
    assert_clean_error(proc, "--transform", "--output", "same file")
    assert not out.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_outputs_honour_the_umask(data_csv, tmp_path, umask, mode):
    out, coords = tmp_path / "o.csv", tmp_path / "z.csv"
    proc = subprocess.run([sys.executable, "-m", "metriclust", "cluster", str(data_csv),
                           "--n-clusters", "2", "--output", str(out), "--transform", str(coords)],
                          capture_output=True, text=True, timeout=300, umask=umask)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == mode
    assert stat.S_IMODE(coords.stat().st_mode) == mode


def test_replaced_output_keeps_its_mode(data_csv, tmp_path):
    out = tmp_path / "o.csv"
    out.write_text("old\n")
    out.chmod(0o640)
    proc = cluster(data_csv, out, "--force")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("label\n")
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


# -- leaves a partial set -----------------------------------------------------

def test_missing_transform_directory_fails_before_anything_is_written(data_csv, tmp_path):
    out = tmp_path / "labels.csv"
    proc = cluster(data_csv, out, "--transform", tmp_path / "nodir" / "t.csv", "--verbose")
    assert_clean_error(proc, "--transform", "nodir", "does not exist")
    assert ".metriclust-" not in proc.stderr  # names the user's path, not a temp file
    assert not out.exists() and leftovers(tmp_path) == []


def test_unwritable_output_directory_fails_before_reading(data_csv, tmp_path, monkeypatch,
                                                          capsys):
    # Run as root, a read-only directory is still writable: the refusal of the
    # file system is simulated where the CLI meets it (creating its temporary file).
    import tempfile

    from metriclust import _cli

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    read = []
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    monkeypatch.setattr("metriclust.datasets._read_csv", lambda *a, **k: read.append(a))
    out = tmp_path / "o.csv"
    assert _cli.main(["cluster", str(data_csv), "--n-clusters", "2", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out) in err and "Permission denied" in err
    assert read == [] and not out.exists()


def test_output_directory_that_is_a_file(data_csv, tmp_path):
    proc = cluster(data_csv, data_csv / "o.csv")
    assert_clean_error(proc, "is not a directory")


def test_outputs_are_checked_before_the_data_are_read(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3,x\n")
    proc = cluster(bad, tmp_path / "nodir" / "o.csv")
    assert_clean_error(proc, "nodir", "does not exist")  # not the input's line 3


def test_failed_fit_leaves_no_output(tmp_path):
    # The run fails (values too large) after both temporary outputs exist: neither appears.
    path = write_csv(tmp_path / "huge.csv", [[0.0], [1.0], [2.0], [1e200]], header="a")
    pairs = tmp_path / "s.csv"
    pairs.write_text("0,1\n")
    out, coords = tmp_path / "o.csv", tmp_path / "z.csv"
    proc = run("cluster", path, "--method", "mmc", "--n-clusters", 2, "--similar", pairs,
               "--output", out, "--transform", coords)
    assert_clean_error(proc)
    assert not out.exists() and not coords.exists() and leftovers(tmp_path) == []


def test_ctrl_c_while_writing_the_transform_leaves_no_labels(data_csv, tmp_path, monkeypatch,
                                                             capsys):
    # The case: labels written, then Ctrl-C during the transform. The
    # interrupt is raised where the transform is written (a signal cannot be
    # timed to land there from outside); existing outputs stay as they were.
    from metriclust import _cli

    original = _cli._Outputs.write

    def write(self, flag, *args, **kwargs):
        if flag == "--transform":
            raise KeyboardInterrupt
        return original(self, flag, *args, **kwargs)

    monkeypatch.setattr(_cli._Outputs, "write", write)
    out, coords = tmp_path / "o.csv", tmp_path / "z.csv"
    out.write_text("old labels\n")
    status = _cli.main(["cluster", str(data_csv), "--n-clusters", "2", "--output", str(out),
                        "--transform", str(coords), "--force"])
    assert status == 130
    assert "interrupted; no output written" in capsys.readouterr().err
    assert out.read_text() == "old labels\n" and not coords.exists()
    assert leftovers(tmp_path) == []


def test_force_replaces_every_output(data_csv, tmp_path):
    out, coords = tmp_path / "o.csv", tmp_path / "z.csv"
    out.write_text("old\n")
    coords.write_text("old\n")
    proc = cluster(data_csv, out, "--transform", coords, "--force")
    assert proc.returncode == 0, proc.stderr
    assert np.loadtxt(out, skiprows=1).shape == (40,)
    assert np.loadtxt(coords, delimiter=",", skiprows=1).shape == (40, 2)
    assert f"labels written to {out}, coordinates to {coords}" in proc.stdout
    assert leftovers(tmp_path) == []


def big_mmc_problem(tmp_path, n):
    """MMC with only --similar on n rows: every iteration visits all n^2 / 2 pairs."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    path = tmp_path / "big.csv"
    np.savetxt(path, X, fmt="%.5f", delimiter=",", header="a,b,c", comments="")
    pairs = tmp_path / "s.csv"
    pairs.write_text("".join(f"{2 * i},{2 * i + 1}\n" for i in range(20)))
    return path, pairs


@pytest.mark.parametrize("sig, status, message", [
    (signal.SIGINT, 130, "interrupted; no output written"),
    # SIGTERM (kill, a batch scheduler's time limit) removes the temporary
    # outputs as Ctrl-C does, and exits 143 = 128 + SIGTERM.
    (signal.SIGTERM, 143, "terminated; no output written"),
], ids=["ctrl_c", "sigterm"])
def test_signal_during_a_long_fit_returns_at_once_and_leaves_nothing(tmp_path, sig, status,
                                                                     message):
    path, pairs = big_mmc_problem(tmp_path, 40_000)
    out, coords = tmp_path / "o.csv", tmp_path / "z.csv"
    proc = subprocess.Popen(
        [sys.executable, "-m", "metriclust", "cluster", str(path), "--method", "mmc",
         "--similar", str(pairs), "--n-clusters", "2", "--output", str(out),
         "--transform", str(coords), "--verbose"],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    for line in proc.stderr:  # wait until the fit (C kernels, GIL released) is running
        if "fitting" in line:
            break
    time.sleep(1.0)
    assert proc.poll() is None, "the fit ended too soon to test the signal"
    assert leftovers(tmp_path) != []  # the temporary outputs exist while it runs
    proc.send_signal(sig)
    # Without the worker thread this waits for the C loop (minutes); the bound is
    # a hang detector, not a timing measurement.
    proc.wait(timeout=30)
    assert proc.returncode == status, proc.stderr.read()
    assert message in proc.stderr.read()
    assert not out.exists() and not coords.exists() and leftovers(tmp_path) == []


# -- loses data silently ------------------------------------------------------

def test_headerless_numeric_csv_keeps_its_first_row(tmp_path):
    path = tmp_path / "noheader.csv"
    path.write_text("0,0\n0.1,0\n5,5\n5.1,5\n")
    out = tmp_path / "o.csv"
    proc = cluster(path, out)
    assert proc.returncode == 0, proc.stderr
    assert np.loadtxt(out, skiprows=1).shape == (4,)   # 4 lines in, 4 labels out
    assert "line 1" in proc.stderr and "all numbers" in proc.stderr  # said, not silent
    proc = cluster(path, out, "--no-header", "--force")
    assert proc.returncode == 0 and proc.stderr == ""
    assert np.loadtxt(out, skiprows=1).shape == (4,)
    proc = cluster(path, out, "--header", "--force")  # the user says line 1 is a header
    assert proc.returncode == 0, proc.stderr
    assert np.loadtxt(out, skiprows=1).shape == (3,)


def test_no_header_names_columns_by_position(tmp_path):
    path = tmp_path / "noheader.csv"
    path.write_text("0,0,x\n0.1,0,x\n5,5,y\n5.1,5,y\n")
    proc = cluster(path, tmp_path / "o.csv", "--no-header", "--label-column", "3")
    assert proc.returncode == 0, proc.stderr
    assert "against 3: ARI 1.0000" in proc.stdout


@pytest.mark.parametrize("first_line", ["\ufeff0,999", "0.0,999.0", '"0","999"'])
def test_pairs_first_line_is_data(data_csv, tmp_path, first_line):
    # The first pair is out of range (40 rows): reading it proves it was not
    # dropped as a header (a BOM or float-formatted ints used to be).
    pairs = tmp_path / "s.csv"
    pairs.write_text(first_line + "\n2,3\n", encoding="utf-8")
    proc = run("cluster", data_csv, "--method", "mmc", "--similar", pairs, "--n-clusters", 2,
               "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "s.csv", "line 1", "999", "out of range")
    assert proc.returncode == 2


def test_pairs_float_formatted_integers_are_read_as_indices(data_csv, tmp_path):
    pairs = tmp_path / "s.csv"
    pairs.write_text("i,j\n0.0,1.0\n2,3.0\n")
    proc = run("cluster", data_csv, "--method", "mmc", "--similar", pairs, "--n-clusters", 2,
               "--output", tmp_path / "o.csv")
    assert proc.returncode == 0, proc.stderr
    pairs.write_text("0,1\n2,3.5\n")
    proc = run("cluster", data_csv, "--method", "mmc", "--similar", pairs, "--n-clusters", 2,
               "--output", tmp_path / "o2.csv")
    assert_clean_error(proc, "line 2", "3.5", "not an integer")


def test_empty_label_refused_or_unlabeled_on_request(tmp_path):
    rng = np.random.default_rng(2)
    X = np.vstack([rng.normal(size=(10, 2)), rng.normal(size=(10, 2)) + 8])
    labels = ["a"] * 10 + ["b"] * 10
    labels[3] = ""
    path = write_csv(tmp_path / "d.csv", X, header="x,y,cls", labels=labels)
    proc = cluster(path, tmp_path / "o.csv", "--label-column", "cls")
    assert_clean_error(proc, "line 5", "column 'cls'", "empty label")
    proc = cluster(path, tmp_path / "o.csv", "--label-column", "cls", "--empty-labels",
                   "unlabeled")
    assert proc.returncode == 0, proc.stderr
    assert "(19 labeled rows of 20): ARI 1.0000" in proc.stdout


def mmc_transform(data_csv, tmp_path, *params):
    pairs = tmp_path / "s.csv"
    pairs.write_text("0,1\n2,3\n20,21\n22,23\n")
    coords = tmp_path / "z.csv"
    proc = run("cluster", data_csv, "--method", "mmc", "--similar", pairs, "--n-clusters", 2,
               "--output", tmp_path / "o.csv", "--transform", coords, "--force",
               "--random-state", 0, *params)
    assert proc.returncode == 0, proc.stderr
    return np.loadtxt(coords, delimiter=",", skiprows=1)


def test_param_bool_is_typed(data_csv, tmp_path):
    full = mmc_transform(data_csv, tmp_path)
    for spelling in ("false", "False", "0", "no"):
        np.testing.assert_array_equal(
            mmc_transform(data_csv, tmp_path, "--param", f"diagonal={spelling}"), full)
    diagonal = mmc_transform(data_csv, tmp_path, "--param", "diagonal=true")
    assert not np.allclose(diagonal, full)
    proc = run("cluster", data_csv, "--method", "mmc", "--similar", tmp_path / "s.csv",
               "--n-clusters", 2, "--output", tmp_path / "o.csv", "--param", "diagonal=maybe")
    assert_clean_error(proc, "diagonal", "true or false", "maybe")


def test_api_refuses_a_string_where_a_bool_belongs():
    from metriclust import MMC

    for value in ("false", "True", 1, None):
        with pytest.raises(ValueError, match="diagonal"):
            MMC(diagonal=value).fit([[0.0], [1.0], [2.0]], similar=[[0, 1]])


# -- tracebacks -----------------------------------------------------------------

def test_mmc_overflow_is_one_line_naming_the_value(tmp_path):
    path = write_csv(tmp_path / "huge.csv", [[0.0], [1.0], [2.0], [1e200]], header="a")
    pairs = tmp_path / "s.csv"
    pairs.write_text("0,1\n")
    proc = run("cluster", path, "--method", "mmc", "--n-clusters", 2, "--similar", pairs,
               "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "huge.csv", "line 5", "column 'a'", "overflow")
    assert proc.returncode == 2


def test_overflow_inside_the_fit_is_one_line(tmp_path):
    # Moderate values, but the similar pair is at distance 1e-160: MMC's metric
    # (scaled so that the similar pairs' distances sum to 1) overflows in the C kernel.
    path = tmp_path / "tight.csv"
    path.write_text("a\n0\n1e-160\n1\n2\n5\n")
    pairs = tmp_path / "s.csv"
    pairs.write_text("0,1\n")
    proc = run("cluster", path, "--method", "mmc", "--n-clusters", 2, "--similar", pairs,
               "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "tight.csv", "overflowed float64", "line 6", "column 'a'",
                       "similar pairs at distance ~0")
    assert proc.returncode == 2 and leftovers(tmp_path) == []


@pytest.mark.parametrize("method", ["kmeans", "cpcm", "cpduml"])
def test_huge_values_are_one_line_for_every_method(tmp_path, method):
    path = write_csv(tmp_path / "huge.csv", [[0.0, 1], [1.0, 0], [2.0, 2], [1e200, 3]])
    proc = run("cluster", path, "--method", method, "--n-clusters", 2, "--output",
               tmp_path / "o.csv")
    assert_clean_error(proc, "huge.csv", "line 5", "column 'a'", "overflow")
    assert proc.returncode == 2


def test_overlong_field_is_one_line(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("a,b\n1,2\n3," + "4" * 200_000 + "\n")
    proc = cluster(path, tmp_path / "o.csv", k=1)
    assert_clean_error(proc, "long.csv", "line 3", "131072")
    path.write_text('a,b\n1,2\n3,"4\n' + "5" * 200_000 + "\n")  # an unbalanced quote
    proc = cluster(path, tmp_path / "o.csv", k=1)
    assert_clean_error(proc, "long.csv", "131072")


def test_pair_value_overflow_is_one_line(data_csv, tmp_path):
    pairs = tmp_path / "s.csv"
    pairs.write_text("0,1\n2,99999999999999999999\n")
    proc = run("cluster", data_csv, "--method", "mmc", "--n-clusters", 2, "--similar", pairs,
               "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "s.csv", "line 2", "column '2'", "out of range", "40 rows")
    assert proc.returncode == 2


def test_latin1_file_is_one_line(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("a,b,cls\n1,2,x\n3,4,caf\u00e9\n".encode("latin-1"))
    proc = cluster(path, tmp_path / "o.csv", "--label-column", "cls")
    assert_clean_error(proc, "latin.csv", "line 3", "field 3", "0xe9", "UTF-8")
    assert proc.returncode == 2


def test_warnings_are_one_line_without_source(tmp_path):
    # MMC stopped early by max_iter warns (ConvergenceWarning): one line, no code.
    rng = np.random.default_rng(3)
    path = write_csv(tmp_path / "d.csv", rng.normal(size=(30, 2)))
    pairs = tmp_path / "s.csv"
    pairs.write_text("0,1\n2,3\n")
    proc = run("cluster", path, "--method", "mmc", "--n-clusters", 2, "--similar", pairs,
               "--output", tmp_path / "o.csv", "--param", "max_iter=1")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines and all(line.startswith("metriclust: warning: ") for line in lines), lines
    assert "warnings.warn" not in proc.stderr and ".py:" not in proc.stderr


def test_missing_label_column_speaks_cli(blobs_csv, tmp_path):
    path, _, _ = blobs_csv
    proc = cluster(path, tmp_path / "o.csv", "--label-column", "kind")
    assert_clean_error(proc, "no column named 'kind'", "--label-column")
    assert "label_column=None" not in proc.stderr


def test_internal_errors_are_not_disguised(data_csv, tmp_path, monkeypatch):
    # issue #13: a ValueError that is not about the user's input keeps its traceback.
    from metriclust import _cli

    class Boom(ValueError):
        pass

    def broken(*args, **kwargs):
        raise Boom("an internal invariant failed")

    monkeypatch.setattr("metriclust.kmeans.KMeans.fit_predict", broken)
    with pytest.raises(Boom):
        _cli.main(["cluster", str(data_csv), "--n-clusters", "2",
                   "--output", str(tmp_path / "o.csv")])
    assert leftovers(tmp_path) == [] and not (tmp_path / "o.csv").exists()


# Only what the command line can pin on the user's input or flags is one line;
# each case below was one line (exit 2, no traceback) before issue #13's fix.

def _raises(exc):
    def broken(*args, **kwargs):
        raise exc
    return broken


@pytest.mark.parametrize("make_error", [
    lambda: ValueError("X has 3 columns where the kernel expected 2"),     # names X
    lambda: TypeError("X must be float64 in this internal helper"),
    lambda: OSError(5, "Input/output error in an internal cache"),
], ids=["ValueError", "TypeError", "OSError"])
def test_internal_errors_naming_X_keep_their_traceback(data_csv, tmp_path, monkeypatch,
                                                      make_error):
    from metriclust import _cli

    error = make_error()
    monkeypatch.setattr("metriclust.kmeans.KMeans.fit_predict", _raises(error))
    with pytest.raises(type(error)) as info:
        _cli.main(["cluster", str(data_csv), "--n-clusters", "2",
                   "--output", str(tmp_path / "o.csv")])
    assert info.value is error
    assert leftovers(tmp_path) == [] and not (tmp_path / "o.csv").exists()


def test_internal_validation_of_a_derived_array_keeps_its_traceback(data_csv, tmp_path,
                                                                   monkeypatch):
    # An internal check_array on an array the library made (here NaN in it) is a
    # bug, even though the error comes from _core/validation.py.
    from metriclust import _cli
    from metriclust._core.validation import check_array

    def fit_predict(self, X):
        return check_array(np.full_like(X, np.nan), name="X")

    monkeypatch.setattr("metriclust.kmeans.KMeans.fit_predict", fit_predict)
    with pytest.raises(ValueError, match="NaN"):
        _cli.main(["cluster", str(data_csv), "--n-clusters", "2",
                   "--output", str(tmp_path / "o.csv")])


def test_invalid_operation_in_the_fit_is_not_reported_as_overflow(data_csv, tmp_path,
                                                                  monkeypatch):
    from metriclust import _cli

    def fit_predict(self, X):
        zero = np.zeros(X.shape[0])
        return (zero / zero).astype(int)    # 0/0: a NaN the data did not cause

    monkeypatch.setattr("metriclust.kmeans.KMeans.fit_predict", fit_predict)
    with pytest.raises(FloatingPointError, match="invalid"):
        _cli.main(["cluster", str(data_csv), "--n-clusters", "2",
                   "--output", str(tmp_path / "o.csv")])


def test_overflow_in_the_fit_is_one_line(data_csv, tmp_path, monkeypatch, capsys):
    from metriclust import _cli

    def fit_predict(self, X):
        return (np.full(X.shape[0], 1e300) * 1e300).astype(int)

    monkeypatch.setattr("metriclust.kmeans.KMeans.fit_predict", fit_predict)
    status = _cli.main(["cluster", str(data_csv), "--n-clusters", "2",
                        "--output", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert status == 2 and "overflowed float64" in err and len(err.splitlines()) == 1


def test_internal_error_in_the_reader_keeps_its_traceback(data_csv, tmp_path, monkeypatch):
    from metriclust import _cli

    error = ValueError("could not broadcast input array from shape (3,) into shape (2,)")
    monkeypatch.setattr("metriclust.datasets._parse_fast", _raises(error))
    with pytest.raises(ValueError) as info:
        _cli.main(["cluster", str(data_csv), "--n-clusters", "2",
                   "--output", str(tmp_path / "o.csv")])
    assert info.value is error


@pytest.mark.parametrize("error", [ValueError("bad shape"), OSError(5, "I/O error"),
                                   ImportError("no module named something_internal")])
def test_internal_error_in_the_demo_keeps_its_traceback(monkeypatch, error):
    from metriclust import _cli

    monkeypatch.setattr("metriclust._demo.run_demo", _raises(error))
    with pytest.raises(type(error)) as info:
        _cli.main(["demo"])
    assert info.value is error


def test_demo_plot_directory_that_is_a_file_is_one_line(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "file"
    target.write_text("")
    proc = run("demo", "--plot", target)
    assert_clean_error(proc, "--plot", str(target))
    assert proc.returncode == 2


def test_contradicting_parameters_are_one_line(data_csv, tmp_path):
    # Each is valid alone; the estimator refuses the pair (an InputError).
    proc = cluster(data_csv, tmp_path / "o.csv", "--method", "cpcm", "--param",
                   "predictor='kernel'", "--param", "alpha=0")
    assert_clean_error(proc, "alpha must be > 0", "predictor='kernel'")


def test_more_clusters_than_must_link_components_is_one_line(tmp_path):
    # Four rows joined into two components by the similar pairs: three
    # clusters cannot be made (ConstrainedKMeans refuses, an InputError).
    path = write_csv(tmp_path / "d.csv", [[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
    pairs = tmp_path / "s.csv"
    pairs.write_text("0,1\n2,3\n")
    proc = run("cluster", path, "--method", "mmc", "--similar", pairs, "--n-clusters", 3,
               "--output", tmp_path / "o.csv", "--param", "diagonal=true")
    assert_clean_error(proc, "n_clusters=3", "2 units")


def test_data_a_method_cannot_use_is_one_line(tmp_path):
    # MMC: the only similar pair joins two identical rows (zero scatter);
    # CPD-UML with kernel='rbf': all rows identical. Both are InputErrors.
    path = write_csv(tmp_path / "d.csv", [[0.0, 0.0], [0.0, 0.0], [1.0, 2.0], [3.0, 1.0]])
    pairs = tmp_path / "s.csv"
    pairs.write_text("0,1\n")
    proc = run("cluster", path, "--method", "mmc", "--similar", pairs, "--n-clusters", 2,
               "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "zero scatter")
    same = write_csv(tmp_path / "same.csv", [[1.0, 1.0]] * 4)
    proc = run("cluster", same, "--method", "cpduml", "--n-clusters", 2, "--param",
               "kernel='rbf'", "--output", tmp_path / "o.csv")
    assert_clean_error(proc, "all identical")


def test_parameters_are_checked_before_the_data_are_read(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3,x\n")
    proc = cluster(bad, tmp_path / "o.csv", "--param", "max_iter=-3")
    assert_clean_error(proc, "max_iter")      # not the input's line 3
    assert "line 3" not in proc.stderr


# -- slow and silent --------------------------------------------------------------

def test_verbose_reports_from_the_start_to_a_summary(data_csv, tmp_path):
    proc = cluster(data_csv, tmp_path / "o.csv", "--verbose", "--param", "n_init=3")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert "reading" in lines[0] and "data.csv" in lines[0]
    assert any("read 40 rows x 2 features" in line for line in lines)
    for i in (1, 2, 3):
        assert any(f"start {i} of 3" in line for line in lines), lines
    assert "done:" in lines[-1] and "total" in lines[-1]


def test_verbose_cpcm_counts_its_starts(data_csv, tmp_path):
    proc = cluster(data_csv, tmp_path / "o.csv", "--verbose", "--method", "cpcm",
                   "--param", "n_init=2")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "CPCM start" in line]
    bound = lines[0].split(" of at most ")[1].split()[0]
    for i, line in enumerate(lines, 1):
        assert f"CPCM start {i} of at most {bound} (" in line
    assert len(lines) <= int(bound)
    assert "done:" in proc.stderr.splitlines()[-1]


def test_mmc_with_only_similar_warns_before_a_quadratic_fit(tmp_path):
    path, pairs = big_mmc_problem(tmp_path, 5_000)
    proc = run("cluster", path, "--method", "mmc", "--similar", pairs, "--n-clusters", 2,
               "--output", tmp_path / "o.csv", "--param", "max_iter=2", "--verbose")
    warning = [line for line in proc.stderr.splitlines() if "O(N^2)" in line]
    assert warning and "12,497,500 pairs" in warning[0] and "--dissimilar" in warning[0]
    fitting = [i for i, line in enumerate(proc.stderr.splitlines()) if "fitting" in line]
    assert proc.stderr.splitlines().index(warning[0]) < fitting[0]  # before the fit
    # With --dissimilar the fit is linear in the pairs given: no warning.
    dis = tmp_path / "d.csv"
    dis.write_text("0,2\n1,3\n")
    proc = run("cluster", path, "--method", "mmc", "--similar", pairs, "--dissimilar", dis,
               "--n-clusters", 2, "--output", tmp_path / "o.csv", "--force")
    assert proc.returncode == 0, proc.stderr
    assert "O(N^2)" not in proc.stderr
