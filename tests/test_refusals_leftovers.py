"""Refusals of inputs whose answer would otherwise be read from nothing: an order of logits
with no pair compared, a catalog flag that is no yes or no, a merge key that hides a duplicate,
a gate that asks for an evaluation the body never makes."""

from __future__ import annotations

import numpy as np
import pytest


def _softmax(x):
    e = np.exp(np.asarray(x, dtype=float) - np.max(x, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_an_order_with_every_pair_skipped_is_refused_not_read_as_kept():
    from companion.core.theory import order_preserved

    raw = np.array([[1.0, 1.0001]])
    reversed_probs = np.array([[0.6, 0.4]])   # the larger logit has the smaller weight
    with pytest.raises(ValueError, match="no pair is compared"):
        order_preserved(raw, reversed_probs, min_gap=0.1)
    # a gap that leaves pairs to compare still reads the reversal, and a softmax keeps the order
    assert order_preserved(raw, reversed_probs, min_gap=1e-6) is False
    assert order_preserved(raw, _softmax(raw), min_gap=1e-6) is True
    # one logit per row has no pair at all: trivially kept, whatever the gap
    assert order_preserved(np.array([[3.0]]), np.array([[1.0]]), min_gap=0.5) is True


@pytest.mark.parametrize("flag", ["yes", "1", ""])
def test_a_catalog_flag_that_is_no_true_or_false_is_refused_naming_the_model(tmp_path, flag):
    import csv

    from companion.base.paths import DATA_DIR
    from companion.zoo.catalog import load_catalog

    rows = list(csv.DictReader((DATA_DIR / "catalog.csv").open(encoding="utf-8")))
    key = rows[3]["key"]
    rows[3]["membership_inferred"] = flag
    out = tmp_path / "catalog.csv"
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(ValueError, match=f"membership_inferred of '{key}' is .*write true or false"):
        load_catalog(out)
    # written in capitals or with spaces it is still a flag, read as such
    rows[3]["membership_inferred"] = " TRUE "
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    cat = load_catalog(out)
    assert cat["membership_inferred"].dtype == bool and bool(cat.set_index("key").at[key, "membership_inferred"])


def test_a_merge_key_written_twice_is_refused_not_half_dropped():
    import yaml

    from companion.base.bounded_yaml import load_bounded

    twice = "a: &x {k: 1}\nc:\n  <<: *x\n  <<: {k: 5, j: 2}\n"
    with pytest.raises(yaml.YAMLError, match=r"merge key '<<' is written twice .*line 4"):
        load_bounded(twice)
    # one merge of several mappings is YAML's own form: the first named wins a shared key
    assert load_bounded("a: &x {k: 1}\nb: &y {k: 5, j: 2}\nc:\n  <<: [*x, *y]\n")["c"] == {"k": 1, "j": 2}
    # and a key written beside a merge overrides the merged one, as YAML says
    assert load_bounded("a: &x {k: 1, j: 2}\nc:\n  <<: *x\n  k: 7\n")["c"] == {"k": 7, "j": 2}


@pytest.mark.parametrize("fraction,ok", [(0.33, False), (0.5, True), (0.525, True)])
def test_a_gate_whose_half_horizon_is_no_evaluation_step_is_refused_naming_the_step(fraction, ok):
    """The gate compares the effect at horizon_fraction x steps with the horizon's; runs of a
    registered body evaluate every 250 steps, so at 0.33 x 10,000 = step 3,300 no run has a
    value and every look would read 'not testable here' as if the runs lacked it."""
    import pandas as pd

    from companion.base.errors import CompanionError
    from companion.rules.rulebook import load_rules
    from companion.train.studies import registered_bodies as rb

    rules = load_rules()
    key = next(iter(rules["claims"]))
    rule = dict(rules["claims"][key], body_rule=rules["bodies"][rules["claims"][key]["body"]])
    steps = rule["body_rule"]["steps"]
    gated = {"framework": {"gate": dict(rules["framework"]["gate"], horizon_fraction=fraction)}}
    no_runs = pd.DataFrame(columns=["run", "seed", "quantity", "step", "value", "layer", "head"])
    if ok:   # a half horizon on an evaluation step goes on to read the runs (none here)
        assert (fraction * steps) % 250 == 0
        with pytest.raises(Exception) as err:
            rb.gate_at_look(no_runs, rule, gated, [], 0.01)
        assert "no evaluation step" not in str(err.value)
    else:
        with pytest.raises(CompanionError, match=rf"step {round(fraction * steps)}, is no evaluation step"):
            rb.gate_at_look(no_runs, rule, gated, [], 0.01)
