"""Checks for the book's exercises: a student's answer passes, or fails with a hint.

In a chapter's exercise (and in the student notebooks) an exercise that asks for code ends
with a call such as::

    from companion.exercises import check
    check("ex-measuring-2", first_order_gap)

:func:`check` runs the test registered for that label: it prints one line when the answer
passes and raises :class:`WrongAnswer` (an ``AssertionError`` with a hint) when it does not.
Checks run offline on a CPU in well under a second each.

A check never contains the exercise's reference solution. It tests the answer against an
independent computation that the exercise does not ask for (the package's scores on random
inputs, the attention logits computed directly, a count made by enumeration), so the check
can fail a wrong answer without printing the right one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["WrongAnswer", "Exercise", "EXERCISES", "check", "checked_labels", "book_exercises"]


class WrongAnswer(AssertionError):
    """The answer failed its check; the message says what was expected and gives a hint."""


@dataclass(frozen=True)
class Exercise:
    label: str
    answer: str     # the name the exercise asks the student to define
    asks: str       # what the answer is, in one line
    test: Callable[[Any, str], None]  # (answer, label); raises WrongAnswer


EXERCISES: dict[str, Exercise] = {}


def _exercise(label: str, answer: str, asks: str):
    def register(fn):
        EXERCISES[label] = Exercise(label, answer, asks, fn)
        return fn
    return register


def checked_labels() -> list[str]:
    """The labels of every exercise that has a check."""
    return sorted(EXERCISES)


def book_exercises(root=None):
    """Every exercise of the book's chapters as a table: ``label, chapter, number, checked, asks``.

    ``number`` is the exercise's position in its chapter; ``checked`` says whether
    :func:`check` has a test for it (the rest are answered in words: a proof, a design).
    """
    import re
    from pathlib import Path

    import pandas as pd

    from .notebooks import book_chapters

    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    rows = []
    for ch in book_chapters(root):
        labels = re.findall(r"^:{3,}\{exercise\}\s*\n:label: (\S+)", ch.source.read_text(encoding="utf-8"), re.M)
        for i, label in enumerate(labels, 1):
            ex = EXERCISES.get(label)
            rows.append({"label": label, "chapter": ch.docname.split("/")[-1], "number": i,
                         "checked": ex is not None, "asks": ex.asks if ex else ""})
    return pd.DataFrame(rows, columns=["label", "chapter", "number", "checked", "asks"])


def check(label: str, answer: Any) -> bool:
    """Check ``answer`` for exercise ``label``; print a line and return True if it passes.

    Raises :class:`WrongAnswer` with a hint when it does not, and ``KeyError`` naming the
    checked exercises when ``label`` has no check.
    """
    if label not in EXERCISES:
        raise KeyError(f"no check for exercise {label!r}; exercises with checks: {', '.join(checked_labels())}")
    ex = EXERCISES[label]
    if answer is None or answer is Ellipsis:
        raise WrongAnswer(f"{label}: no answer yet; define `{ex.answer}`: {ex.asks}.")
    try:
        ex.test(answer, label)
    except WrongAnswer:
        raise
    except Exception as err:  # the student's code raised: say so, with the exercise's ask
        raise WrongAnswer(f"{label}: your `{ex.answer}` raised {type(err).__name__}: {err}. "
                          f"Expected {ex.asks}.") from err
    print(f"{label}: correct")
    return True


def _require(ok: bool, label: str, hint: str) -> None:
    if not ok:
        raise WrongAnswer(f"{label}: not yet. {hint}")


def _call(fn, label: str, *args):
    """``fn(*args)``, refusing a function that is still the stub (returns None)."""
    _require(callable(fn), label, "answer with a function (def ...), as the exercise's starter code does.")
    out = fn(*args)
    _require(out is not None, label, "your function returns None: fill in its body and return the result.")
    return out


def _rng(label: str) -> np.random.Generator:
    return np.random.default_rng(sum(map(ord, label)))


# ------------------------------------------------------------------------ the bilinear form
@_exercise("ex-bilinear-form-1", "reparametrize",
           "a function (Wq, Wk, G) -> (Wq2, Wk2) of [r, d] factors and an invertible r x r G, "
           "with Wq2 = G @ Wq and the same form Wq2.T @ Wk2 == Wq.T @ Wk")
def _(fn, label):
    rng = _rng(label)
    for r, d in ((4, 6), (8, 8)):
        Wq, Wk = rng.standard_normal((r, d)), rng.standard_normal((r, d))
        G = rng.standard_normal((r, r)) + 3 * np.eye(r)  # invertible, not orthogonal
        Wq2, Wk2 = (np.asarray(a, dtype=float) for a in _call(fn, label, Wq, Wk, G))
        _require(Wq2.shape == Wq.shape and Wk2.shape == Wk.shape, label,
                 f"return two factors of the input shape {Wq.shape}; got {Wq2.shape} and {Wk2.shape}.")
        _require(np.allclose(Wq2, G @ Wq), label, "the query factor should become G @ Wq.")
        _require(np.allclose(Wq2.T @ Wk2, Wq.T @ Wk), label,
                 "with Wq -> G Wq the form Wq^T Wk picks up a factor G^T on the left of Wk; "
                 "which matrix applied to Wk cancels it for every invertible G, not only orthogonal ones?")


@_exercise("ex-bilinear-form-2", "augmented_form",
           "a function (Wq, bq, Wk, bk) -> a (d+1) x (d+1) matrix B with "
           "(x, 1) B (y, 1) = (Wq x + bq) . (Wk y + bk) for every x, y")
def _(fn, label):
    rng = _rng(label)
    r, d = 4, 6
    Wq, Wk = rng.standard_normal((r, d)), rng.standard_normal((r, d))
    bq, bk = rng.standard_normal(r), rng.standard_normal(r)
    B = np.asarray(_call(fn, label, Wq, bq, Wk, bk), dtype=float)
    _require(B.shape == (d + 1, d + 1), label, f"B should be {(d + 1, d + 1)}; got {B.shape}.")
    X, Y = rng.standard_normal((5, d)), rng.standard_normal((7, d))
    logits = (X @ Wq.T + bq) @ (Y @ Wk.T + bk).T           # the attention logits, directly
    ones = lambda Z: np.hstack([Z, np.ones((len(Z), 1))])
    got = ones(X) @ B @ ones(Y).T
    _require(np.allclose(got, logits), label,
             "compare (x, 1) B (y, 1) with the logit for random x, y: the top-left block is M, "
             "the last column and last row carry the bias terms, the corner bq . bk.")


# -------------------------------------------------------------------------------- measuring
def _bool_dict(answer, label: str) -> dict:
    _require(isinstance(answer, dict) and set(answer) == {"symmetry", "directionality"}
             and all(isinstance(v, (bool, np.bool_)) for v in answer.values()), label,
             "answer with a dict {'symmetry': True/False, 'directionality': True/False}.")
    return answer


def _scores_that_change(M: np.ndarray, moved: np.ndarray) -> dict:
    """``{score: True}`` for each score that differs between ``M`` and ``moved``."""
    from .scores import directionality_score, symmetry_score

    return {"symmetry": not np.isclose(symmetry_score(M), symmetry_score(moved)),
            "directionality": not np.isclose(directionality_score(M), directionality_score(moved))}


@_exercise("ex-measuring-1", "invariant_under_rotation",
           "a dict {'symmetry': bool, 'directionality': bool}: is each score unchanged by M -> Q M Q^T "
           "for every orthogonal Q?")
def _(answer, label):
    answer = _bool_dict(answer, label)
    rng = _rng(label)
    M = rng.standard_normal((48, 48))
    M[:, 0] *= 8
    Q, _ = np.linalg.qr(rng.standard_normal((48, 48)))
    truth = {score: not changed for score, changed in _scores_that_change(M, Q @ M @ Q.T).items()}
    for score, same in truth.items():
        _require(answer[score] == same, label,
                 f"try it: score a matrix with one large column before and after a random rotation "
                 f"(np.linalg.qr of a Gaussian matrix gives Q); look again at the {score} score.")


@_exercise("ex-measuring-2", "first_order_gap",
           "a function (A, eps) -> your prediction of 1 - s(I + eps A), exact to order eps^2")
def _(fn, label):
    from .scores import symmetry_score

    rng = _rng(label)
    for n in (5, 16):
        A = rng.standard_normal((n, n))
        for eps in (1e-2, 3e-3):
            want = 1 - symmetry_score(np.eye(n) + eps * A)   # measured, not predicted
            got = float(_call(fn, label, A, eps))
            _require(abs(got - want) <= 0.05 * abs(want), label,
                     f"for n = {n}, eps = {eps:g} the measured 1 - s is {want:.3e}, your prediction "
                     f"{got:.3e}. Which part of A (symmetric or skew) can make s smaller than 1, and how "
                     "does ||I + eps A||^2 grow with n?")


@_exercise("ex-measuring-3", "changes_under_row_permutation",
           "a dict {'symmetry': bool, 'directionality': bool}: does each score change, in general, "
           "when only the rows of M are permuted?")
def _(answer, label):
    answer = _bool_dict(answer, label)
    rng = _rng(label)
    M = rng.standard_normal((40, 40))
    M = M + M.T
    M[:, 0] *= 8
    P = np.eye(40)[rng.permutation(40)]
    for score, changes in _scores_that_change(M, P @ M).items():
        _require(answer[score] == changes, label,
                 f"which entries does a row permutation move, and does the {score} score compare entries "
                 "across rows and columns or only collect norms?")


# ---------------------------------------------------------------------------------- errata
@_exercise("ex-errata-1", "expected_symmetry",
           "a function n -> E[s] for an n x n matrix with i.i.d. zero-mean Gaussian entries, to leading order")
def _(fn, label):
    from .null import null_scores

    for n in (16, 64):
        s = null_scores(n, n_samples=400, seed=n, device="cpu")["symmetry"].to_numpy()
        se = s.std(ddof=1) / np.sqrt(len(s))
        got = float(_call(fn, label, n))
        _require(abs(got - s.mean()) < 4 * se + 0.05 / n, label,
                 f"400 random {n} x {n} matrices average s = {s.mean():.4f} (standard error {se:.4f}); "
                 f"your formula gives {got:.4f}. Count which terms of tr(M M) have non-zero mean.")


# ------------------------------------------------------------------ objectives to structure
@_exercise("ex-objectives-to-structure-2", "equal_masking_rate",
           "a number p in (0, 1): the masking rate at which masked-masked pairs are as many as "
           "masked-unmasked pairs, for long sequences")
def _(p, label):
    p = float(p)
    _require(0 < p < 1, label, f"a masking rate lies strictly between 0 and 1; got {p:g}.")
    N = 100_000
    m = round(p * N)                 # masked positions of a sequence of N tokens
    both = m * (m - 1)               # ordered pairs of two masked positions, counted
    cross = m * (N - m)              # masked query, unmasked key
    _require(abs(both / cross - 1) < 1e-3, label,
             f"at p = {p:g} a sequence of {N} tokens has {both:,} masked-masked and {cross:,} cross pairs. "
             "Write both counts with Eq. S119 and set them equal.")


# --------------------------------------------------------------------------- what survives
@_exercise("ex-what-survives-3", "seeds_needed",
           "the smallest number of seeds n whose detectable effect falls below 0.02, when three seeds "
           "detect 0.05 and the seed-to-seed spread stays the same (an int)")
def _(n, label):
    from .verdicts import detectable_effect

    _require(isinstance(n, (int, np.integer)) and n >= 2, label, "answer with a whole number of seeds (>= 2).")
    sd = 0.05 / detectable_effect(3, 1.0)      # the spread implied by the three-seed figure
    ok_n, ok_before = detectable_effect(int(n), sd) < 0.02, detectable_effect(int(n) - 1, sd) < 0.02
    _require(ok_n and not ok_before, label,
             f"with {n} seeds the detectable effect is {detectable_effect(int(n), sd):.4f}"
             + (" (and one seed fewer already suffices)" if ok_before else "")
             + ". Recover the spread from the three-seed figure, then search n with detectable_effect.")


# ------------------------------------------------------------------------ training dynamics
@_exercise("ex-training-dynamics-2", "untrained_symmetry",
           "a function (d, r) -> the expected symmetry score, to leading order, of an untrained "
           "layer's form Wq^T Wk with independent Gaussian [r, d] factors")
def _(fn, label):
    from .null import null_scores

    for d, r in ((32, 8), (96, 96)):
        s = null_scores(d, n_samples=400, rank=r, seed=d + r, device="cpu")["symmetry"].to_numpy()
        se = s.std(ddof=1) / np.sqrt(len(s))
        got = float(_call(fn, label, d, r))
        _require(abs(got - s.mean()) < 4 * se + 0.1 / d, label,
                 f"400 untrained {d}-wide layers of rank {r} average s = {s.mean():.4f} (standard error "
                 f"{se:.4f}); your formula gives {got:.4f}. Compute E tr(M^2) and E ||M||_F^2 for "
                 "M = Wq^T Wk: which products of entries have non-zero mean?")


# ------------------------------------------------------------------------- rank-one updates
@_exercise("ex-rank-one-updates-2", "proportional_factors",
           "a function d -> (Wq, Wk), two [d_h, d] factors (d_h >= d) with a non-zero form Wq.T @ Wk, "
           "for which one small gradient step changes the form in the direction of -G for every gradient G")
def _(fn, label):
    import torch

    d = 6
    Wq, Wk = (torch.as_tensor(np.asarray(w, dtype=float)) for w in _call(fn, label, d))
    _require(Wq.ndim == 2 and Wq.shape == Wk.shape and Wq.shape[1] == d and Wq.shape[0] >= d, label,
             f"return two factors of shape [d_h, {d}] with d_h >= {d}; got {tuple(Wq.shape)} and {tuple(Wk.shape)}.")
    M0 = Wq.T @ Wk
    _require(float(M0.norm()) > 1e-6, label, "the form Wq.T @ Wk is zero: such a layer attends to nothing.")
    g = torch.Generator().manual_seed(7)
    eta = 1e-6
    for _ in range(3):
        G = torch.randn(d, d, generator=g, dtype=torch.float64)
        q, k = Wq.clone().requires_grad_(), Wk.clone().requires_grad_()
        (G * (q.T @ k)).sum().backward()                 # a loss whose gradient in M is G
        with torch.no_grad():
            change = (q - eta * q.grad).T @ (k - eta * k.grad) - M0
        cos = float((change * -G).sum() / (change.norm() * G.norm()))
        _require(cos > 1 - 1e-6, label,
                 f"after a gradient step (by autograd) the form moved at cosine {cos:.4f} to -G, not along it. "
                 "Write the first-order change in terms of Wq^T Wq, G and Wk^T Wk: when is it a multiple of G?")


# ----------------------------------------------------------------------------------- errata
@_exercise("ex-errata-2", "two_laws",
           "a function () -> (heavier, lighter): two scipy.stats distributions with equal means and "
           "equal variances, the first with the larger upper tail at every point beyond some z")
def _(fn, label):
    laws = _call(fn, label)
    _require(isinstance(laws, (tuple, list)) and len(laws) == 2 and all(hasattr(x, "sf") for x in laws), label,
             "return a pair of frozen scipy.stats distributions, e.g. (stats.norm(0, 1), ...).")
    heavy, light = laws
    _require(np.isclose(heavy.mean(), light.mean(), atol=1e-9) and np.isclose(heavy.var(), light.var(), rtol=1e-9),
             label, f"the means ({heavy.mean():.4g}, {light.mean():.4g}) and variances ({heavy.var():.4g}, "
             f"{light.var():.4g}) must be equal.")
    sd = float(np.sqrt(heavy.var()))
    z = heavy.mean() + sd * np.linspace(4, 30, 200)
    _require(bool(np.all(heavy.sf(z) > light.sf(z))), label,
             "beyond four standard deviations the first law's upper tail must lie above the second's at every "
             "point; which laws of equal variance put more mass far out?")


# ----------------------------------------------------------------------------------- survey
@_exercise("ex-survey-1", "differing_repeats",
           "a set of catalog keys: the models printed more than once in Table S2 whose repeated rows "
           "print different numbers")
def _(answer, label):
    from .catalog import published_scores

    _require(isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(k, str) for k in answer), label,
             "answer with a set of catalog keys (the 'key' column of published_scores()).")
    s2 = published_scores()
    s2 = s2[s2["table"] == "S2"]
    # counted from the printed numbers themselves, not from the catalog's problem flags
    distinct = s2.groupby("key").apply(lambda g: len({(r.median, r.q25, r.q75) for r in g.itertuples()}),
                                       include_groups=False)
    truth = set(distinct[distinct > 1].index)
    got = set(answer)
    _require(got == truth, label,
             f"{len(got & truth)} of your {len(got)} keys are right, {len(truth - got)} are missing. Group "
             "Table S2's rows by key and compare the printed median and quartiles of the repeats.")


@_exercise("ex-survey-2", "agreeing_heads",
           "the set of SmolLM2 query heads (0-8) whose score is the same under the grouped and the "
           "modulo pairing")
def _(answer, label):
    from .bilinear import kv_head_index

    _require(isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(h, (int, np.integer)) for h in answer),
             label, "answer with a set of head numbers, e.g. {0, 1}.")
    grouped, modulo = (np.asarray(kv_head_index(9, 3, p)) for p in ("grouped", "modulo"))
    truth = {int(h) for h in np.flatnonzero(grouped == modulo)}   # same key head: same form
    _require(set(int(h) for h in answer) == truth, label,
             "a head's score is the same under both pairings exactly when both give it the same key head; "
             "write out h // 3 and h % 3 for the nine heads.")


# ------------------------------------------------------------------------- symmetric init
@_exercise("ex-symmetric-init-2", "smallest_skew_dim",
           "the smallest number of dimensions per head for which a skew-symmetric matrix can be non-zero (an int)")
def _(k, label):
    _require(isinstance(k, (int, np.integer)) and k >= 1, label, "answer with a whole number of dimensions.")
    rng = _rng(label)

    def skew_can_be_nonzero(n):
        A = rng.standard_normal((n, n))
        return n > 0 and bool(np.abs(A - A.T).max() > 0)

    _require(skew_can_be_nonzero(int(k)), label,
             f"every {k} x {k} skew-symmetric matrix is zero: write one out and look at its diagonal.")
    _require(not skew_can_be_nonzero(int(k) - 1), label,
             f"{int(k) - 1} dimensions already allow a non-zero skew-symmetric matrix.")


@_exercise("ex-training-dynamics-1", "changed_positions",
           "a function (seq_len, t) -> the sorted list of positions whose logits change when the token "
           "at position t is replaced, in a decoder (causal-mask) model")
def _(fn, label):
    import torch

    from .train.model import build_model
    from .train.objectives import lm_logits

    with torch.random.fork_rng():      # leave the student's random state as it was
        torch.manual_seed(0)
        model = build_model("tiny", 50, mode="decoder").eval()
    ids = torch.randint(0, 50, (1, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        base = lm_logits(model, ids)
        for t in (0, 5, 11):
            other = ids.clone()
            other[0, t] = (other[0, t] + 1) % 50
            moved = (lm_logits(model, other) - base).abs().amax(dim=-1)[0]   # per position
            truth = [int(p) for p in torch.nonzero(moved > 1e-6).flatten()]
            got = sorted(int(p) for p in _call(fn, label, 12, t))
            _require(got == truth, label,
                     f"replacing token {t} of 12 changed the logits at positions {truth} of an actual decoder; "
                     f"you said {got}. Which positions can attend to position {t} under a causal mask?")
