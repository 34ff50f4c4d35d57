"""Hostile round 17: the exercise checks a student meets, and the course plan's sums.

Each case states the right behaviour, computed apart from the code under test: a right answer
in another type (float32, bfloat16, a sparse or 0-d tensor, a tensor of two numbers) passes or
is refused for what it is, never with a hint that sends the student after a term they did not
miss; a wrong answer is still refused with the exercise's hint; a call of ``check`` with its
arguments swapped, and an exercise with no entry or a label used twice, are named in one line,
never summed twice or answered with a raw ``KeyError``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

# ------------------------------------------------------------------ helpers


def _check(label, answer):
    from companion.book.teaching.exercises import check

    return check(label, answer)


def _refused(label, answer) -> str:
    """The one-line refusal of ``answer`` (fails if it passes or raises anything else)."""
    from companion.book.teaching.exercises import WrongAnswer

    with pytest.raises(WrongAnswer) as err:
        _check(label, answer)
    text = str(err.value)
    assert text.startswith(label + ":") and "\n" not in text, text
    return text


def _precision_refusal(label, answer, dtype: str) -> None:
    """Refused for its precision (naming ``dtype`` and float64), not as a wrong formula or a raise."""
    text = _refused(label, answer)
    assert dtype in text and "float64" in text and "raised" not in text, text


def _mechanism(G, gq, gk, eta):
    # by hand: (Wq - eta gq)^T (Wk - eta gk) - Wq^T Wk = -eta (gq^T Wk + Wq^T gk) + eta^2 gq^T gk
    return -eta * G + eta ** 2 * gq.T @ gk


def _ratio(p):
    # by hand: position k (1-based) of N is context for the N - k later positions and is
    # predicted from the k - 1 earlier ones
    p = np.asarray(p, dtype=float)
    k = np.arange(1, len(p) + 1)
    return float(np.sum((len(p) - k) * p) / np.sum((k - 1) * p))


def _counts(steps, batch, block, n_tokens, rate):
    # by hand: the steps read steps * batch * block tokens, every one a next-token target,
    # a share `rate` of them a masked target
    p = steps * batch * block / n_tokens
    return p, rate * p


def _augmented(Wq, bq, Wk, bk):
    # by hand: (x, 1) B (y, 1) = x^T Wq^T Wk y + x^T Wq^T bk + bq^T Wk y + bq . bk
    return np.block([[Wq.T @ Wk, (Wq.T @ bk)[:, None]], [(bq @ Wk)[None, :], np.array([[bq @ bk]])]])


def test_the_by_hand_references_agree_with_independent_counts():
    # the helpers above against a brute-force count, so that the cases below rest on them
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, 7)
    N = len(p)
    context = sum(p[j] for i in range(N) for j in range(N) if j < i)      # j sees the target i later
    predicted = sum(p[i] for i in range(N) for j in range(N) if j < i)
    assert _ratio(p) == pytest.approx(context / predicted, rel=1e-12)
    Wq, Wk, gq, gk = (rng.standard_normal((3, 4)) for _ in range(4))
    eta = 0.3
    G = gq.T @ Wk + Wq.T @ gk
    assert np.allclose(_mechanism(G, gq, gk, eta), (Wq - eta * gq).T @ (Wk - eta * gk) - Wq.T @ Wk,
                       rtol=0, atol=1e-12)
    bq, bk, x, y = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(4), rng.standard_normal(4)
    B = _augmented(Wq, bq, Wk, bk)
    assert np.append(x, 1) @ B @ np.append(y, 1) == pytest.approx((Wq @ x + bq) @ (Wk @ y + bk), rel=1e-12)


# ------------------------------------------------------------------ 1. float32: right, but coarse
def test_a_float32_change_of_m_is_told_its_precision_not_sent_after_a_missing_term():
    f32 = lambda G, gq, gk, eta: _mechanism(*(a.astype(np.float32) for a in (G, gq, gk)), np.float32(eta))
    _precision_refusal("ex-mechanism-1", f32, "float32")


def test_a_float32_ratio_equal_to_six_digits_is_told_its_precision_not_to_recount_pairs():
    text = _refused("ex-context-prediction-2", lambda p: np.float32(_ratio(p)))
    assert "float32" in text and "float64" in text and "context for how many" not in text, text


def test_float32_counts_from_torch_are_told_their_precision():
    import torch

    _precision_refusal("ex-fig3-decided-1", lambda *a: tuple(torch.tensor(v, dtype=torch.float32) for v in _counts(*a)),
                       "float32")


def test_float32_factors_of_the_reparametrization_are_told_their_precision():
    f32 = lambda Wq, Wk, G: ((G @ Wq).astype(np.float32), (np.linalg.inv(G).T @ Wk).astype(np.float32))
    _precision_refusal("ex-bilinear-form-1", f32, "float32")


def test_a_float32_augmented_matrix_from_torch_is_told_its_precision():
    import torch

    _precision_refusal("ex-bilinear-form-2", lambda *a: torch.tensor(_augmented(*a)).float(), "float32")


def test_a_wrong_formula_in_float32_still_gets_the_exercise_hint():
    # the first order only: off by eta^2 gq^T gk, far beyond float32's rounding
    first_order = lambda G, gq, gk, eta: (-eta * G).astype(np.float32)
    text = _refused("ex-mechanism-1", first_order)
    assert "eta^2" in text and "float64" not in text, text


def test_a_float16_rate_is_judged_by_its_value_right_or_wrong():
    # by hand: a rate of 1/2 (exact in float16) balances the pairs; 0.45 leaves more
    # masked-unmasked pairs, m(N - m) > m(m - 1), far beyond float16's rounding
    assert _check("ex-objectives-to-structure-2", np.float16(0.5))
    text = _refused("ex-objectives-to-structure-2", np.float16(0.45))
    assert "Eq. S119" in text and "float64" not in text, text


def test_a_float32_prediction_within_the_tolerance_the_physics_allows_passes():
    # 1 - s(I + eps A) = 2 eps^2 ||A_n||^2 / n to leading order; the check allows the next order
    def gap(A, eps):
        A = A.astype(np.float32)
        return np.float32(2 * eps ** 2 * np.sum(((A - A.T) / 2) ** 2) / A.shape[0])

    assert _check("ex-measuring-2", gap)


# ------------------------------------------------------------------ 2. tensors numpy cannot read as they are
def test_a_bfloat16_expected_score_is_read_as_its_numbers_not_reported_as_a_raise():
    import torch

    # by hand: E tr(M^2) = r d and E ||M||^2 = r d^2, so E s = 1/d to leading order
    answer = lambda d, r: torch.tensor(1 / d, dtype=torch.bfloat16)
    from companion.book.teaching.exercises import WrongAnswer

    try:
        assert _check("ex-training-dynamics-2", answer)
    except WrongAnswer as err:   # refused only for its precision, never as an error of the answer
        assert "bfloat16" in str(err) and "raised" not in str(err), str(err)


def test_a_sparse_tensor_change_of_m_is_read_as_its_entries():
    import torch

    answer = lambda G, gq, gk, eta: torch.tensor(_mechanism(G, gq, gk, eta)).to_sparse()
    assert _check("ex-mechanism-1", answer)


def test_a_zero_dimensional_integer_tensor_is_a_whole_number():
    import torch

    # by hand: a 1 x 1 skew matrix is 0; [[0, 1], [-1, 0]] is the smallest non-zero one
    assert _check("ex-symmetric-init-2", torch.tensor(2))
    assert _check("ex-symmetric-init-2", np.array(2))


def test_a_float_tensor_for_a_whole_number_is_refused_naming_the_tensor():
    import torch

    text = _refused("ex-symmetric-init-2", torch.tensor(2.0))
    assert "Tensor" in text and "ndarray" not in text, text


def test_two_counts_as_a_tensor_or_array_of_two_are_read_as_the_pair():
    import torch

    assert _check("ex-fig3-decided-1", lambda *a: torch.tensor(_counts(*a), dtype=torch.float64))
    assert _check("ex-fig3-decided-1", lambda *a: np.array(_counts(*a)))
    text = _refused("ex-fig3-decided-1", lambda *a: torch.tensor([*_counts(*a), 0.0], dtype=torch.float64))
    assert "Tensor" in text and "ndarray" not in text, text   # three numbers: no pair, named as what it is


# ------------------------------------------------------------------ 3. other right answers in other types
def test_a_zero_dimensional_tensor_and_a_fraction_are_numbers():
    import torch

    # by hand: m(m - 1) = m(N - m) at m = (N + 1) / 2, a rate of 1/2 for long sequences;
    # E s = 2 E[Beta(n(n+1)/4, n(n-1)/4)] - 1 = 2 (n + 1) / (2 n) - 1 = 1/n
    assert _check("ex-objectives-to-structure-2", torch.tensor(0.5))
    assert _check("ex-errata-1", lambda n: Fraction(1, n))


def test_a_negative_zero_prediction_for_a_one_by_one_matrix_passes():
    # a 1 x 1 matrix is symmetric: 1 - s = 0 exactly, and -0.0 is that zero
    gap = lambda A, eps: -0.0 if A.shape[0] == 1 else 2 * eps ** 2 * np.sum(((A - A.T) / 2) ** 2) / A.shape[0]
    assert _check("ex-measuring-2", gap)


def test_a_right_answer_that_prints_thousands_of_lines_passes(capfd):
    def loud(*a):
        for i in range(5000):
            print("step", i)
        return _counts(*a)

    assert _check("ex-fig3-decided-1", loud)
    assert "step 4999" in capfd.readouterr().out


def test_a_nan_hidden_among_the_counts_is_refused_naming_it():
    text = _refused("ex-fig3-decided-1", lambda *a: (_counts(*a)[0], [float("nan")]))
    assert "NaN" in text, text


def test_keys_as_a_pandas_index_are_refused_asking_for_a_set():
    import pandas as pd

    # the index of a grouped count, without set(...) around it: no set of keys
    text = _refused("ex-survey-1", pd.Index(["beit-base", "beit-large"]))
    assert "set of catalog keys" in text, text


# ------------------------------------------------------------------ 4. check() called the other way round
def test_a_check_called_with_answer_and_label_swapped_says_so_in_one_line():
    from companion.book.teaching.exercises import check

    with pytest.raises(TypeError) as err:
        check({0, 4, 8}, "ex-survey-2")
    text = str(err.value)
    assert "\n" not in text and "label" in text and "first" in text and "set" in text, text


# ------------------------------------------------------------------ 5. the course plan's sums
LABELS = {"ex-a": {"difficulty": 1, "importance": "core", "minutes": 10}}


def _page(tmp_path, *labels) -> None:
    body = "".join(f":::{{exercise}}\n:label: {k}\nQuestion.\n:::\n\n" for k in labels)
    (tmp_path / "a.md").write_text("# A\n\nOne two three.\n\n" + body)


def test_minutes_per_chapter_names_an_exercise_with_no_entry(tmp_path):
    from companion.book.teaching.exercise_labels import minutes_per_chapter

    _page(tmp_path, "ex-a", "ex-new")
    with pytest.raises(KeyError) as err:
        minutes_per_chapter(tmp_path, LABELS)
    text = str(err.value.args[0])
    assert "ex-new" in text and "chapters.yaml" in text and "\n" not in text, text


def test_the_plan_table_names_an_exercise_with_no_entry(tmp_path):
    from companion.book.teaching.course_plan import Lecture, plan_table

    _page(tmp_path, "ex-a", "ex-new")
    with pytest.raises(KeyError) as err:
        plan_table((Lecture("L", 90, ("a",)),), tmp_path, LABELS)
    text = str(err.value.args[0])
    assert "ex-new" in text and "chapters.yaml" in text and "\n" not in text, text


def test_the_plan_calls_an_exercise_with_no_entry_that_not_one_without_a_label(tmp_path):
    from companion.book.teaching.course_plan import Lecture, plan_problems

    _page(tmp_path, "ex-a", "ex-new")
    (problem,) = plan_problems((Lecture("L", 90, ("a",)),), tmp_path, LABELS)
    assert "ex-new" in problem and "without labels" not in problem and "chapters.yaml" in problem, problem


def test_minutes_per_chapter_refuses_a_label_on_two_exercises_not_summing_it_twice(tmp_path):
    from companion.book.teaching.exercise_labels import minutes_per_chapter

    _page(tmp_path, "ex-a", "ex-a")
    # by hand: one label, 10 minutes; two exercises under it would be counted 20
    with pytest.raises(ValueError) as err:
        minutes_per_chapter(tmp_path, LABELS)
    assert "ex-a" in str(err.value) and "\n" not in str(err.value)
    _page(tmp_path, "ex-a")
    assert minutes_per_chapter(tmp_path, LABELS) == {"a": {"core": 10, "all": 10}}


def test_the_plan_table_refuses_a_label_on_two_exercises_not_summing_it_twice(tmp_path):
    from companion.book.teaching.course_plan import Lecture, plan_table

    _page(tmp_path, "ex-a", "ex-a")
    with pytest.raises(ValueError) as err:
        plan_table((Lecture("L", 90, ("a",)),), tmp_path, LABELS)
    assert "ex-a" in str(err.value) and "\n" not in str(err.value)
    _page(tmp_path, "ex-a")
    (row,) = plan_table((Lecture("L", 90, ("a",)),), tmp_path, LABELS).to_dict("records")
    # by hand: "A" and "One two three." are 4 words, a minute at 200 a minute; 10 exercise minutes
    assert (row["core words (source)"], row["reading (min)"], row["core exercises (min)"]) == (4, 1, 10)
