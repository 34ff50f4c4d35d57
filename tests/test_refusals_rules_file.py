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
    path.write_text(text)
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
    from companion.rules.verdicts import load_rules

    assert load_rules(_rules(tmp_path, _RULE + "    sesoi: null-band\n"))["claims"]["x"]["sesoi"] == "null-band"
    with pytest.raises(CompanionError, match=says):
        load_rules(_rules(tmp_path, _RULE + extra))


@pytest.mark.parametrize("top, says", [
    ("version: '2'\n", "'version' must be a whole number"),
    ("bodies: [1, 2]\n", "'bodies' must be a mapping"),
    ("yardsticks: [a]\n", "'yardsticks' must be a mapping"),
])
def test_a_malformed_rules_file_is_one_clear_error(tmp_path, top, says):
    from companion.rules.verdicts import load_rules

    with pytest.raises(CompanionError, match=says):
        load_rules(_rules(tmp_path, top + _RULE))



# ---------------------------------------------------------------- edits of the shipped v2 rules


def _v2_rules(tmp_path, edit):
    import yaml

    from companion.rules.verdicts import RULES_PATH

    rules = yaml.safe_load(RULES_PATH.read_text())
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
    from companion.rules.verdicts import RULES_PATH, load_rules

    assert load_rules(RULES_PATH)["framework"]["family"]["fwer"] == 0.05
    with pytest.raises(CompanionError, match=says):
        load_rules(_v2_rules(tmp_path, edit))


def _v2_copy(tmp_path, edit):
    from companion.rules.verdicts import RULES_PATH

    p = tmp_path / "verdict_rules.yaml"
    p.write_text(edit(RULES_PATH.read_text()))
    return p


@pytest.mark.parametrize("edit, words", [
    (lambda t: t + "\nversion: 1\n", "written twice"),          # a trailing copy would turn v2 into v1
    (lambda t: t.replace("  level: 0.95\n", "  level: 0.95\n  level: 0.5\n", 1), "written twice"),
    (lambda t: t + "\ndeep: " + "[" * 3000 + "]" * 3000 + "\n", "too deeply"),
])
def test_a_rules_file_that_would_be_read_wrongly_is_refused_in_one_line(tmp_path, edit, words):
    from companion.base.errors import CompanionError
    from companion.rules.verdicts import load_rules

    with pytest.raises(CompanionError, match=words) as err:
        load_rules(_v2_copy(tmp_path, edit))
    assert "\n" not in str(err.value)
