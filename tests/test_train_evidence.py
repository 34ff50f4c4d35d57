"""Cached runs as evidence: per-seed arm values, the disclosed settings, the loss gate."""

import json

import pandas as pd
import pytest

from companion.base.errors import CompanionError
from companion.train.evidence import PAPER, arm_values, settings, settings_text
from companion.train.runs import load_runs, runs_root


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
    from companion.rules.verdicts import load_rules
    from companion.train import evidence

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
    blind = load_rules()["bodies"]["wikipedia-bert-mini-blind"]
    runs = evidence.body_runs(blind)
    assert (runs[runs["quantity"] == "eval_loss"].groupby("run")["step"].max() == blind["steps"]).all()
