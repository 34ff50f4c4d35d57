"""Questions 3-4 of the mechanism plan, on synthetic runs whose answers are known by
construction: a cause that removes the fall is found, one that does not is not, and the
start/added split is averaged as stated."""

import numpy as np
import pandas as pd
import pytest

from companion.base.errors import CompanionError
from companion.train.studies import mechanism as mech

STEPS = [0, 100, 200, 300, 400]


def _run(name, mode, seed, traj, quantity="symmetry", layers=2, noise=0.0):
    rng = np.random.default_rng(seed)
    rows = []
    for layer in range(layers):
        for step, v in zip(STEPS, traj):
            rows.append(dict(run=name, mode=mode, init="standard", seed=seed, step=step, quantity=quantity,
                             layer=layer, head=-1, value=v + noise * rng.normal()))
        # a head-level row that must not count
        rows.append(dict(run=name, mode=mode, init="standard", seed=seed, step=0, quantity=quantity, layer=layer,
                         head=0, value=99.0))
    return rows


def _runs(variants):
    rows = []
    for group, (traj_of_seed) in variants.items():
        for seed in (1, 2, 3):
            rows += _run(f"update-mini-{group}-wikipedia-encoder-standard-s{seed}", "encoder", seed, traj_of_seed(seed))
    return pd.DataFrame(rows)


def rise_fall(seed):     # peak 0.2 + small seed wobble at step 100, then back to 0.02
    return [0.0, 0.2 + 0.01 * seed, 0.1, 0.05, 0.02]


def rise_only(seed):     # the same rise, no fall
    return [0.0, 0.1 + 0.01 * seed, 0.15, 0.19, 0.2 + 0.01 * seed]


def test_group_names_are_read_from_every_naming_scheme():
    names = pd.DataFrame({"run": ["update-sgd-batch8-wikipedia-encoder-standard-s1",
                                  "update-mini-adamw0-wikipedia-decoder-standard-s2",
                                  "decomp-mini-paperlr-wikipedia-encoder-standard-s3",
                                  "wiki-bert-mini-encoder-standard-s0"]})
    assert list(mech.with_group(names)["group"]) == ["sgd", "adamw0", "paperlr"]


def test_peak_and_fall_average_layers_and_ignore_head_rows():
    pf = mech.peak_and_fall(_runs({"adamw": rise_fall}))
    row = pf.loc[("adamw", "encoder", 2)]
    assert row["peak"] == pytest.approx(0.22) and row["peak_step"] == 100
    assert row["final"] == pytest.approx(0.02) and row["fall"] == pytest.approx(0.20)


def test_a_variant_without_the_fall_is_found_to_drive_it_and_one_with_it_is_not():
    runs = _runs({"adamw": rise_fall, "adamw0": rise_only, "constant": rise_fall})
    t = mech.cause_table(runs).set_index("variant")
    assert t.loc["adamw0", "drives_fall"] and t.loc["adamw0", "high"] < 0
    assert t.loc["adamw0", "share_removed"] == pytest.approx(1.0)
    assert not t.loc["constant", "drives_fall"]
    assert t.loc["constant", "difference"] == pytest.approx(0.0, abs=1e-12)
    assert set(t.index) == {"adamw0", "constant"}          # causes without runs are left out


def test_a_cause_table_needs_the_baseline():
    with pytest.raises(CompanionError, match="baseline group 'adamw'"):
        mech.cause_table(_runs({"sgd": rise_fall}))


def test_the_split_is_read_at_the_last_step_and_averaged_over_layers_then_seeds():
    rows = []
    for seed in (1, 2, 3):
        name = f"decomp-mini-adamw-wikipedia-encoder-standard-s{seed}"
        for q, traj in {"start_coef": [1, 0.9, 0.8, 0.85, 0.8 + 0.01 * seed],
                        "start_share": [1, 0.5, 0.2, 0.1, 0.1],
                        "added_symmetry": [0, 0.3, 0.2, 0.1, 0.2],
                        "form_symmetry": [0, 0.2, 0.1, 0.1, 0.18],
                        "added_directionality": [0] * 5, "form_directionality": [0] * 5}.items():
            rows += _run(name, "encoder", seed, traj, quantity=q)
    s = mech.split_at_end(pd.DataFrame(rows)).set_index("group").loc["adamw"]
    assert s["n"] == 3 and s["start_coef"] == pytest.approx(0.82)
    assert s["start_coef_low"] < 0.82 < s["start_coef_high"]
    assert s["form_if_no_start"] == pytest.approx(0.9 * 0.2)
    with pytest.raises(CompanionError, match="no start/added split"):
        mech.split_at_end(_runs({"adamw": rise_fall}))


def test_the_window_table_is_a_one_sample_interval_per_group_and_objective():
    rows = []
    for seed in (1, 2, 3):
        rows += _run(f"update-sgd-batch8-wikipedia-decoder-standard-s{seed}", "decoder", seed,
                     [-0.3, -0.2 - 0.01 * seed, 0, 0, 0], quantity="update_directionality")
    t = mech.window_table(pd.DataFrame(rows), fraction=0.25).set_index(["group", "mode"]).loc[("sgd", "decoder")]
    # first 25% of 400 steps: steps 0 and 100; per run the mean of -0.3 and -0.2-0.01 seed
    assert t["mean"] == pytest.approx(np.mean([(-0.3 - 0.2 - 0.01 * s) / 2 for s in (1, 2, 3)]))
    assert t["high"] < 0


def test_runs_of_two_sizes_are_not_mixed_into_one_group():
    a = _runs({"adamw": rise_fall}).assign(size="cpu")
    b = _runs({"adamw": rise_only}).assign(size="bert-mini")
    with pytest.raises(CompanionError, match="mix model sizes"):
        mech.peak_and_fall(pd.concat([a, b]))
