"""Hostile round 13 (issue 74): the committed design and family tables, the rules' edit
history, the check that the site's statuses agree, the training claims' sentences and the
verdict figures.

Each case states the right behaviour computed apart from the code under test: a committed
table checked against its own definitions (each row's outcome chances sum to 1, the targets
read from the rules, the family grid counted from the rules), a git history made by hand with
known dates, statuses read as a reader reads them (any case, any kind of space), and bad input
refused in one line that names it.  Every file lives under ``tmp_path``: the repository's
``data/`` is only read (copied, then mutated in the copy).
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from companion.base.errors import CompanionError

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
OUTCOMES5 = ("holds", "holds, size open", "negligible", "refuted", "inconclusive")


def _one_line(err: BaseException, *names: str) -> str:
    text = str(err)
    assert "\n" not in text.strip(), text
    for name in names:
        assert name in text, (name, text)
    return text


# ============================================================ the committed tables, mutated in a copy
@pytest.fixture(scope="module")
def rules_in_force():
    """The rules in force, loaded once (this also warms the settings draws every copy reuses)."""
    from companion.rules.rulebook import load_rules

    return load_rules()


def _copy(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    for name in ("verdict_rules.yaml", "verdict_rules_design.csv", "verdict_rules_family.csv", "survey_design.csv"):
        shutil.copy(DATA / name, d / name)
    return d


def _load(d: Path):
    from companion.rules.rulebook import load_rules

    return load_rules(d / "verdict_rules.yaml")


def _design_rows_sum(df: pd.DataFrame) -> np.ndarray:
    return df[list(OUTCOMES5)].to_numpy(float).sum(axis=1)


def test_the_committed_tables_as_they_are_satisfy_the_definitions(rules_in_force):
    """The reference checks below hold for the committed tables (so each mutation, not the
    checks, is what a refusal answers)."""
    df = pd.read_csv(DATA / "verdict_rules_design.csv")
    assert np.allclose(_design_rows_sum(df), 1.0, atol=1e-9)
    assert set(df["claim"]) == set(rules_in_force["claims"])
    assert np.allclose(df["p_direction"], df["holds"] + df["holds, size open"] + df["negligible"], atol=1e-9)
    fam = pd.read_csv(DATA / "verdict_rules_family.csv")
    fc = rules_in_force["framework"]["family_check"]
    split = [n for n, f in rules_in_force["framework"]["families"].items() if not f.get("read_once")]
    for n in split:   # every (true effects, spread) once: the effects, plus the mixed row, by each spread
        rows = fam[fam["family"] == n]
        assert len(rows) == (len(fc["effects_over_d"]) + 1) * len(fc["spreads_over_d"])
        assert not rows.duplicated(["true effects", "spread over d"]).any()


def _mutate_design(df: pd.DataFrame, how: str) -> pd.DataFrame:
    df = df.copy()
    if how == "row dropped":
        return df.drop(index=1).reset_index(drop=True)          # training_symmetry at d
    if how == "row duplicated":
        return pd.concat([df, df.iloc[[4]]], ignore_index=True)
    if how == "sesoi's last digit":
        df.loc[0, "sesoi"] = 0.0071885
        return df
    if how == "claim that does not exist":
        extra = df.iloc[[0, 1, 2]].copy()
        extra["claim"] = "fig_9z"
        return pd.concat([df, extra], ignore_index=True)
    if how == "a chance's last digit":
        i = df.index[(df["claim"] == "training_directionality") & (df["effect"].astype(str) == "d")][0]
        df.loc[i, "holds"] = float(df.loc[i, "holds"]) + 0.0001        # the row no longer sums to 1
        return df
    if how == "NaN chance":
        i = df.index[(df["claim"] == "symmetric_init_structure") & (df["effect"].astype(str) == "pilot")][0]
        df.loc[i, "p_true_decided"] = float("nan")
        return df
    if how == "met flipped":
        i = df.index[(df["claim"] == "training_symmetry") & (df["effect"].astype(str) == "pilot")][0]
        df.loc[i, "met"] = True     # P(true decided | pilot) 0.78 < 0.8: the target is missed
        return df
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["row dropped", "row duplicated", "sesoi's last digit", "claim that does not exist",
                                 "a chance's last digit", "NaN chance", "met flipped"])
def test_a_hand_edited_design_table_is_refused(rules_in_force, tmp_path, how):
    d = _copy(tmp_path)
    df = _mutate_design(pd.read_csv(d / "verdict_rules_design.csv"), how)
    # the edit breaks a definition the table must satisfy, computed here from the rules alone
    t = rules_in_force["framework"]["design_check"]["targets"]
    per = {k: df[df["claim"] == k] for k in rules_in_force["claims"]}
    met = np.where(df["effect"].astype(str) == "0", df["p_direction"] <= t["direction_at_0"],
                   np.where(df["effect"].astype(str) == "d", df["refuted"] <= t["refuted_at_d"],
                            df["p_true_decided"] >= t["true_at_pilot"]))
    broken = (any(sorted(r["effect"].astype(str)) != ["0", "d", "pilot"] for r in per.values())
              or set(df["claim"]) != set(rules_in_force["claims"])
              or not np.allclose(_design_rows_sum(df), 1.0, atol=1e-9)
              or df[list(OUTCOMES5) + ["p_direction", "p_true_decided", "expected_seeds"]].isna().any().any()
              or (df["met"].astype(bool).to_numpy() != met).any()
              or how == "sesoi's last digit")
    assert broken
    df.to_csv(d / "verdict_rules_design.csv", index=False)
    with pytest.raises(CompanionError) as err:
        _load(d)
    _one_line(err.value, "verdict_rules")


def test_a_design_table_with_its_columns_reordered_is_read_the_same(rules_in_force, tmp_path):
    d = _copy(tmp_path)
    df = pd.read_csv(d / "verdict_rules_design.csv")
    df[list(reversed(df.columns))].to_csv(d / "verdict_rules_design.csv", index=False)
    rules = _load(d)
    assert list(rules["claims"]) == list(rules_in_force["claims"])


def test_the_design_table_of_the_older_rules_file_is_refused(rules_in_force, tmp_path):
    """Version 3's table (other looks and alpha) in place of version 4's."""
    d = _copy(tmp_path)
    old = pd.read_csv(DATA / "rules_history" / "verdict_rules_v3_design.csv")
    now = pd.read_csv(DATA / "verdict_rules_design.csv")
    for c in ("sesoi", "planning_sd", "delta"):   # keep what the quick checks compare, so the settings decide
        old[c] = now.set_index(["claim", "effect"]).reindex(pd.MultiIndex.from_frame(old[["claim", "effect"]]))[c].to_numpy()
    missing = set(now["claim"]) - set(old["claim"])
    old = pd.concat([old, now[now["claim"].isin(missing)]], ignore_index=True)
    assert not np.allclose(old.sort_values(["claim", "effect"])["inconclusive"].to_numpy(),
                           now.sort_values(["claim", "effect"])["inconclusive"].to_numpy(), atol=0.01)
    old.to_csv(d / "verdict_rules_design.csv", index=False)
    with pytest.raises(CompanionError) as err:
        _load(d)
    _one_line(err.value, "design table")


def _mutate_family(fam: pd.DataFrame, how: str) -> pd.DataFrame:
    fam = fam.copy()
    if how == "mixed rows dropped":
        return fam[~((fam["family"] == "word-piece") & (fam["true effects"] == "alternately 0 and d"))]
    if how == "one row dropped, another doubled":
        i = fam.index[(fam["family"] == "word-piece") & (fam["true effects"] == "alternately 0 and d")][-1]
        return pd.concat([fam.drop(index=i), fam.iloc[[0]]], ignore_index=True)
    if how == "NaN family error":
        fam.loc[fam["family error"].idxmax(), "family error"] = float("nan")
        return fam
    if how == "stated fwer edited":
        fam["stated fwer"] = 0.1
        return fam
    if how == "family that does not exist":
        extra = fam[fam["family"] == "word-piece"].copy()
        extra["family"] = "imaginary"
        extra["family error"] = 0.3
        return pd.concat([fam, extra], ignore_index=True)
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["mixed rows dropped", "one row dropped, another doubled", "NaN family error",
                                 "stated fwer edited", "family that does not exist"])
def test_a_hand_edited_family_table_is_refused(rules_in_force, tmp_path, how):
    d = _copy(tmp_path)
    fam = _mutate_family(pd.read_csv(d / "verdict_rules_family.csv"), how)
    fw = rules_in_force["framework"]
    fc = fw["family_check"]
    grid = {(f"all at {e:g} d", float(s)) for e in fc["effects_over_d"] for s in fc["spreads_over_d"]}
    grid |= {("alternately 0 and d", float(s)) for s in fc["spreads_over_d"]}
    broken = set(fam["family"]) != set(fw["families"]) or fam["family error"].isna().any()
    for n, f in fw["families"].items():
        rows = fam[fam["family"] == n]
        broken |= bool((rows["stated fwer"] != f["fwer"]).any())
        if not f.get("read_once"):
            got = list(zip(rows["true effects"], rows["spread over d"].astype(float)))
            broken |= sorted(got) != sorted(grid)
    assert broken
    fam.to_csv(d / "verdict_rules_family.csv", index=False)
    with pytest.raises(CompanionError) as err:
        _load(d)
    _one_line(err.value, "family")


def test_a_family_error_above_its_fwer_is_refused(tmp_path, rules_in_force):
    d = _copy(tmp_path)
    fam = pd.read_csv(d / "verdict_rules_family.csv")
    fam.loc[0, "family error"] = 0.0501
    fam.to_csv(d / "verdict_rules_family.csv", index=False)
    with pytest.raises(CompanionError, match="fwer 0.05"):
        _load(d)


# ============================================================ the rules' edit history, in a git made here
def _git(repo: Path, *args, date: str | None = None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, timeout=20)


RULES_TEXT = """version: 4
framework: {{sequential: {{looks: [3, 6], alpha: {alpha}}}}}
bodies: {{b1: {{arms: [x, y]}}}}
yardsticks: {{s: {{value_when_fixed: 0.1}}}}
claims: {{c1: {{body: b1, sesoi: s}}}}
# {comment}
"""


def _history(tmp_path: Path, commits) -> Path:
    """A git repository whose rules file took each (alpha, comment, committer date) in turn."""
    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    _git(repo, "init", "-q")
    f = repo / "data" / "verdict_rules.yaml"
    for alpha, comment, date in commits:
        f.write_text(RULES_TEXT.format(alpha=alpha, comment=comment))
        _git(repo, "add", "data/verdict_rules.yaml")
        _git(repo, "commit", "-q", "-m", f"alpha {alpha} {comment}", date=date)
    return f


RUN = "2026-01-05T00:00:00+00:00"


def test_a_change_after_the_first_run_is_reported(tmp_path):
    from companion.rules.edits import changes_after_first_run

    f = _history(tmp_path, [(0.05, "a", "2026-01-01T00:00:00+00:00"), (0.10, "a", "2026-01-10T00:00:00+00:00")])
    out = changes_after_first_run("b1", RUN, f)
    assert len(out) == 1 and "framework changed" in out[0]


def test_a_back_dated_commit_does_not_hide_a_change_made_after_the_first_run(tmp_path):
    """alpha 0.05 before the run, 0.10 after it, then a comment-only commit dated before the
    run (its committer date set back): history order puts the change after the run, whatever
    the later commit's date says, so the change is still reported."""
    from companion.rules.edits import changes_after_first_run, text_edits_after

    f = _history(tmp_path, [(0.05, "a", "2026-01-01T00:00:00+00:00"), (0.10, "a", "2026-01-10T00:00:00+00:00"),
                            (0.10, "b", "2026-01-02T00:00:00+00:00")])
    out = changes_after_first_run("b1", RUN, f)
    assert any("framework changed" in line for line in out), out
    assert len(text_edits_after(RUN, f)) == 2   # both commits after the first one in history order


@pytest.mark.parametrize("when", [None, "", "yesterday", float("nan")])
def test_a_first_run_with_no_stamp_is_refused_in_one_line(tmp_path, when):
    from companion.rules.edits import changes_after_first_run

    f = _history(tmp_path, [(0.05, "a", "2026-01-01T00:00:00+00:00")])
    with pytest.raises(CompanionError) as err:
        changes_after_first_run("b1", when, f)
    _one_line(err.value, "timestamp")


def test_a_first_run_before_every_commit_is_said(tmp_path):
    from companion.rules.edits import changes_after_first_run

    f = _history(tmp_path, [(0.05, "a", "2026-01-10T00:00:00+00:00")])
    out = changes_after_first_run("b1", RUN, f)
    assert len(out) == 1 and "no commit" in out[0] and "precedes" in out[0]


# ============================================================ statuses stated on the site
CLAIMS = {"cor_s1_13": "Cor. S1.13: equal spreads", "table_1": "Table 1: a symmetric start",
          "training_symmetry": "Fig. 3a: symmetry"}
TABLE = {"cor_s1_13": "refuted", "table_1": "inconclusive", "training_symmetry": "holds, size open"}


def _names():
    from companion.book.checks.status_check import aliases

    return aliases(CLAIMS)


def test_two_pages_stating_different_statuses_name_the_wrong_page():
    from companion.book.checks.status_check import disagreements, html_text, stated_statuses

    pages = {"a.html": "<p>Cor. S1.13: refuted.</p>", "b.html": "<p>Cor. S1.13: inconclusive.</p>"}
    stated = [s for w, h in pages.items() for s in stated_statuses(html_text(h), _names(), w)]
    out = disagreements(stated, TABLE)
    assert len(out) == 1 and out[0].startswith("b.html:") and "'inconclusive'" in out[0]


@pytest.mark.parametrize("html, said", [
    ("<p>Cor. S1.13: Inconclusive.</p>", "inconclusive"),            # a status word capitalised
    ("<p>Cor. S1.13: INCONCLUSIVE.</p>", "inconclusive"),
    ("<p>Cor.&nbsp;S1.13: inconclusive.</p>", "inconclusive"),        # a no-break space in the name
    ("<p>Cor. S1.13:&nbsp;inconclusive.</p>", "inconclusive"),
    ("<p>Fig. 3a: holds,\nsize open.</p>", "holds, size open"),       # a status broken over two lines
    ("<p>Fig. 3a: holds,&nbsp;size open.</p>", "holds, size open"),
])
def test_a_status_in_another_case_or_spacing_is_read_as_the_status_it_is(html, said):
    from companion.book.checks.status_check import html_text, stated_statuses

    s = stated_statuses(html_text(html), _names(), "p.html")
    assert [x.status for x in s] == [said]


def test_a_status_cell_in_another_case_agrees_with_the_same_status():
    from companion.book.checks.status_check import disagreements, table_statuses

    html = ("<table><tr><th>Claim</th><th>Status</th></tr><tr><td>Cor. S1.13</td><td>Refuted</td></tr>"
            "<tr><td>Table 1</td><td>refuted</td></tr></table>")
    out = disagreements(table_statuses(html, _names(), "t.html"), TABLE)
    assert len(out) == 1 and "Table 1" in out[0]      # the capitalised 'Refuted' is Cor. S1.13's status


# ============================================================ the training claims' sentences
def test_a_reversed_interval_is_refused_by_the_paired_result():
    from companion.judge.sentences import paired_result

    with pytest.raises(ValueError) as err:
        paired_result(0.2, 0.3, 0.1, 3, "holds")
    _one_line(err.value, "0.3", "0.1")


@pytest.mark.parametrize("n", [0, -1, float("nan")])
def test_no_seeds_never_read_as_one_seed(n):
    from companion.judge.sentences import paired_result

    try:
        text = paired_result(0.2, 0.1, 0.3, n, "not testable here")
    except ValueError as err:
        _one_line(err, "seed")
        return
    assert "1 seed" not in text, text


def test_a_nan_effect_reads_missing_with_no_sign():
    from companion.judge.sentences import paired_result

    text = paired_result(float("nan"), 0.1, 0.3, 3, "inconclusive")
    assert "missing" in text and "nan" not in text.lower().replace("not a number", "")


@pytest.mark.parametrize("seeds, look", [(12, "look 5 of 4 (12 seeds)"), (3, "look 0 of 4 (3 seeds)"),
                                         (4, "look 2 of 4 (6 seeds)")])
def test_a_look_beyond_the_last_or_with_too_few_seeds_is_refused(seeds, look):
    """'look k of m (n seeds)': k must lie in 1..m and the seeds in must reach the look's n."""
    from companion.judge.sentences import look_reading

    with pytest.raises(ValueError) as err:
        look_reading(seeds, look)
    _one_line(err.value, "look")


def test_a_look_as_the_verdicts_write_it_is_read():
    from companion.judge.sentences import look_reading

    assert look_reading(6, "look 2 of 4 (6 seeds)") == "6 seeds in, read at look 2 of 4 (6 seeds)"


# ============================================================ the verdict figures
def _primary(**over):
    row = {"claim": "Fig. 3a: symmetry", "estimate": 0.2, "low": 0.1, "high": 0.3, "sesoi": 0.1, "n": 3,
           "gate": True, "outcome": "holds"}
    row.update(over)
    return pd.DataFrame([row])


@pytest.mark.parametrize("status", ["Holds", "holds ", "proven", float("nan")])
def test_the_glance_figure_refuses_a_status_no_claim_can_have(status):
    from companion.book.figures.verdicts import evidence_at_a_glance

    with pytest.raises(CompanionError) as err:
        evidence_at_a_glance(_primary(status=status))
    _one_line(err.value, "status")


def test_the_overview_refuses_mixed_unknown_statuses_in_one_line():
    from companion.book.figures.verdicts import status_overview

    v = pd.DataFrame({"claim": ["Prop. 2.1: a", "Prop. 2.2: b", "Prop. 2.3: c"],
                      "status": ["holds", float("nan"), "Refuted"]})
    with pytest.raises(CompanionError) as err:
        status_overview(v)
    _one_line(err.value, "Refuted")
    assert math.isnan(v["status"][1])


# ============================================================ further probes
def test_an_infinite_unigram_reference_does_not_pass_the_context_gate():
    """A reference of +inf (a log of a zero probability) is no yardstick: 'inf below it' is
    not 'trained enough'."""
    from companion.rules.training import context_part

    part = context_part(pd.Series([3.0, 3.1]), float("inf"), 0.6931)
    assert part["passes"] is False or part["passes"] == np.False_


def test_a_status_inside_an_html_comment_is_not_stated():
    from companion.book.checks.status_check import html_text, stated_statuses

    html = "<p>Kept.</p><!-- an old note: a > b, Cor. S1.13: inconclusive --><p>Done.</p>"
    assert stated_statuses(html_text(html), _names(), "c.html") == []


def test_a_status_column_after_a_spanning_cell_is_still_read():
    """A row whose claim cell spans two columns: the status is the cell under 'Status' as a
    browser lays the row out (the third column), and here it contradicts the table."""
    from companion.book.checks.status_check import disagreements, table_statuses

    html = ("<table><tr><th>Claim</th><th>Body</th><th>Status</th></tr>"
            "<tr><td colspan=\"2\">Cor. S1.13 on every body</td><td>inconclusive</td></tr></table>")
    out = disagreements(table_statuses(html, _names(), "t.html"), TABLE)
    assert len(out) == 1 and "'inconclusive'" in out[0]


def test_a_design_table_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    import threading

    d = _copy(tmp_path)
    (d / "verdict_rules_design.csv").unlink()
    os.mkfifo(d / "verdict_rules_design.csv")
    box = {}

    def run():
        try:
            _load(d)
        except BaseException as err:   # noqa: BLE001 - the refusal is what is checked
            box["err"] = err

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():   # unblock the reader before failing
        with open(d / "verdict_rules_design.csv", "w"):
            pass
        pytest.fail("the loader blocked on a FIFO")
    assert isinstance(box.get("err"), CompanionError)
    text = _one_line(box["err"], "verdict_rules_design.csv")
    assert "not a regular file" in text or "regular" in text


@pytest.mark.parametrize("over", [{"low": 0.3, "high": 0.1},                       # a reversed interval
                                  {"estimate": float("nan"), "outcome": "holds"}])  # a decided outcome with no estimate
def test_the_glance_figure_refuses_a_row_it_cannot_draw_truthfully(over):
    from companion.book.figures.verdicts import evidence_at_a_glance

    with pytest.raises(CompanionError) as err:
        evidence_at_a_glance(_primary(**over))
    _one_line(err.value, "Fig. 3a")
