"""The SIMD dispatch check's fingerprint of the hot kernels (csrc/dispatch.h).

    python .ci/dispatch_outputs.py dump OUT.npz   outputs of every dispatched
                                                  kernel family on fixed inputs,
                                                  plus the ISA level they ran at
    python .ci/dispatch_outputs.py compare A.npz B.npz
                                                  bitwise equality (same level)

The clones (ifunc) build and the portable (per-level objects) build compile
the same kernel bodies for the same ISA level, so on one CPU they must agree
bit for bit: k-means (Lloyd, Hamerly, online; every no-BLAS assignment
kernel and BLAS; float64 and float32), assignment and its accumulation,
k-means++ steps, 1-D k-means, the Gaussian Gram matrix (direct and BLAS
forms), the Gram matrix-vector product and the kernel's exp.  Exits non-zero
naming the first output that differs.
"""

import sys

import numpy as np


def outputs():
    from metriclust._kernels import _gram, _kmeans, _kmeans1d

    out = {"level": np.array(_kmeans.simd_level())}
    rng = np.random.default_rng(16)
    for dtype in (np.float64, np.float32):
        tag = np.dtype(dtype).name
        for d, K in ((2, 3), (5, 8), (8, 40), (16, 24), (40, 9)):
            X = np.ascontiguousarray(rng.standard_normal((1500, d)), dtype=dtype)
            w = rng.uniform(0.5, 2.0, 1500).astype(dtype)
            C0 = np.ascontiguousarray(X[rng.choice(1500, K, replace=False)])
            for method in ("auto", "direct", "gemm", "tile", "small", "lanes"):
                key = f"{tag}_d{d}_K{K}_{method}"
                C = C0.copy()
                labels, inertia, n_iter, _ = _kmeans.lloyd(X, w, C, 20, 0.0, method, 2)
                out[f"lloyd_{key}_labels"], out[f"lloyd_{key}_centers"] = labels, C
                out[f"lloyd_{key}_inertia"] = np.array([inertia, n_iter])
                lab, dist = _kmeans.assign(X, C0, method, 2)
                out[f"assign_{key}_labels"], out[f"assign_{key}_dist"] = lab, dist
                sums = np.zeros((K, d), np.float64)
                wsum = np.zeros(K, np.float64)
                lab = np.empty(1500, np.int64)
                inertia = _kmeans.assign_accumulate(X, w, C0, sums, wsum, lab, method, 2)
                out[f"accum_{key}"] = np.concatenate([sums.ravel(), wsum, lab, [inertia]])
            for name, run in (("hamerly", _kmeans.hamerly), ("online", _kmeans.online)):
                C = C0.copy()
                labels, inertia, n_iter, _ = run(X, w, C, 20, 0.0, "auto", 2)
                out[f"{name}_{tag}_d{d}_K{K}"] = np.concatenate(
                    [C.ravel().astype(np.float64), labels, [inertia, n_iter]])
            cand = rng.choice(1500, 4, replace=False).astype(np.int64)
            closest = ((X - X[0]) ** 2).sum(1).astype(np.float64)
            res = _kmeans.pp_step(X, w, cand, closest, 2)
            out[f"pp_{tag}_d{d}"] = np.concatenate(
                [np.ravel(np.asarray(r, dtype=np.float64)) for r in
                 (res if isinstance(res, tuple) else (res,))] + [closest])
        X = np.ascontiguousarray(rng.standard_normal((3000, 6)), dtype=dtype)
        cols = np.array([0, 2, 5], np.int64)
        init = np.ascontiguousarray(np.sort(X[:7][:, cols].T, axis=1))
        res = _kmeans1d.kmeans1d_columns(X, cols, init, X[:, cols].mean(0).astype(np.float64),
                                         X[:, cols].var(0).astype(np.float64), 50, 0.0, True, 2)
        for i, r in enumerate(res):
            out[f"k1d_{tag}_{i}"] = np.asarray(r)
        for d in (3, 20, 70):
            A = np.ascontiguousarray(rng.standard_normal((300, d)), dtype=dtype)
            B = np.ascontiguousarray(rng.standard_normal((170, d)), dtype=dtype)
            V = np.ascontiguousarray(rng.standard_normal((170, 3)), dtype=dtype)
            for blas in (True, False):
                out[f"gram_{tag}_d{d}_{blas}"] = _gram.gaussian_gram(A, B, 1.7, 2, blas)
            out[f"matmat_{tag}_d{d}"] = _gram.gram_matmat(A, B, V, 1.7, 2)
        x = -np.abs(rng.standard_normal(5000) * 30).astype(dtype)
        out[f"expneg_{tag}"] = _gram.expneg(x)
    return out


def main(argv):
    if len(argv) == 3 and argv[1] == "dump":
        np.savez(argv[2], **outputs())
        return
    if len(argv) == 4 and argv[1] == "compare":
        a, b = np.load(argv[2]), np.load(argv[3])
        if sorted(a.files) != sorted(b.files):
            sys.exit(f"dispatch_outputs: FAIL: different outputs {set(a.files) ^ set(b.files)}")
        if int(a["level"]) != int(b["level"]):
            sys.exit(f"dispatch_outputs: FAIL: levels {int(a['level'])} and {int(b['level'])}")
        for k in sorted(a.files):
            x, y = a[k], b[k]
            if x.shape != y.shape or x.dtype != y.dtype or x.tobytes() != y.tobytes():
                bad = np.flatnonzero(np.ravel(x) != np.ravel(y))[:3] if x.shape == y.shape else "shape"
                sys.exit(f"dispatch_outputs: FAIL: {k} differs (at {bad})")
        print(f"dispatch_outputs: {len(a.files)} outputs identical at level {int(a['level'])}")
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
