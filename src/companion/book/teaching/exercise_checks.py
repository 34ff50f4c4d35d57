"""The book's checked exercises: every check is data in its chapter's entry of
``data/chapters.yaml`` (``exercises: {<label>: {..., check: {...}}}``), read here into
:data:`EXERCISES` by :func:`.exercise_engine.from_data`, with the independent computations it
names (:mod:`.exercise_references`).

Code is left only where data cannot say what is checked: the six :data:`JUDGES` below, for
answers that are not compared with one value but are an example or a construction whose
property is tested.  Their expected value would be the reference solution itself (the factor
``G^{-T} Wk`` of ex-bilinear-form-1, the augmented matrix of ex-bilinear-form-2: each is
tested through what it must do, never against the solution), or there is no single answer at
all (an example matrix of ex-measuring-1 and ex-measuring-3, a pair of factors of
ex-rank-one-updates-2 checked by an autograd step, two scipy laws of ex-errata-2 compared tail
by tail).  A judge reads the answer through :func:`.exercise_engine.call` (bounded in time and
size) and refuses it with :func:`.exercise_engine.require` and a one-line hint.

A check never contains the exercise's reference solution, and never compares the answer
with the package function that computes the answer. It tests the answer against an
independent computation that the exercise does not ask for (a Monte Carlo average, an
autograd step, the attention logits computed directly, a count made by enumeration, a
closed form derived another way), on inputs that sample the exercise's domain including the
corner cases of the formula asked for (one-dimensional and non-square shapes, zero terms, the
smallest and largest sizes), with a tolerance no wider than the quantity allows.
"""

from __future__ import annotations

import numpy as np

from .exercise_engine import (Exercise, _guarded, as_array, as_pair, call, close, coarse_float, from_data, require,
                              require_close, seeded)
from .exercise_references import (CASES, REFERENCES, cut_margin, directionality_def, orthogonal, score_changes,
                                  symmetry_def, test_matrices)


# ------------------------------------------------------------------------ the bilinear form
def reparametrize(fn, label):
    rng = seeded(label)
    # one-dimensional heads (G a number, either sign), heads narrower, wider and as wide as d
    for d_h, d in ((1, 1), (1, 5), (3, 7), (6, 6), (9, 4)):
        Wq, Wk = rng.standard_normal((d_h, d)), rng.standard_normal((d_h, d))
        if d_h == 1:
            G = np.array([[-0.4 if d == 1 else 2.5]])
        else:  # invertible, neither orthogonal nor symmetric, singular values in [0.5, 3]
            G = orthogonal(rng, d_h) @ np.diag(rng.uniform(0.5, 3.0, d_h)) @ orthogonal(rng, d_h)
        want_q, want_form = G @ Wq, Wq.T @ Wk          # computed before the answer runs
        (Wq2, Wk2), coarse = call(fn, label, Wq, Wk, G,
                                  convert=lambda out: (as_pair(out, label, "factors"), coarse_float(out)))
        require(Wq2.shape == Wq.shape and Wk2.shape == Wk.shape, label,
                f"return two factors of the input shape {Wq.shape}; got {Wq2.shape} and {Wk2.shape}.")
        require_close(lambda rtol: close(Wq2, want_q, rtol or 1e-9), label,
                      f"for d_h = {d_h}, d = {d} the query factor should become G @ Wq.", coarse)
        require_close(lambda rtol: close(Wq2.T @ Wk2, want_form, rtol or 1e-9), label,
                      f"for d_h = {d_h}, d = {d} and a G that is neither orthogonal nor symmetric the form "
                      "Wq2^T Wk2 differs from Wq^T Wk. With Wq -> G Wq the form picks up a factor G^T on the "
                      "left of Wk; which matrix applied to Wk cancels it for every invertible G?", coarse)


def augmented_form(fn, label):
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
        B, coarse = call(fn, label, Wq, bq, Wk, bk, convert=lambda out: (as_array(out, label, "B"), coarse_float(out)))
        require(B.shape == (d + 1, d + 1), label, f"for d = {d} B should be {(d + 1, d + 1)}; got {B.shape}.")
        got = ones(X) @ B @ ones(Y).T
        require_close(lambda rtol: close(got, logits, rtol or 1e-9), label,
                      f"with {case} (d_h = {d_h}, d = {d}) (x, 1) B (y, 1) differs from the logit (Wq x + bq) . "
                      "(Wk y + bk) for random x, y: expand the product; the top-left block is M, the last "
                      "column and last row carry the bias terms (which is which?), the corner bq . bk.", coarse)


# -------------------------------------------------------------------------------- measuring
def verdicts(answer, label: str, same: object) -> dict:
    """``{'symmetry': v, 'directionality': v}`` where each ``v`` is ``same`` (a bool: the
    score never moves) or an example: a pair ``(M, X)`` of square arrays showing that it does.

    ``M`` is read at unit scale (its largest entry 1): both scores are unchanged by a positive
    factor (Def. 3.1, 3.2), and at that scale no square overflows or underflows, so that a
    change of a score is never read from the rounding of subnormal or infinite sums."""
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
            out[score] = (M / float(np.abs(M).max()), X)
    return out


def _scores(score: str, M: np.ndarray, moved: np.ndarray, label: str) -> tuple[float, float]:
    """The ``score`` of ``M`` and of ``moved``; a directionality is refused where a row or
    column norm lies on its cut to within rounding, before or after (:func:`cut_margin`):
    there d = (R - C) / (R + C) is 0/0, and the order of a sum moves it between -1, 0 and 1."""
    if score == "symmetry":
        return symmetry_def(M), symmetry_def(moved)
    require(min(cut_margin(M), cut_margin(moved)) >= 1e-6, label,
            f"in your {score} example a row or column norm lies on its cut (mean + 2 std of the norms) to within "
            "rounding, before or after: there the score is 0/0, read from rounding. Choose an M whose outlying "
            "norm lies clearly beyond the cut.")
    return directionality_def(M), directionality_def(moved)


def invariant_under_rotation(answer, label):
    answer = _guarded(label, lambda: verdicts(answer, label, True))   # (an answer's methods may never return)
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
        require(Q.shape == M.shape and float(np.abs(Q.T @ Q - np.eye(len(Q))).max()) <= 1e-6, label,
                f"the {score} example's Q should be an orthogonal matrix of M's shape (Q^T Q = I).")
        U, _, Vt = np.linalg.svd(Q)   # the orthogonal matrix nearest Q: a stretch within the tolerance moves nothing
        before, after = _scores(score, M, (U @ Vt) @ M @ (U @ Vt).T, label)
        require(abs(after - before) > 1e-6, label,
                f"your example leaves the {score} score where it was ({before:.6f} before and after): "
                + ("is there any rotation that moves it? Write s with traces." if score == "symmetry"
                   else "the score looks at outlying row and column norms; start from a matrix that has one."))


def changes_under_row_permutation(answer, label):
    answer = _guarded(label, lambda: verdicts(answer, label, False))
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
        before, after = _scores(score, M, M[perm.astype(int)], label)
        require(abs(after - before) > 1e-6, label,
                f"your example leaves the {score} score where it was ({before:.6f} before and after); "
                "which entries does a row permutation move, and which norms does the score collect?")


# ------------------------------------------------------------------------- rank-one updates
def proportional_factors(fn, label):
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
            with torch.enable_grad():      # (also in a notebook that switched gradients off)
                (G * (q.T @ k)).sum().backward()             # a loss whose gradient in M is G
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
    object that imitates one, a subclass, a law with a method replaced on the instance, or
    one of scipy's classes built or set with another support than ``scipy.stats.<name>``'s),
    so that its tails and moments are computed by scipy's own code."""
    import scipy.stats
    from scipy.stats import rv_continuous, rv_discrete
    from scipy.stats._distn_infrastructure import rv_continuous_frozen, rv_discrete_frozen

    dist = getattr(x, "dist", None) if type(x) in (rv_continuous_frozen, rv_discrete_frozen) else None
    settings = lambda d: {k: repr(v) for k, v in vars(d).items()
                          if not callable(v) and k not in ("_random_state", "_ctor_param")}
    ref = getattr(scipy.stats, str(getattr(dist, "name", "")), None)
    genuine = (isinstance(dist, (rv_continuous, rv_discrete))
               and type(dist).__module__.startswith("scipy.stats.")
               and not any(callable(v) and callable(getattr(type(obj), k, None))
                           for obj in (x, dist) for k, v in vars(obj).items())
               # scipy.stats.<name> itself: not its class built or set with another support
               # (its moments would still be the full law's, its tails those of the cut one)
               and type(ref) is type(dist) and settings(ref) == settings(dist))
    require(genuine, label,
            "return a pair of frozen scipy.stats distributions, e.g. (stats.norm(0, 1), ...), made by scipy.stats "
            f"itself; got {type(x).__name__}" + (" with a method or setting changed" if dist is not None else "") + ".")
    return dist, tuple(x.args), dict(x.kwds)


def two_laws_pair(out, label: str):
    require(isinstance(out, (tuple, list)) and len(out) == 2, label,
            "return a pair of frozen scipy.stats distributions, e.g. (stats.norm(0, 1), ...).")
    return out


def genuine_laws(out, label: str) -> tuple:
    """``out`` when it is a pair of scipy.stats' own frozen laws (:func:`scipy_law`)."""
    for x in two_laws_pair(out, label):
        scipy_law(x, label)
    return tuple(out)


def two_laws_tails(out, label: str):
    laws = [scipy_law(x, label) for x in two_laws_pair(out, label)]

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


def two_laws(fn, label):
    import scipy.stats  # noqa: F401 - imported before the answer's clock starts

    laws = call(fn, label, convert=lambda out: genuine_laws(out, label))
    # the tails are read in a process of their own, not in the one the answer ran in (where it
    # may have rewritten scipy or this module): the laws alone come back from there, as data
    heavy, light = _guarded(label, lambda: two_laws_tails(laws, label))
    # compared on the log scale, so that tails far below 1e-308 are still told apart
    require(bool(np.all(heavy > light)), label,
            "from four to sixty standard deviations above the mean the first law's upper tail must lie "
            "above the second's at every point; which laws of equal variance put more mass far out?")


#: the tests of the answers that data cannot check, by the name an exercise's data gives
JUDGES = {f.__name__: f for f in (reparametrize, augmented_form, invariant_under_rotation,
                                  changes_under_row_permutation, proportional_factors, two_laws)}


def load_exercises(registry: dict | None = None) -> dict[str, Exercise]:
    """``{label: Exercise}`` of every exercise whose entry in ``data/chapters.yaml`` (or in
    ``registry``) has a ``check``; a malformed check is refused in one line naming its chapter,
    its label and the fix."""
    from ..budgets.chapters_registry import exercises

    return {label: from_data(label, e["check"], e["chapter"], CASES, REFERENCES, JUDGES)
            for label, e in exercises(registry).items() if "check" in e}


#: every checked exercise, by label
EXERCISES: dict[str, Exercise] = load_exercises()
