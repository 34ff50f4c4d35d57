"""Training claims under rules v3 on synthetic bodies: runs that do not belong are refused in
one line, the gate fails on what it measures (context, the one-mode guard, a reversal), a claim
is read at its first decided look, and the fixed sequence orders the family's statuses."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pandas as pd
import pytest

from companion.base.errors import CompanionError
from companion.rules.sequential import LookEstimate, Reading
from companion.rules.rulebook import load_rules

STEPS = 10000
#: the configuration a run of the English-mix v3 body records (as data/runs/mixv3-bert-mini-encoder-standard-s30's),
#: besides its arm, seed, corpus and learning rate
REGISTERED = {'size': 'bert-mini',
              'steps': 10000,
              'batch_size': 16,
              'grad_accum': 1,
              'warmup': 100,
              'decay_steps': None,
              'weight_decay': 0.01,
              'optimizer': 'adamw',
              'update_every': None,
              'max_grad_norm': 1.0,
              'eval_every': 250,
              'eval_blocks': 320,
              'penalty': 'none',
              'penalty_coef': 0.0,
              'top_k': None,
              'seq_len': None,
              'layers': None,
              'width': None,
              'heads': None,
              'bf16': True,
              'cpu_bf16': True,
              'compile': False,
              'device': None,
              'checkpoint_every': 250,
              'smoothing': 1,
              'init_from': None,
              'eval_other': False,
              'guard': True,
              'keep_weights': [5000, 10000],
              'extra': {}}
MODEL_SIZE = {'name': 'bert-mini',
              'num_hidden_layers': 4,
              'hidden_size': 256,
              'num_attention_heads': 4,
              'intermediate_size': 1024,
              'seq_len': 128,
              'max_position_embeddings': 512,
              'hidden_dropout_prob': 0.1,
              'attention_probs_dropout_prob': 0.1,
              'layer_norm_eps': 1e-12}


def _write_run(root, name, mode, init, seed, *, sym, loss=4.0, sym_half=None, seen=4.0, unseen=4.02,
               heldout=4.03, started=None, device="cpu (1 threads)", lr=1e-3,
               corpus="english-mix", digest="abc", guard=True, blocks=320, half=True, guard_at_horizon=True,
               **config):
    if started is None:   # a moment ago: after every commit of the rules, and not in the future
        started = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1)).isoformat(timespec="seconds")
    d = root / name
    d.mkdir(parents=True)
    rows = []
    for step, s in ((STEPS // 2, sym if sym_half is None else sym_half), (STEPS, sym)):
        rows.append((step, "eval_loss", -1, -1, loss + (0.3 if step < STEPS else 0)))
        if half or step == STEPS:
            for layer in range(4):
                rows.append((step, "symmetry", layer, -1, s))
                rows.append((step, "directionality", layer, -1, -s))
        if guard and (guard_at_horizon or step < STEPS):
            rows += [(step, "guard_seen_loss", -1, -1, seen), (step, "guard_unseen_loss", -1, -1, unseen),
                     (step, "guard_heldout_loss", -1, -1, heldout)]
            rows += [(step, f"guard_{k}_blocks", -1, -1, 320 if k == "seen" else blocks) for k in ("seen", "unseen", "heldout")]
    pd.DataFrame(rows, columns=["step", "quantity", "layer", "head", "value"]).to_csv(d / "history.csv", index=False)
    prov = {"started": started, "hardware": {"device": device},
            "config": {**REGISTERED, "mode": mode, "init": init, "seed": seed, "corpus": corpus, "lr": lr, **config},
            "model_size": dict(MODEL_SIZE),
            "data": {"documents_sha256": digest}}
    (d / "provenance.json").write_text(json.dumps(prov))


@pytest.fixture
def body(tmp_path, monkeypatch):
    """A v3 English-mix body in a temporary runs folder; the unigram reference is fixed at 8 nats."""
    import companion.train.studies.evidence as ev
    import companion.train.runner.runs as runs

    monkeypatch.setattr(runs, "runs_root", lambda: tmp_path)
    monkeypatch.setattr(ev, "_unigram_reference", lambda *a, **k: 8.0)
    return tmp_path


def _pairs(root, effects, **kw):
    for seed, e in zip(range(30, 30 + len(effects)), effects):
        _write_run(root, f"mixv3-bert-mini-encoder-standard-s{seed}", "encoder", "standard", seed, sym=e, **kw)
        _write_run(root, f"mixv3-bert-mini-decoder-standard-s{seed}", "decoder", "standard", seed, sym=0.0, **kw)


def _read(key="training_symmetry"):
    from companion.train.studies.registered_bodies import read_claim, body_runs_at_looks, _registration, _rules_commit

    rules = load_rules()
    body = rules["bodies"]["english-mix-v3"]
    runs = body_runs_at_looks(body, _registration(body)[0], _rules_commit(body))
    return read_claim(key, rules, runs=runs)


def test_a_consistent_large_effect_is_read_holds_at_the_first_look(body):
    _pairs(body, [0.5, 0.5001, 0.5002])
    c = _read()
    assert c["reading"].outcome == "holds" and c["reading"].look == 1 and c["gate"]["passes"]
    assert c["reading"].estimate.mean == pytest.approx(0.5001)


def test_before_the_first_look_the_missing_runs_are_named(body):
    _pairs(body, [0.5, 0.5001])
    c = _read()
    assert c["reading"].outcome == "not read yet" and c["reading"].look == 0
    assert c["missing"] == ["mixv3-bert-mini-encoder-standard-s32", "mixv3-bert-mini-decoder-standard-s32"]


def test_a_run_missing_its_pair_ends_the_seeds_read(body):
    _pairs(body, [0.5, 0.5001, 0.5002])
    import shutil

    shutil.rmtree(body / "mixv3-bert-mini-decoder-standard-s31")
    _write_run(body, "mixv3-bert-mini-encoder-standard-s33", "encoder", "standard", 33, sym=0.5)
    assert _read()["seeds_in"] == [30]


def test_memorisation_measured_in_one_mode_makes_the_claim_not_testable(body):
    _pairs(body, [0.5, 0.5001, 0.5002], unseen=4.25)   # unseen blocks 0.25 nats above seen ones
    c = _read()
    assert c["reading"].outcome == "not testable here" and "memorisation" in c["reading"].reason
    assert "+0.250" in c["reading"].reason


def test_a_guard_gap_of_exactly_the_allowed_nats_passes_whatever_its_last_bit(body):
    """3.2 - 3.1 is 0.10000000000000009 in floating point: at most the rules' 0.10, as the gap
    is compared at 10 significant digits like every bound; 0.1001 fails."""
    _pairs(body, [0.5, 0.5001, 0.5002], seen=3.1, unseen=3.2)
    c = _read()
    assert c["gate"]["passes"] and c["reading"].outcome == "holds", c["reading"].reason


def test_a_failed_gate_at_an_earlier_inconclusive_look_ends_the_sequence_there(body):
    """Look 1 (3 seeds) is inconclusive whatever its spread, and its guard fails (+0.15 nats);
    look 2's seed-mean guard would pass (+0.075) and its interval read 'holds'.  The rules end
    the sequence at the first look whose gate fails, so look 2 is never read."""
    for seed, e in zip(range(30, 36), (0.30, 0.31, 0.29, 0.30, 0.31, 0.29)):
        unseen = 4.15 if seed < 33 else 4.0
        _write_run(body, f"mixv3-bert-mini-encoder-standard-s{seed}", "encoder", "standard", seed, sym=e, unseen=unseen)
        _write_run(body, f"mixv3-bert-mini-decoder-standard-s{seed}", "decoder", "standard", seed, sym=0.0, unseen=unseen)
    c = _read()
    assert c["reading"].look == 1 and c["reading"].outcome == "not testable here"
    assert "memorisation" in c["reading"].reason and "+0.150" in c["reading"].reason
    assert not c["gate"]["passes"] and c["reading"].final


def test_the_same_seeds_with_a_passing_guard_go_on_to_be_decided_at_look_2(body):
    """The control of the test above: only the guard differs, and the claim reads 'holds' at look 2."""
    _pairs(body, [0.30, 0.31, 0.29, 0.30, 0.31, 0.29])
    c = _read()
    assert c["reading"].look == 2 and c["reading"].outcome == "holds" and c["gate"]["passes"]


def test_a_guard_sample_with_fewer_blocks_than_the_rules_ask_fails_the_gate(body):
    _pairs(body, [0.5, 0.5001, 0.5002], blocks=100)   # 100 unseen blocks left, the rules ask 320
    c = _read()
    assert c["reading"].outcome == "not testable here"
    assert "too few blocks" in c["reading"].reason and "unseen sample 100" in c["reading"].reason


def test_a_seed_without_its_guard_at_the_horizon_fails_the_gate_rather_than_leaving_the_mean(body):
    _pairs(body, [0.5, 0.5001])
    _write_run(body, "mixv3-bert-mini-encoder-standard-s32", "encoder", "standard", 32, sym=0.5002,
               guard_at_horizon=False, unseen=4.5)
    _write_run(body, "mixv3-bert-mini-decoder-standard-s32", "decoder", "standard", 32, sym=0.0)
    c = _read()
    assert c["reading"].outcome == "not testable here"
    assert "guard_seen_loss for seed 32" in c["reading"].reason


@pytest.mark.parametrize("kw", [{"seen": float("inf"), "unseen": float("inf")}, {"unseen": float("nan")}])
def test_a_guard_that_cannot_be_read_as_a_number_fails_the_gate(body, kw):
    _pairs(body, [0.5, 0.5001, 0.5002], **kw)
    c = _read()
    assert c["reading"].outcome == "not testable here" and not c["gate"]["passes"]
    assert "lacks finite values" in c["reading"].reason and "seeds 30 and 31 and 32" in c["reading"].reason


def test_a_seed_with_a_broken_layer_is_named_rather_than_averaged_over(body):
    _pairs(body, [0.5, 0.5001, 0.5002])
    h = body / "mixv3-bert-mini-encoder-standard-s31" / "history.csv"
    t = pd.read_csv(h)
    t.loc[(t["step"] == STEPS) & (t["quantity"] == "symmetry") & (t["layer"] == 2), "value"] = float("nan")
    t.to_csv(h, index=False)
    c = _read()
    assert c["reading"].outcome == "not testable here" and "non-finite paired value" in c["reading"].reason
    assert "seed number 2" in c["reading"].reason


def test_a_claim_whose_sequence_ended_asks_for_no_more_runs(body):
    _pairs(body, [0.5, 0.5001, 0.5002], unseen=4.25)   # the gate fails at look 1: the sequence ends
    c = _read()
    assert c["reading"].final and c["missing"] == [] and c["next_look"] is None


def test_a_missing_half_horizon_value_fails_the_horizon_part_rather_than_passing_it(body):
    _pairs(body, [0.5, 0.5001])
    _write_run(body, "mixv3-bert-mini-encoder-standard-s32", "encoder", "standard", 32, sym=0.5002, half=False)
    _write_run(body, "mixv3-bert-mini-decoder-standard-s32", "decoder", "standard", 32, sym=0.0)
    c = _read()
    assert c["reading"].outcome == "not testable here"
    assert "horizon part cannot be read: at step 5000" in c["reading"].reason


def test_a_held_out_sample_that_differs_is_not_memorisation_where_the_reference_is_unseen(body):
    _pairs(body, [0.5, 0.5001, 0.5002], heldout=4.4)   # the English mix's held-out sources differ
    assert _read()["gate"]["passes"]


def test_too_little_context_makes_the_claim_not_testable(body):
    _pairs(body, [0.5, 0.5001, 0.5002], loss=7.6)
    c = _read()
    assert c["reading"].outcome == "not testable here" and "not trained enough" in c["reading"].reason


def test_a_shown_reversal_fails_the_horizon_part_but_growth_does_not(body):
    for seed, (half, end) in zip((30, 31, 32), ((-0.5, 0.5), (-0.5001, 0.5001), (-0.5002, 0.5002))):
        _write_run(body, f"mixv3-bert-mini-encoder-standard-s{seed}", "encoder", "standard", seed, sym=end, sym_half=half)
        _write_run(body, f"mixv3-bert-mini-decoder-standard-s{seed}", "decoder", "standard", seed, sym=0.0)
    c = _read()
    assert c["reading"].outcome == "not testable here" and "reversal" in c["reading"].reason


def test_an_effect_still_growing_passes_the_horizon_part(body):
    for seed, end in zip((30, 31, 32), (0.5, 0.5001, 0.5002)):
        _write_run(body, f"mixv3-bert-mini-encoder-standard-s{seed}", "encoder", "standard", seed, sym=end,
                   sym_half=end / 3)
        _write_run(body, f"mixv3-bert-mini-decoder-standard-s{seed}", "decoder", "standard", seed, sym=0.0)
    assert _read()["reading"].outcome == "holds"


@pytest.mark.parametrize("kw, match", [
    ({"started": "2020-01-01T00:00:00Z"}, "before the rules v3"),
    ({"lr": 5e-5}, "lr 5e-05"),
    ({"corpus": "wikipedia"}, "corpus 'wikipedia'"),
    ({"guard": False}, "no one-mode memorisation guard"),
])
def test_a_run_that_does_not_belong_is_refused_in_one_line(body, kw, match):
    _pairs(body, [0.5, 0.5001])
    _write_run(body, "mixv3-bert-mini-encoder-standard-s32", "encoder", "standard", 32, sym=0.5, **kw)
    with pytest.raises(CompanionError, match=match) as err:
        _read()
    assert "\n" not in str(err.value)


def test_a_corpus_of_another_hash_is_refused(body):
    _pairs(body, [0.5, 0.5001])
    _write_run(body, "mixv3-bert-mini-encoder-standard-s32", "encoder", "standard", 32, sym=0.5, digest="other")
    _write_run(body, "mixv3-bert-mini-decoder-standard-s32", "decoder", "standard", 32, sym=0.0)
    with pytest.raises(CompanionError, match="different hashes"):
        _read()


def test_a_pair_across_devices_is_refused(body):
    _pairs(body, [0.5, 0.5001])
    _write_run(body, "mixv3-bert-mini-encoder-standard-s32", "encoder", "standard", 32, sym=0.5, device="NVIDIA H100")
    _write_run(body, "mixv3-bert-mini-decoder-standard-s32", "decoder", "standard", 32, sym=0.0)
    with pytest.raises(CompanionError, match="different devices"):
        _read()


# ---------------------------------------------------------------- the fixed sequence


def _r(outcome, look=4):
    est = LookEstimate((0.1, 0.2), 0.15, 0.05, 0.0, 0.3, 0.02)
    return Reading(look, (3, 6, 9, 12), est, outcome)


def test_the_fixed_sequence_stops_at_its_first_final_undecided_member():
    from companion.judge.training_claims import fixed_sequence

    s = fixed_sequence({"a": _r("refuted"), "b": _r("inconclusive"), "c": _r("holds"), "d": _r("holds")},
                       ["a", "b", "c", "d"])
    assert s == {"a": "refuted", "b": "inconclusive", "c": "inconclusive (fixed sequence stopped at b)",
                 "d": "inconclusive (fixed sequence stopped at b)"}


def test_a_later_decided_member_is_provisional_while_an_earlier_one_is_still_read():
    from companion.judge.training_claims import fixed_sequence

    s = fixed_sequence({"a": _r("inconclusive", look=2), "b": _r("holds, size open", look=3)}, ["a", "b"])
    assert s["a"] == "inconclusive" and s["b"].startswith("holds, size open (provisional: a comes first")


def test_a_later_member_that_ends_undecided_stops_nothing_while_an_earlier_one_is_read():
    from companion.judge.training_claims import fixed_sequence

    s = fixed_sequence({"a": _r("inconclusive", look=1), "b": _r("inconclusive"), "c": _r("holds"),
                        "d": _r("refuted")}, list("abcd"))
    assert s["b"] == "inconclusive"
    # whichever way a ends, the sequence stops at b or before it: c and d cannot stand
    for k in "cd":
        assert s[k] == "inconclusive (fixed sequence stops at b at the latest; a is still read)"
    # a not read yet (look 0) is still read too; a decided member behind it is only provisional
    s = fixed_sequence({"a": _r("not read yet", look=0), "b": _r("holds")}, list("ab"))
    assert s["b"].startswith("holds (provisional: a comes first")


def test_every_member_decided_keeps_every_reading():
    from companion.judge.training_claims import fixed_sequence

    outs = ["refuted", "holds", "negligible", "holds, size open"]
    s = fixed_sequence({k: _r(o) for k, o in zip("abcd", outs)}, list("abcd"))
    assert list(s.values()) == outs


def test_a_first_look_read_on_one_body_while_the_other_waits_gives_each_claim_one_status(body):
    """Synthetic English-mix look 1 (a spread no 3-seed look can decide), no Wikipedia run: the
    two English-mix claims read 'inconclusive' at look 1 (not final, so they stop nothing),
    the Wikipedia claims 'not read yet' with their missing runs and the command."""
    from companion.judge.training_claims import training_verdicts
    from companion.train.studies import registered_bodies

    _pairs(body, [0.30, 0.31, 0.29])
    registered_bodies._cached_runs.cache_clear()
    try:
        t = training_verdicts().set_index("key")
    finally:
        registered_bodies._cached_runs.cache_clear()
    for key in ("training_symmetry", "training_directionality"):
        assert t.loc[key, "status"] == "inconclusive" and t.loc[key, "look"] == "look 1 of 4 (3 seeds)"
        assert t.loc[key, "gate"] == "passes" and t.loc[key, "missing"][0].endswith("-s33")
    for key in ("table_1", "symmetric_init_structure"):
        assert t.loc[key, "status"] == "not read yet" and t.loc[key, "command"]
        assert "wikiv3-bert-mini-encoder-standard-s50" in t.loc[key, "missing"]


def test_the_real_v3_table_names_the_missing_runs_and_their_command_until_a_look_is_in():
    from companion.judge.training_claims import training_verdicts

    t = training_verdicts()
    assert list(t["key"]) == load_rules()["framework"]["family"]["order"]
    for _, row in t.iterrows():
        if row["look"] == "none yet":
            assert row["status"] == "not read yet" and row["missing"] and row["command"]


def test_the_device_script_takes_whole_seeds_the_cpu_has_not_begun_in_the_plans_order(tmp_path):
    """data/runs/device_v3.sh (DRY=1: the job list only): make_v3_runs.sh's order, minus every
    seed of a body whose runs the CPU has begun (finished, or in the in-progress list), each
    job with the guard, the kept weights and its body's corpus."""
    import os
    import subprocess
    import sys

    from companion.train.runner.runs import runs_root

    def dry(script, **env):
        out = subprocess.run(["bash", str(runs_root() / script)], env=dict(os.environ, DRY="1", PY=sys.executable, **env),
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return [ln for ln in out.stdout.splitlines() if ln.strip()], out.stderr

    order, _ = dry("make_v3_runs.sh")
    runs = tmp_path / "runs"
    (runs / "wikiv3-bert-mini-encoder-standard-s50").mkdir(parents=True)
    (runs / "wikiv3-bert-mini-encoder-standard-s50" / "history.csv").write_text("step\n")
    listing = tmp_path / "in_progress.txt"
    listing.write_text("mixv3-bert-mini-decoder-standard-s30\n")
    jobs, said = dry("device_v3.sh", RUNS=str(runs), IN_PROGRESS=str(listing), N_JOBS="100")
    names = [j.split()[0] for j in jobs]
    cpu = lambda n: n.startswith(("mixv3-", )) and n.endswith("-s30") or n.startswith("wikiv3-") and n.endswith("-s50")
    assert names == [n for n in order if not cpu(n)]
    assert "mixv3-bert-mini-authors-decoder-standard-s30: the CPU has begun this seed" in said
    for j in jobs:
        corpus = "wikipedia" if j.startswith("wikiv3-") else "english-mix"
        assert f"--corpus {corpus}" in j and "--guard" in j and "--keep-weights 5000,10000" in j and "--device cuda" in j
    assert not (tmp_path / "out").exists()


def test_the_runs_table_gives_each_runs_settings_and_the_machines_of_its_sittings(body):
    from companion.train.studies.registered_bodies import runs_table

    _pairs(body, [0.01])
    enc = body / "mixv3-bert-mini-encoder-standard-s30" / "provenance.json"
    prov = json.loads(enc.read_text())
    prov["config"]["batch_size"] = 16
    prov["data"].update({"train_tokens": 16 * 128 * STEPS // 4, "seq_len": 128})
    prov["duration_s"] = 7200.0
    prov["seconds_per_step"] = 7200.0 / STEPS
    prov["cpu_seconds"] = 1800.0                       # paused for three quarters of its wall time
    prov["sittings"] = [
        {"from_step": 0, "cpu_model": "not recorded", "cpu_bf16_features": []},
        {"from_step": 4000, "cpu_model": "Xeon A", "cpu_bf16_features": ["avx512_bf16"]},
        {"from_step": 4250, "cpu_model": "Xeon A", "cpu_bf16_features": ["avx512_bf16"]},   # a resume, same machine
        {"from_step": 9000, "cpu_model": "EPYC B", "cpu_bf16_features": []},
    ]
    enc.write_text(json.dumps(prov))
    table = runs_table(root=body).set_index("run")
    row = table.loc["mixv3-bert-mini-encoder-standard-s30"]
    assert row["passes"] == pytest.approx(4.0)          # four times over a quarter-size corpus
    assert row["hours"] == pytest.approx(2.0)
    assert row["machines"] == ("not recorded; from step 4,000: Xeon A (avx512_bf16); "
                               "from step 9,000: EPYC B")
    assert row["after rules (h)"] > 0                   # started a moment ago, after every commit
    # wall seconds per step count the pauses; CPU seconds per step leave them out
    assert row["s/step"] == pytest.approx(4 * row["CPU s/step"]) and row["CPU s/step"] == pytest.approx(1800.0 / STEPS)
    # a run made before sittings were recorded says so, and is still listed
    assert table.loc["mixv3-bert-mini-decoder-standard-s30", "machines"] == "not recorded"
    assert set(table["body"]) == {"english-mix-v3"} and len(table) == 2


def test_cpu_seconds_per_step_is_given_for_cpu_runs_only(body):
    from companion.train.studies.registered_bodies import runs_table

    _write_run(body, "mixv3-bert-mini-encoder-standard-s30", "encoder", "standard", 30, sym=0.1,
               device="NVIDIA H200")
    _write_run(body, "mixv3-bert-mini-decoder-standard-s30", "decoder", "standard", 30, sym=0.0)
    for name in ("encoder", "decoder"):
        f = body / f"mixv3-bert-mini-{name}-standard-s30" / "provenance.json"
        prov = json.loads(f.read_text())
        prov["cpu_seconds"] = 500.0
        f.write_text(json.dumps(prov))
    table = runs_table(root=body).set_index("arm")
    assert np.isnan(table.loc["encoder/standard", "CPU s/step"])        # host CPU time is not a GPU's work
    assert table.loc["decoder/standard", "CPU s/step"] == pytest.approx(500.0 / STEPS)


def test_the_runs_summary_has_one_row_per_arm_whatever_the_number_of_runs(body):
    """The chapter's table keeps its size as runs land; its medians and counts are the per-run
    table's, recomputed here from the provenance files by hand."""
    from companion.train.studies.registered_bodies import runs_summary, runs_table

    _pairs(body, [0.01, 0.02, 0.03])
    durations = {30: 3600.0, 31: 7200.0, 32: 36000.0}
    for seed, dur in durations.items():
        f = body / f"mixv3-bert-mini-encoder-standard-s{seed}" / "provenance.json"
        prov = json.loads(f.read_text())
        prov["duration_s"] = dur
        prov["cpu_seconds"] = dur / 2
        f.write_text(json.dumps(prov))
    summary = runs_summary(runs_table(root=body)).set_index("arm")
    assert list(summary.index) == ["encoder/standard", "decoder/standard"]
    enc = summary.loc["encoder/standard"]
    assert enc["runs"] == 3 and enc["seeds"] == "30–32"
    assert enc["median hours"] == pytest.approx(2.0)                     # the middle of 1, 2 and 10 h
    assert enc["median CPU s/step"] == pytest.approx(3600.0 / STEPS)     # half of the middle run's 7,200 s
    assert enc["first start after rules (h)"] > 0 and enc["corpus sha256"].count(",") == 0
    # a fourth seed adds to the counts, not to the rows
    _write_run(body, "mixv3-bert-mini-decoder-standard-s33", "decoder", "standard", 33, sym=0.0)
    assert len(runs_summary(runs_table(root=body))) == 2
    dec = runs_summary(runs_table(root=body)).set_index("arm").loc["decoder/standard"]
    assert dec["runs"] == 4 and dec["seeds"] == "30–33"
    _write_run(body, "mixv3-bert-mini-encoder-standard-s35", "encoder", "standard", 35, sym=0.0)
    assert runs_summary(runs_table(root=body)).set_index("arm").loc["encoder/standard", "seeds"] == "30–32, 35"
    assert runs_summary(runs_table(root=body).iloc[:0]).empty


def test_a_run_started_before_the_rules_shows_a_negative_lead_in_the_runs_table(body):
    from companion.train.studies.registered_bodies import runs_table

    _pairs(body, [0.01], started="2020-01-01T00:00:00Z")
    assert (runs_table(root=body)["after rules (h)"] < 0).all()


def test_the_landed_v3_runs_all_started_after_the_rules_on_one_corpus_per_body():
    """The real runs, read from their provenance files independently of the package."""
    from companion.train.runner.runs import runs_root
    from companion.train.studies.registered_bodies import runs_table

    table = runs_table()
    if table.empty:
        pytest.skip("no v3 run has landed")
    assert (table["after rules (h)"] > 0).all()
    assert table.groupby("body")["corpus sha256"].nunique().eq(1).all()
    for _, r in table.iterrows():
        prov = json.loads((runs_root() / r["run"] / "provenance.json").read_text())
        last = pd.read_csv(runs_root() / r["run"] / "history.csv")["step"].max()
        assert last == r["steps"] == prov["config"]["steps"]
        assert r["passes"] == pytest.approx(last * prov["config"]["batch_size"] * 128 / prov["data"]["train_tokens"])


def test_a_provenance_that_is_not_a_record_is_refused_by_the_runs_table_naming_its_file(body):
    from companion.train.studies.registered_bodies import runs_table

    _pairs(body, [0.01])
    (body / "mixv3-bert-mini-encoder-standard-s30" / "provenance.json").write_text("[1, 2")
    with pytest.raises(CompanionError, match="encoder-standard-s30/provenance.json is not a readable JSON"):
        runs_table(root=body)


def test_a_final_not_testable_member_behind_one_still_read_is_provisional_and_named_by_its_label():
    """Should 'a' end undecided, the rules turn 'b' into 'inconclusive (fixed sequence stopped
    at a)'; while 'a' is read, b's 'not testable here' cannot be final either."""
    from companion.judge.training_claims import fixed_sequence

    s = fixed_sequence({"a": _r("inconclusive", look=1), "b": _r("not testable here", look=2), "c": _r("holds")},
                       list("abc"), labels={"a": "Table 1", "b": "Fig. 3b"})
    assert s["b"] == "not testable here (provisional: Table 1 comes first in the fixed sequence and is still read)"
    assert s["c"] == "inconclusive (fixed sequence stops at Fig. 3b at the latest; Table 1 is still read)"


def test_the_secondary_comparator_is_read_at_a_look_of_the_rules_never_at_other_seed_counts(body):
    """Six primary pairs (read at look 2); the authors' decoder at 5 seeds completes look 1 only,
    so the secondary reads the first 3 seeds at look 1's level, as a hand computation gives."""
    from scipy import stats

    effects = [0.30, 0.31, 0.29, 0.30, 0.31, 0.29]
    _pairs(body, effects)
    authors = [0.05, 0.02, 0.08, 0.01, 0.04]
    for seed, a in zip(range(30, 35), authors):
        _write_run(body, f"mixv3-bert-mini-authors-decoder-standard-s{seed}", "authors-decoder", "standard", seed, sym=a)
    c = _read()
    assert c["reading"].look == 2
    sec = c["secondary"]["authors-decoder/standard"]
    assert sec["look"] == 1 and sec["seeds"] == 3
    diffs = np.array(effects[:3]) - np.array(authors[:3])
    from companion.rules.rulebook import claim_rule
    a1 = claim_rule("training_symmetry", load_rules())["nominal"][0]
    half = stats.t.isf(a1, 2) * diffs.std(ddof=1) / np.sqrt(3)
    assert sec["estimate"].low == pytest.approx(diffs.mean() - half, rel=1e-6)
    assert sec["estimate"].high == pytest.approx(diffs.mean() + half, rel=1e-6)
    # the sixth seed of the authors' decoder completes look 2: read there, at look 2's level
    _write_run(body, "mixv3-bert-mini-authors-decoder-standard-s35", "authors-decoder", "standard", 35, sym=0.03)
    sec = _read()["secondary"]["authors-decoder/standard"]
    assert sec["look"] == 2 and sec["seeds"] == 6



@pytest.mark.parametrize("field, value", [("penalty", "symmetric"), ("size", "bert-small"), ("init_from", "all-minilm-l6-v2"),
                                          ("optimizer", "sgd"), ("penalty_coef", 0.1), ("batch_size", 32)])
def test_a_run_whose_learning_configuration_differs_from_its_body_is_refused_naming_it(body, field, value):
    """A run of another size, with a penalty, from a pretrained start or with another optimiser
    or batch is not a run of the body, whatever its name: refused with the run and the field."""
    from companion.base.errors import CompanionError

    _pairs(body, [0.5, 0.6, 0.7])
    odd = body / "mixv3-bert-mini-encoder-standard-s31"
    prov = json.loads((odd / "provenance.json").read_text())
    prov["config"][field] = value
    (odd / "provenance.json").write_text(json.dumps(prov))
    with pytest.raises(CompanionError, match=f"run mixv3-bert-mini-encoder-standard-s31 was made with {field} = "):
        _read()


def test_runs_differing_only_in_arm_seed_and_device_form_one_body(body):
    _pairs(body, [0.5, 0.6, 0.7])
    for name in ("mixv3-bert-mini-encoder-standard-s30", "mixv3-bert-mini-decoder-standard-s30"):
        prov = json.loads((body / name / "provenance.json").read_text())
        prov["config"].update(device="cuda", bf16=True, checkpoint_every=0)
        (body / name / "provenance.json").write_text(json.dumps(prov))
    assert _read()["reading"].look == 1
