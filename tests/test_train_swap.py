"""The objective swap's test: the paired difference in the direction the claim predicts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from companion.train.studies import swap


def _runs(body, effect, noise=0.0, seeds=(1, 2, 3), layers=3, steps=(0, 50, 100), start=0.5):
    """Tidy histories: swap and control share the start; by the last step the swap's
    layer-mean symmetry sits ``effect`` away from the control's (plus per-seed noise)."""
    rng = np.random.default_rng(0)
    rows = []
    for seed in seeds:
        jitter = noise * rng.standard_normal()
        for role in ("control", "swap"):
            run = f"swap-{body}-{role}-s{seed}"
            for step in steps:
                frac = step / steps[-1]
                for layer in range(layers):
                    base = start + 0.01 * layer + 0.002 * frac
                    value = base + (frac * (effect + jitter) if role == "swap" else 0.0)
                    for q, v in (("symmetry", value), ("directionality", -value)):
                        rows.append(dict(step=step, quantity=q, layer=layer, head=-1, value=v, run=run,
                                         role=role, seed=seed, body=body))
                        rows.append(dict(step=step, quantity=q, layer=layer, head=0, value=99.0, run=run,
                                         role=role, seed=seed, body=body))  # a head row: never used
    return pd.DataFrame(rows)


def test_end_values_are_layer_means_of_whole_layers_at_the_first_and_last_step():
    runs = _runs("minilm", effect=-0.03)
    first, last = swap.end_values(runs, "symmetry", "first"), swap.end_values(runs, "symmetry")
    assert np.allclose(first.to_numpy(), 0.5 + 0.01)              # mean of 0.50, 0.51, 0.52
    assert np.allclose(last["control"], 0.51 + 0.002)
    assert np.allclose(last["swap"] - last["control"], -0.03)


@pytest.fixture()
def patched(monkeypatch):
    def use(runs_by_body, band=0.01):
        monkeypatch.setattr(swap, "swap_runs", lambda body: runs_by_body.get(body))
        monkeypatch.setattr("companion.train.studies.evidence.null_band", lambda runs, q: band)
    return use


def test_a_swap_that_loses_symmetry_as_predicted_holds_with_the_textbook_interval(patched):
    patched({"minilm": _runs("minilm", effect=-0.12, noise=0.005)})
    t = swap.swap_tests().set_index("quantity")
    row = t.loc["symmetry"]
    assert row["primary"] and row["judged"] and row["n"] == 3
    assert row["estimate"] > 0 > row["swap_minus_control"]            # control minus swap, the predicted sign
    assert np.isclose(row["estimate"], -row["swap_minus_control"])
    d = -(-0.12 + 0.005 * np.random.default_rng(0).standard_normal(3))  # control - swap per seed
    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    assert np.isclose(row["low"], d.mean() - half) and np.isclose(row["high"], d.mean() + half)
    assert row["sesoi"] == pytest.approx(0.055)                        # rules v2: the published IQR width
    assert row["outcome"] == "holds" and not row["below_sesoi_too"]


def test_an_effect_above_zero_but_below_the_smallest_of_interest_is_negligible(patched):
    # v1 read 'holds' (its first test); v2's outcomes exclude each other: negligible
    patched({"minilm": _runs("minilm", effect=-0.005, noise=0.0002)}, band=0.01)
    row = swap.swap_tests().set_index("quantity").loc["symmetry"]
    assert 0 < row["low"] and row["high"] < row["sesoi"]
    assert row["outcome"] == "negligible" and row["below_sesoi_too"] and row["outcome_first"] == "holds"
    # with so little seed spread a true zero would be refuted almost always: the design could tell
    assert row["p_decides"] < 0.025 and row["p_refuted_at_0"] > 0.9


def test_a_swap_that_moves_the_wrong_way_is_refuted_and_no_movement_is_not_a_confirmation(patched):
    patched({"minilm": _runs("minilm", effect=+0.05, noise=0.001)})
    assert swap.swap_tests().set_index("quantity").at["symmetry", "outcome"] == "refuted"
    patched({"minilm": _runs("minilm", effect=0.0, noise=0.08)})
    assert swap.swap_tests().set_index("quantity").at["symmetry", "outcome"] == "inconclusive"


def test_the_decoder_body_is_read_in_its_own_direction(patched):
    # SmolLM2's swap is predicted to *gain* symmetry: a gain is the claim's direction
    patched({"smollm2": _runs("smollm2", effect=+0.12, noise=0.005)})
    row = swap.swap_tests().set_index("quantity").loc["symmetry"]
    assert row["estimate"] > 0 and row["swap_minus_control"] > 0 and row["outcome"] == "holds"


def test_fewer_seeds_than_the_rule_asks_are_reported_not_judged(patched):
    patched({"minilm": _runs("minilm", effect=-0.05, seeds=(1,))})
    row = swap.swap_tests().set_index("quantity").loc["symmetry"]
    assert not row["judged"] and row["outcome"] == "not testable here" and row["n"] == 1
    assert np.isclose(row["swap_minus_control"], -0.05)


def test_a_seed_whose_layer_gave_no_number_makes_the_test_not_testable_rather_than_dropped(patched):
    """Four seeds, one with a NaN layer: the paired t alone would decide on the other three."""
    runs = _runs("minilm", effect=-0.12, noise=0.005, seeds=(1, 2, 3, 4))
    hit = (runs["seed"] == 3) & (runs["role"] == "swap") & (runs["layer"] == 1) & (runs["head"] == -1) \
        & (runs["step"] == 100) & (runs["quantity"] == "symmetry")
    runs.loc[hit, "value"] = np.nan
    assert np.isnan(swap.end_values(runs, "symmetry").loc[3, "swap"])   # not the mean of the other two layers
    from companion.rules.rulebook import load_rules

    rules = load_rules()
    rules["evidence"]["claims"]["objective_swap"]["seeds"] = [1, 2, 3, 4]   # a rule with a fourth seed
    patched({"minilm": runs})
    row = swap.swap_tests(rules).set_index("quantity").loc["symmetry"]
    assert row["n"] == 3 and not row["judged"] and row["outcome"] == "not testable here"
    assert row["seeds_without_a_number"] == "3"
    patched({"minilm": _runs("minilm", effect=-0.12, noise=0.005, seeds=(1, 2, 3, 4))})
    assert swap.swap_tests(rules).set_index("quantity").at["symmetry", "outcome"] == "holds"   # the NaN's doing


def test_a_swap_with_no_seed_to_seed_spread_states_no_power_as_it_states_no_outcome(patched):
    """Every seed moved by the same amount (noise 0): the differences vary in their last bit
    only, so the outcome is 'not testable here'; the power and the detectable effect beside
    it are none too, not those of a spread of 1e-17 (which would read as near-certain power)."""
    runs = pd.concat([_runs("minilm", effect=-0.12, seeds=(seed,), start=start)
                      for seed, start in ((1, 0.5), (2, 0.7137), (3, 0.3311))], ignore_index=True)
    patched({"minilm": runs})
    row = swap.swap_tests().set_index("quantity").loc["symmetry"]
    d = swap.end_values(runs, "symmetry")
    spread = (d["control"] - d["swap"]).std(ddof=1)
    assert 0 < spread < 1e-12          # each seed starts elsewhere: a spread of rounding only
    assert row["outcome"] == "not testable here"
    assert np.isnan(row["detect_holds"]) and np.isnan(row["detectable"])
