"""The v2 pilots read under v3's yardsticks (the design's history): each row's interval is the
t-interval of the pilot's first look-1 seeds, and a pilot of fewer seeds says so."""

import numpy as np
import pandas as pd
from scipy import stats

from companion.judge.training_claims import pilot_rows
from companion.rules.rulebook import claim_rule, load_rules


def _centre_and_half(text: str) -> tuple[float, float]:
    import re

    low, high = (float(x.replace("\u2212", "-")) for x in re.findall(r"[\u2212+-]?\d+\.\d+", text)[1:3])
    return (low + high) / 2, (high - low) / 2


def test_each_pilot_row_is_the_t_interval_of_its_first_look_seeds():
    from companion.train.studies.design_check import pilot_values

    rules = load_rules()
    rows = pilot_rows(rules).set_index("key")
    for key, row in rows.iterrows():
        rule = claim_rule(key, rules)
        values = pilot_values({"body": rule["pilot"]["body"], "quantity": rule["quantity"],
                               "candidate": rule["candidate"].split("/"),
                               "comparator": rule["comparator"].split("/"), "sign": rule.get("sign", 1)})
        v = values.to_numpy(dtype=float)[: rule["looks"][0]]
        half = stats.t.isf(rule["nominal"][0], v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
        assert f"{v.size} seeds" in row["effect at look 1"], (key, row["effect at look 1"])
        text = row["effect at look 1"]
        assert "[" in text, (key, text)   # every real pilot has an interval
        centre, got_half = _centre_and_half(text)
        assert abs(centre - v.mean()) < 1e-4 + 1e-4 * abs(v.mean()), (key, text, v.mean())
        assert abs(got_half - half) < 1e-4 + 1e-4 * half, (key, text, half)


def test_a_pilot_of_fewer_seeds_than_look_one_says_it_was_read_on_fewer(monkeypatch):
    from companion.train.studies import design_check

    rules = load_rules()
    monkeypatch.setattr(design_check, "pilot_values", lambda spec: pd.Series([0.1, 0.3], index=[10, 11]))
    rows = pilot_rows(rules)
    looks = claim_rule(rows["key"].iloc[0], rules)["looks"][0]
    assert looks > 2
    assert all(f"look 1 counts {looks} seeds; the pilot has 2" in t for t in rows["effect at look 1"])
    monkeypatch.setattr(design_check, "pilot_values", lambda spec: pd.Series(np.arange(looks + 2) * 0.1 + 0.05))
    assert not any("the pilot has" in t for t in pilot_rows(rules)["effect at look 1"])
