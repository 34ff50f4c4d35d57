"""The survey's design as registered in the rules file in force is the one the package computes:
the same units and members (from the zoo's catalogue and the unit rule, not from the file), a
committed check table for the registered counts, and a stamp before the held checkpoints are
scored.  A design that names no check table is refused when the rules are loaded."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from companion.base.errors import CompanionError
from companion.rules.rulebook import RULES_PATH, load_rules, rule


def test_the_registered_members_are_the_units_the_rule_gives():
    from companion.survey.design import catalog_rows, unit_members, units

    design = rule("survey_encoder_decoder")["design"]
    computed = unit_members(units(catalog_rows(held=True)))
    assert {u: sorted(m) for u, m in design["members"]["encoders"].items()} == {
        u: sorted(m) for u, m in computed["encoder"].items()}
    assert {u: sorted(m) for u, m in design["members"]["decoders"].items()} == {
        u: sorted(m) for u, m in computed["decoder"].items()}


def test_the_registered_check_covers_the_registered_count_and_reaches_holds():
    design = rule("survey_encoder_decoder")["design"]
    table = pd.read_csv(RULES_PATH.parents[1] / design["check"].split()[0])
    prim = table[table["primary"]]
    n_enc, n_dec = len(design["members"]["encoders"]), len(design["members"]["decoders"])
    assert (prim["n_enc"] == n_enc).all() and (prim["n_dec"] == n_dec).all()
    fam = load_rules()["framework"]["families"][design["family"]]
    assert prim["alpha"].iloc[0] == pytest.approx(fam["alpha"] / 2)
    # the smallest p of the registered count lies below the level: 'holds' is reachable
    from math import comb

    assert 1 / comb(n_enc + n_dec, n_dec) < fam["alpha"] / 2


def test_the_design_was_stamped_before_any_held_checkpoint_was_scored():
    """No run or table of the held checkpoints' scores exists in the repository yet; the stamp is
    zoned and not after the file's own commit (checked by the loader)."""
    design = rule("survey_encoder_decoder")["design"]
    assert design["fixed"].tzinfo is not None
    scored = list((RULES_PATH.parents[1] / "data").rglob("*qwen2.5-coder-1.5b*scores*"))
    assert scored == []


def test_a_design_without_its_check_table_is_refused_naming_it(tmp_path):
    (tmp_path / "data").mkdir()
    for table in ("verdict_rules_design.csv", "verdict_rules_family.csv"):
        shutil.copy(RULES_PATH.parent / table, tmp_path / "data" / table)
    p = tmp_path / "data" / "verdict_rules.yaml"
    p.write_text(RULES_PATH.read_text())      # survey_design.csv is not beside it
    with pytest.raises(CompanionError, match="survey_encoder_decoder.*check table data/survey_design.csv is missing"):
        load_rules(p)
