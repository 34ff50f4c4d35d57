"""The verdict rules loader (``companion.rules.verdicts.load_rules``): a rules file that later
steps could not read, or that would be read wrongly (a key written twice, nesting too deep, a
sesoi that names no yardstick, a field of the wrong type) is refused when it is loaded, in
one clear line."""

from __future__ import annotations

import pytest

from companion.base.errors import CompanionError


# ---------------------------------------------------------------- a minimal rules file


def _rules(tmp_path, text):
    path = tmp_path / "rules.yaml"
    path.write_text(text if "version:" in text else "version: 1\n" + text)
    return path


_RULE = """claims:
  x:
    claim: something
    test: paired-t
    fixed: 2025-01-01
    seen_before: nothing
"""


@pytest.mark.parametrize("extra, says", [
    ("    sesoi: bogus\n", "neither a number nor a yardstick"),
    ("    sesoi: '0.1'\n", "neither a number nor a yardstick"),
])
def test_a_string_sesoi_that_names_no_yardstick_is_refused(tmp_path, extra, says):
    from companion.rules.rulebook import load_rules

    assert load_rules(_rules(tmp_path, _RULE + "    sesoi: null-band\n"))["claims"]["x"]["sesoi"] == "null-band"
    with pytest.raises(CompanionError, match=says):
        load_rules(_rules(tmp_path, _RULE + extra))


@pytest.mark.parametrize("top, says", [
    ("version: '2'\n", "'version' must be 1, 2, 3 or 4"),
    ("version: 5\n", "'version' must be 1, 2, 3 or 4"),
    ("bodies: [1, 2]\n", "'bodies' must be a mapping"),
    ("yardsticks: [a]\n", "'yardsticks' must be a mapping"),
])
def test_a_malformed_rules_file_is_one_clear_error(tmp_path, top, says):
    from companion.rules.rulebook import load_rules

    with pytest.raises(CompanionError, match=says):
        load_rules(_rules(tmp_path, top + _RULE))



# ---------------------------------------------------------------- edits of the shipped v2 rules


def _v2_rules(tmp_path, edit):
    import yaml

    from companion.rules.rulebook import RULES_HISTORY

    rules = yaml.safe_load(RULES_HISTORY[2].read_text())
    edit(rules)
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    return path


@pytest.mark.parametrize("edit, says", [
    (lambda r: r["framework"].__setitem__("family", None), "'family'"),
    (lambda r: r["framework"].__setitem__("family", {"method": "holm", "fwer": "five percent"}), "'fwer'"),
    (lambda r: r["framework"].__setitem__("family", [0.05]), "'family'"),
    (lambda r: r["framework"].__setitem__("power", "high"), "'power'"),
    (lambda r: r["framework"]["power"].__setitem__("draws", "many"), "'draws'"),
    (lambda r: r["framework"]["power"].__setitem__("target", 1.5), "'target'"),
    (lambda r: r["bodies"]["manual-cpu"].__setitem__("seeds", "0-2"), "'seeds'"),
    (lambda r: r["bodies"]["manual-cpu"].__setitem__("seeds", [0, "one"]), "'seeds'"),
    (lambda r: r["bodies"]["manual-cpu"].__setitem__("patterns", "cpu-*"), "'patterns'"),
    (lambda r: r["bodies"]["manual-bert-mini"].__setitem__("pattern", ["cpu-*"]), "'pattern'"),
    (lambda r: r["bodies"]["wikipedia-bert-mini-blind"].__setitem__("extra_seeds", 13), "'extra_seeds'"),
])
def test_a_rules_file_that_later_steps_could_not_read_is_refused_when_loaded(tmp_path, edit, says):
    from companion.rules.rulebook import RULES_HISTORY
    from companion.rules.rulebook import load_rules

    assert load_rules(RULES_HISTORY[2])["framework"]["family"]["fwer"] == 0.05
    with pytest.raises(CompanionError, match=says):
        load_rules(_v2_rules(tmp_path, edit))


def _v2_copy(tmp_path, edit):
    from companion.rules.rulebook import RULES_HISTORY

    p = tmp_path / "verdict_rules.yaml"
    p.write_text(edit(RULES_HISTORY[2].read_text()))
    return p


@pytest.mark.parametrize("edit, words", [
    (lambda t: t + "\nversion: 1\n", "written twice"),          # a trailing copy would turn v2 into v1
    (lambda t: t.replace("  level: 0.95\n", "  level: 0.95\n  level: 0.5\n", 1), "written twice"),
    (lambda t: t + "\ndeep: " + "[" * 3000 + "]" * 3000 + "\n", "too deeply"),
])
def test_a_rules_file_that_would_be_read_wrongly_is_refused_in_one_line(tmp_path, edit, words):
    from companion.base.errors import CompanionError
    from companion.rules.rulebook import load_rules

    with pytest.raises(CompanionError, match=words) as err:
        load_rules(_v2_copy(tmp_path, edit))
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- the one file in force


def test_a_rules_file_without_a_version_is_refused_naming_the_key(tmp_path):
    from companion.rules.rulebook import load_rules

    path = tmp_path / "rules.yaml"
    path.write_text(_RULE)
    with pytest.raises(CompanionError, match="has no 'version'"):
        load_rules(path)


def _in_force_copy(tmp_path, edit):
    """A copy of the file in force, with its committed tables beside it (data/ under tmp_path)."""
    import shutil

    from companion.rules.rulebook import RULES_PATH

    (tmp_path / "data").mkdir()
    for table in ("verdict_rules_design.csv", "verdict_rules_family.csv", "survey_design.csv"):
        shutil.copy(RULES_PATH.parent / table, tmp_path / "data" / table)
    p = tmp_path / "data" / "verdict_rules.yaml"
    p.write_text(edit(RULES_PATH.read_text()))
    return p


def test_a_claim_named_both_at_looks_and_read_once_is_refused(tmp_path):
    from companion.rules.rulebook import load_rules

    def twice(t):   # table_1's rule copied under the claims read once as well
        head, ev = t.split("\nevidence:\n")
        return head + "\nevidence:\n" + ev.replace("  claims:\n", "  claims:\n    table_1:\n      claim: again\n"
                                                  "      test: paired-t\n      fixed: 2026-11-26T21:54:00+00:00\n"
                                                  "      seen_before: nothing\n", 1)
    with pytest.raises(CompanionError, match="rule 'table_1'.*named twice"):
        load_rules(_in_force_copy(tmp_path, twice))


def test_a_family_of_claims_read_once_over_its_level_is_refused(tmp_path):
    from companion.rules.rulebook import load_rules

    with pytest.raises(CompanionError, match="framework.families.evidence.*more than the family's fwer"):
        load_rules(_in_force_copy(tmp_path, lambda t: t.replace("      alpha: 0.004545", "      alpha: 0.02")))


def test_a_claim_read_once_in_no_family_is_refused(tmp_path):
    from companion.rules.rulebook import load_rules

    drop = lambda t: t.replace(", update_structure, objective_swap]", ", update_structure]")   # noqa: E731
    with pytest.raises(CompanionError, match="claim 'objective_swap' is in no family"):
        load_rules(_in_force_copy(tmp_path, drop))


def test_an_earlier_file_asked_for_a_claim_it_does_not_name_says_which_it_names():
    from companion.rules.rulebook import RULES_HISTORY, claim_rule, load_rules, rule

    with pytest.raises(CompanionError, match="no rule for claim 'chars_table_1'.*training_symmetry"):
        rule("chars_table_1", load_rules(RULES_HISTORY[2]))
    with pytest.raises(CompanionError, match="not read at looks in these rules \\(version 2\\)"):
        claim_rule("table_1", load_rules(RULES_HISTORY[2]))
    with pytest.raises(CompanionError, match="is read at looks"):
        rule("table_1")            # the file in force: a training claim is not read once
