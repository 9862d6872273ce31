"""MMC's full-A solver loop in C (csrc/mmc_solver.c, _kernels/_mmc.pyx): its pair
sums against numpy references, bad input, and the loop against a numpy SPG."""
import numpy as np
import pytest

from metriclust import MMC
from metriclust._core.pairsums import PairSums
from metriclust._core.psd import eigh_robust, project_spectraplex, psd_factor
from metriclust._kernels import _mmc

SETTINGS = dict(max_iter=200, tol=1e-9, memory=10, window=20, stall_gap=100.0,
                face_gap=3e-2, newton_ok=False)


def _problem(n=60, p=5, m=150, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.linspace(1, 3, p)
    D = rng.integers(n, size=(m, 2))
    D = np.ascontiguousarray(D[D[:, 0] != D[:, 1]], dtype=np.int64)
    S = rng.integers(n, size=(m // 3, 2))
    S = np.ascontiguousarray(S[S[:, 0] != S[:, 1]], dtype=np.int64)
    return X, S, D


def _random_psd(p, rank, seed):
    L = np.random.default_rng(seed).normal(size=(p, rank))
    B = L @ L.T
    return B / np.trace(B)


def _sums_of_every_form(X, S, D):
    direct = PairSums(X, D, None)
    assert not direct.laplacian
    # Many pairs on few points: the Laplacian form.
    n = 12
    rng = np.random.default_rng(7)
    Dl = rng.integers(n, size=(400, 2))
    Dl = np.ascontiguousarray(Dl[Dl[:, 0] != Dl[:, 1]], dtype=np.int64)
    Xl = np.random.default_rng(8).normal(size=(n, 9))
    lap = PairSums(Xl, Dl, None)
    assert lap.laplacian
    allpairs = PairSums(X, None, S)
    return [(direct, X), (lap, Xl), (allpairs, X)]


def test_evaluate_matches_pair_sums_in_every_form():
    X, S, D = _problem()
    for sums, Xf in _sums_of_every_form(X, S, D):
        solver = sums.full_solver(**SETTINGS)
        B = _random_psd(Xf.shape[1], 3, 1)
        h, G, Gz, n_zero = solver.evaluate(B)
        ref = sums.full(psd_factor(*eigh_robust(B)), zero_pairs=True)
        assert h == pytest.approx(ref[0], rel=1e-12)
        np.testing.assert_allclose(G, ref[1], rtol=1e-9, atol=1e-12 * np.abs(ref[1]).max())
        assert n_zero == ref[3] == 0


def _spg_reference(sums, B0, max_iter, tol, memory=10):
    """The projected-gradient loop in numpy (mmc.py before the C loop), smooth points only."""
    B, lam, V = project_spectraplex(B0 / np.trace(B0))
    h, G = sums.full(psd_factor(lam, V))
    step, history, best, upper = 1.0 / np.linalg.norm(G), [h], (h, B), np.inf
    for it in range(1, max_iter + 1):
        upper = min(upper, np.linalg.eigvalsh(G)[-1] + 0.5 * h)
        if (upper - best[0]) / best[0] <= tol:
            return best[1], it - 1
        if (len(history) > 20 and (upper - best[0]) / best[0] <= 100 * tol
                and max(history) - max(history[:-20]) <= 0.1 * tol * max(history)):
            return best[1], it - 1
        P, lamP, VP = project_spectraplex(B + step * G)
        direction = P - B
        slope = np.sum(G * direction)
        if not slope > 1e-15 * h:
            return best[1], it
        ref, t = min(history[-memory:]), 1.0
        while True:
            Bn = P if t == 1.0 else B + t * direction
            Lt = psd_factor(lamP, VP) if t == 1.0 else psd_factor(*eigh_robust(Bn))
            hn, Gn = sums.full(Lt)
            if hn >= ref + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        s, y = Bn - B, Gn - G
        step = np.sum(s * s) / -np.sum(s * y) if -np.sum(s * y) > 0 else 10.0 * step
        step = min(max(step, 1e-12 / np.linalg.norm(Gn)), 1e12 / np.linalg.norm(Gn))
        B, h, G = Bn, hn, Gn
        history.append(h)
        if h > best[0]:
            best = (h, B)
    return best[1], max_iter


def test_loop_follows_the_numpy_reference():
    X, S, D = _problem(seed=3)
    for sums, Xf in _sums_of_every_form(X, S, D):
        p = Xf.shape[1]
        B0 = np.eye(p)
        B_ref, it_ref = _spg_reference(sums, B0, 200, 1e-9)
        solver = sums.full_solver(**SETTINGS)
        B, _, _ = project_spectraplex(B0 / p)
        solver.set_point(B, *solver.evaluate(B), True)
        solver.set_counters(0, 0, np.inf)
        event = solver.run()
        assert event == _mmc.CONVERGED
        # Same iterates up to rounding: the pair sums' summation order (tile
        # sizes) differs between the bridge and the solver's calls, and 80 SPG
        # steps near a tolerance-based stop can amplify that into a few more or
        # fewer iterations (seen: 83 vs 80, best B within 2e-8).
        assert abs(solver.info()["n_iter"] - it_ref) <= max(3, it_ref // 20)
        np.testing.assert_allclose(solver.matrix("best_B"), B_ref, atol=1e-7)


def test_face_sums_match_reference():
    rng = np.random.default_rng(2)
    m, r = 300, 4
    F = rng.normal(size=(m, r))
    F[:5] = 0.0                                  # pairs at distance 0 are left out
    L = rng.normal(size=(r, r))
    C = L @ L.T
    iu, ju = np.triu_indices(r)
    Z = F[:, iu] * F[:, ju] * np.where(iu == ju, 1.0, np.sqrt(2.0))
    c = C[iu, ju] * np.where(iu == ju, 1.0, np.sqrt(2.0))
    d = np.sqrt(Z @ c)
    pos = d > 0
    w = 0.5 / d[pos]
    free = np.ones(len(iu), dtype=bool)
    free[[1, 4]] = False
    for mask in (None, free):
        h, gh, H = _mmc.face_sums(F, C, mask)
        sel = np.ones(len(iu), dtype=bool) if mask is None else mask
        Zf = Z[pos][:, sel]
        assert h == pytest.approx(d.sum(), rel=1e-13)
        np.testing.assert_allclose(gh, Z[pos].T @ w, rtol=1e-12)
        np.testing.assert_allclose(H, (Zf * (2 * w**3)[:, None]).T @ Zf, rtol=1e-10)
    h_only = _mmc.face_sums(F, C, gradient=False, hessian=False)
    assert h_only[0] == pytest.approx(d.sum(), rel=1e-13) and h_only[1] is None
    # Fixed-order blocks: the thread count does not change a bit.
    big = np.ascontiguousarray(np.tile(F, (60, 1)))
    one = _mmc.face_sums(big, C, n_threads=1)
    two = _mmc.face_sums(big, C, n_threads=2)
    assert one[0] == two[0]
    np.testing.assert_array_equal(one[2], two[2])


def test_bad_input_raises():
    X, S, D = _problem()
    bad = D.copy()
    bad[3, 1] = 60
    with pytest.raises(ValueError, match=r"pairs\[3\]"):
        _mmc.FullSPG(X, "direct", bad, **SETTINGS)
    with pytest.raises(ValueError, match="form"):
        _mmc.FullSPG(X, "sparse", D, **SETTINGS)
    with pytest.raises(ValueError, match="close pairs"):
        _mmc.FullSPG(X, "laplacian", D, **SETTINGS)
    with pytest.raises(ValueError, match="max_iter"):
        _mmc.FullSPG(X, "direct", D, **dict(SETTINGS, max_iter=0))
    solver = _mmc.FullSPG(X, "direct", D, **SETTINGS)
    with pytest.raises(ValueError, match=r"B must have shape \(5, 5\)"):
        solver.evaluate(np.eye(4))
    with pytest.raises(FloatingPointError):
        solver.evaluate(np.full((5, 5), np.nan))
    with pytest.raises(ValueError, match="which"):
        solver.matrix("A")
    with pytest.raises(ValueError, match=r"C must have shape"):
        _mmc.face_sums(np.ones((3, 2)), np.eye(3))
    with pytest.raises(ValueError, match="free"):
        _mmc.face_sums(np.ones((3, 2)), np.eye(2), np.ones(2))


def test_same_result_whatever_the_thread_count():
    X, S, D = _problem(n=400, p=8, m=3000, seed=4)
    from threadpoolctl import threadpool_limits

    out = []
    for t in (1, 2):
        with threadpool_limits(t, user_api="openmp"):
            out.append(MMC(tol=1e-8).fit(X, similar=S, dissimilar=D).metric_)
    np.testing.assert_array_equal(out[0], out[1])


def test_hostile_input_raises_or_works():
    X, S, D = _problem()
    for bad in (D.astype(np.int32), D.astype(float), np.asfortranarray(D)):
        with pytest.raises((ValueError, TypeError)):
            _mmc.FullSPG(X, "direct", bad, **SETTINGS)
    with pytest.raises(ValueError):
        _mmc.FullSPG(X[:, ::2], "direct", D, **SETTINGS)        # not C-contiguous
    with pytest.raises(ValueError, match="columns"):
        _mmc.FullSPG(np.zeros((5, 0)), "direct", D[:0], **SETTINGS)
    # No pairs: h = 0, G = 0 (MMC's caller stops there).
    solver = _mmc.FullSPG(X, "direct", np.zeros((0, 2), np.int64), **SETTINGS)
    h, G, Gz, n_zero = solver.evaluate(np.eye(5) / 5)
    assert h == 0.0 and not G.any() and n_zero == 0
    h, gh, H = _mmc.face_sums(np.zeros((0, 3)), np.eye(3))
    assert h == 0.0 and not gh.any() and H.shape == (6, 6)


def test_lapack_resolves_on_first_call_without_scipy_loaded():
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from metriclust._kernels import _mmc\n"
            "assert 'scipy' not in sys.modules\n"
            "X = np.random.default_rng(0).normal(size=(30, 4))\n"
            "D = np.array([[i, i + 1] for i in range(29)], dtype=np.int64)\n"
            "s = _mmc.FullSPG(X, 'direct', D, max_iter=5, tol=1e-6, memory=10, window=20,\n"
            "                 stall_gap=100.0, face_gap=3e-2, newton_ok=False)\n"
            "h = s.evaluate(np.eye(4) / 4)[0]\n"
            "ref = np.linalg.norm(X[D[:, 0]] - X[D[:, 1]], axis=1).sum() / 2\n"
            "assert abs(h - ref) < 1e-12 * ref, (h, ref)\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def _face_newton_reference(F0, mu, Q, tol, decrement=0.1, max_steps=50):
    """mmc._face_newton's loop in numpy: Newton on the lower-triangular factor M of
    C = M M^T in C's eigenbasis (eigenvalues descending), with the per-pair
    Hessian of ||M^T f|| written out as an (m, s, s) array."""
    r = F0.shape[1]
    il, jl = np.tril_indices(r)            # (a, b), a >= b, row order
    order = np.argsort(-mu, kind="stable")
    mu, Q = mu[order], Q[:, order]
    steps = 0
    for _ in range(max_steps):
        F = F0 @ Q
        s = np.sqrt(np.maximum(mu, 0.0))
        Y = F * s
        d = np.linalg.norm(Y, axis=1)
        pos = d > 0
        Fp, Yp, dp = F[pos], Y[pos], d[pos]
        h = dp.sum()
        # dd/dM_ab = f_a y_b / d; d2d/dM_ab dM_ce = f_a f_c (delta_be / d - y_b y_e / d^3)
        J = Fp[:, il] * Yp[:, jl] / dp[:, None]
        Hd = (Fp[:, il, None] * Fp[:, None, il]
              * ((jl[:, None] == jl[None, :]) / dp[:, None, None]
                 - Yp[:, jl, None] * Yp[:, None, jl] / dp[:, None, None] ** 3)).sum(0)
        gh = J.sum(0)
        grad = np.where(il == jl, 2.0 * s[il], 0.0) - gh / h
        hess = 2.0 * np.eye(len(il)) - Hd / h + np.outer(gh, gh) / h**2
        lam, U = np.linalg.eigh(hess)
        lam = np.maximum(np.abs(lam), 1e-10 * np.abs(lam).max())
        dx = -U @ ((U.T @ grad) / lam)
        dec = -grad @ dx
        g0 = (s * s).sum() - np.log(h)
        noise = 8 * np.finfo(float).eps * (abs(g0) + 1)
        t = 1.0
        while True:
            M = np.diag(s)
            M[il, jl] += t * dx
            C = M @ M.T
            hn = np.sqrt(np.maximum(np.einsum("ka,ab,kb->k", F, C, F), 0.0)).sum()
            gn = np.trace(C) - np.log(hn) if hn > 0 else np.inf
            if gn <= g0 - 1e-4 * t * dec + noise or t < 1e-10:
                break
            t *= 0.5
        if not gn < g0 - noise:
            break
        lam_c, V = np.linalg.eigh(C)
        mu, Q = np.maximum(lam_c[::-1], 0.0), Q @ V[:, ::-1]
        steps += 1
        if dec < decrement * tol:
            break
    return mu, Q, steps


@pytest.mark.parametrize("seed", [0, 1])
def test_face_newton_matches_reference(seed):
    rng = np.random.default_rng(seed)
    m, r = 400, 3
    # Pair differences mostly along two directions (a rank-2 optimum with a
    # small second eigenvalue, the case face Newton is for).
    F0 = rng.normal(size=(m, r)) * np.array([3.0, 0.3, 0.05])
    C0 = np.diag([0.6, 0.3, 0.1]) + np.eye(r) / (1000.0 * r)
    mu, Q = np.linalg.eigh(C0)
    mu_ref, Q_ref, steps_ref = _face_newton_reference(F0, mu, Q, 1e-9)
    mu_c, Q_c, steps = _mmc.face_newton(F0, mu, Q, 1e-9, 0.1, 50)
    assert steps == steps_ref > 1
    C_ref, C_c = (Q_ref * mu_ref) @ Q_ref.T, (Q_c * mu_c) @ Q_c.T
    np.testing.assert_allclose(C_c, C_ref, atol=1e-10 * np.abs(C_ref).max())
    assert np.all(np.diff(mu_c) <= 0)                    # descending on return

    def g(C):
        return np.trace(C) - np.log(np.sqrt(np.einsum("ka,ab,kb->k", F0, C, F0)).sum())
    assert g(C_c) < g(C0)
    # The optimality conditions of min tr C - log h(C) over C >= 0, checked
    # directly: the gradient I - (sum f f^T / (2 d)) / h is PSD (up to the
    # tolerance), vanishes on the range of C (complementary slackness), and
    # tr C = 1/2 (h is 1/2-homogeneous).
    d = np.sqrt(np.einsum("ka,ab,kb->k", F0, C_c, F0))
    grad = np.eye(r) - (F0 / (2 * d)[:, None]).T @ F0 / d.sum()
    assert np.linalg.eigvalsh(grad)[0] > -1e-6
    assert np.abs(grad @ C_c).max() < 1e-6
    assert np.trace(C_c) == pytest.approx(0.5, rel=1e-8)
    with pytest.raises(ValueError, match="mu must have shape"):
        _mmc.face_newton(F0, mu[:2], Q, 1e-9, 0.1, 50)
    with pytest.raises(ValueError, match="finite"):
        _mmc.face_newton(F0, np.full(3, np.nan), Q, 1e-9, 0.1, 50)


def test_face_newton_is_not_pinned_by_a_tiny_eigenvalue():
    # The hard case: an optimum whose second eigenvalue is ~1e-4 of the first.
    # Projected Newton in C stalled there (its step crosses C >= 0 and the arc
    # accepts ~1e-5 of it); Newton on the factor converges in a few steps.
    # Closed form: pairs along u1 (|x_k|) and along u2 (|y_k|) only give
    # h = A sqrt(c11) + B sqrt(c22), A = sum |x|, B = sum |y|, so with
    # tr C = 1/2: c11 = A^2 / (2 (A^2 + B^2)), c22 = B^2 / (2 (A^2 + B^2)),
    # and c22 / c11 = (B / A)^2 ~ 1e-4 here (c12 does not enter h).
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=1980), rng.normal(size=20)
    F = np.zeros((2000, 3))
    F[:1980, 0], F[1980:, 1] = x, y
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    F0 = np.ascontiguousarray(F @ R.T)                   # rows R f: u_i = R e_i
    A, B = np.abs(x).sum(), np.abs(y).sum()
    assert 5e-5 < (B / A) ** 2 < 5e-4
    for start in (np.eye(3) / 6, np.diag([0.3, 0.1, 0.1])):
        mu, Q = np.linalg.eigh(start)
        mu_c, Q_c, steps = _mmc.face_newton(F0, mu, Q, 1e-9, 0.1, 50)
        C = R.T @ ((Q_c * mu_c) @ Q_c.T) @ R             # back to the u basis
        # g = tr C - log h within the decrement target (1e-10) of its minimum;
        # c22 to 1e-2 relative: g is that flat along it (h changes by ~1e-11)
        g = np.trace(C) - np.log(A * np.sqrt(C[0, 0]) + B * np.sqrt(C[1, 1]))
        g_opt = 0.5 - np.log(np.sqrt(A**2 + B**2) / np.sqrt(2.0))
        assert g_opt - 1e-14 <= g <= g_opt + 1e-10
        assert C[1, 1] == pytest.approx(B**2 / (2 * (A**2 + B**2)), rel=1e-2)
        assert abs(C[2, 2]) < 1e-12
        assert steps <= 8


def test_long_verbose_run_logs_every_iteration_once(load_dataset, capsys):
    # More iterations than the C log holds (1024): the solver hands it over and
    # goes on; the history buffers do not grow with max_iter (a huge max_iter is
    # test_robustness's test_huge_integer_parameters).
    import warnings

    from metriclust.constraints import sample_similar_pairs

    X, y = load_dataset("soybean_small")
    S = sample_similar_pairs(y, 0.7, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mmc = MMC(tol=0.0, max_iter=1500, verbose=1).fit(X, similar=S)   # never certified
    its = [int(line.split()[2]) for line in capsys.readouterr().out.splitlines()
           if line.startswith("MMC iter")]
    assert mmc.n_iter_ > 1024
    assert its == list(range(1, len(its) + 1)) and len(its) >= mmc.n_iter_ - 1


def _draw(seed, n=600, d=12, n_pairs=3000, k=5):
    """benchmarks/bench_mmc.py's make_data at a smaller size: k Gaussian classes in
    the first d // 5 features, the rest scaled by 3; half similar, half dissimilar."""
    rng = np.random.default_rng(seed)
    kk = max(2, d // 5)
    y = rng.integers(k, size=n)
    X = rng.normal(size=(n, d))
    X[:, :kk] += 2.0 * rng.normal(size=(k, kk))[y]
    X[:, kk:] *= 3.0
    out = []
    for same in (True, False):
        a, b = rng.integers(n, size=(2, 8 * n_pairs))
        ok = (a != b) & ((y[a] == y[b]) == same)
        out.append(np.ascontiguousarray(np.c_[a[ok], b[ok]][: n_pairs // 2], dtype=np.int64))
    return X, out[0], out[1]


def _J(X, S, D, A):
    dS, dD = X[S[:, 0]] - X[S[:, 1]], X[D[:, 0]] - X[D[:, 1]]
    return (np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", dD, A, dD), 0)).sum()
            / np.sqrt(np.einsum("ij,jk,ik->", dS, A, dS)))


# Draws 3 and 6 are hard (the optimum's smallest positive eigenvalue 1e-5 and
# 1e-4 of the largest: where SPG creeps and the projected face Newton was
# pinned); 0 and 7 easy.
@pytest.mark.parametrize("seed", [0, 3, 6, 7])
def test_full_solution_certified_and_at_an_independent_optimum(seed):
    from scipy import linalg, optimize

    X, S, D = _draw(seed)
    mmc = MMC(tol=1e-6).fit(X, similar=S, dissimilar=D)
    assert mmc.converged_
    A = mmc.metric_
    lam = np.linalg.eigvalsh(A)[::-1]
    if seed in (3, 6):       # hard: a positive eigenvalue below 2e-4 of the largest
        assert np.any((lam[1:] > 1e-9 * lam[0]) & (lam[1:] < 2e-4 * lam[0]))
    # The certificate, recomputed here in the original coordinates: with
    # M = M_S + ridge I and <A, M> = 1, h* <= lam_max(G, M) + h / 2 (weak duality,
    # G = sum_D d d^T / (2 ||d||_A), a generalized eigenvalue).
    dS, dD = X[S[:, 0]] - X[S[:, 1]], X[D[:, 0]] - X[D[:, 1]]
    p = X.shape[1]
    M = dS.T @ dS
    M += 1e-9 * np.trace(M) / p * np.eye(p)
    assert np.sum(A * M) == pytest.approx(1.0, rel=1e-10)
    dist = np.sqrt(np.einsum("ij,jk,ik->i", dD, A, dD))
    assert dist.min() > 0
    h = dist.sum()
    G = (dD / (2 * dist)[:, None]).T @ dD
    upper = linalg.eigh(G, M, eigvals_only=True)[-1] + 0.5 * h
    assert (upper - h) / h <= 1e-6
    # An independent optimum: L-BFGS on A = L L^T (original coordinates, no
    # whitening, no face), maximizing J(L) = h(L L^T) / sqrt(<L L^T, M_S>).
    MS = dS.T @ dS

    def f(l):
        L = l.reshape(p, p)
        Y = dD @ L
        dd = np.sqrt((Y * Y).sum(1))
        ML = MS @ L
        c = (L * ML).sum()
        g = -(dD.T @ (Y / dd[:, None])) / dd.sum() + ML / c
        return -np.log(dd.sum()) + 0.5 * np.log(c), g.ravel()

    r = optimize.minimize(f, np.eye(p).ravel(), jac=True, method="L-BFGS-B",
                          options=dict(maxiter=5000, maxcor=30, ftol=1e-15, gtol=1e-12))
    L = r.x.reshape(p, p)
    J_ref, J_ours = _J(X, S, D, L @ L.T), _J(X, S, D, A)
    assert abs(J_ref - J_ours) / J_ref <= 1e-6
    assert J_ref <= upper * (1 + 1e-8)      # nobody beats the bound (ridge: ~1e-9)


@pytest.mark.parametrize("seed", [1, 3])
def test_diagonal_newton_reaches_the_optimum_from_weights_at_zero(seed):
    # Newton in b with a = b * b: b = 0 is a stationary point of g in b, so a start
    # with zero weights must still reach the optimum (the start is moved off 0 and
    # a weight at 0 that the gradient pulls up restarts): same J as from the
    # identity, both certified.
    X, S, D = _draw(seed)
    p = X.shape[1]
    ref = MMC(diagonal=True, tol=1e-9).fit(X, similar=S, dissimilar=D)
    w0 = np.zeros(p)
    w0[0] = 1.0
    mmc = MMC(diagonal=True, tol=1e-9, init=w0).fit(X, similar=S, dissimilar=D)
    assert ref.converged_ and mmc.converged_
    assert np.count_nonzero(np.diag(ref.metric_) > 1e-12 * np.diag(ref.metric_).max()) > 1
    assert _J(X, S, D, mmc.metric_) == pytest.approx(_J(X, S, D, ref.metric_), rel=1e-8)


def test_scatter_diagonal_matches_the_pair_differences():
    # The diagonal similar-pair scatter comes from the diagonal pair kernel at a = 0
    # (its zero-pair sum): compare with the differences summed directly, with
    # repeated and identical pairs and a feature that is constant.
    from metriclust._core.mahalanobis import scatter_diagonal

    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 7)) * np.logspace(-3, 3, 7)
    X[:, 2] = 1.5
    X[10] = X[11]
    S = np.ascontiguousarray(np.r_[rng.integers(50, size=(400, 2)), [[10, 11], [4, 4]]],
                             dtype=np.int64)
    ref = ((X[S[:, 0]] - X[S[:, 1]]) ** 2).sum(axis=0)
    got = scatter_diagonal(X, S)
    np.testing.assert_allclose(got, ref, rtol=1e-13)
    assert got[2] == 0.0
    assert not scatter_diagonal(X, np.zeros((0, 2), np.int64)).any()
    # squares that overflow come back as inf (MMC's fit then names X)
    big = np.array([[1e200, 0.0], [-1e200, 1.0]])
    assert not np.isfinite(scatter_diagonal(big, np.array([[0, 1]], np.int64))).all()
    with pytest.raises(ValueError, match="X .*overflow"):
        MMC(diagonal=True).fit(np.r_[big, [[0.0, 2.0]]], similar=[[0, 1]], dissimilar=[[0, 2]])


@pytest.mark.parametrize("seed", [0, 3, 5])
def test_diagonal_objective_is_the_sum_over_dissimilar_pairs_of_the_metric(seed):
    # objective_ comes from the solver's last h (h(b) / scale), not a final pass:
    # it must equal sum_D ||x_i - x_j||_A for the metric returned, and the
    # constraint sum_S ||.||_A^2 = 1 must hold (to the 1e-9 ridge).
    X, S, D = _draw(seed)
    mmc = MMC(diagonal=True, tol=1e-8).fit(X, similar=S, dissimilar=D)
    w = np.diag(mmc.metric_)
    dD, dS = X[D[:, 0]] - X[D[:, 1]], X[S[:, 0]] - X[S[:, 1]]
    assert mmc.converged_
    assert mmc.objective_ == pytest.approx(np.sqrt(dD ** 2 @ w).sum(), rel=1e-12)
    assert (dS ** 2 @ w).sum() == pytest.approx(1.0, rel=1e-7)


_LOAD_WITHOUT_SCIPY_PACKAGE = r"""
import builtins, sys
import numpy as np
real_import = builtins.__import__
{before}
from metriclust import MMC
from metriclust._kernels import _blas, _mmc
rng = np.random.default_rng(0)
X = rng.normal(size=(80, 5))
pairs = np.array([[i, (i * 7 + 3) % 80] for i in range(80)], dtype=np.int64)
S, D = pairs[:30], pairs[30:]
full = MMC().fit(X, similar=S, dissimilar=D)
diag = MMC(diagonal=True).fit(X, similar=S, dissimilar=D)
_blas.load(); _mmc.load_lapack()
print(sorted(m for m in sys.modules if m == "scipy" or m.startswith("scipy.linalg")))
print(builtins.__import__ is real_import, _blas.loaded())
print(sorted(m for m in sys.modules if m.startswith(("metriclust._core.", "metriclust._kernels."))
             and m.split(".")[-1] in ("streaming", "kmeans", "engine", "blockwise", "_kmeans")))
blas, lapack = sys.modules["scipy.linalg.cython_blas"], sys.modules["scipy.linalg.cython_lapack"]
import scipy.linalg
from scipy.linalg import cython_blas, cython_lapack
print(cython_blas is blas, cython_lapack is lapack)
A = rng.normal(size=(6, 6)); A = A @ A.T
print(np.allclose(scipy.linalg.eigh(A)[0], np.linalg.eigvalsh(A)))
again = MMC().fit(X, similar=S, dissimilar=D)
print(np.array_equal(again.metric_, full.metric_))
"""


@pytest.mark.parametrize("before", ["", "import scipy"])
def test_scipy_routines_load_without_the_scipy_package_init(before):
    # A fresh process: MMC fits (full and diagonal A) resolve scipy's BLAS and
    # LAPACK without running scipy's or scipy.linalg's __init__ (both are ~15 ms to
    # several hundred ms of a cold fit), leave __import__ as it was, and do not import
    # the out-of-core helpers. A later `import scipy.linalg` works and uses the same
    # modules. With scipy (the package only) imported first, the same holds for
    # scipy.linalg. The block machinery (_core.blockwise) and the k-means bridge
    # under it are not imported either.
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _LOAD_WITHOUT_SCIPY_PACKAGE.format(before=before)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    loaded = ["scipy.linalg.cython_blas", "scipy.linalg.cython_lapack"]
    assert lines[0] == str((["scipy"] if before else []) + loaded)
    assert lines[1:] == ["True True", "[]", "True True", "True", "True"]


def test_import_shortcut_is_limited_to_the_loading_thread():
    # While scipy's module runs its init, an `__import__(name, fromlist=[])` of a
    # loaded scipy.* module is answered from sys.modules in the loading thread only;
    # another thread importing at that moment gets the ordinary import (which
    # returns the top-level package), and __import__ is restored afterwards.
    import subprocess
    import sys

    code = r"""
import builtins, sys, threading, types
from metriclust._kernels import _blas
real = builtins.__import__
sys.modules["scipy._mmc4_probe"] = probe = types.ModuleType("scipy._mmc4_probe")
seen = {}

class Loader:
    def exec_module(self, module):
        seen["here"] = __import__("scipy._mmc4_probe")
        t = threading.Thread(target=lambda: seen.__setitem__(
            "there", __import__("scipy._mmc4_probe")))
        t.start(); t.join()

_blas._top_package_not_imported(Loader(), None)
print(seen["here"] is probe, seen["there"] is sys.modules["scipy"],
      builtins.__import__ is real)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True", "True"]


# ---------------------------------------------------------------------------
# float32 X in the explicit-pair and diagonal sums (issue #13)
# ---------------------------------------------------------------------------
def _float32_problem(n, p, seed):
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(n, p)) * np.linspace(1, 4, p)).astype(np.float32)
    X[5] = X[6]                                  # a pair at distance 0 everywhere
    X[7, 1:] = X[8, 1:]                          # and one that differs in feature 0 only
    pairs = rng.integers(n, size=(3 * n, 2))
    pairs = np.ascontiguousarray(np.r_[[[5, 6], [7, 8]], pairs], dtype=np.int64)
    a = rng.random(p)
    a[0] = 0.0                                   # pair (7, 8) is then a zero pair
    return X, pairs, a


@pytest.mark.parametrize("p", [3, 20, 33])
def test_float32_pair_sums_are_the_float64_sums_of_the_widened_data(p):
    # float32 X is read as it is and widened value by value, every difference and
    # sum in float64: the results equal those on X.astype(float64) bit for bit
    # (tolerance 0), for the explicit pairs and every all-pairs form (p = 33: the
    # GEMM form, p = 3 / 20: the scalar and the syrk Hessian), with zero pairs.
    from metriclust._kernels import _pairwise as K
    X, pairs, a = _float32_problem(90, p, p)
    X64 = X.astype(np.float64)
    cases = [(pairs, "direct", True), (pairs, "direct", False), (None, "direct", True),
             (None, "auto", False)]
    for P, method, hessian in cases:
        got = K.pairs_diag(X, P, a, True, hessian, zero_pairs=True, method=method)
        want = K.pairs_diag(X64, P, a, True, hessian, zero_pairs=True, method=method)
        assert got[4] == want[4] and (P is None or got[4] >= 1)
        for u, v in zip(got[:4], want[:4]):
            assert (u is None and v is None) or np.array_equal(u, v)
    Lt = np.ascontiguousarray(np.random.default_rng(1).normal(size=(p, 2)))
    got = K.pairs_full(X, pairs, Lt, True, True, zero_pairs=True)
    want = K.pairs_full(X64, pairs, Lt, True, True, zero_pairs=True)
    assert got[0] == want[0] and got[4] == want[4]
    for u, v in zip(got[1:4], want[1:4]):
        assert np.array_equal(u, v)


def test_mmc_on_float32_x_is_the_fit_of_its_float64_copy():
    # Float32 X is not up-cast first: the similar-pair scatter reads it as it is and
    # the whitening makes the one float64 copy (each value widened, then scaled), so
    # diagonal MMC gives the fit of X.astype(float64) bit for bit. Full A works on
    # float64 (its solver needs it) and agrees with the float64 fit to 1e-6.
    X, S, D = _problem(n=120, p=6, m=400, seed=5)
    X32 = X.astype(np.float32)
    m32 = MMC(diagonal=True).fit(X32, similar=S, dissimilar=D)
    m64 = MMC(diagonal=True).fit(X32.astype(np.float64), similar=S, dissimilar=D)
    assert np.array_equal(m32.metric_, m64.metric_)
    assert m32.objective_ == m64.objective_ and m32.n_iter_ == m64.n_iter_
    f32 = MMC().fit(X32, similar=S, dissimilar=D)
    f64 = MMC().fit(X32.astype(np.float64), similar=S, dissimilar=D)
    assert f32.objective_ == pytest.approx(f64.objective_, rel=1e-6)
