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


def _summary(values: dict) -> pd.DataFrame:
    """A survey summary (as summarize_survey gives) holding ``{(key, component): (sym, dir)}``."""
    return pd.DataFrame([dict(key=k, component=c, pairing="grouped", score=score, median=v)
                         for (k, c), pair in values.items() for score, v in zip(("symmetry", "directionality"), pair)])


def test_the_registered_contrast_values_each_family_at_the_median_of_its_members():
    """Unit values recomputed from the rules file's own member lists (not the package's MEMBERS):
    the median over each family's members of random per-model medians."""
    import numpy as np

    from companion.survey.design import registered_contrast
    from companion.zoo.registry import ZOO

    design = rule("survey_encoder_decoder")["design"]
    rng = np.random.default_rng(7)
    values, by_member = {}, {}
    for m in ZOO.values():
        for component, _ in m.kinds:
            pair = tuple(rng.normal(size=2))
            values[(m.catalog_key or m.name, component)] = pair
            by_member[m.name if len(m.kinds) == 1 else f"{m.name}:{component}"] = pair
    c = registered_contrast(_summary(values))
    for side, short in (("encoders", "enc"), ("decoders", "dec")):
        assert sorted(c[side]) == sorted(design["members"][side])
        for i, score in enumerate(("sym", "dir")):
            expected = {u: float(np.median([by_member[m] for m in ms], axis=0)[i])
                        for u, ms in design["members"][side].items()}
            assert dict(zip(c[side], c[f"{score}_{short}"])) == pytest.approx(expected, rel=0, abs=1e-15)


def test_a_counted_member_without_a_score_is_refused_naming_it():
    from companion.survey.design import registered_contrast
    from companion.zoo.registry import ZOO

    values = {(m.catalog_key or m.name, c): (0.1, -0.1) for m in ZOO.values() for c, _ in m.kinds}
    del values[("qwen2.5-coder-1.5b", "decoder")]
    with pytest.raises(CompanionError, match=r"counts qwen2.5-coder-1.5b, which this build did not score"):
        registered_contrast(_summary(values))
    # a model the design leaves out may be missing: its absence changes no unit
    values[("qwen2.5-coder-1.5b", "decoder")] = (0.1, -0.1)
    del values[("dinov2-small", "encoder")]
    assert len(registered_contrast(_summary(values))["decoders"]) == 5


def test_the_design_was_committed_before_the_zoo_took_its_new_members_in():
    """The commit that moved the held checkpoints into the zoo (and so into the survey's walk)
    is later than the design's stamp (git history; skipped only without one)."""
    import subprocess
    from datetime import datetime, timezone

    root = RULES_PATH.parents[1]
    try:
        out = subprocess.run(["git", "log", "--reverse", "--format=%cI", "-S", "_TAKEN_IN_BY_THE_DESIGN", "--",
                              "src/companion/zoo/registry.py"], cwd=root, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git history here to date the zoo's change")
    first = out.stdout.split()
    taken_in = datetime.fromisoformat(first[0]) if first else datetime.now(timezone.utc)   # not committed yet
    assert rule("survey_encoder_decoder")["design"]["fixed"] < taken_in
