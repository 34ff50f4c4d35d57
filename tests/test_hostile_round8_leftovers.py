"""Leftovers of the eighth hostile round: Holm's family size, the median interval's NaN,
the structure scores of the zero matrix, the student edition's mark, and huge numbers on
the page.  Every test here failed before its fix, but the one that shows the censored speed-up
(the median interval's one caller) reads as it did."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from one_line import one_line
from tiny_book import tiny_book


# ---------------------------------------------------------------- 1. Holm counts every registered member


def _holm_by_definition(p):
    """Holm's adjusted p-values by the definition, independently of the package: the
    adjusted value of the member of rank j (0-based, ascending) is the max over i <= j of
    min(1, (m - i) p_(i)), with m the number of members; a member without a p-value ranks
    as p = 1 and keeps no adjusted value."""
    m = len(p)
    filled = [1.0 if math.isnan(x) else x for x in p]
    ranks = sorted(range(m), key=lambda i: (filled[i], i))
    out = [math.nan] * m
    for j, i in enumerate(ranks):
        if not math.isnan(p[i]):
            out[i] = max(min(1.0, (m - k) * filled[ranks[k]]) for k in range(j + 1))
    return out


def test_holm_counts_a_member_without_a_p_value_in_the_family_size():
    from companion.rules.statistics import holm

    # three members tested, one registered and not testable: m = 4, so the smallest p is x4
    adj = holm([0.01, 0.04, np.nan, 0.03])
    assert adj[0] == pytest.approx(0.04) and np.isnan(adj[2])
    assert adj[[0, 1, 3]] == pytest.approx([0.04, 0.09, 0.09])
    rng = np.random.default_rng(74)
    for _ in range(200):
        p = rng.uniform(0, 0.2, size=rng.integers(1, 9))
        p[rng.uniform(size=p.size) < 0.3] = np.nan
        got = holm(p)
        want = _holm_by_definition(list(p))
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert got[~np.isnan(got)] == pytest.approx(np.array(want)[~np.isnan(want)])


def test_the_earlier_rules_family_keeps_a_not_testable_member_in_its_size():
    from companion.judge.empirical import family

    rows = pd.DataFrame({"claim": ["a", "b", "c"], "outcome": ["holds", "refuted", "not testable here"],
                         "p_holds": [0.004, 0.9, np.nan], "p_refuted": [0.9, 0.011, np.nan],
                         "p_decides": [0.004, 0.011, np.nan]})
    fam = family(rows, fwer=0.05).set_index("claim")
    # m = 3: a 0.004 x 3 = 0.012 (stands at 0.025), b max(0.012, 0.011 x 2 = 0.022) = 0.022 (stands)
    assert fam.loc["a", "p_holm"] == pytest.approx(0.012) and fam.loc["b", "p_holm"] == pytest.approx(0.022)
    assert np.isnan(fam.loc["c", "p_holm"]) and (fam["family_size"] == 3).all()


# ---------------------------------------------------------------- 2. the median interval's NaN


def test_the_median_interval_refuses_a_nan_unless_told_where_it_ranks():
    from companion.rules.statistics import median_interval

    with pytest.raises(ValueError) as err:
        median_interval([0.2, np.nan, 0.4, np.nan])
    text = one_line(err)
    assert "2 of 4" in text and "nan_as" in text
    # told, the NaN ranks at the end the caller names (sorted by hand: -inf, 0.2, 0.4 / 0.2, 0.4, inf)
    low, high = median_interval([0.2, np.nan, 0.4], nan_as="low"), median_interval([0.2, np.nan, 0.4], nan_as="high")
    assert (low["low"], low["median"], low["high"]) == (-np.inf, 0.2, 0.4)
    assert (high["low"], high["median"], high["high"]) == (0.2, 0.4, np.inf)
    with pytest.raises(ValueError, match="nan_as"):
        median_interval([0.2, 0.4], nan_as="worst")


def test_the_censored_speedup_still_ranks_a_seed_that_never_reached_below_all():
    from companion.train.studies.speedup import censored_median_speedup

    res = censored_median_speedup([0.3, np.nan, 0.1])
    assert res["median"] == pytest.approx(0.1) and res["low"] == -np.inf and res["high"] == pytest.approx(0.3)


# ---------------------------------------------------------------- 3. the zero matrix has no score


def _closed_form_symmetry(M):
    """Eq. 16: (||M_s||^2 - ||M_n||^2) / ||M||^2 from the two parts."""
    Ms, Mn = (M + M.T) / 2, (M - M.T) / 2
    return (np.sum(Ms ** 2) - np.sum(Mn ** 2)) / np.sum(M ** 2)


def test_the_zero_matrix_has_no_symmetry_or_direction_and_others_keep_the_closed_form():
    from companion.core.scores import (directionality_score, directionality_score_factored, structure_scores,
                                       symmetry_score, symmetry_score_factored)

    Z = np.zeros((6, 6))
    assert np.isnan(symmetry_score(Z)) and np.isnan(directionality_score(Z))
    assert np.isnan(symmetry_score_factored(np.zeros((2, 6)), np.ones((2, 6))))
    assert np.isnan(directionality_score_factored(np.zeros((2, 6)), np.ones((2, 6))))
    both = structure_scores(Wq=np.zeros((2, 6)), Wk=np.ones((2, 6)))
    assert np.isnan(both["symmetry"]) and np.isnan(both["directionality"])
    # in a stack, only the zero matrix is NaN; the others are Eq. 16's value
    rng = np.random.default_rng(31)
    stack = rng.standard_normal((4, 6, 6))
    stack[2] = 0.0
    s = symmetry_score(stack)
    assert np.isnan(s[2]) and not np.isnan(s[[0, 1, 3]]).any()
    assert s[[0, 1, 3]] == pytest.approx([_closed_form_symmetry(stack[i]) for i in (0, 1, 3)], abs=1e-12)
    d = directionality_score(stack)
    assert np.isnan(d[2]) and np.isfinite(d[[0, 1, 3]]).all()
    # a non-zero matrix with no outlying norm keeps the tables' 0 (no dominance), not NaN
    assert directionality_score(np.eye(6)) == 0.0


def test_a_zero_layer_in_a_checkpoint_is_not_averaged_in_as_zero():
    from companion.survey.tables import summarize_layers

    # three layers scored 0.2, 0.4 and a zero matrix: the median must not be 0.2 (as if it scored 0)
    from companion.core.scores import symmetry_score

    rng = np.random.default_rng(5)
    A = rng.standard_normal((5, 5))
    vals = [symmetry_score(A + A.T), symmetry_score(A), symmetry_score(np.zeros((5, 5)))]
    df = pd.DataFrame({"model": "m", "component": "c", "head": -1, "symmetry": vals, "directionality": 0.0})
    out = summarize_layers(df).iloc[0]
    assert np.isnan(out["symmetry_median"])


# ---------------------------------------------------------------- 4. the student edition's mark


def _user_folder(tmp_path, name="mine"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "thesis.tex").write_text("the user's own work\n")
    return folder




def test_a_stray_copied_or_hand_made_mark_does_not_make_a_users_folder_the_builds(tmp_path, monkeypatch):
    from companion.book.editions import student

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    root = tiny_book(tmp_path)
    made = tmp_path / "made"
    student.prepare_sources(root, made)                     # a folder the build made
    student.prepare_sources(root, made)                     # ...is replaced by its next build
    assert (made / "book" / "intro.md").is_file()

    stray = _user_folder(tmp_path, "stray")                 # a mark as earlier builds wrote it, by hand
    (stray / student._MARK).write_text("made by python -m companion.book.editions.student; replaced by its next build\n")
    copied = _user_folder(tmp_path, "copied")               # the build's own mark, copied from its folder
    (copied / student._MARK).write_bytes((made / student._MARK).read_bytes())
    forged = _user_folder(tmp_path, "forged")               # the right path, another folder's identity
    other = tmp_path / "other"
    other.mkdir()
    (forged / student._MARK).write_text(f"{student._MARK_HEAD}\nfolder: {forged.resolve()}\n"
                                        f"identity: {student._identity(other)}\n")
    for folder in (stray, copied, forged):
        with pytest.raises(ValueError) as err:
            student.prepare_sources(root, folder)
        assert str(folder) in one_line(err) and "nothing in it is replaced" in one_line(err)
        assert sorted(p.name for p in folder.iterdir()) == sorted([student._MARK, "thesis.tex"])
        assert (folder / "thesis.tex").read_text() == "the user's own work\n"


def test_the_command_refuses_a_copied_mark_in_one_line_and_deletes_nothing(tmp_path, monkeypatch, capsys):
    from companion.book.editions import student

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    root = tiny_book(tmp_path)
    (root / "_build" / ".jupyter_cache").mkdir(parents=True)
    made = tmp_path / "made"
    student._mark(made)
    out = _user_folder(tmp_path, "out")
    (out / "src").mkdir()
    (out / "src" / "notes.md").write_text("keep\n")
    (out / student._MARK).write_bytes((made / student._MARK).read_bytes())
    assert student.main(["--root", str(root), "--out", str(out)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "did not write for this folder" in err[0]
    assert (out / "thesis.tex").is_file() and (out / "src" / "notes.md").read_text() == "keep\n"


def test_the_build_keeps_its_own_folder_across_an_emptied_cache_but_not_a_recreated_one(tmp_path, monkeypatch):
    from companion.book.editions import student

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "out"
    student._mark(folder)
    (folder / "page.html").write_text("x")
    student._check_ours(folder)                             # ours
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "another-cache"))
    student._check_ours(folder)                             # still ours: nothing is recorded in a cache
    mark = (folder / student._MARK).read_bytes()
    keep = tmp_path / "kept"
    folder.rename(keep)                                     # the build's folder moved away...
    folder.mkdir()                                          # ...and a new one made at its path
    (folder / "notes.md").write_text("the user's\n")
    (folder / student._MARK).write_bytes(mark)              # with the old mark copied in
    with pytest.raises(ValueError, match="did not write for this folder"):
        student._check_ours(folder)
    assert (folder / "notes.md").read_text() == "the user's\n"


# ---------------------------------------------------------------- 5. huge numbers on the page


@pytest.mark.parametrize("value", [1e300, -1.234567e20, 5e17, 10 ** 300, -1234 * 10 ** 20, 10 ** 400, 2 ** 63 - 1],
                         ids=["1e300", "-1.2e20", "5e17", "int 10^300", "int -1.2e23", "int 10^400", "int64 max"])
def test_a_table_writes_a_huge_number_in_scientific_notation(value):
    from companion.book.tables import cell_text, column_formats

    text = cell_text(value, column_formats([value]) if isinstance(value, float) else None)
    assert len(text) <= 10 and "e+" in text, text
    mantissa, exponent = text.split("e+")
    # three significant digits of the value, by its own digits (independent of float formatting)
    digits = str(abs(int(value)))
    assert int(exponent) == len(digits) - 1
    assert abs(abs(float(mantissa)) - int(digits[:4]) / 1000) <= 0.006
    assert mantissa.startswith("-") == (value < 0)


def test_a_table_of_huge_and_ordinary_numbers_reads_without_a_run_of_digits():
    import re

    from companion.book.tables import MISSING, cell_text, readable

    frame = pd.DataFrame({"quantity": ["a", "b", "c", "d"], "value": [1e300, 0.25, np.nan, np.inf]})
    html = readable(frame)
    assert not re.search(r"\d{16}", html.replace(",", "")), html[:300]
    cells = re.findall(r'<td class="num">([^<]*)</td>', html)
    assert cells == ["1e+300", "0.25", MISSING, "∞"], cells
    # just below the limit a whole number is still written out exactly
    assert cell_text(999_999_999_999_999.0) == "999,999,999,999,999" and cell_text(10 ** 14) == "100,000,000,000,000"


def test_a_set_value_beyond_a_sane_magnitude_is_quoted_in_scientific_notation():
    from companion.base.phrasing import as_set

    assert as_set(1e300) == "1e+300" and as_set(1.2345e20, sign=True) == "+1.2345e+20"
    assert float(as_set(-3.25e16)) == -3.25e16 and as_set(0.6931) == "0.6931"
    assert as_set(float("nan")) == "not set" and as_set(float("inf")) == "not set"
