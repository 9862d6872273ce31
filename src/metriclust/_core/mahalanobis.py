"""MMC's solvers: the Mahalanobis metric of Xing et al. (2003) in whitened coordinates.

Public classes and functions:

.. autosummary::

   projected_gradient_full      -- full A: maximize ``sum_D ||e||_B`` over the spectraplex (SPG)
   projected_gradient_diagonal  -- diagonal A by SPG on the capped simplex (wide data)
   newton_diagonal              -- diagonal A by Newton in ``a = b * b`` (Sec. 2.1)
   scatter_diagonal             -- ``diag(M) = sum_k (x_i - x_j)^2`` over pairs

The estimator (:class:`metriclust.mmc.MMC`) whitens the problem by the
similar-pair scatter and hands these solvers a
:class:`metriclust._core.pairsums.PairSums` over the dissimilar pairs; the
method (SPG with a certified duality gap, Newton on faces of the spectraplex,
the bounds at non-smooth points) is described in :mod:`metriclust.mmc`. The
SPG loop of the full solver and the face Newton steps run in compiled code
(:mod:`metriclust._kernels._mmc`); Python handles the rare events. Helpers:
``_full_upper_bound`` and ``_diagonal_gap`` (the weak-duality bounds),
``_min_over_log_eps``, ``_nonsmooth_step``, ``_face_solve`` with
``_face_basis`` and ``_face_rank_cap``.
"""

import numpy as np

from .._kernels._mmc import CONVERGED as SPG_CONVERGED
from .._kernels._mmc import LOG_FULL as SPG_LOG_FULL
from .._kernels._mmc import MAX_ITER as SPG_MAX_ITER
from .._kernels._mmc import NONSMOOTH as SPG_NONSMOOTH
from .._kernels._mmc import STALLED as SPG_STALLED
from .._kernels._mmc import face_newton
from .._kernels._pairwise import pairs_diag
from .psd import project_capped_simplex, project_spectraplex

__all__ = ["newton_diagonal", "projected_gradient_diagonal", "projected_gradient_full",
           "scatter_diagonal"]

# Iterations over which the objective-change stopping rule looks back, and the
# relative gap (in units of tol) under which it may stop.
_WINDOW = 20
_STALL_GAP = 100.0


def scatter_diagonal(X, pairs):
    """``diag(M) = sum_k (x_i - x_j)^2`` over the pairs.

    The diagonal pair kernel at ``a = 0``: every pair is then at distance 0,
    and those that differ are summed into its ``grad_zero = sum v / 2`` (the
    others add 0). One pass over the pairs without the gathered ``(m, p)``
    differences numpy would make (5000 pairs x 20: 0.1 ms against 0.8-1.4 ms
    at load ~18, most of the rest of a diagonal fit's set-up). All inf where
    the squares overflow.
    """
    X = np.ascontiguousarray(X, dtype=X.dtype if X.dtype == np.float32 else np.float64)
    if len(pairs) == 0:
        return np.zeros(X.shape[1])
    zero = np.zeros(X.shape[1])
    try:
        grad_zero = pairs_diag(X, np.ascontiguousarray(pairs, dtype=np.int64), zero,
                               gradient=False, hessian=False, zero_pairs=True)[3]
    except FloatingPointError:          # squares overflow float64: the callers name X
        return np.full(X.shape[1], np.inf)
    return 2.0 * grad_zero


def _min_over_log_eps(upper, hi, n_steps=60):
    """Golden-section minimum of ``upper(log eps)`` over ``[hi - 60, hi]``.

    Used for the bounds ``U(eps)`` below, which are convex in eps (hence
    unimodal in log eps) with their minimizer below ``exp(hi)``. Any eps gives a
    valid bound; the search only makes it tight.
    """
    lo, ratio = hi - 60.0, 0.5 * (np.sqrt(5.0) - 1.0)
    x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    f1, f2 = upper(x1), upper(x2)
    for _ in range(n_steps):
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - ratio * (hi - lo)
            f1 = upper(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + ratio * (hi - lo)
            f2 = upper(x2)
    return min(f1, f2)


def _full_upper_bound(h, G, G_zero, n_zero):
    """Upper bound on ``h*`` over ``{B >= 0, tr B <= 1}`` from a point with ``tr B = 1``.

    The diagonal case's argument (``_diagonal_gap``) with matrices: for any
    ``t_k > 0``, ``h(B') <= <B', sum_k e_k e_k^T / (2 t_k)> + sum_k t_k / 2
    <= lam_max(sum_k e_k e_k^T / (2 t_k)) + sum_k t_k / 2``. With ``t_k = d_k``
    this is ``lam_max(G) + h / 2``; the ``n_zero`` pairs at distance 0 with
    ``e_k != 0`` (``G_zero = sum e_k e_k^T / 2`` over them; G leaves them out, and
    h's gradient is +inf along them) get ``t_k = eps``::

        h* <= lam_max(G + G_zero / eps) + h / 2 + n_zero eps / 2   for every eps > 0.
    """
    if not n_zero:
        return np.linalg.eigvalsh(G)[-1] + 0.5 * h
    top = np.linalg.eigvalsh(G_zero)[-1]

    def upper(log_eps):
        eps = np.exp(log_eps)
        return np.linalg.eigvalsh(G + G_zero / eps)[-1] + 0.5 * h + 0.5 * n_zero * eps

    return _min_over_log_eps(upper, 0.5 * np.log(2.0 * top / n_zero), n_steps=40)


def projected_gradient_full(sums, B0, max_iter, tol, verbose, memory=10):
    """Maximize ``h(B) = sum_D ||e||_B`` over ``{B >= 0, tr B <= 1}`` (SPG).

    The iterations run in C (``PairSums.full_solver``: the bound, the exact
    projection, the non-monotone Armijo search, the Barzilai-Borwein step and
    the stopping rules, on buffers allocated once). This function starts
    the solver and handles its two rare events: a non-smooth point
    (:func:`_nonsmooth_step`) and Newton on faces near the optimum (:func:`_face_solve`).
    """
    B, _, _ = project_spectraplex(B0 / max(np.trace(B0), np.finfo(float).tiny))
    solver = sums.full_solver(max_iter=max_iter, tol=tol, memory=memory, window=_WINDOW,
                              stall_gap=_STALL_GAP, face_gap=_FACE_GAP,
                              newton_ok=not sums.implicit,   # face Newton: explicit pairs
                              verbose=bool(verbose))
    h, G, G_zero, n_zero = solver.evaluate(B)
    if not h > 0 and not n_zero:        # no dissimilar pair has positive length
        return B, 0, True
    solver.set_point(B, h, G, G_zero, n_zero, True)
    solver.set_counters(0, _FIRST_FACE, np.inf)   # the first face solve
    logged = 0
    while True:
        event = solver.run()
        info = solver.info()
        if verbose:
            for it, h_it, gap in solver.log(logged):
                print(f"MMC iter {int(it):4d}  sum_D = {h_it:.10g}  rel. gap <= {gap:.3e}")
            logged = info["n_log"]
            if event == SPG_LOG_FULL:
                solver.clear_log()
                logged = 0
                continue
        if event in (SPG_CONVERGED, SPG_STALLED, SPG_MAX_ITER):
            if verbose:
                print(f"MMC: {info['n_eval']} pair-sum passes in the solver loop")
            return solver.matrix("best_B"), info["n_iter"], event == SPG_CONVERGED
        if event == SPG_NONSMOOTH:
            done = _nonsmooth_step(solver, info, tol, verbose)
            if done is not None:
                return done
            continue
        # SPG_FACE: Newton on faces of the spectraplex (see _face_solve), kept only
        # if its point is better; the duality gap still decides convergence.
        info_b = solver.info()
        Bn, hn, Gn, Gzn, nzn, n_steps = _face_solve(
            sums, solver, solver.matrix("best_B"), info_b["best_h"], solver.matrix("best_G"),
            tol)
        it = info["it"] + n_steps           # n_iter_ counts the Newton steps too
        solver.set_counters(it, it + 10, info["upper"])
        if Bn is not None:
            if verbose:
                print(f"MMC face Newton: {n_steps} steps, sum_D = {hn:.10g}")
            solver.set_point(Bn, hn, Gn, Gzn, nzn, True)   # best; bound recomputed
        # otherwise the solver resumes with this iteration's projection step


def _nonsmooth_step(solver, info, tol, verbose):
    """One iteration at a non-smooth point (``n_zero > 0``); None to go on.

    Some D pairs have ``e_k != 0`` in the null space of B, where h has slope
    +inf: the projected gradient cannot see them. The bound takes them into
    account (:func:`_full_upper_bound`) and the step goes towards the top
    eigenvector u of their scatter: ``B <- (1 - t) B + t u u^T``. Returns
    ``(B, n_iter, converged)`` when the solve ends here.
    """
    it = info["it"] + 1
    B, G, G_zero = solver.matrix("B"), solver.matrix("G"), solver.matrix("G_zero")
    h, n_zero, best_h = info["h"], info["n_zero"], info["best_h"]
    upper = min(info["upper"], _full_upper_bound(h, G, G_zero, n_zero))   # weak duality
    gap = (upper - best_h) / best_h if best_h > 0 else np.inf
    if verbose:
        print(f"MMC iter {it:4d}  sum_D = {h:.10g}  rel. gap <= {gap:.3e}")
    if gap <= tol:
        return solver.matrix("best_B"), it - 1, True
    u = np.linalg.eigh(G_zero)[1][:, -1]
    t = 0.5
    while t > 1e-14:
        Bn = (1.0 - t) * B + t * np.outer(u, u)
        hn, Gn, Gzn, nzn = solver.evaluate(Bn)
        if hn > h:
            break
        t *= 0.5
    if not hn > h:
        return solver.matrix("best_B"), it, False
    solver.set_point(Bn, hn, Gn, Gzn, nzn, False)
    solver.set_counters(it, info["next_face"], upper)
    return None


# The face solve (_face_solve): tried from SPG's iteration _FIRST_FACE on (3 iterations
# after each point it hands back, 10 after a failed try) below this gap; on faces
# of r dimensions, r (r + 1) / 2 <= min(_MAX_FACE_VARS, p) (a face Newton step
# then costs at most about one kernel pass); each face solved until the Newton
# decrement is below _FACE_DECREMENT * tol, from its start plus _FACE_REG I / r
# (off the boundary); at most _FACE_ROUNDS faces a try.
_FACE_GAP = 10.0
_FIRST_FACE = 3
_MAX_FACE_VARS = 136
_FACE_DECREMENT = 0.1
_FACE_ROUNDS = 8
_FACE_REG = 1e-5


def _face_rank_cap(p):
    """Largest face dimension r with ``r (r + 1) / 2 <= min(_MAX_FACE_VARS, p)``."""
    cap = min(_MAX_FACE_VARS, p)
    r = 1
    while (r + 1) * (r + 2) // 2 <= cap:
        r += 1
    return r


def _face_basis(B, G, cap):
    """Orthonormal face basis: B's range (at most its top ``cap - 1`` eigenvectors),
    then the top eigenvectors of G (orthogonalized) up to ``cap`` columns."""
    lamB, VB = np.linalg.eigh(B)
    UG = np.linalg.eigh(G)[1]
    rb = int(np.sum(lamB > 1e-10 * lamB[-1]))
    rb = max(1, min(rb, cap - 1)) if cap > 1 else 1
    V = VB[:, ::-1][:, :rb]
    for j in range(1, G.shape[0] + 1):
        if V.shape[1] >= cap:
            break
        u = UG[:, -j] - V @ (V.T @ UG[:, -j])
        norm = np.linalg.norm(u)
        if norm > 1e-6:
            V = np.c_[V, u / norm]
    return V


def _face_solve(sums, solver, B, h, G, tol):
    """Newton on faces of the spectraplex, a few faces in a row; the best point found.

    Near a rank-deficient optimum whose smallest positive eigenvalue is tiny,
    SPG creeps along the boundary of ``B >= 0``. The optimum lies in the top
    eigenspace of its gradient (complementary slackness: ``B* G* = (h*/2) B*``
    at ``tr B* = 1``), so a face ``V`` (p x r, orthonormal) spanned by the
    range of ``B`` and the top eigenvectors of ``G`` (those above ``h / 2`` are
    the directions the bound says are missing) holds it once those are right.
    On the face, ``max h(V C V^T)`` over ``C >= 0`` is solved by Newton on the
    factor of ``C`` (:func:`metriclust._kernels._mmc.face_newton`; O(m r^2) a
    pass, pairs ``f_k = V^T e_k``), then ``G`` at the new point gives the
    duality gap and the next face. Stops when the gap is certified, after
    ``_FACE_ROUNDS`` faces, when a face does not improve ``h``, or when it
    neither halves the gap nor raises ``h`` by more than ``0.1 tol``. Returns
    ``(B, h, G, G_zero, n_zero, steps)`` of the best point (``B`` None when no
    face improved on the start), ``tr B = 1``.
    """
    p = B.shape[0]
    cap = _face_rank_cap(p)
    tau = np.trace(B)                   # to tr B = 1 (h is 1/2-homogeneous, G -1/2)
    B, h, G = B / tau, h / np.sqrt(tau), G * np.sqrt(tau)
    best, steps = None, 0
    gap = (np.linalg.eigvalsh(G)[-1] - 0.5 * h) / h
    D = sums.D
    for _ in range(_FACE_ROUNDS):
        V = _face_basis(B, G, cap)
        r = V.shape[1]
        C0 = V.T @ B @ V
        # tr C = 1/2 minimizes g = tr C - log h along a ray (h is 1/2-homogeneous)
        C0 = (C0 / max(np.trace(C0), np.finfo(float).tiny) + np.eye(r) * (_FACE_REG / r)) \
            * (0.5 / (1.0 + _FACE_REG))
        EV = sums.E @ V
        F0 = np.ascontiguousarray(EV[D[:, 0]] - EV[D[:, 1]])
        mu, Q = np.linalg.eigh(0.5 * (C0 + C0.T))
        mu, Q, n = face_newton(F0, np.maximum(mu, 0.0), Q, tol, _FACE_DECREMENT, 50,
                               n_threads=sums.n_threads)
        steps += n
        VQ = V @ Q
        Bn = (VQ * mu) @ VQ.T
        Bn /= np.trace(Bn)
        hn, Gn, Gzn, nzn = solver.evaluate(Bn)
        if nzn or not hn > (best[1] if best is not None else h):
            break
        best = (Bn, hn, Gn, Gzn, nzn)
        gap_n = (np.linalg.eigvalsh(Gn)[-1] - 0.5 * hn) / hn
        gain = (hn - h) / hn
        B, h, G = Bn, hn, Gn
        # On: while a face gains (the next one adds the directions this one lacked)
        # or halves the gap.
        if gap_n <= tol or (gap_n > 0.5 * gap and gain <= 0.1 * tol):
            break
        gap = gap_n
    if best is None:
        return None, h, None, None, 0, steps
    return (*best, steps)


def _diagonal_gap(h, grad, grad_zero, n_zero, total):
    """Certified relative gap ``(h* - h) / h`` of the diagonal problem at ``a / sum(a)``.

    ``h, grad, grad_zero, n_zero`` are ``PairSums.diag``'s at ``a`` (``sum(a) = total``).
    For any ``t_k > 0``, ``sqrt(q) <= q / (2 t_k) + t_k / 2`` (equality at
    ``t_k = sqrt(q)``), so for every ``b >= 0`` with ``sum(b) <= 1``::

        h(b) <= max(0, max_j sum_k v_kj / (2 t_k)) + sum_k t_k / 2.

    With ``t_k = d_k`` at the normalized point this is the usual bound
    ``max(grad) + h / 2``, valid only where h is differentiable. At a
    non-smooth point some pair has ``d_k = 0`` but ``v_k != 0`` (a feature with
    weight 0 is the only one where the two points differ): ``grad h`` is
    ``+inf`` along that feature, and dropping the pair from the sum, as the
    gradient does, gives a number that is *not* a bound (seen on iris).
    Those ``n_zero`` pairs get a common ``t_k = eps`` instead::

        h* <= U(eps) = max_j (grad_j + grad_zero_j / eps) + h / 2 + n_zero eps / 2,

    valid for every ``eps > 0``; U is convex in eps and its minimizer lies
    below ``max_j sqrt(2 grad_zero_j / n_zero)`` (``_min_over_log_eps``). U
    stays above h by ``~sqrt(n_zero grad_zero)``: such a point is never
    certified, correctly, since it is not optimal.
    """
    root = np.sqrt(total)
    h, grad = h / root, grad * root          # h is 1/2-homogeneous
    if n_zero == 0 or not np.any(grad_zero > 0):
        return (max(grad.max(), 0.0) - 0.5 * h) / h

    def upper(log_eps):
        eps = np.exp(log_eps)
        return max(np.max(grad + grad_zero / eps), 0.0) + 0.5 * h + 0.5 * n_zero * eps

    return (_min_over_log_eps(upper, 0.5 * np.log(2.0 * grad_zero.max() / n_zero)) - h) / h


def projected_gradient_diagonal(sums, a0, max_iter, tol, verbose, memory=10):
    """Maximize ``h(a) = sum_D sqrt(a . v)`` over ``{a >= 0, sum a <= 1}`` (wide data).

    The diagonal problem of :func:`newton_diagonal` in the form the full
    solver uses (:func:`projected_gradient_full`, with the capped simplex in
    place of the spectraplex): spectral projected gradient, gradients only,
    ``O(|D| p + p log p)`` a step and no ``p x p`` array. Newton forms and
    factors the ``p x p`` Hessian every step (80 s a step at 96 x 4026 on the
    shared 2-core machine). Certified stop: the bound of :func:`_diagonal_gap`
    (weak duality, valid at non-smooth points too), so the relative gap bounds
    ``(J* - J) / J``; or the full solver's objective-change rule.
    """
    a = project_capped_simplex(a0 / max(a0.sum(), np.finfo(float).tiny))
    h, g, _, g_zero, n_zero = sums.diag(a, gradient=True, hessian=False, zero_pairs=True)
    if not h > 0:
        return a, 0, True
    step = 1.0 / np.linalg.norm(g)
    history = [h]
    best = (h, a)
    upper = np.inf
    for it in range(1, max_iter + 1):
        total = a.sum()
        h_unit = h / np.sqrt(total)                                  # h at a / sum(a)
        upper = min(upper, h_unit * (1.0 + _diagonal_gap(h, g, g_zero, n_zero, total)))
        gap = (upper - best[0]) / best[0]
        if verbose:
            print(f"MMC-diag iter {it:4d}  sum_D = {h:.10g}  rel. gap <= {gap:.3e}")
        if gap <= tol:
            return best[1], it - 1, True
        if (len(history) > _WINDOW
                and max(history) - max(history[:-_WINDOW]) <= 0.1 * tol * max(history)):
            return best[1], it - 1, True
        direction = project_capped_simplex(a + step * g) - a
        slope = float(g @ direction)
        if not slope > 1e-15 * h:
            return best[1], it, True
        ref, t = min(history[-memory:]), 1.0
        while True:                     # non-monotone Armijo search along a + t d
            an = a + t * direction
            hn, gn, _, gzn, nzn = sums.diag(an, gradient=True, hessian=False,
                                            zero_pairs=True)
            if hn >= ref + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        s_, y_ = an - a, gn - g
        curvature = -float(s_ @ y_)     # h is concave
        step = float(s_ @ s_) / curvature if curvature > 0 else 10.0 * step
        step = min(max(step, 1e-12 / np.linalg.norm(gn)), 1e12 / np.linalg.norm(gn))
        if hn - h <= 1e-15 * abs(h) and t < 1e-12:
            return best[1], it, False
        a, h, g, g_zero, n_zero = an, hn, gn, gzn, nzn
        history.append(h)
        if h > best[0]:
            best = (h, a)
    return best[1], max_iter, False


# Diagonal Newton: the start is moved off a = 0 by this much (relative), and a step
# is at most _DIAG_STEP times ||b|| long (the first steps, far from the optimum,
# otherwise overshoot by orders of magnitude and backtrack).
_DIAG_REG = 1e-6
_DIAG_STEP = 1.0


def newton_diagonal(sums, a0, max_iter, tol, verbose):
    """Minimize ``g(a) = sum(a) - log h(a)``, ``a >= 0`` (whitened: ``s = 1``).

    Newton in ``b`` with ``a = b * b`` (Xing et al.'s Newton-Raphson, Sec. 2.1,
    without the constraint): a weight tending to 0 is a small ``b``, not a
    bound that the step runs into and that the projection arc then cuts to a
    sliver (the projected Newton this replaces crept over its last iterations).
    ``g(b)`` is not convex: its Hessian's term ``2 diag(grad_a g)`` is kept
    only where it is >= 0 (a Gauss-Newton-like step, exact at the optimum),
    which leaves it positive semidefinite; where it is singular its
    eigenvalues are floored (the step stays a descent direction); Armijo
    backtracking. The solve stops when the duality bound at the point (:func:`_diagonal_gap`) is
    within ``tol``. Returns ``(a, n_iter, converged, h(a))``.
    """
    p = a0.size
    a = a0 / a0.sum() if a0.sum() > 0 else np.full(p, 1.0 / p)
    a = 0.5 * (a + _DIAG_REG / p) / (1.0 + _DIAG_REG)    # sum(a) = 1/2: g's best scale

    def g_of(a):
        h = sums.diag(a, gradient=False, hessian=False)[0]
        return a.sum() - np.log(h) if h > 0 else np.inf

    h, gh, H, g_zero, n_zero = sums.diag(a, zero_pairs=True)
    if not h > 0 and n_zero == 0:
        return a, 0, True, h
    last_gap = np.inf
    for it in range(1, max_iter + 1):
        c = a.sum()
        gap = _diagonal_gap(h, gh, g_zero, n_zero, c) if h > 0 else np.inf
        if verbose:
            print(f"MMC-diag iter {it:4d}  g = {c - np.log(h):.12g}  rel. gap <= {gap:.3e}")
        if gap <= tol:
            return a, it - 1, True, h
        if H is None:                     # the step was predicted to be the last
            h, gh, H, g_zero, n_zero = sums.diag(a, zero_pairs=True)
        # The gap falls by a factor that changes slowly: where the next one is
        # predicted below tol, the next pass leaves the Hessian out (a pass with it
        # costs ~2x; seeds 0-7 of the benchmark problem: predicted right every time).
        want_H = not (np.isfinite(last_gap) and gap * (gap / last_gap) <= tol)
        last_gap = gap
        g0 = c - np.log(h) if h > 0 else np.inf
        noise = 8 * np.finfo(float).eps * (abs(g0) + 1) if h > 0 else 0.0  # rounding level
        if n_zero > 0:
            # Non-smooth point: some D pairs differ only in features of weight 0, where
            # g has slope -inf. Newton cannot see them; step into those features.
            d = g_zero / g_zero.max()
            t = c
            while True:
                an = a + t * d
                gn = g_of(an)
                if gn < g0 - noise or t < 1e-14 * c:
                    break
                t *= 0.5
            if not gn < g0 - noise:
                return a, it, False, h
            a = an
            h, gh, H, g_zero, n_zero = sums.diag(a, zero_pairs=True)
            continue
        grad = 1.0 - gh / h                                  # grad g in a
        b = np.sqrt(a)
        all_free = a.all()                                   # no weight at 0
        H_diag = None if all_free else np.diag(H).copy()
        # Hessian in b: (4 / h) H * b b^T + 4 u u^T + 2 diag(grad), u = b gh / h,
        # i.e. J^T hess_a J + 2 diag(grad) with J = diag(2 b). hess_a is positive
        # semidefinite (g is convex in a); the last term is where g(b) is not. It is
        # kept only where grad >= 0: at the optimum grad = 0 on the positive
        # weights and >= 0 on those at 0, so near it this is Newton's Hessian;
        # away from it the step is a Newton step in a mapped to b, not one through
        # |eigenvalues| (1-3 fewer iterations on seeds 0-7, 60 -> 49 in all).
        # (In place on the kernel's H, which is not used again.)
        bs = b * (2.0 / np.sqrt(h))
        u2 = b * gh * (2.0 / h)
        hess_b = H
        hess_b *= bs[:, None]
        hess_b *= bs
        hess_b += u2[:, None] * u2
        hess_b.flat[::p + 1] += 2.0 * np.maximum(grad, 0.0)
        grad_b = 2.0 * b * grad
        db = np.zeros(p)
        if all_free:
            free, Hf, gf = slice(None), hess_b, grad_b
        else:
            # A weight at 0 that the gradient pulls up (b = 0 is a stationary point
            # of g in b) restarts at its one-dimensional Newton value in a.
            revive = (a == 0) & (grad < 0)
            free = ~revive
            if revive.any():
                hjj = np.maximum(H_diag[revive] / h + gh[revive] ** 2 / h**2,
                                 np.finfo(float).tiny)
                db[revive] = np.sqrt(-grad[revive] / hjj)
            Hf = hess_b[np.ix_(free, free)] if not free.all() else hess_b
            gf = grad_b[free]
        try:                                  # positive definite: a plain Newton step
            np.linalg.cholesky(Hf)
            db[free] = -np.linalg.solve(Hf, gf)
        except np.linalg.LinAlgError:         # indefinite: |eigenvalues|
            lam, V = np.linalg.eigh(Hf)
            lam = np.abs(lam)
            lam = np.maximum(lam, 1e-10 * max(lam.max(), np.finfo(float).tiny))
            db[free] = -V @ ((V.T @ gf) / lam)
        dec = -(gf @ db[free])
        norm_b, norm_db = np.sqrt(b @ b), np.sqrt(db @ db)
        t = min(1.0, _DIAG_STEP * norm_b / norm_db) if norm_db > 0 else 1.0
        first = True
        while True:                       # Armijo along b + t db
            an = (b + t * db) ** 2
            if first:                     # usually taken: one pass for all sums
                full_step = sums.diag(an, hessian=want_H, zero_pairs=True)
                gn = an.sum() - np.log(full_step[0]) if full_step[0] > 0 else np.inf
            else:
                gn = g_of(an)
            if gn <= g0 - 1e-4 * t * dec + noise or t < 1e-14:
                break
            t *= 0.5
            first = False
        if gn > g0 + noise:               # no decrease even for tiny steps
            return a, it, gap <= 10 * tol, h
        a = an
        h, gh, H, g_zero, n_zero = full_step if first else sums.diag(a, zero_pairs=True)
    return a, max_iter, False, h
