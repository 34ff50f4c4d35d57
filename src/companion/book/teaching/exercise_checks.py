"""The book's checked exercises, one entry each: what it asks, the independent computation its
answer is compared with, on which inputs, within which tolerance, and the hints it gives.

An entry is a test registered with ``@exercise(label, answer, asks)``: ``answer`` is the name
the exercise asks the student to define and ``asks`` what it is, in one line (both are shown
when the answer is missing or raises).  The test receives the student's answer (a function, or
a value already copied into plain containers) and calls it through :func:`.exercise_engine.call`,
which bounds it in time and size; it refuses with :func:`.exercise_engine.require` and a hint.
An exercise whose answer is a function returning one number declares only its cases and hint:
``@exercise(label, answer, asks, number=what, hint=template)`` over a generator of
:class:`.exercise_engine.Case` (the inputs, the independent value, the tolerance, the facts
the hint names); the engine calls, compares and fills in the hint.

A check never contains the exercise's reference solution, and never compares the answer
with the package function that computes the answer. It tests the answer against an
independent computation that the exercise does not ask for (a Monte Carlo average, an
autograd step, the attention logits computed directly, a count made by enumeration, a
closed form derived another way; the shared ones are in :mod:`.exercise_references`), on
inputs that sample the exercise's domain including the corner cases of the formula asked for
(one-dimensional and non-square shapes, zero terms, the smallest and largest sizes), with a
tolerance no wider than the quantity allows.
"""

from __future__ import annotations

import numpy as np

from .exercise_engine import (Case, Exercise, as_array, as_ints, as_number, as_pair, as_whole, call, close, listed,
                              orthogonal, registrar, require, seeded)
from .exercise_references import (directionality_def, score_changes, skew_dimension, symmetry_def,
                                  t_test_power, test_matrices, tiny_decoder)

#: every checked exercise, by label
EXERCISES: dict[str, Exercise] = {}
exercise = registrar(EXERCISES)


# ------------------------------------------------------------------------ the bilinear form
@exercise("ex-bilinear-form-1", "reparametrize",
          "a function (Wq, Wk, G) -> (Wq2, Wk2) of [d_h, d] factors and an invertible d_h x d_h G, "
          "with Wq2 = G @ Wq and the same form Wq2.T @ Wk2 == Wq.T @ Wk")
def _(fn, label):
    rng = seeded(label)
    # one-dimensional heads (G a number, either sign), heads narrower, wider and as wide as d
    for d_h, d in ((1, 1), (1, 5), (3, 7), (6, 6), (9, 4)):
        Wq, Wk = rng.standard_normal((d_h, d)), rng.standard_normal((d_h, d))
        if d_h == 1:
            G = np.array([[-0.4 if d == 1 else 2.5]])
        else:  # invertible, neither orthogonal nor symmetric, singular values in [0.5, 3]
            G = orthogonal(rng, d_h) @ np.diag(rng.uniform(0.5, 3.0, d_h)) @ orthogonal(rng, d_h)
        want_q, want_form = G @ Wq, Wq.T @ Wk          # computed before the answer runs
        Wq2, Wk2 = call(fn, label, Wq, Wk, G, convert=lambda out: as_pair(out, label, "factors"))
        require(Wq2.shape == Wq.shape and Wk2.shape == Wk.shape, label,
                f"return two factors of the input shape {Wq.shape}; got {Wq2.shape} and {Wk2.shape}.")
        require(close(Wq2, want_q), label, f"for d_h = {d_h}, d = {d} the query factor should become G @ Wq.")
        require(close(Wq2.T @ Wk2, want_form), label,
                f"for d_h = {d_h}, d = {d} and a G that is neither orthogonal nor symmetric the form "
                "Wq2^T Wk2 differs from Wq^T Wk. With Wq -> G Wq the form picks up a factor G^T on the "
                "left of Wk; which matrix applied to Wk cancels it for every invertible G?")


@exercise("ex-bilinear-form-2", "augmented_form",
          "a function (Wq, bq, Wk, bk) -> a (d+1) x (d+1) matrix B with "
          "(x, 1) B (y, 1) = (Wq x + bq) . (Wk y + bk) for every x, y")
def _(fn, label):
    rng = seeded(label)
    ones = lambda Z: np.hstack([Z, np.ones((len(Z), 1))])
    # [d_h, d] factors: one-dimensional, wide, narrow and square heads; each bias zero once
    for (d_h, d), case in zip(((1, 1), (4, 6), (7, 3), (5, 5)), ("both biases", "bq = 0", "bk = 0", "large entries")):
        scale = 100.0 if case == "large entries" else 1.0
        Wq, Wk = scale * rng.standard_normal((d_h, d)), scale * rng.standard_normal((d_h, d))
        bq, bk = scale * rng.standard_normal(d_h), scale * rng.standard_normal(d_h)
        if case == "bq = 0":
            bq = np.zeros(d_h)
        if case == "bk = 0":
            bk = np.zeros(d_h)
        X, Y = rng.standard_normal((5, d)), rng.standard_normal((7, d))
        X[0], Y[0] = 0.0, 0.0                                  # x = y = 0 leaves only bq . bk
        logits = (X @ Wq.T + bq) @ (Y @ Wk.T + bk).T           # the attention logits, directly
        B = call(fn, label, Wq, bq, Wk, bk, convert=lambda out: as_array(out, label, "B"))
        require(B.shape == (d + 1, d + 1), label, f"for d = {d} B should be {(d + 1, d + 1)}; got {B.shape}.")
        got = ones(X) @ B @ ones(Y).T
        require(close(got, logits), label,
                f"with {case} (d_h = {d_h}, d = {d}) (x, 1) B (y, 1) differs from the logit (Wq x + bq) . "
                "(Wk y + bk) for random x, y: expand the product; the top-left block is M, the last "
                "column and last row carry the bias terms (which is which?), the corner bq . bk.")


# -------------------------------------------------------------------------------- measuring
def verdicts(answer, label: str, same: object) -> dict:
    """``{'symmetry': v, 'directionality': v}`` where each ``v`` is ``same`` (a bool: the
    score never moves) or an example: a pair ``(M, X)`` of square arrays showing that it does."""
    require(isinstance(answer, dict) and set(answer) == {"symmetry", "directionality"}, label,
            "answer with a dict {'symmetry': ..., 'directionality': ...}.")
    out = {}
    for score, v in answer.items():
        if isinstance(v, (bool, np.bool_)):
            require(bool(v) == same, label,
                    f"for the {score} score give {same} where it never moves, or an example (M, ...) where "
                    "it does; a bool of the other value is not an answer here.")
            out[score] = None
        else:
            require(isinstance(v, (tuple, list)) and len(v) == 2, label,
                    f"for the {score} score give {same}, or an example as a pair (M, ...) of arrays.")
            M, X = as_array(v[0], label, f"the {score} example's M"), as_array(v[1], label, f"the {score} example's second item")
            require(M.ndim == 2 and M.shape[0] == M.shape[1] and M.shape[0] >= 2, label,
                    f"the {score} example's M should be a square matrix, at least 2 x 2; got shape {M.shape}.")
            require(float(np.abs(M).max()) > 0, label, f"the {score} example's M is zero.")
            out[score] = (M, X)
    return out


@exercise("ex-measuring-1", "invariant_under_rotation",
          "a dict {'symmetry': ..., 'directionality': ...}: True where the score is unchanged by "
          "M -> Q M Q^T for every orthogonal Q, otherwise an example (M, Q) where it changes")
def _(answer, label):
    answer = verdicts(answer, label, True)
    rng = seeded(label)
    pairs = []
    for n in (6, 48):
        for M in test_matrices(rng, n):
            for Q in (orthogonal(rng, n), np.eye(n)[rng.permutation(n)], np.diag(rng.choice([-1.0, 1.0], n))):
                pairs.append((M, Q @ M @ Q.T))
    changed = score_changes(pairs)
    for score, example in answer.items():
        if example is None:
            require(not changed[score], label,
                    f"try it: score a matrix with one large column before and after a random rotation "
                    f"(np.linalg.qr of a Gaussian matrix gives Q); look again at the {score} score.")
            continue
        M, Q = example
        require(Q.shape == M.shape and np.allclose(Q.T @ Q, np.eye(len(Q)), atol=1e-8), label,
                f"the {score} example's Q should be an orthogonal matrix of M's shape (Q^T Q = I).")
        score_of = symmetry_def if score == "symmetry" else directionality_def
        before, after = score_of(M), score_of(Q @ M @ Q.T)
        require(abs(after - before) > 1e-6, label,
                f"your example leaves the {score} score where it was ({before:.6f} before and after): "
                + ("is there any rotation that moves it? Write s with traces." if score == "symmetry"
                   else "the score looks at outlying row and column norms; start from a matrix that has one."))


@exercise("ex-measuring-2", "first_order_gap",
          "a function (A, eps) -> your prediction of 1 - s(I + eps A), exact to order eps^2",
          number="your prediction",
          hint="for a {kind} {n} x {n} A and eps = {eps:g} the measured 1 - s is {want:.6e}, your prediction "
               "{got:.6e}; a prediction exact to order eps^2 is within {rtol:.1e} of it (relatively). Which "
               "part of A (symmetric or skew) can make s smaller than 1, and how does ||I + eps A||^2 grow with n?")
def _(rng):
    cases = []
    for n in (1, 2, 5, 25, 64):                           # 1 x 1: nothing to be skew
        A = rng.standard_normal((n, n))
        cases += [(A, 1e-3, "Gaussian"), (A, -1e-4, "Gaussian")]
    B = rng.standard_normal((6, 6))
    cases += [(B + B.T, 1e-3, "symmetric"), (B - B.T, 1e-3, "skew-symmetric"),
              (B + 4 * np.eye(6), 1e-3, "with a large trace"), (rng.uniform(-1, 1, (9, 9)), 2e-3, "uniform")]
    for A, eps, kind in cases:
        n = A.shape[0]
        M = np.eye(n) + eps * A
        N = (M - M.T) / 2                                  # 1 - s = 2 ||M_n||^2 / ||M||^2, no cancellation
        # within the next order: relative size of the terms in eps^3 and eps^4
        rtol = 4 * (2 * abs(eps * np.trace(A)) + eps ** 2 * np.sum(A * A)) / n + 1e-6
        yield Case((A, eps), 2 * np.sum(N * N) / np.sum(M * M), rtol=rtol, atol=1e-15,
                   facts={"kind": kind, "n": n, "eps": eps})


@exercise("ex-measuring-3", "changes_under_row_permutation",
          "a dict {'symmetry': ..., 'directionality': ...}: False where permuting the rows of M "
          "never changes the score, otherwise an example (M, perm) where it changes")
def _(answer, label):
    answer = verdicts(answer, label, False)
    rng = seeded(label)
    pairs = []
    for n in (5, 40):
        for M in test_matrices(rng, n):
            for _ in range(3):
                perm = rng.permutation(n)
                while np.all(perm == np.arange(n)):
                    perm = rng.permutation(n)
                pairs.append((M, M[perm]))
    changes = score_changes(pairs)
    for score, example in answer.items():
        if example is None:
            require(not changes[score], label,
                    f"which entries does a row permutation move, and does the {score} score compare entries "
                    "across rows and columns or only collect norms?")
            continue
        M, perm = example
        n = len(M)
        require(perm.shape == (n,) and sorted(perm.astype(int).tolist()) == list(range(n))
                and np.array_equal(perm, perm.astype(int)), label,
                f"the {score} example's perm should list the rows 0 to {n - 1} of M in a new order.")
        score_of = symmetry_def if score == "symmetry" else directionality_def
        before, after = score_of(M), score_of(M[perm.astype(int)])
        require(abs(after - before) > 1e-6, label,
                f"your example leaves the {score} score where it was ({before:.6f} before and after); "
                "which entries does a row permutation move, and which norms does the score collect?")


# ---------------------------------------------------------------------------------- errata
@exercise("ex-errata-1", "expected_symmetry",
          "a function n -> E[s] for an n x n matrix with i.i.d. zero-mean Gaussian entries, to leading order",
          number="your E[s]",
          hint="for Gaussian entries the leading-order formula is exact at every n: at n = {n:,} E[s] = {want:.6g}, "
               "your formula gives {got:.6g}. Count which terms of tr(M M) have non-zero mean, and compare "
               "with E ||M||_F^2.")
def _(rng):
    from scipy import stats

    # For Gaussian entries ||M_s||^2 and ||M_n||^2 are independent chi-squares with n(n+1)/2
    # and n(n-1)/2 degrees of freedom, so s = 2B - 1 with B ~ Beta(n(n+1)/4, n(n-1)/4): its mean
    # is known exactly at every n (a 1 x 1 matrix is symmetric: s = 1).
    for n in (1, 2, 3, 4, 7, 16, 64, 1000, 10**6):
        exact = 1.0 if n == 1 else 2 * float(stats.beta(n * (n + 1) / 4, n * (n - 1) / 4).mean()) - 1
        yield Case((n,), exact, rtol=1e-6, facts={"n": n})


# ------------------------------------------------------------------ objectives to structure
@exercise("ex-objectives-to-structure-2", "equal_masking_rate",
          "a number p in (0, 1): the masking rate at which masked-masked pairs are as many as "
          "masked-unmasked pairs, for long sequences")
def _(p, label):
    p = as_number(p, label, "the masking rate")
    require(0 < p < 1, label, f"a masking rate lies strictly between 0 and 1; got {p:g}.")
    for N in (10**7, 10**9):             # long sequences: the ratio's limit, to within 1e-5
        m = round(p * N)                 # masked positions of a sequence of N tokens
        both = m * (m - 1)               # ordered pairs of two masked positions, counted
        cross = m * (N - m)              # masked query, unmasked key
        require(cross > 0 and abs(both / cross - 1) < 1e-5, label,
                f"at p = {p:g} a sequence of {N:,} tokens has {both:,} masked-masked and {cross:,} cross "
                "pairs. Write both counts with Eq. S119 and set them equal.")


# --------------------------------------------------------------------------- what survives
@exercise("ex-what-survives-3", "seeds_needed",
          "the smallest number of seeds n whose detectable effect falls below 0.02, when three seeds "
          "detect 0.05 and the seed-to-seed spread stays the same (an int)")
def _(n, label):
    from scipy import optimize

    n = as_whole(n, label, 2, 10**6, "seeds")
    power = 0.8   # detectable effect: the true difference found with this probability
    # three seeds detect 0.05: 0.05 is ncp3 standard errors, ncp3 the power-0.8 non-centrality
    ncp3 = optimize.brentq(lambda c: t_test_power(3, c) - power, 0.0, 100.0, xtol=1e-12)
    sd = 0.05 * np.sqrt(3) / ncp3
    found = {k: t_test_power(k, 0.02 * np.sqrt(k) / sd) for k in (n - 1, n) if k >= 2}
    enough, before = found[n] > power, found.get(n - 1, 0.0) > power
    require(enough and not before, label,
            f"with {n} seeds a true difference of 0.02 is found with probability {found[n]:.3f}"
            + (f", and with {n - 1} already {found[n - 1]:.3f}" if before else "")
            + f"; 'detectable' means {power:.0%}. Recover the spread from the three-seed figure "
            "(the effect is proportional to it), then search n with detectable_effect.")


# ------------------------------------------------------------------------ training dynamics
@exercise("ex-training-dynamics-2", "untrained_symmetry",
          "a function (d, r) -> the expected symmetry score, to leading order, of an untrained "
          "layer's form Wq^T Wk with independent Gaussian [r, d] factors",
          number="your expected score",
          hint="{draws:,} untrained {d}-wide layers of rank {r} average s = {want:.4f} (standard error {se:.4f}); "
               "your formula gives {got:.4f}. Compute E tr(M^2) and E ||M||_F^2 for M = Wq^T Wk: which "
               "products of entries have non-zero mean?")
def _(rng):
    # width 1 (s = 1 exactly), narrow and wide heads (r < d, r = d, r > d), rank one
    for d, r, draws in ((1, 4, 500), (2, 1, 20000), (2, 9, 20000), (3, 3, 20000), (5, 40, 4000),
                        (12, 3, 4000), (40, 10, 1000)):
        Wq, Wk = rng.standard_normal((draws, r, d)), rng.standard_normal((draws, r, d))
        M = np.swapaxes(Wq, 1, 2) @ Wk                          # draws x [d, d] = Wq^T Wk
        s = np.einsum("nij,nji->n", M, M) / np.einsum("nij,nij->n", M, M)
        mean, se = float(s.mean()), float(s.std(ddof=1) / np.sqrt(draws))
        # a Monte Carlo mean: within 4.5 standard errors, plus the leading order's own error
        yield Case((d, r), mean, atol=4.5 * se + 0.02 / d**2, facts={"draws": draws, "d": d, "r": r, "se": se})


@exercise("ex-training-dynamics-1", "changed_positions",
          "a function (seq_len, t) -> the sorted list of positions whose logits change when the token "
          "at position t is replaced, in a decoder (causal-mask) model")
def _(fn, label):
    import torch

    from ...train.models.objectives import lm_logits

    model = tiny_decoder()
    gen = torch.Generator().manual_seed(1)
    # a one-token sequence, the first and the last position, and positions in between
    for seq_len, ts in ((1, (0,)), (2, (0, 1)), (7, (0, 3, 6)), (12, (0, 5, 11)), (20, (19, 8))):
        ids = torch.randint(0, 50, (1, seq_len), generator=gen)
        with torch.no_grad():
            base = lm_logits(model, ids)
        for t in ts:
            other = ids.clone()
            other[0, t] = (other[0, t] + 1) % 50
            with torch.no_grad():
                moved = (lm_logits(model, other) - base).abs().amax(dim=-1)[0]   # per position
            truth = [int(p) for p in torch.nonzero(moved > 1e-6).flatten()]
            got = call(fn, label, seq_len, t, convert=lambda out: sorted(as_ints(out, label, "your positions")))
            require(got == truth, label,
                    f"replacing token {t} of {seq_len} changed the logits at positions {listed(truth)} of an "
                    f"actual decoder; you said {listed(got)}. Which positions can attend to position {t} "
                    "under a causal mask?")


# ------------------------------------------------------------------------- rank-one updates
@exercise("ex-rank-one-updates-2", "proportional_factors",
          "a function d -> (Wq, Wk), two [d_h, d] factors (d_h >= d) with a non-zero form Wq.T @ Wk, "
          "for which one small gradient step changes the form in the direction of -G for every gradient G")
def _(fn, label):
    import torch

    g = torch.Generator().manual_seed(7)
    for d in (1, 2, 5, 8):                 # one dimension (every pair works) up to a few
        Wq, Wk = call(fn, label, d, convert=lambda out: as_pair(out, label, "factors"))
        require(Wq.ndim == 2 and Wq.shape == Wk.shape and Wq.shape[1] == d and Wq.shape[0] >= d, label,
                f"for d = {d} return two factors of shape [d_h, {d}] with d_h >= {d}; got {Wq.shape} and {Wk.shape}.")
        Wq, Wk = torch.as_tensor(Wq), torch.as_tensor(Wk)
        M0 = Wq.T @ Wk
        require(float(M0.norm()) > 1e-9 * float(Wq.norm() * Wk.norm()), label,
                f"for d = {d} the form Wq.T @ Wk is zero: such a layer attends to nothing.")
        # a step small enough that its second-order term is below rounding of the first
        eta = 1e-7 / (1 + float(torch.linalg.matrix_norm(Wq, 2)) ** 2 + float(torch.linalg.matrix_norm(Wk, 2)) ** 2)
        Gs = [torch.randn(d, d, generator=g, dtype=torch.float64) for _ in range(3)]
        if d > 1:
            Gs += [Gs[0] + Gs[0].T, Gs[1] - Gs[1].T]     # symmetric and skew-symmetric gradients
        for G in Gs:
            q, k = Wq.clone().requires_grad_(), Wk.clone().requires_grad_()
            (G * (q.T @ k)).sum().backward()                 # a loss whose gradient in M is G
            with torch.no_grad():
                change = (q - eta * q.grad).T @ (k - eta * k.grad) - M0
            cos = float((change * -G).sum() / (change.norm() * G.norm()))
            require(cos > 1 - 1e-9, label,
                    f"for d = {d}, after a gradient step (by autograd) the form moved at cosine {cos:.9f} to "
                    "-G, not along it. Write the first-order change in terms of Wq^T Wq, G and Wk^T Wk: "
                    "when is it a multiple of G for every G?")


# ----------------------------------------------------------------------------------- errata
def scipy_law(x, label: str):
    """``x`` as ``(dist, args, kwds)`` when it is a frozen law of scipy.stats itself (not an
    object that imitates one, a subclass, or a law with a method replaced on the instance),
    so that its tails and moments are computed by scipy's own code."""
    from scipy.stats import rv_continuous, rv_discrete
    from scipy.stats._distn_infrastructure import rv_continuous_frozen, rv_discrete_frozen

    dist = getattr(x, "dist", None) if type(x) in (rv_continuous_frozen, rv_discrete_frozen) else None
    genuine = (isinstance(dist, (rv_continuous, rv_discrete))
               and type(dist).__module__.startswith("scipy.stats.")
               and not any(callable(v) and callable(getattr(type(obj), k, None))
                           for obj in (x, dist) for k, v in vars(obj).items()))
    require(genuine, label,
            "return a pair of frozen scipy.stats distributions, e.g. (stats.norm(0, 1), ...), made by scipy.stats "
            f"itself; got {type(x).__name__}" + (" with a method replaced" if dist is not None else "") + ".")
    return dist, tuple(x.args), dict(x.kwds)


def two_laws_tails(out, label: str):
    require(isinstance(out, (tuple, list)) and len(out) == 2, label,
            "return a pair of frozen scipy.stats distributions, e.g. (stats.norm(0, 1), ...).")
    laws = [scipy_law(x, label) for x in out]

    class _Law:   # each law's tails and moments through scipy's class, never the instance's methods
        def __init__(self, law):
            self.dist, self.args, self.kwds = law

        def stats(self, moments):
            return type(self.dist).stats(self.dist, *self.args, moments=moments, **self.kwds)

        def logsf(self, z):
            return type(self.dist).logsf(self.dist, z, *self.args, **self.kwds)

    out = tuple(_Law(law) for law in laws)
    heavy, light = out
    (mh, vh), (ml, vl) = (tuple(float(v) for v in law.stats(moments="mv")) for law in (heavy, light))
    require(all(np.isfinite([mh, vh, ml, vl])) and vh > 0 and vl > 0, label,
            f"both laws need a finite mean and a finite positive variance; got means ({mh:.4g}, {ml:.4g}) and "
            f"variances ({vh:.4g}, {vl:.4g}).")
    require(abs(mh - ml) <= 1e-9 * (1 + abs(mh)) and abs(vh - vl) <= 1e-9 * vh, label,
            f"the means ({mh:.6g}, {ml:.6g}) and variances ({vh:.6g}, {vl:.6g}) must be equal.")
    z = mh + np.sqrt(vh) * np.geomspace(4, 60, 300)
    # each law is asked about its own copy of the points: a law that changed them would
    # have the other compared elsewhere
    return np.asarray(heavy.logsf(z.copy()), dtype=float), np.asarray(light.logsf(z.copy()), dtype=float)


@exercise("ex-errata-2", "two_laws",
          "a function () -> (heavier, lighter): two scipy.stats distributions with equal means and "
          "equal variances, the first with the larger upper tail at every point beyond some z")
def _(fn, label):
    import scipy.stats  # noqa: F401 - imported before the answer's clock starts

    heavy, light = call(fn, label, convert=lambda out: two_laws_tails(out, label))
    # compared on the log scale, so that tails far below 1e-308 are still told apart
    require(bool(np.all(heavy > light)), label,
            "from four to sixty standard deviations above the mean the first law's upper tail must lie "
            "above the second's at every point; which laws of equal variance put more mass far out?")


# ----------------------------------------------------------------------------------- survey
@exercise("ex-survey-1", "differing_repeats",
          "a set of catalog keys: the models printed more than once in Table S2 whose repeated rows "
          "print different numbers")
def _(answer, label):
    from ...zoo.catalog import published_scores

    require(isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(k, str) for k in answer), label,
            "answer with a set of catalog keys (the 'key' column of published_scores()).")
    s2 = published_scores()
    s2 = s2[s2["table"] == "S2"]
    # counted from the printed numbers themselves, not from the catalog's problem flags
    distinct = s2.groupby("key").apply(lambda g: len({(r.median, r.q25, r.q75) for r in g.itertuples()}),
                                       include_groups=False)
    truth = set(distinct[distinct > 1].index)
    got = set(answer)
    require(got == truth, label,
            f"{len(got & truth)} of your {len(got)} keys are right, {len(truth - got)} are missing. Group "
            "Table S2's rows by key and compare the printed median and quartiles of the repeats.")


@exercise("ex-survey-2", "agreeing_heads",
          "the set of SmolLM2 query heads (0-8) whose score is the same under the grouped and the "
          "modulo pairing")
def _(answer, label):
    import torch
    from transformers.models.llama.modeling_llama import repeat_kv   # how the model pairs its heads

    require(isinstance(answer, (set, frozenset, list, tuple, np.ndarray)), label,
            "answer with a set of head numbers, e.g. {0, 1}.")
    heads = as_ints(answer, label, "your set of heads")
    require(all(0 <= h < 9 for h in heads), label,
            f"SmolLM2 has query heads 0 to 8; got {listed(sorted(set(heads)))}.")
    # SmolLM2's head counts (9 query heads sharing 3 key heads) on random weights: the scores
    # of the forms each pairing builds, from the factors themselves
    n_heads, n_kv, d_head, d = 9, 3, 8, 24
    g = torch.Generator().manual_seed(3)
    Wq = torch.randn(n_heads, d_head, d, generator=g, dtype=torch.float64)
    Wk = torch.randn(n_kv, d_head, d, generator=g, dtype=torch.float64)
    paired = {"grouped": repeat_kv(Wk[None], n_heads // n_kv)[0],   # the key head attention uses
              "modulo": Wk.repeat(n_heads // n_kv, 1, 1)}           # key heads tiled: h mod n_kv
    scores = {}
    for pairing, K in paired.items():
        M = Wq.transpose(1, 2) @ K                                   # [heads, d, d]
        scores[pairing] = np.array([symmetry_def(m) for m in M.numpy()])
    truth = {h for h in range(n_heads) if abs(scores["grouped"][h] - scores["modulo"][h]) < 1e-12}
    require(set(heads) == truth, label,
            "a head's score is the same under both pairings exactly when both give it the same key head; "
            "write out which key head each pairing gives to each of the nine query heads.")


# ------------------------------------------------------------------------- symmetric init
@exercise("ex-symmetric-init-2", "smallest_skew_dim",
          "the smallest number of dimensions per head for which a skew-symmetric matrix can be non-zero (an int)")
def _(k, label):
    k = as_whole(k, label, 1, 10**6, "dimensions")
    require(skew_dimension(k) > 0, label,
            f"every {k} x {k} skew-symmetric matrix is zero: write one out and look at its diagonal.")
    require(skew_dimension(k - 1) == 0, label,
            f"{k} is not the smallest: fewer dimensions already allow a non-zero skew-symmetric matrix "
            "(an entry above the diagonal fixes the one below it; what is the smallest matrix with both?).")


# -------------------------------------------------------------------------------- mechanism
@exercise("ex-mechanism-1", "applied_update",
          "a function (G, gq, gk, eta) -> the exact change of M = Wq^T Wk after one plain SGD step, "
          "written with G = gq^T Wk + Wq^T gk and the raw gradients")
def _(fn, label):
    rng = seeded(label)
    # the step is taken on the factors themselves; the answer sees only G, the gradients and eta
    for d_h, d, eta in ((1, 1, 0.3), (3, 5, 0.05), (6, 4, 1.0), (8, 8, 1e-3), (2, 7, 2.5)):
        Wq, Wk = rng.standard_normal((d_h, d)), rng.standard_normal((d_h, d))
        gq, gk = rng.standard_normal((d_h, d)), rng.standard_normal((d_h, d))
        stepped = (Wq - eta * gq).T @ (Wk - eta * gk) - Wq.T @ Wk
        G = gq.T @ Wk + Wq.T @ gk
        got = call(fn, label, G, gq, gk, eta, convert=lambda out: as_array(out, label, "your change of M"))
        require(got.shape == stepped.shape, label, f"the change of M is {stepped.shape}; got {got.shape}.")
        require(close(got, stepped), label,
                f"for eta = {eta:g} and [{d_h}, {d}] factors the form moved by a different matrix than yours. "
                "Multiply out (Wq - eta gq)^T (Wk - eta gk) and keep every term, the one in eta^2 included.")


# ----------------------------------------------------------------------------- fig3 decided
@exercise("ex-fig3-decided-1", "targets_per_token",
          "a function (steps, batch, block, train_tokens, mask_rate) -> (next-token, masked): how many "
          "times an average training token is a prediction target under each objective")
def _(fn, label):
    rng = seeded(label)
    # a packed stream read block after block, wrapping around, counted token by token
    for steps, batch, block, n_tokens, rate in ((30, 4, 16, 600, 0.15), (7, 3, 8, 50, 0.45),
                                                (40, 2, 32, 1000, 0.25), (1, 1, 64, 64, 0.15)):
        seen, masked = np.zeros(n_tokens), np.zeros(n_tokens)
        draws = 200
        for _ in range(draws):
            pos = 0
            for _ in range(steps * batch):
                idx = (pos + np.arange(block)) % n_tokens
                pos = (pos + block) % n_tokens
                seen[idx] += 1
                masked[idx] += rng.random(block) < rate
        want = np.array([seen.mean() / draws, masked.mean() / draws])
        got = call(fn, label, steps, batch, block, n_tokens, rate,
                   convert=lambda out: as_pair(out, label, "counts"))
        got = np.array([float(np.reshape(g, -1)[0]) if np.size(g) == 1 else np.nan for g in got])
        require(bool(np.all(np.isfinite(got))), label, "return two numbers, e.g. `return a, b`.")
        require(abs(got[0] - want[0]) <= 1e-9 * want[0] and abs(got[1] - want[1]) <= 0.05 * want[1], label,
                f"reading {steps} steps of {batch} blocks of {block} tokens from {n_tokens:,} training tokens "
                f"(masking {rate:.0%}) made each token a target {want[0]:.3g} times under next-token prediction "
                f"and about {want[1]:.3g} under masking; you said {got[0]:.3g} and {got[1]:.3g}. How many "
                "tokens do the steps read in all, and which of them does each objective predict?")


# ----------------------------------------------------------------------- context prediction
@exercise("ex-context-prediction-2", "expected_ratio",
          "a function p -> E[mu_c] / E[mu_p] (Eq. S68) for a causal model on windows of N = len(p) "
          "tokens, p[k-1] = Pr[t_k = t*] the chance that position k holds the token",
          number="your ratio",
          hint="for windows of {N} tokens and these positional chances the pairs count a ratio of {want:.6g}; "
               "yours is {got:.6g}. A token at position k is context for how many later positions, and "
               "predicted from how many earlier ones?")
def _(rng):
    cases = [np.full(5, 0.1), np.full(64, 0.02), np.linspace(0.01, 0.2, 12), np.linspace(0.2, 0.01, 12),
             rng.uniform(0.0, 0.3, 9), np.array([0.0, 0.0, 0.5, 0.1])]
    for p in cases:
        N = len(p)
        # every ordered pair of positions j < i: j is context for the target i (a causal mask)
        context = sum(p[j] for i in range(N) for j in range(i))
        predicted = sum(p[i] for i in range(N) for j in range(i))
        yield Case((p,), context / predicted, rtol=1e-9, facts={"N": N})
