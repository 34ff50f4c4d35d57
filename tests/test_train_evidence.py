"""Cached runs as evidence: per-seed arm values, the disclosed settings, the loss gate."""

import json

import pandas as pd
import pytest

from companion.base.errors import CompanionError
from companion.train.studies.evidence import PAPER, arm_values, settings, settings_text
from companion.train.runner.runs import load_runs, runs_root


def test_arm_values_take_each_runs_last_step_and_refuse_two_runs_of_one_seed():
    rows = [dict(run=f"r{k}", mode="encoder", init="standard", seed=0, step=s, quantity="symmetry",
                 layer=layer, head=-1, value=v + layer) for k, v in ((0, 0.0),) for s in (0, 10)
            for layer in (0, 1)]
    t = pd.DataFrame(rows)
    t.loc[t.step == 10, "value"] += 1.0
    assert arm_values(t, "symmetry", "encoder").loc[0] == pytest.approx(1.5)   # mean of 1.0 and 2.0 at step 10
    twice = pd.concat([t, t.assign(run="other")])
    with pytest.raises(CompanionError, match="share a seed"):
        arm_values(twice, "symmetry", "encoder")


def test_arm_values_never_average_over_a_layer_that_is_not_a_number():
    import numpy as np

    rows = [dict(run=f"r{seed}", mode="encoder", init="standard", seed=seed, step=10, quantity="symmetry",
                 layer=layer, head=-1, value=0.5) for seed in (0, 1) for layer in (0, 1)]
    t = pd.DataFrame(rows)
    t.loc[(t.seed == 1) & (t.layer == 1), "value"] = np.nan            # seed 1 diverged in layer 1
    named = arm_values(t, "symmetry", "encoder")                      # the old mean read 0.5 for seed 1
    assert named.loc[0] == pytest.approx(0.5) and np.isnan(named.loc[1])
    with pytest.raises(CompanionError, match=r"run r1: layer 1's symmetry at step 10 is nan"):
        arm_values(t, "symmetry", "encoder", non_finite="raise")
    t.loc[(t.seed == 1) & (t.layer == 1), "value"] = np.inf
    assert np.isnan(arm_values(t, "symmetry", "encoder").loc[1])
    with pytest.raises(CompanionError, match="is inf"):
        arm_values(t, "symmetry", "encoder", non_finite="raise")
    with pytest.raises(ValueError, match="non_finite must be"):
        arm_values(t, "symmetry", "encoder", non_finite="skip")


def test_settings_of_a_cached_run_follow_from_its_provenance():
    name = "wiki-bert-mini-encoder-standard-s0"
    p = json.loads((runs_root() / name / "provenance.json").read_text())
    c, m = p["config"], p["model_size"]
    st = settings(load_runs([name])).iloc[0]
    tokens = c["steps"] * c["batch_size"] * m["seq_len"]
    assert st["tokens_seen"] == tokens and st["passes"] == pytest.approx(tokens / p["data"]["train_tokens"])
    text = settings_text(load_runs([name]))
    assert f"{c['lr'] / PAPER['lr']:.0f} times the paper's" in text and "passes over" in text


def test_a_body_with_a_horizon_refuses_a_run_that_ends_elsewhere(monkeypatch):
    from companion.rules.rulebook import RULES_HISTORY, load_rules
    from companion.train.studies import evidence

    rows = [dict(run=r, mode="encoder", init="standard", seed=s, quantity="eval_loss", step=st, layer=-1,
                 head=-1, value=1.0, penalty="none")
            for r, s, last in (("full-s1", 1, 10000), ("short-s2", 2, 9750)) for st in (0, last)]
    monkeypatch.setattr(evidence, "load_patterns", lambda patterns: pd.DataFrame(rows))
    body = {"pattern": "x-*", "seeds": [1, 2], "steps": 10000, "label": "toy"}
    with pytest.raises(CompanionError, match="short-s2 of the body 'toy' ends its evaluations at step 9750, not at "
                                             "the body's horizon 10000"):
        evidence.body_runs(body)
    monkeypatch.undo()
    # the cached blind body states its horizon and every run reaches it
    blind = load_rules(RULES_HISTORY[2])["bodies"]["wikipedia-bert-mini-blind"]
    runs = evidence.body_runs(blind)
    assert (runs[runs["quantity"] == "eval_loss"].groupby("run")["step"].max() == blind["steps"]).all()


def _body(monkeypatch):
    """Two arms x three seeds, evaluated at steps 5 and 10, training loss logged every step;
    the unigram reference fixed at 6.0 nats (what the reference reads is tested elsewhere)."""
    import companion.train.studies.evidence as ev

    monkeypatch.setattr(ev, "arm_reference", lambda runs, mode, init="standard": 6.0)
    rows = []
    for mode, shift in (("encoder", 0.10), ("decoder", 0.0)):
        for seed in (0, 1, 2):
            run = f"{mode}-s{seed}"
            for step in (5, 10):
                for layer in (0, 1):
                    rows.append(dict(run=run, mode=mode, init="standard", seed=seed, step=step, quantity="symmetry",
                                     layer=layer, head=-1, value=shift * step / 10 + 0.01 * seed + 0.02 * layer))
                rows.append(dict(run=run, mode=mode, init="standard", seed=seed, step=step, quantity="eval_loss",
                                 layer=-1, head=-1, value=5.0 - 0.1 * step + 0.01 * seed))
            for step in range(1, 11):
                rows.append(dict(run=run, mode=mode, init="standard", seed=seed, step=step, quantity="train_loss",
                                 layer=-1, head=-1, value=4.2 - 0.1 * step))
    return pd.DataFrame(rows)


def test_the_evidence_table_holds_each_arm_and_seed_once_with_the_values_the_rules_read(monkeypatch):
    from companion.train.studies.evidence import evidence_table, evidence_values

    runs = _body(monkeypatch)
    arms = [("encoder", "standard"), ("decoder", "standard")]
    t = evidence_table(runs, "symmetry", arms, 0.5)
    assert len(t) == 6 and not t.duplicated(["mode", "init", "seed"]).any()
    enc = t[t["mode"] == "encoder"].set_index("seed")
    # each value against a direct read of the logged rows
    for seed in (0, 1, 2):
        log = runs[(runs["run"] == f"encoder-s{seed}") & (runs["quantity"] == "symmetry")]
        assert enc.loc[seed, "end"] == pytest.approx(log[log.step == 10]["value"].mean())
        assert enc.loc[seed, "half"] == pytest.approx(log[log.step == 5]["value"].mean())
        assert enc.loc[seed, "eval_loss"] == pytest.approx(5.0 - 1.0 + 0.01 * seed)
        train = runs[(runs["run"] == f"encoder-s{seed}") & (runs["quantity"] == "train_loss") & (runs.step > 5)]
        assert enc.loc[seed, "memorisation_gap"] == pytest.approx(enc.loc[seed, "eval_loss"] - train["value"].mean())
    assert set(t["half_step"]) == {5}
    assert evidence_values(t, ("decoder", "standard"), "end").index.tolist() == [0, 1, 2]


def test_the_gate_reads_the_table_and_words_its_own_reason(monkeypatch):
    from companion.rules.statistics import paired_t
    from companion.train.studies.evidence import evidence_table, evidence_values, gate_from_evidence

    runs = _body(monkeypatch)
    arms = [("encoder", "standard"), ("decoder", "standard")]
    t = evidence_table(runs, "symmetry", arms, 0.5)
    end = paired_t(evidence_values(t, arms[0]), evidence_values(t, arms[1]))
    half = paired_t(evidence_values(t, arms[0], "half"), evidence_values(t, arms[1], "half"))
    assert end.mean == pytest.approx(0.10) and half.mean == pytest.approx(0.05)
    gate = {"context_floor_nats": 0.69, "memorisation_nats": 0.10, "horizon_fraction": 0.5}
    # loss about 4.0 against a reference of 6.0: 2 nats below; held-out minus training about +0.6 > 0.10
    g = gate_from_evidence(t, arms, end, half, 0.2, gate)
    assert g["parts"] == {"context": True, "memorisation": False, "horizon": True}
    assert g["reason"] == g["why"] == "trained into memorisation"
    g = gate_from_evidence(t, arms, end, half, 0.01, dict(gate, memorisation_nats=1.0))
    assert g["reason"] == "not stable between horizons"
    assert g["why"] == ("not stable between horizons: the effect was +0.050 half-way and +0.100 at the end, "
                        "a change of 0.050 where the rules allow less than d = 0.010")
    assert gate_from_evidence(t, arms, end, half, 0.2, dict(gate, memorisation_nats=1.0))["passes"]


def test_an_evidence_table_without_a_column_the_rules_read_is_refused_naming_it(monkeypatch):
    from companion.train.studies.evidence import evidence_table, evidence_values

    t = evidence_table(_body(monkeypatch), "symmetry", [("encoder", "standard")], 0.5)
    with pytest.raises(CompanionError, match=r"lacks the columns \['half_logged'\]"):
        evidence_values(t.drop(columns="half_logged"), ("encoder", "standard"), "half")
