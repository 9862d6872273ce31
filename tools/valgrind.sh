#!/usr/bin/env bash
# valgrind memcheck over a representative set of small fits (every estimator,
# both dtypes, every C kernel); fails if any error report has a frame in one of
# metriclust's extension modules. Errors inside CPython, numpy, scipy or the
# BLAS are listed but do not count (they are not ours to fix).
#
#   tools/valgrind.sh            # uses python3 (or $PYTHON) as installed
#
# Slow (a few minutes: valgrind runs ~30x slower); CI runs it only when
# valgrind is installed and METRICLUST_VALGRIND=1.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
log=$(mktemp -d)/memcheck.log
export PYTHONMALLOC=malloc OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1
# Import once outside valgrind so that an editable install is already built.
"$python" -c "import metriclust._kernels._kmeans, metriclust._kernels._gram, metriclust._kernels._pairwise, metriclust._kernels._sums"
valgrind --tool=memcheck --error-limit=no --num-callers=40 --log-file="$log" \
    "$python" - <<'PY'
import warnings
import numpy as np
import metriclust as ml
from metriclust import kernels, metrics
from metriclust._kernels._sums import cluster_sums

warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
for dtype in (np.float64, np.float32):
    X = np.vstack([rng.normal(size=(40, 3)), rng.normal(size=(40, 3)) + 4]).astype(dtype)
    for algorithm in ("lloyd", "online"):
        km = ml.KMeans(2, n_init=2, algorithm=algorithm, random_state=0).fit(X)
        km.transform(X), km.predict(X), km.score(X)
    ml.KMeans(2, n_init=1, random_state=0).fit(X, sample_weight=rng.random(80).astype(dtype) + 0.1)
    ml.ConstrainedKMeans(2, n_init=2, random_state=0).fit(X, must_link=[(0, 1)], cannot_link=[(0, 45)])
    kernels.gaussian_gram(X, sigma=1.0), kernels.gaussian_gram(X, X[:7], sigma=0.5)
    kernels.gram_matmat(X, rng.normal(size=(80, 3)).astype(dtype), sigma=1.0)
    cluster_sums(np.ascontiguousarray(X), np.arange(80, dtype=np.int64) % 3, 3)
    cluster_sums(np.zeros((5, 0), dtype=dtype), np.zeros(5, dtype=np.int64), 2)
X = np.vstack([rng.normal(size=(40, 3)), rng.normal(size=(40, 3)) + 4])
y = np.repeat([0, 1], 40)
S, D = ml.constraints.pairs_from_labels(y, 20, 20, random_state=0)
ml.MMC(max_iter=20, random_state=0).fit(X, similar=S, dissimilar=D).transform(X)
ml.MMC(diagonal=True, max_iter=20, random_state=0).fit(X, similar=S, dissimilar=D)
ml.MMC(max_iter=10, random_state=0).fit(X, similar=S)          # all-pairs path
for predictor in ("linear", "kernel", "stepwise", "lda"):
    ml.CPCM(2, predictor=predictor, n_init=2, random_state=0).fit(X).transform(X)
ml.CPCM(2, predictor="kernel", n_init=1, random_state=0).fit(np.ones((10, 2)))
ml.CPDUML(2, n_init=1, max_iter=5, random_state=0).fit(X).transform(X)
ml.CPDUML(2, n_init=1, max_iter=3, kernel="rbf", n_kernel_components=10, random_state=0).fit(X)
ml.CPDUML(2, n_init=1, max_iter=3, approximation="nystrom", n_components=10, random_state=0).fit(X)
kernels.top_eigenpairs(X, 3, sigma=1.0, random_state=0)
kernels.Nystrom(10, random_state=0).fit(X).transform(X)
metrics.adjusted_rand_index(y, y[::-1]), metrics.normalized_mutual_info(y, y)
metrics.blur_ratio(X, y), metrics.contingency_matrix(y, y)
print("valgrind fits done")
PY
"$python" - "$log" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
blocks, cur = [], []
for line in text.splitlines():
    body = re.sub(r"^==\d+== ?", "", line)
    if not body.strip():
        if cur:
            blocks.append(cur)
        cur = []
    else:
        cur.append(body)
if cur:
    blocks.append(cur)
errors = [b for b in blocks if any(l.lstrip().startswith(("at 0x", "by 0x")) for l in b)
          and not b[0].startswith(("HEAP SUMMARY", "LEAK SUMMARY"))
          and "are definitely lost" not in b[0] and "are possibly lost" not in b[0]
          and "are still reachable" not in b[0] and "are indirectly lost" not in b[0]]
ours = [b for b in errors if any("metriclust" in l and ".so" in l for l in b)]
summary = [l for l in text.splitlines() if "ERROR SUMMARY" in l]
print(f"valgrind: {len(errors)} error report(s) in all, {len(ours)} with a frame in metriclust's .so files")
print(summary[-1] if summary else "no ERROR SUMMARY line")
for b in ours[:5]:
    print("\n".join(b), "\n")
sys.exit(1 if ours else 0)
PY
