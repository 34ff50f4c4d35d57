"""``companion verdicts`` gives, from the terminal, the statuses the book's pages give."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from companion.cli import main
from companion.judge import claims, training_claims


def _fake(key, status, kind="empirical"):
    def fn():
        return claims.Verdict(key, f"claim {key}", status, f"measured {key}", "size", "errata", "", kind=kind,
                              check=f"check of {key}")
    fn.__name__ = key
    return fn


def _read_at_looks_b():
    """Claim b as a training claim is built: the reading at its look (``claims._read_at_looks``)."""
    return claims.Verdict("b", "claim b", "inconclusive", "+0.1 [-0.2, +0.4], 3 seeds at look 1 of 4 (3 seeds)",
                          "a body", "errata", "", kind="empirical", check="check of b",
                          family="family word-piece: its level split equally over its members",
                          rules="verdict rules, version 4, look 1 of 4 (3 seeds)")


_read_at_looks_b.__name__ = "b"

V3 = pd.DataFrame([{"key": "b", "position": 1, "claim": "Fig. B: b is larger", "body": "a body", "family": "word-piece", "look": "look 1 of 4 (3 seeds)",
                    "seeds in": "3 of 12", "effect": "+0.1 [-0.2, +0.4], 3 seeds", "d": 0.05, "reading": "inconclusive",
                    "status": "inconclusive", "why": "", "gate": "passes", "power (planned)": "P = 0.9",
                    "detectable (observed sd)": "0.3", "missing": ["run-s33", "run-s34"], "command": "bash make_runs.sh",
                    "secondary": ""}])


@pytest.fixture
def book(monkeypatch):
    """Two claims, one of whose 'holds' does not stand at its family's level and reads 'inconclusive'."""
    monkeypatch.setattr(claims, "_CACHE", {})
    monkeypatch.delenv("COMPANION_VERDICT_CACHE", raising=False)
    monkeypatch.setattr(claims, "VERDICTS", (_fake("a", "holds"), _read_at_looks_b))
    monkeypatch.setattr(claims, "MATH_CHECKS", {})
    monkeypatch.setattr(claims, "family_table", lambda: pd.DataFrame(
        {"key": ["a"], "claim": ["a"], "outcome": ["holds"], "p_decides": [0.3],
         "family": "evidence", "level (one-sided)": 0.0025, "stands": ["no"]}))
    monkeypatch.setattr(training_claims, "training_verdicts", lambda *a, **k: V3.copy())
    import companion.rules.rulebook as rulebook
    monkeypatch.setattr(rulebook, "load_rules", lambda *a, **k: {
        "version": 4, "claims": {"b": {}, "c": {"claim": "Fig. C in another body: c is larger"}}})


def test_each_claim_is_printed_with_the_status_every_page_gives_its_family_carried_in(book, capsys):
    assert main(["verdicts"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines()[1:3]}
    assert "inconclusive" in rows["a"] and "holds" not in rows["a"]      # its family's level withholds 'holds'
    # b is read at a look: its status, as every page gives it
    assert "inconclusive" in rows["b"] and "claim b" in rows["b"]
    assert "Fig. B inconclusive (3 of 12 seeds in" in out        # the confirmatory reading, as What survives says it


def test_the_csv_holds_the_table_printed(book, tmp_path, capsys):
    out = tmp_path / "v.csv"
    assert main(["verdicts", "--csv", str(out)]) == 0
    table = pd.read_csv(out)
    assert list(table.columns) == ["key", "status", "claim"]
    assert dict(zip(table["key"], table["status"])) == {"a": "inconclusive", "b": "inconclusive"}
    assert main(["verdicts", "--training", "--csv", str(out)]) == 0
    assert pd.read_csv(out).set_index("key").loc["b", "seeds in"] == "3 of 12"


def test_one_training_claim_shows_its_reading_at_its_look_the_missing_runs_and_their_command(book, capsys):
    assert main(["verdicts", "--claim", "b"]) == 0
    out = capsys.readouterr().out
    assert "status:   inconclusive" in out and "family word-piece" in out
    assert "read by:  verdict rules, version 4, look 1 of 4 (3 seeds)" in out
    assert "negligible" not in out                                      # one status: no earlier version's word
    assert "look 1 of 4 (3 seeds), 3 of 12 seeds in: inconclusive" in out
    assert "runs still missing for the next look (2): run-s33, run-s34" in out and "bash make_runs.sh" in out
    assert main(["verdicts", "--claim", "a"]) == 0
    assert "at its looks" not in capsys.readouterr().out                # a claim no sequential rule judges


@pytest.mark.parametrize("argv, words", [
    (["verdicts", "--claim", "bb"], ["unknown claim 'bb'", "did you mean 'b'", "the keys are: a, b, c"]),
    (["verdicts", "--claim", "a", "--csv", "x.csv"], ["--claim prints one claim"]),
    (["verdicts", "--claim", "a", "--training"], ["--training prints a table; --claim prints one claim"]),
    (["verdicts", "--rules", "x.yaml"], ["--rules names the rules file", "add --training"]),
    (["verdicts", "--csv", " "], ["--csv is empty"]),
])
def test_bad_input_is_one_line_naming_the_fix(book, capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    for w in words:
        assert w in err


def test_a_rules_file_that_is_not_there_is_refused_in_one_line(capsys, tmp_path):
    assert main(["verdicts", "--training", "--rules", str(tmp_path / "no-such-rules.yaml")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "no-such-rules.yaml" in err


def test_a_folder_as_the_csv_is_refused_before_anything_is_computed(book, tmp_path, capsys, monkeypatch):
    def never():
        raise AssertionError("computed before the output was checked")
    monkeypatch.setattr(claims, "all_verdicts", never)
    assert main(["verdicts", "--csv", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_the_real_training_reading_printed_is_the_one_the_package_computes(capsys):
    """On the landed runs: each training claim's printed status and look are training_verdicts's (the
    function whose values the pages glue)."""
    assert main(["verdicts", "--training"]) == 0
    lines = capsys.readouterr().out.splitlines()
    v3 = training_claims.training_verdicts().set_index("key")
    assert len(lines) == 1 + len(v3)
    for line in lines[1:]:
        key = line.split()[0]
        assert v3.loc[key, "status"] in line and v3.loc[key, "look"] in line and v3.loc[key, "seeds in"] in line


@pytest.mark.parametrize("missing, shown", [
    ("run-s33", "(1): run-s33"), (np.array(["r1", "r2"]), "(2): r1, r2"), (("r1",), "(1): r1"),
    (float("nan"), None), ([], None)])
def test_the_missing_runs_are_listed_whatever_holds_them(book, capsys, monkeypatch, missing, shown):
    frame = V3.copy()
    frame.at[0, "missing"] = missing
    monkeypatch.setattr(training_claims, "training_verdicts", lambda *a, **k: frame)
    assert main(["verdicts", "--claim", "b"]) == 0
    out = capsys.readouterr().out
    if shown:
        assert f"runs still missing for the next look {shown}" in out
    else:
        assert "runs still missing" not in out and "3 of 12 seeds in" in out


def test_before_any_reading_the_commands_say_none_is_read(book, capsys, monkeypatch):
    monkeypatch.setattr(training_claims, "training_verdicts", lambda *a, **k: pd.DataFrame())
    assert main(["verdicts", "--training"]) == 0
    assert capsys.readouterr().out.strip() == "no claim to show: no training claim has been read at a look yet."
    assert main(["verdicts"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("`companion verdicts --training`): none read yet.")


def test_the_training_claims_are_read_under_any_rules_file_given(capsys, tmp_path):
    """``--rules`` reads the claims under another file: version 3 as committed applies its fixed
    sequence, the file in force splits the level, so the same bodies can read differently."""
    from companion.rules.rulebook import RULES_HISTORY

    assert main(["verdicts", "--training", "--rules", str(RULES_HISTORY[3]), "--csv", str(tmp_path / "v3.csv")]) == 0
    earlier = pd.read_csv(tmp_path / "v3.csv").set_index("key")
    assert set(earlier.index) == {"table_1", "training_directionality", "training_symmetry", "symmetric_init_structure"}
    now = training_claims.training_verdicts().set_index("key")
    assert earlier.loc["table_1", "status"] == "refuted" and now.loc["table_1", "status"] == "inconclusive"


def test_a_claim_read_only_at_its_looks_is_shown_by_its_key_as_the_training_table_lists_it(book, capsys, monkeypatch):
    """--claim takes every key the first column of --training shows: a claim of a body read only
    at its looks (the authors' setting's chars_*) was refused as unknown."""
    c = V3.copy().assign(key="c", claim="Fig. C in another body: c is larger", status="not testable here",
                         why="encoder/standard not trained enough")
    monkeypatch.setattr(training_claims, "training_verdicts", lambda *a, **k: pd.concat([V3, c], ignore_index=True))
    assert main(["verdicts", "--training"]) == 0
    assert "c " in capsys.readouterr().out
    assert main(["verdicts", "--claim", "c"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Fig. C in another body") and "read only at its looks" in out
    assert "look 1 of 4 (3 seeds), 3 of 12 seeds in: not testable here" in out and "not trained enough" in out


def test_the_printed_table_gives_numbers_to_five_digits_and_the_csv_every_digit(book, tmp_path, capsys, monkeypatch):
    """A d of 0.005360000000000031 is printed 0.00536; the CSV keeps the float as computed."""
    d = 0.00536 + 3.1e-17
    monkeypatch.setattr(training_claims, "training_verdicts", lambda *a, **k: V3.assign(d=d))
    out = tmp_path / "t.csv"
    assert main(["verdicts", "--training", "--csv", str(out)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("b "))
    assert " 0.00536 " in row and "0.0053600" not in row
    assert pd.read_csv(out)["d"].iloc[0] == pytest.approx(d, rel=1e-15)
