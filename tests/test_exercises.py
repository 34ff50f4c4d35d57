"""Every checked exercise: the book's reference solution passes its check, plausible wrong
answers (at least two per exercise) fail it with a hint, the check's independent computation
agrees with a further one, and the student's code runs with bounds (copies of its inputs, a
time limit, a size limit, one-line messages)."""

import re
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import companion.book.teaching.exercises as exercises
from companion.book.teaching import exercise_checks, exercise_engine
from companion.book.teaching import exercise_references as references
from companion.book.teaching.exercises import EXERCISES, WrongAnswer, check, checked_labels

BOOK = Path(__file__).resolve().parents[1] / "book"


def _registry_checks() -> dict:
    """{label: check} as data/chapters.yaml writes each checked exercise's check (read
    without the package's reader)."""
    import yaml

    data = yaml.safe_load((BOOK.parent / "data" / "chapters.yaml").read_text(encoding="utf-8"))
    return {k: ex["check"] for e in data.values() for k, ex in (e or {}).get("exercises", {}).items()
            if "check" in ex}


# plausible wrong answers per checked exercise: the `wrong` of its check in data/chapters.yaml
# (never shown with the book); each must fail. Several are right on part of the domain only:
# the check must sample that part.
WRONG = {label: [w["code"] for w in check.get("wrong", [])] for label, check in _registry_checks().items()}


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
# exercises answered in words (a proof, a design, a reading of a figure): no automatic check,
# and the exercise says so
UNCHECKED = {label for label, text in EX_TEXT.items() if "*Not checked automatically:*" in text}


def _run(code: str, name: str):
    ns: dict = {}
    exec(compile(code, "<answer>", "exec"), ns)  # noqa: S102 - the book's own solutions
    return ns[name]


def _reference(label: str):
    # the solution's last code block defines the answer on its own (earlier blocks may use
    # the chapter's variables)
    code = re.findall(r"```python\n(.*?)```", SOLUTIONS[label], re.S)[-1]
    return _run(code, EXERCISES[label].answer)


def test_every_exercise_is_checked_or_listed_as_answered_in_words():
    labels = set(EX_TEXT)
    assert len(labels) >= 20 and len(UNCHECKED) >= 13
    assert set(checked_labels()) | UNCHECKED == labels, (
        "new exercise? give its entry in data/chapters.yaml a check, or say '*Not checked automatically:* "
        "<why>.' on it: "
        f"{sorted(labels - set(checked_labels()) - UNCHECKED)}; stale: {sorted((set(checked_labels()) | UNCHECKED) - labels)}")
    assert not set(checked_labels()) & UNCHECKED
    assert set(WRONG) == set(checked_labels())
    assert all(len(w) >= 2 for w in WRONG.values())


@pytest.mark.parametrize("label", checked_labels())
def test_the_exercise_asks_for_what_its_check_tests(label):
    text = EX_TEXT[label]
    name = EXERCISES[label].answer
    assert f'check("{label}", {name})' in text and name in text


@pytest.mark.parametrize("label", checked_labels())
def test_the_reference_solution_passes(label, capsys):
    assert check(label, _reference(label)) is True
    assert f"{label}: correct" in capsys.readouterr().out


@pytest.mark.parametrize("label, i", [(label, i) for label in checked_labels() for i in range(len(WRONG[label]))])
def test_a_plausible_wrong_answer_fails_with_a_one_line_hint(label, i):
    with pytest.raises(WrongAnswer, match=f"^{label}: ") as err:
        check(label, _run(WRONG[label][i], EXERCISES[label].answer))
    message = str(err.value)
    assert len(message) > len(label) + 20  # a hint, not just "wrong"
    assert "\n" not in message and len(message) < 600


@pytest.mark.parametrize("label", checked_labels())
def test_the_unfilled_stub_is_not_an_answer(label):
    with pytest.raises(WrongAnswer):
        check(label, ...)


def test_no_check_prints_its_reference_answer():
    # the checks live in modules and data that students can read: none of the answers' literal
    # values appear in them
    import inspect

    # (the wrong answers of the data are not the answer, and some hold the right one's terms)
    specs = [repr({k: v for k, v in c.items() if k != "wrong"}) for c in _registry_checks().values()]
    assert len(specs) == len(checked_labels())
    src = "\n".join([inspect.getsource(m) for m in (exercises, exercise_checks, exercise_engine, references)]
                    + specs)
    for literal in ("1 / n", "1 / d", "= 0.5", "0.5)", "inv(G).T", "np.linalg.inv", "(A - A.T) / 2",
                    "{0, 4, 8}", "range(t, seq_len)", "= 7"):
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
    right = _reference("ex-what-survives-3")
    assert isinstance(right, (int, np.integer))
    for n in (right - 1, right + 1):
        with pytest.raises(WrongAnswer):
            check("ex-what-survives-3", int(n))


def test_a_function_stub_that_returns_none_is_told_to_fill_in_its_body():
    def first_order_gap(A, eps):
        ...
    with pytest.raises(WrongAnswer, match="returns None"):
        check("ex-measuring-2", first_order_gap)


def test_answers_of_the_wrong_type_are_refused_in_one_line():
    for label, answer, words in (("ex-symmetric-init-2", True, "whole number"),
                                 ("ex-symmetric-init-2", 2.0, "whole number"),
                                 ("ex-what-survives-3", 10**9, "between"),
                                 ("ex-objectives-to-structure-2", "0.5", "number"),
                                 ("ex-objectives-to-structure-2", float("nan"), "NaN"),
                                 ("ex-survey-2", {0, 4, 9}, "0 to 8")):
        with pytest.raises(WrongAnswer, match=words) as err:
            check(label, answer)
        assert "\n" not in str(err.value)


# ---------------------------------------------- the checks' own computations, checked again
def test_the_score_definitions_the_checks_use_match_the_package():
    from companion.core.scores import directionality_score, symmetry_score

    rng = np.random.default_rng(0)
    for n in (2, 5, 48):
        for M in references.test_matrices(rng, n):
            assert references.symmetry_def(M) == pytest.approx(symmetry_score(M), abs=1e-12)
            assert references.directionality_def(M) == pytest.approx(directionality_score(M), abs=1e-12)
            # the form ex-measuring-2 compares with: 1 - s = 2 ||M_n||^2 / ||M||^2
            near = np.eye(n) + 1e-2 * M
            skew = (near - near.T) / 2
            assert 2 * np.sum(skew**2) / np.sum(near**2) == pytest.approx(1 - symmetry_score(near), rel=1e-8)
    # the test matrices exercise both scores: some have outlying columns or rows, some none
    d = [references.directionality_def(M) for M in references.test_matrices(rng, 48)]
    assert min(d) < -0.5 and max(d) > 0.5 and min(abs(x) for x in d) < 1e-9


def test_the_beta_law_mean_of_errata_1_matches_a_monte_carlo():
    from scipy import stats

    rng = np.random.default_rng(5)
    for n in (2, 3, 8):
        M = rng.standard_normal((40_000, n, n))
        s = np.einsum("kij,kji->k", M, M) / np.einsum("kij,kij->k", M, M)
        exact = 2 * stats.beta(n * (n + 1) / 4, n * (n - 1) / 4).mean() - 1
        assert abs(s.mean() - exact) < 4.5 * s.std() / np.sqrt(len(s))


def test_the_power_integral_of_what_survives_3_matches_the_noncentral_t_and_a_simulation():
    from scipy import stats

    from companion.rules.power import detectable_effect

    for n, ncp in ((2, 1.0), (3, 3.5), (7, 2.9), (30, 2.0)):
        crit = stats.t.ppf(0.975, n - 1)
        assert references.t_test_power(n, ncp) == pytest.approx(stats.nct.sf(crit, n - 1, ncp), abs=1e-7)
    # simulated t-tests at 7 seeds, true mean 0.6 standard deviations
    rng = np.random.default_rng(0)
    x = rng.normal(0.6, 1.0, (40_000, 7))
    t = x.mean(1) / (x.std(1, ddof=1) / np.sqrt(7))
    hit = np.mean(t > stats.t.ppf(0.975, 6))
    assert abs(hit - references.t_test_power(7, 0.6 * np.sqrt(7))) < 4.5 * np.sqrt(hit * (1 - hit) / len(t))
    # and the package's detectable effect is the power-0.8 difference of the same test
    for n in (3, 7, 20):
        assert references.t_test_power(n, detectable_effect(n, 1.0) * np.sqrt(n)) == pytest.approx(0.8, abs=1e-6)


def test_the_pairings_of_survey_2_match_the_package():
    import torch
    from transformers.models.llama.modeling_llama import repeat_kv

    from companion.core.bilinear import kv_head_index

    heads = torch.arange(3.0).reshape(1, 3, 1, 1)             # key head k holds the number k
    assert repeat_kv(heads, 3).flatten().tolist() == kv_head_index(9, 3, "grouped")
    assert heads.repeat(1, 3, 1, 1).flatten().tolist() == kv_head_index(9, 3, "modulo")


def test_the_skew_dimension_is_n_choose_2():
    for n in range(0, 7):
        assert references.skew_dimension(n) == n * (n - 1) // 2


def test_a_closed_form_right_only_for_narrow_heads_is_caught():
    # 1 / max(d, r) agrees with the right closed form whenever r <= d (the only shapes the check
    # tried before); a Monte Carlo at r > d tells them apart, and so does the check
    for d, r in ((32, 8), (96, 96)):
        assert 1 / max(d, r) == 1 / d
    rng = np.random.default_rng(0)
    d, r = 8, 64
    Wq, Wk = rng.standard_normal((2000, r, d)), rng.standard_normal((2000, r, d))
    M = np.swapaxes(Wq, 1, 2) @ Wk
    s = np.einsum("nij,nji->n", M, M) / np.einsum("nij,nij->n", M, M)
    assert abs(s.mean() - 1 / max(d, r)) > 10 * s.std() / np.sqrt(len(s))
    with pytest.raises(WrongAnswer, match="1-wide layers of rank 4"):
        check("ex-training-dynamics-2", lambda d, r: 1 / max(d, r))


# ------------------------------------------------------ bounds on running the student's code
def test_an_answer_that_changes_its_inputs_is_compared_with_the_originals():
    # zeroing the inputs and returning zeros made both sides of each comparison zero
    def reparametrize(Wq, Wk, G):
        Wq[:] = 0
        Wk[:] = 0
        return G @ Wq, Wk

    def reparametrize_by_resetting_G(Wq, Wk, G):
        G[:] = np.eye(len(G))
        return Wq, Wk

    def augmented_form(Wq, bq, Wk, bk):
        for a in (Wq, bq, Wk, bk):
            a[...] = 0
        return np.zeros((Wq.shape[1] + 1, Wq.shape[1] + 1))

    for label, answer in (("ex-bilinear-form-1", reparametrize), ("ex-bilinear-form-1", reparametrize_by_resetting_G),
                          ("ex-bilinear-form-2", augmented_form)):
        with pytest.raises(WrongAnswer, match=f"^{label}: not yet"):
            check(label, answer)


def _slow_then_right(seconds):
    """An answer to ex-errata-1 that spins for ``seconds`` and then returns the right value."""
    right = _reference("ex-errata-1")

    def expected_symmetry(n):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                sum(range(1000))
            except Exception:    # an answer that swallows errors is stopped all the same
                pass
        return right(n)
    return expected_symmetry


def test_an_answer_that_runs_on_is_stopped_after_the_time_limit(monkeypatch):
    monkeypatch.setattr(exercises, "TIME_LIMIT_S", 0.5)
    before = signal.getsignal(signal.SIGALRM)
    t0 = time.monotonic()
    with pytest.raises(WrongAnswer, match=r"^ex-errata-1: .*did not finish within 0.5 s") as err:
        check("ex-errata-1", _slow_then_right(8))
    assert time.monotonic() - t0 < 4
    assert "\n" not in str(err.value)
    assert signal.getsignal(signal.SIGALRM) == before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_time_limit_keeps_an_earlier_alarm_and_its_handler(monkeypatch):
    monkeypatch.setattr(exercises, "TIME_LIMIT_S", 0.5)
    fired = []
    mine = lambda signum, frame: fired.append(signum)   # noqa: E731
    before = signal.signal(signal.SIGALRM, mine)
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)
        with pytest.raises(WrongAnswer, match="did not finish"):
            check("ex-errata-1", _slow_then_right(8))
        assert signal.getsignal(signal.SIGALRM) is mine
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < remaining < 30
        assert check("ex-errata-1", _reference("ex-errata-1"))   # a right answer still passes
        assert fired == []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def test_outside_the_main_thread_the_time_limit_holds_too(monkeypatch):
    monkeypatch.setattr(exercises, "TIME_LIMIT_S", 0.5)
    caught = []

    def run():
        try:
            check("ex-errata-1", _slow_then_right(3))
        except WrongAnswer as err:
            caught.append(str(err))

    worker = threading.Thread(target=run)
    t0 = time.monotonic()
    worker.start()
    worker.join(10)
    assert caught and "did not finish within 0.5 s" in caught[0] and "stopped at the limit" in caught[0]
    assert "\n" not in caught[0]
    assert time.monotonic() - t0 < 2.5    # failed before the answer would have ended


def test_without_a_child_process_the_watchdog_thread_still_bounds_the_time(monkeypatch):
    monkeypatch.setattr(exercises, "TIME_LIMIT_S", 0.5)
    monkeypatch.setenv("COMPANION_CHECK_IN_PROCESS", "1")   # as where no process can be forked
    caught = []

    def run():
        try:
            check("ex-errata-1", _slow_then_right(3))
        except WrongAnswer as err:
            caught.append(str(err))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(10)
    assert caught and "did not finish within 0.5 s" in caught[0] and "background" in caught[0]


def test_without_a_child_process_the_alarm_still_stops_a_python_loop(monkeypatch):
    monkeypatch.setattr(exercises, "TIME_LIMIT_S", 0.5)
    monkeypatch.setenv("COMPANION_CHECK_IN_PROCESS", "1")
    before = signal.getsignal(signal.SIGALRM)
    t0 = time.monotonic()
    with pytest.raises(WrongAnswer, match="did not finish within 0.5 s"):
        check("ex-errata-1", _slow_then_right(8))
    assert time.monotonic() - t0 < 4 and signal.getsignal(signal.SIGALRM) == before


def test_a_gigantic_answer_is_refused_in_one_short_line():
    def changed_positions(seq_len, t):     # the right positions, then a million more
        yield from range(t, seq_len)
        yield from [seq_len - 1] * 10**6

    t0 = time.monotonic()
    with pytest.raises(WrongAnswer, match=r"more than 100,000 items") as err:
        check("ex-training-dynamics-1", changed_positions)
    assert time.monotonic() - t0 < 60   # a hang detector (it stops at the cap, not after the million), no timing claim
    assert "\n" not in str(err.value) and len(str(err.value)) < 400


def test_a_gigantic_array_is_refused_before_it_is_converted():
    rows = [[0.0] * 2000] * 2000             # four million numbers in 2000 shared rows
    with pytest.raises(WrongAnswer, match="holds more than 100,000 items"):
        check("ex-bilinear-form-2", lambda Wq, bq, Wk, bk: rows)
    with pytest.raises(WrongAnswer, match="holds more than 100,000 items"):
        check("ex-survey-2", list(range(10**7)))


def test_an_error_message_over_several_lines_is_reported_in_one():
    def first_order_gap(A, eps):
        raise ValueError("first line\nsecond line\n" + "x" * 5000)
    with pytest.raises(WrongAnswer, match="raised ValueError: first line second line") as err:
        check("ex-measuring-2", first_order_gap)
    assert "\n" not in str(err.value) and len(str(err.value)) < 600


@pytest.mark.parametrize("answer", [3, 4, 7])
def test_the_hint_for_a_too_large_dimension_does_not_give_the_answer_away(answer):
    with pytest.raises(WrongAnswer) as err:
        check("ex-symmetric-init-2", answer)
    hint = str(err.value).split(": ", 1)[1]                       # after the exercise's label
    assert not re.search(r"\b2\b", hint), hint                   # the answer is 2; the hint must not say it


def test_every_exercise_without_a_check_says_why_on_the_exercise():
    for label in sorted(UNCHECKED):
        m = re.search(r"\*Not checked automatically:\* (.+?)\.\s*$", EX_TEXT[label], re.S)
        assert m, f"{label}: no check and no '*Not checked automatically:* <why>.' line on the exercise"
        assert len(m.group(1).split()) >= 6, f"{label}: the reason is too short to say anything: {m.group(1)!r}"
    for label in checked_labels():
        assert "Not checked automatically" not in EX_TEXT[label], f"{label} has a check but says it has none"


@pytest.mark.parametrize("label", ["ex-measuring-1", "ex-measuring-3"])
def test_a_guessed_yes_or_no_does_not_pass_without_its_example(label):
    # every combination of two bools (four guesses) fails: the score that moves needs an example
    name = EXERCISES[label].answer
    for sym in (True, False):
        for direc in (True, False):
            with pytest.raises(WrongAnswer):
                check(label, {"symmetry": sym, "directionality": direc})
    assert name in EX_TEXT[label]


def _hints():
    """{label: hint text} of the '{dropdown} Hint' that follows each exercise."""
    out = {}
    for page in BOOK.glob("*.md"):
        text = page.read_text()
        for m in re.finditer(r"^:::\{exercise\}\n:label: (\S+)\n(.*?)\n:::\n", text, re.M | re.S):
            hint = re.match(r"\n:::\{dropdown\} Hint\n(.*?)\n:::\n", text[m.end():], re.S)
            if hint:
                out[m.group(1)] = hint.group(1)
    return out


HINTS = _hints()


@pytest.mark.parametrize("label", checked_labels())
def test_a_checked_exercise_offers_a_collapsed_hint_before_any_attempt(label):
    assert label in HINTS, f"{label}: no ':::{{dropdown}} Hint' right after the exercise"
    assert len(HINTS[label].split()) >= 8


def _answer_literals(label: str) -> list[str]:
    """What would give the answer away: the reference value of a number or a set, or the
    expression a reference function returns."""
    code = re.findall(r"```python\n(.*?)```", SOLUTIONS[label], re.S)[-1]
    value = _reference(label)
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        words = dict(enumerate("zero one two three four five six seven eight nine ten".split()))
        return [str(value), f"{float(value):g}"] + ([words[int(value)]] if value in words else [])
    if isinstance(value, (set, frozenset)):
        return [", ".join(map(str, sorted(value)))]
    return [r.strip() for r in re.findall(r"return (.+)", code)]


@pytest.mark.parametrize("label", checked_labels())
def test_no_hint_and_no_exercise_text_states_the_answer(label):
    hint = HINTS.get(label, "")
    literals = _answer_literals(label)
    assert literals or isinstance(_reference(label), dict), label   # a dict's values are examples
    for lit in literals:
        assert not re.search(rf"(?<![\w.]){re.escape(lit)}(?![\w.])", hint), f"{label}: the hint states {lit!r}"
        assert not re.search(rf"(?<![\w.]){re.escape(lit)}(?![\w.])", EX_TEXT[label].split("```")[0]), \
            f"{label}: the exercise's text states {lit!r}"


def test_the_give_away_check_catches_a_hint_that_states_a_number():
    # the exercise's earlier wording gave its answer in its question
    old = "Why does the skew-symmetric initialisation need at least two dimensions per head?"
    assert any(re.search(rf"(?<![\w.]){re.escape(lit)}(?![\w.])", old)
               for lit in _answer_literals("ex-symmetric-init-2"))
    assert re.search(r"(?<![\w.])2(?![\w.])", "at least 2 dimensions")
    assert not re.search(r"(?<![\w.])2(?![\w.])", "a 12-dimensional head, 0.2 of it")
