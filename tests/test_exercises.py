"""Every checked exercise: the book's reference solution passes its check, a plausible wrong
answer fails it with a hint, and the exercise text asks for what the check tests."""

import re
from pathlib import Path

import numpy as np
import pytest

from companion.exercises import EXERCISES, WrongAnswer, check, checked_labels

BOOK = Path(__file__).resolve().parents[1] / "book"

# exercises answered in words (a proof, a design, a reading of a figure): no automatic check
UNCHECKED = {
    "ex-context-prediction-1", "ex-context-prediction-2", "ex-rank-one-updates-1",
    "ex-objectives-to-structure-1", "ex-survey-3",
    "ex-symmetric-init-1", "ex-symmetric-init-3",
    "ex-training-dynamics-3", "ex-what-survives-1", "ex-what-survives-2",
}

# one plausible wrong answer per checked exercise (kept here, never shipped with the book)
WRONG = {
    "ex-bilinear-form-1": "import numpy as np\ndef reparametrize(Wq, Wk, G):\n    return G @ Wq, G @ Wk",
    "ex-bilinear-form-2": ("import numpy as np\ndef augmented_form(Wq, bq, Wk, bk):\n"
                           "    return np.block([[Wq.T @ Wk, (Wq.T @ bk)[:, None]],\n"
                           "                     [(bq @ Wk)[None, :], np.zeros((1, 1))]])"),
    "ex-measuring-1": "invariant_under_rotation = {'symmetry': True, 'directionality': True}",
    "ex-measuring-2": ("import numpy as np\ndef first_order_gap(A, eps):\n"
                       "    return eps**2 * np.sum(A**2) / A.shape[0]"),
    "ex-measuring-3": "changes_under_row_permutation = {'symmetry': True, 'directionality': True}",
    "ex-errata-1": "def expected_symmetry(n):\n    return 8 / n",
    "ex-objectives-to-structure-2": "equal_masking_rate = 0.15",
    "ex-what-survives-3": "seeds_needed = 10",
    "ex-rank-one-updates-2": ("import numpy as np\ndef proportional_factors(d):\n"
                              "    rng = np.random.default_rng(0)\n"
                              "    return rng.standard_normal((d, d)), rng.standard_normal((d, d))"),
    "ex-errata-2": ("from scipy import stats\ndef two_laws():\n"
                    "    return stats.t(5), stats.norm(0, 1)"),
    "ex-survey-1": "differing_repeats = {'beit-base', 'beit-large'}",
    "ex-survey-2": "agreeing_heads = {0, 1, 2}",
    "ex-symmetric-init-2": "smallest_skew_dim = 1",
    "ex-training-dynamics-1": "def changed_positions(seq_len, t):\n    return list(range(t + 1, seq_len))",
    "ex-training-dynamics-2": "def untrained_symmetry(d, r):\n    return 1 / r",
}


def _blocks(kind: str):
    """{label: text} of every {exercise} (by its :label:) or {solution} in the book."""
    out = {}
    for page in BOOK.glob("*.md"):
        text = page.read_text()
        if kind == "exercise":
            pat = r"^:::\{exercise\}\n:label: (\S+)\n(.*?)\n:::\n"
        else:
            pat = r"^:::\{solution\} (\S+)\n(.*?)\n:::\n"
        out.update(dict(re.findall(pat, text, re.M | re.S)))
    return out


EX_TEXT, SOLUTIONS = _blocks("exercise"), _blocks("solution")


def _run(code: str, name: str):
    ns: dict = {}
    exec(compile(code, "<answer>", "exec"), ns)  # noqa: S102 - the book's own solutions
    return ns[name]


def test_every_exercise_is_checked_or_listed_as_answered_in_words():
    labels = set(EX_TEXT)
    assert len(labels) >= 20
    assert set(checked_labels()) | UNCHECKED == labels, (
        "new exercise? give it a check in companion.exercises or list it in UNCHECKED: "
        f"{sorted(labels - set(checked_labels()) - UNCHECKED)}; stale: {sorted((set(checked_labels()) | UNCHECKED) - labels)}")
    assert not set(checked_labels()) & UNCHECKED
    assert set(WRONG) == set(checked_labels())


@pytest.mark.parametrize("label", checked_labels())
def test_the_exercise_asks_for_what_its_check_tests(label):
    text = EX_TEXT[label]
    name = EXERCISES[label].answer
    assert f'check("{label}", {name})' in text and name in text


@pytest.mark.parametrize("label", checked_labels())
def test_the_reference_solution_passes(label, capsys):
    # the solution's last code block defines the answer on its own (earlier blocks may use
    # the chapter's variables)
    code = re.findall(r"```python\n(.*?)```", SOLUTIONS[label], re.S)[-1]
    assert check(label, _run(code, EXERCISES[label].answer)) is True
    assert f"{label}: correct" in capsys.readouterr().out


@pytest.mark.parametrize("label", checked_labels())
def test_a_plausible_wrong_answer_fails_with_a_hint(label):
    with pytest.raises(WrongAnswer, match=f"^{label}: ") as err:
        check(label, _run(WRONG[label], EXERCISES[label].answer))
    assert len(str(err.value)) > len(label) + 20  # a hint, not just "wrong"


@pytest.mark.parametrize("label", checked_labels())
def test_the_unfilled_stub_is_not_an_answer(label):
    with pytest.raises(WrongAnswer):
        check(label, ...)


def test_no_check_prints_its_reference_answer():
    # the checks live in one module that students can read: none of the answers' literal
    # values appear in it
    import inspect

    import companion.exercises as mod

    src = inspect.getsource(mod)
    for literal in ("1 / n", "= 0.5", "0.5)", "inv(G).T", "np.linalg.inv"):
        assert literal not in src, literal


def test_an_answer_that_raises_is_reported_as_wrong_with_its_error():
    def broken(A, eps):
        raise ValueError("not done")
    with pytest.raises(WrongAnswer, match="raised ValueError: not done"):
        check("ex-measuring-2", broken)


def test_an_unknown_label_names_the_checked_exercises():
    with pytest.raises(KeyError, match="ex-measuring-1"):
        check("ex-nope", 1)


def test_a_near_miss_seed_count_is_refused():
    right = _run(re.findall(r"```python\n(.*?)```", SOLUTIONS["ex-what-survives-3"], re.S)[-1], "seeds_needed")
    for n in (right - 1, right + 1):
        with pytest.raises(WrongAnswer):
            check("ex-what-survives-3", int(n))
    assert isinstance(right, (int, np.integer))


def test_a_function_stub_that_returns_none_is_told_to_fill_in_its_body():
    def first_order_gap(A, eps):
        ...
    with pytest.raises(WrongAnswer, match="returns None"):
        check("ex-measuring-2", first_order_gap)
