"""Benchmark: the blur ratio of ``_core.partition`` against the cancelling form it replaced.

The old form, ``1 - SSB / SST`` (SST summed directly, SSB from the cluster sums), is kept
here as the peer: it is what ``_core/predictors.blur_ratio`` computed before issue #13.
The new form sums the within-cluster squares from the deviations and takes the total as
within + between. Both run in this process, interleaved, medians; random labels.

Usage: ``python benchmarks/bench_partition.py [--repeats R]``
"""

import _common  # noqa: I001 - first: sets the OpenMP wait policy before any library loads

import argparse

import numpy as np

from metriclust._core import partition
from metriclust._core.threads import effective_n_threads


def cancelling_blur_ratio(Z, labels, n_clusters, block=65536):
    """The replaced form: ``(SST - SSB) / SST``."""
    sums, counts = partition.cluster_sums(Z, labels, n_clusters)
    mean = sums.sum(axis=0) / float(counts.sum())
    sst = 0.0
    for start in range(0, Z.shape[0], block):
        c = Z[start:start + block] - mean
        sst += float(np.einsum("ij,ij->", c, c))
    nz = counts > 0
    dev = sums[nz] - counts[nz, None] * mean[None, :]
    ssb = float(np.sum(dev * dev / counts[nz, None]))
    return 1.0 if not sst > 0.0 else min(1.0, max(0.0, (sst - ssb) / sst))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    header, _ = _common.machine_header("bench_partition", effective_n_threads())
    print("\n".join(header))
    print(_common.markdown_table(["N", "K", "old ms", "new ms", "new / old",
                                  "abs. difference"]))
    rng = np.random.default_rng(0)
    for n, K in [(20_000, 3), (100_000, 5), (1_000_000, 5)]:
        Z = np.ascontiguousarray(rng.normal(size=(n, K)))
        lab = rng.integers(0, K, n).astype(np.int64)
        med = _common.medians(_common.interleaved(
            {"old": lambda: cancelling_blur_ratio(Z, lab, K),
             "new": lambda: partition.blur_ratio(Z, lab, K)}, args.repeats))
        diff = abs(cancelling_blur_ratio(Z, lab, K) - partition.blur_ratio(Z, lab, K))
        print(_common.markdown_row([n, K, 1e3 * med["old"], 1e3 * med["new"],
                                    med["new"] / med["old"], f"{diff:.1e}"]), flush=True)
    print(f"\nload average at end {_common.load_average():.1f}")


if __name__ == "__main__":
    main()
