"""The command line, run as a user runs it: a subprocess, exit codes, files, messages."""

import subprocess
import sys

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
