"""The blind matrix's chapter numbers (companion.train.studies.blind, companion.train.studies.replicate),
checked on small hand-made histories whose answers are known, and on the cached runs against
a direct read of their CSV files."""
import csv
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from companion.train.studies import blind, replicate
from companion.train.runner.runs import runs_root


def _rows(run, mode, init, seed, quantity, steps, values):
    return [dict(run=run, mode=mode, init=init, seed=seed, quantity=quantity, step=s, layer=-1, head=-1, value=v,
                 penalty="none") for s, v in zip(steps, values)]


def _curves(pairs):
    """pairs: {seed: (baseline eval curve, candidate eval curve)} at steps 0, 10, 20, ..."""
    rows = []
    for seed, (b, c) in pairs.items():
        steps = [10 * i for i in range(len(b))]
        rows += _rows(f"b{seed}", "encoder", "standard", seed, "eval_loss", steps, b)
        rows += _rows(f"c{seed}", "encoder", "symmetric", seed, "eval_loss", steps, c)
    return pd.DataFrame(rows)


def test_table_1_keeps_a_candidate_that_never_catches_up_as_censored_and_the_released_formula_says_100_percent():
    base = [9, 8, 7, 6, 5, 5, 5, 5, 5, 5]
    never = [9, 9, 8, 8, 7, 7, 6, 6, 6, 6]          # stays above the baseline's final 5
    table, summary = blind.table_1_speedups(_curves({1: (base, never)}), window=1)
    row = table.iloc[0]
    assert math.isnan(row["speedup"])
    assert row["authors' code"] == 1.0
    assert summary["n_reached"] == 0 and summary["median"] == -np.inf


def test_table_1_speed_up_is_the_share_of_the_baseline_steps_saved():
    base = [9, 8, 7, 6, 5, 5, 5, 5, 5, 4]           # final loss 4, reached at step 90 of 90
    fast = [9, 7, 5, 4, 3, 3, 3, 3, 3, 3]           # reaches 4 at step 30
    table, summary = blind.table_1_speedups(_curves({1: (base, fast)}), window=1)
    # by hand: the baseline reaches its final loss at step 90, the candidate at step 30
    assert table.iloc[0]["speedup"] == pytest.approx(1 - 30 / 90)
    # the released formula asks for strictly below the final loss: 3 < 4 first at step 40
    assert table.iloc[0]["authors' code"] == pytest.approx(1 - 40 / 90)
    assert summary["n_reached"] == 1


def test_memorisation_curve_is_held_out_minus_the_mean_training_loss_of_the_interval():
    rows = _rows("r", "decoder", "standard", 10, "eval_loss", [0, 4, 8], [5.0, 4.0, 3.5])
    rows += _rows("r", "decoder", "standard", 10, "train_loss", [1, 2, 3, 4, 5, 6, 7, 8],
                  [5.0, 4.0, 3.0, 2.0, 2.0, 2.0, 1.0, 1.0])
    got = blind.memorisation_curves(pd.DataFrame(rows)).set_index("step")["gap"]
    assert got[4] == pytest.approx(4.0 - (5 + 4 + 3 + 2) / 4)
    assert got[8] == pytest.approx(3.5 - (2 + 2 + 1 + 1) / 4)


def test_table_1_effect_is_baseline_minus_symmetric_start_and_fig_3a_encoder_minus_decoder():
    rows = []
    for seed, (b, c) in {1: (5.0, 4.5), 2: (5.2, 4.9), 3: (5.1, 4.7)}.items():
        rows += _rows(f"b{seed}", "encoder", "standard", seed, "eval_loss", [0, 10], [9.0, b])
        rows += _rows(f"c{seed}", "encoder", "symmetric", seed, "eval_loss", [0, 10], [9.0, c])
    est = blind.effect(pd.DataFrame(rows), "table_1")
    assert est.mean == pytest.approx(np.mean([0.5, 0.3, 0.4]))   # > 0: the symmetric start is ahead
    assert est.n == 3


def _gates(mem_mean, below=1.0):
    return pd.DataFrame([{"arm": "decoder/standard", "seeds": 3, "below the reference": below,
                          "context floor": "passes" if below >= math.log(2) else "fails",
                          "memorisation gap (mean)": mem_mean, "(smallest)": mem_mean - 0.01,
                          "memorisation guard": "passes" if mem_mean <= 0.1 else "fails"}])


def _answer(gates):
    verdicts = {k: SimpleNamespace(status="not testable here", measured="read at a look") for k in blind.CLAIMS}
    tests = {k: {"estimate": 0.1, "low": -0.1, "high": 0.3, "n": 3, "sesoi": 0.05, "body": "Wiki",
                 "decided_by": "primary"} for k in blind.CLAIMS}
    return blind.answer_parts(verdicts, tests, gates)


def test_the_answer_names_the_failing_gate_part_with_its_number():
    parts = _answer(_gates(1.48))
    assert "decoder/standard runs memorise" in parts["why"] and "+1.48" in parts["why"]
    assert parts["st_table_1"] == "not testable here"
    assert parts["me_training_symmetry"] == "read at a look"     # the claim's reading in force, and nothing beside it
    assert _answer(_gates(0.02))["why"] == "every part passes"
    assert "only 0.50 nats below" in _answer(_gates(0.02, below=0.5))["why"]
    assert parts["decided_on"] == "every verdict on Wiki"


def test_the_answer_says_which_body_decided_each_claim():
    tests = {k: {"body": "Wiki", "decided_by": "primary"} for k in blind.CLAIMS}
    tests["training_symmetry"] = {"body": "Mix", "decided_by": "confirmatory"}
    tests["training_directionality"] = {"body": "Mix", "decided_by": "confirmatory"}
    assert blind.decided_on(tests) == ("Fig. 3a, Fig. 3b on Mix (the first body's gate failed); "
                                       "Fig. S5b, Table 1 on Wiki")


def test_what_the_training_claims_mean_follows_the_second_body_through_its_three_states():
    signs = {"3a": "3 of 3", "3b": "2 of 3"}
    wiki = {"estimate": 0.03, "low": 0.01, "high": 0.06, "n": 3, "body": "Wiki", "decided_by": "primary",
            "gate": False, "gate_reason": "trained into memorisation"}
    mix = lambda n, gate, reason="": {"estimate": 0.2, "low": 0.05, "high": 0.35, "n": n, "body": "Mix",
                                      "decided_by": "", "gate": gate, "gate_reason": reason}
    tests = {k: wiki for k in blind.CLAIMS}
    two = ("training_symmetry", "training_directionality")
    # not complete: the first body's description and what is pending; no verdict claimed
    pending = blind.meaning_3ab(tests, {k: mix(1, True) for k in two}, signs)
    assert pending.startswith("On Wikipedia") and "3 of 3 seeds" in pending and "2 of 3" in pending
    assert "once both arms have finished at 3 deciding seeds" in pending
    assert blind.meaning_3ab(tests, {k: None for k in two}, signs) == pending
    # complete with a failed gate: both reasons, and that body reads neither claim
    failed = blind.meaning_3ab(tests, {k: mix(3, False, "not stable between horizons") for k in two}, signs)
    assert "its gate fails (not stable between horizons)" in failed and "does not read Figs. 3a and 3b" in failed
    # decided on the second body: its intervals first, the first body as context
    decided = dict(tests, **{k: dict(mix(3, True), decided_by="confirmatory") for k in two})
    text = blind.meaning_3ab(decided, {k: decided[k] for k in two}, signs)
    assert text.startswith("On the second corpus") and text.count("encoder minus decoder +0.200") == 2
    assert "for Fig. 3a, encoder minus decoder +0.200 (95% t-interval +0.050 to +0.350, 3 seeds)" in text
    assert "Beside it, on Wikipedia" in text
    # only Fig. 3a decided: the second body's gate failed for Fig. 3b, and the page says why
    one = dict(decided, training_directionality=wiki)
    second = {"training_symmetry": decided["training_symmetry"],
              "training_directionality": mix(3, False, "not stable between horizons")}
    text = blind.meaning_3ab(one, second, signs)
    assert text.count("encoder minus decoder +0.200") == 1 and text.startswith("On the second corpus")
    assert ("Fig. 3b is not read there: the second body's gate fails for it "
            "(not stable between horizons).") in text


def test_the_sentence_about_the_earlier_bodies_states_no_status_word():
    """Each claim has one status, its readings at looks'; the earlier bodies' sentence gives
    their effects and gates only, in every state of the second body."""
    from companion.judge.claims import STATUSES

    row = {"estimate": 0.27, "low": 0.04, "high": 0.5, "n": 3, "body": "Mix", "decided_by": "confirmatory",
           "gate": True, "gate_reason": "", "outcome": "holds, size open"}
    fail = dict(row, decided_by="", gate=False, gate_reason="trained into memorisation")
    states = [({k: row for k in blind.CLAIMS}, {k: row for k in blind.CLAIMS}),
              ({k: fail for k in blind.CLAIMS}, {k: fail for k in blind.CLAIMS}),
              ({k: fail for k in blind.CLAIMS}, {k: None for k in blind.CLAIMS})]
    for tests, second in states:
        text = blind.meaning_3ab(tests, second, {"3a": "3 of 3", "3b": "3 of 3"})
        said = [s for s in STATUSES + ("inconclusive (after Holm)",) if f"reads {s}" in text or f"stay {s}" in text
                or f"stays {s}" in text]
        assert said == [] and "Holm" not in text, text


def test_the_answer_box_reads_the_second_bodys_gate_only_once_it_is_complete():
    row = lambda n, gate, reason="": {"n": n, "gate": gate, "gate_reason": reason}
    two = ("training_symmetry", "training_directionality")
    assert blind.second_gate_text({k: row(2, True) for k in two}) == ""
    assert blind.second_gate_text({"training_symmetry": row(3, True), "training_directionality": None}) == ""
    assert blind.second_gate_text({k: row(3, True) for k in two}) == "; its gate passes for Figs. 3a and 3b"
    mixed = {"training_symmetry": row(3, True), "training_directionality": row(3, False, "not stable between horizons")}
    assert blind.second_gate_text(mixed) == "; its gate fails for Fig. 3b (not stable between horizons)"


def _raw_value(run, quantity, step):
    with open(runs_root() / run / "history.csv", newline="") as fh:
        vals = [float(r["value"]) for r in csv.DictReader(fh)
                if r["quantity"] == quantity and int(r["step"]) == step and r["head"] == "-1"]
    return float(np.mean(vals))


@pytest.mark.skipif(not (runs_root() / "blind-gpu-replicate-wiki-bert-mini-encoder-standard-s10").is_dir(),
                    reason="the device replicate is not cached")
def test_device_differences_match_the_history_files():
    diff = replicate.device_differences((10000,))
    row = diff[(diff["mode"] == "decoder") & (diff["seed"] == 10) & (diff["quantity"] == "eval_loss")].iloc[0]
    judged = _raw_value("blind-wiki-bert-mini-decoder-standard-s10", "eval_loss", 10000)
    rep = _raw_value("blind-gpu-replicate-wiki-bert-mini-decoder-standard-s10", "eval_loss", 10000)
    assert row["judged_device"] == "cpu" and row["replicate_device"] == "gpu"
    assert row["difference"] == pytest.approx(rep - judged)
    sym = diff[(diff["mode"] == "encoder") & (diff["seed"] == 11) & (diff["quantity"] == "symmetry")].iloc[0]
    assert sym["judged"] == pytest.approx(_raw_value("blind-wiki-bert-mini-encoder-standard-s11", "symmetry", 10000))


def test_the_second_body_is_listed_in_its_plans_order_and_a_half_done_body_says_so(tmp_path, monkeypatch):
    from companion.train.runner import runs as runs_mod

    rules = {"bodies": {"mix": {"pattern": "mixblind-bert-mini-*", "seeds": [20, 21, 22], "extra_seeds": [23, 24]}}}
    plan = blind.planned_runs("mix", rules)
    # second_body_plan.md, 'Order': the pair seed by seed, the authors' decoder, the extra seeds
    assert list(plan["run"][:3]) == ["mixblind-bert-mini-encoder-standard-s20", "mixblind-bert-mini-decoder-standard-s20",
                                     "mixblind-bert-mini-encoder-standard-s21"]
    assert list(plan["role"]) == ["decides"] * 6 + ["comparator beside"] * 3 + ["extra seed"] * 4
    assert list(plan.loc[plan["role"] == "comparator beside", "mode"]) == ["authors-decoder"] * 3
    monkeypatch.setattr(runs_mod, "runs_root", lambda: tmp_path)
    assert blind.progress_text(blind.body_progress("mix", rules)).startswith("none of the 13 planned runs")
    for run in plan["run"][:3]:     # seed 20's pair and seed 21's encoder
        (tmp_path / run).mkdir()
        pd.DataFrame(_rows(run, "x", "y", 0, "eval_loss", [0, 5000, 10000], [9, 8, 7])).to_csv(
            tmp_path / run / "history.csv", index=False)
    (tmp_path / plan["run"][3]).mkdir()   # seed 21's decoder: started, no history yet
    got = blind.body_progress("mix", rules)
    assert list(got["finished"][:4]) == [True, True, True, False] and got["last step"][0] == 10000
    assert blind.progress_text(got) == ("3 of the 13 planned runs have finished; deciding seeds with both "
                                        "arms: 20 (1 of the 3 a verdict needs)")
    one = got.assign(finished=[True] + [False] * (len(got) - 1))
    assert blind.progress_text(one).startswith("1 of the 13 planned runs has finished; deciding seeds with both "
                                               "arms: none yet (0 of the 3")
    with pytest.raises(ValueError, match="no body 'nope'"):
        blind.planned_runs("nope", rules)


def test_the_repositorys_run_script_makes_the_second_body_in_the_order_the_chapter_lists():
    import re

    script = (runs_root() / "make_blind_runs.sh").read_text()
    mix = script[script.index('if [ "${1:-all}" = mix ]'):script.index("elif")]
    order = []
    for arms, seeds in re.findall(r'add "([^"]+)" "([^"]+)"', mix):
        order += [f"mixblind-bert-mini-{a.replace('/', '-')}-s{s}" for s in seeds.split() for a in arms.split()]
    assert order == list(blind.planned_runs()["run"])


def test_the_device_script_runs_what_the_cpu_has_not_begun_in_the_plans_order_and_never_splits_a_pair(tmp_path):
    """SET=mix of data/runs/device_blind_matrix.sh (DRY=1: the job list only, nothing written),
    against the plan's order (blind.planned_runs) minus what the CPU has begun: a finished run
    (data/runs), or one holding a CPU checkpoint (the in-progress list prepare-mix writes)."""
    import os
    import subprocess
    import sys

    runs = tmp_path / "runs"
    plan = blind.planned_runs()
    finished = list(plan["run"][:3])       # seed 20's pair and seed 21's encoder
    for run in finished:
        (runs / run).mkdir(parents=True)
        (runs / run / "history.csv").write_text("step,quantity,layer,head,value\n")
    in_progress = tmp_path / "cpu_in_progress.txt"
    in_progress.write_text("mixblind-bert-mini-decoder-standard-s22\nmixblind-bert-mini-authors-decoder-standard-s20\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep").write_text("an earlier run's results")

    def job_list(listing):
        env = dict(os.environ, SET="mix", DRY="1", WORK=str(work), RUNS=str(runs), PY=sys.executable,
                   IN_PROGRESS=str(listing))
        env.pop("OUT", None)
        out = subprocess.run(["bash", str(runs_root() / "device_blind_matrix.sh")], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert all("--corpus english-mix" in line for line in out.stdout.splitlines())
        return [line.split()[0] for line in out.stdout.splitlines() if line.strip()], out.stderr

    pair = lambda seed: set(plan.loc[(plan["seed"] == seed) & (plan["role"] == "decides"), "run"])
    jobs, said = job_list(tmp_path / "none.txt")
    assert jobs == [r for r in plan["run"] if r not in finished and r not in pair(21)]
    assert "seed 21: the CPU has begun this pair" in said
    jobs, said = job_list(in_progress)      # seed 22's decoder and one authors' decoder training on the CPU
    begun = pair(21) | pair(22) | {"mixblind-bert-mini-authors-decoder-standard-s20"}
    assert jobs == [r for r in plan["run"] if r not in finished and r not in begun]
    assert "seed 22: the CPU has begun this pair" in said
    assert (work / "keep").is_file() and not (tmp_path / "out").exists()   # a dry run writes nothing


def test_a_failed_horizon_part_is_shown_with_what_was_measured():
    r = {"gate_reason": "not stable between horizons", "horizon_at_half": 0.087, "horizon_at_end": 0.148,
         "sesoi": 0.055}
    assert blind.gate_why(r) == ("not stable between horizons: the effect was +0.087 half-way and +0.148 "
                                 "at the end, a change of 0.061 where the rules allow less than d = 0.055")
    assert blind.gate_why(dict(r, horizon_at_half=-0.01)).endswith("at the end, the sign changed")
    assert blind.gate_why({"gate_reason": "trained into memorisation"}) == "trained into memorisation"
    two = ("training_symmetry", "training_directionality")
    assert blind.second_gate_text({two[0]: dict(r, n=3, gate=False), two[1]: {"n": 3, "gate": True}}) == (
        "; its gate fails for Fig. 3a (" + blind.gate_why(r) + ")")


def test_the_answer_states_the_thresholds_the_rules_hold_not_fixed_ones():
    from companion.rules.rulebook import load_rules

    rules = load_rules()
    rules["framework"]["gate"] = dict(rules["framework"]["gate"], memorisation_nats=0.25, context_floor_nats=1.1)
    verdicts = {k: SimpleNamespace(status="not testable here", measured="read at a look") for k in blind.CLAIMS}
    tests = {k: {"estimate": 0.1, "low": -0.1, "high": 0.3, "n": 3, "sesoi": 0.05, "body": "Wiki",
                 "decided_by": "primary"} for k in blind.CLAIMS}
    why = blind.answer_parts(verdicts, tests, _gates(1.48, below=0.5), rules)["why"]
    assert "at most +0.25" in why and "need 1.10" in why and "0.69" not in why and "+0.10" not in why


def _fake_runs(settings):
    rows = []
    for k, run in enumerate(settings):
        rows += _rows(run, "encoder" if k % 2 == 0 else "decoder", "standard", 10 + k // 2, "eval_loss", [0], [9.0])
    return pd.DataFrame(rows)


def test_the_devices_sentence_says_only_what_the_provenance_records(monkeypatch):
    import companion.train.studies.evidence as ev

    settings = {"a": {"device": "CPU", "threads": 1, "bf16": True}, "b": {"device": "CPU", "threads": 1, "bf16": True},
                "c": {"device": "NVIDIA H100", "threads": 1, "bf16": True},
                "d": {"device": ev.UNRECORDED, "threads": None, "bf16": None}}
    monkeypatch.setattr(ev, "run_settings", lambda run: settings[run])
    text = blind.devices_text(_fake_runs(settings))
    assert "trained on a CPU (one thread each, bf16 autocast)" in text
    assert "1 run on one NVIDIA H100 (bf16 autocast)" in text
    assert "1 run whose provenance records no device" in text and "packed" not in text
    settings["b"] = {"device": "CPU", "threads": 2, "bf16": False}          # the CPU runs now differ
    text = blind.devices_text(_fake_runs(settings))
    assert "trained on a CPU;" in text or text.split(";")[0].endswith("trained on a CPU")


def test_a_run_without_a_recorded_device_is_never_taken_for_a_gpu_run(tmp_path, monkeypatch):
    import json

    import companion.train.studies.evidence as ev
    import companion.train.runner.runs as runs_mod

    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "provenance.json").write_text(json.dumps({"config": {"bf16": True}}))
    monkeypatch.setattr(runs_mod, "runs_root", lambda: tmp_path)
    assert ev.run_device("r") == ev.UNRECORDED
    assert ev.run_settings("r") == {"device": ev.UNRECORDED, "threads": None, "bf16": None}


def _script_replicates(script: str, branch: str) -> set[str]:
    """The run names a run script's replicate branch makes (its PREFIX and its add lines)."""
    import re

    text = (runs_root() / script).read_text()
    part = text[text.index(branch):]
    part = part[:part.index("\nelse") if "\nelse" in part else len(part)]
    prefix = re.search(r"PREFIX=(\S+)", part).group(1)
    arms, seeds = re.search(r'add "([^"]+)" "([^"]+)"', part).groups()
    return {f"{prefix}-{a.replace('/', '-')}-s{s}" for s in seeds.split() for a in arms.split()}


def test_the_planned_replicates_are_the_runs_the_scripts_make_one_direction_each():
    d = replicate.replicate_directions()
    cpu_side = _script_replicates("make_blind_runs.sh", 'elif [ "${1:-all}" = replicate ]')
    gpu_side = _script_replicates("device_blind_matrix.sh", 'elif [ "${SET:-matrix}" = replicate ]')
    assert set(d.loc[d["direction"] == "gpu -> cpu", "run"]) == cpu_side
    assert set(d.loc[d["direction"] == "cpu -> gpu", "run"]) == gpu_side
    # each direction repeats runs the judged body made on the other device
    for r in d.itertuples():
        judged = f"blind-wiki-bert-mini-{r.arm}-s{r.seed}"
        if (runs_root() / judged).is_dir():
            want = "cpu" if r.direction.startswith("cpu") else "gpu"
            assert replicate._device(judged) == want, (judged, r.direction)


def test_the_directions_sentence_names_a_missing_direction_with_its_command(tmp_path):
    for run in replicate.replicate_directions(tmp_path)["run"]:
        if "gpu-replicate" in run:
            (tmp_path / run).mkdir()
            (tmp_path / run / "history.csv").write_text("step\n")
    text = replicate.directions_text(tmp_path)
    assert text.startswith("CPU runs repeated on the GPU (seeds 10, 11): landed; ")
    assert "GPU runs repeated on the CPU (seed 12): 2 of 2 runs still missing" in text
    assert text.endswith("still missing, made by bash data/runs/make_blind_runs.sh replicate")
    assert "`" not in text                                 # glued as plain text: no Markdown in it
    (tmp_path / "blind-cpu-replicate-wiki-bert-mini-encoder-standard-s12").mkdir()
    (tmp_path / "blind-cpu-replicate-wiki-bert-mini-encoder-standard-s12" / "history.csv").write_text("step\n")
    assert "1 of 2 runs still missing" in replicate.directions_text(tmp_path)


def test_the_cpu_machine_check_reads_the_layer_means_and_the_seed_spread_from_the_files(tmp_path):
    """Against a hand computation from the stored check file and the judged runs' histories."""
    check = replicate.cpu_machine_check()
    raw = pd.read_csv(runs_root() / replicate.CPU_MACHINE_CHECK)
    sym = raw[(raw["quantity"] == "symmetry") & (raw["head"] == -1) & (raw["step"] == 250)]
    row = check.set_index("quantity").loc["symmetry"]
    today = "this_machine_todays_code"
    assert row["machine"] == pytest.approx(sym[today].mean() - sym["stored_run"].mean(), abs=1e-12)
    spread = []
    for seed in (10, 11, 12, 13, 14):
        h = pd.read_csv(runs_root() / f"blind-wiki-bert-mini-encoder-standard-s{seed}" / "history.csv")
        spread.append(h[(h["quantity"] == "symmetry") & (h["head"] == -1) & (h["step"] == 250)]["value"].mean())
    assert row["seed_sd"] == pytest.approx(float(np.std(spread, ddof=1)), rel=1e-9)
    assert row["stored run"] == pytest.approx(sym["stored_run"].mean())
    with pytest.raises(Exception, match="no CPU machine check"):
        replicate.cpu_machine_check(tmp_path / "missing.csv")


def test_a_nan_training_loss_in_the_last_interval_leaves_the_memorisation_gap_nan_not_a_mean_of_the_rest():
    from companion.train.studies.evidence import memorisation_gap

    rows = _rows("r", "decoder", "standard", 10, "eval_loss", [0, 4, 8], [5.0, 4.0, 3.5])
    rows += _rows("r", "decoder", "standard", 10, "train_loss", [5, 6, 7, 8], [2.0, 2.0, 1.0, 1.0])
    rows += _rows("q", "decoder", "standard", 11, "eval_loss", [0, 4, 8], [5.0, 4.0, 3.5])
    rows += _rows("q", "decoder", "standard", 11, "train_loss", [5, 6, 7, 8], [2.0, float("nan"), 1.0, 1.0])
    gap = memorisation_gap(pd.DataFrame(rows), "decoder")
    assert gap[10] == pytest.approx(3.5 - 1.5)
    assert math.isnan(gap[11])                    # the three finite steps alone would give 3.5 - 4/3


def test_the_device_summary_does_not_pass_over_a_replicate_that_gave_no_number(monkeypatch):
    diff = pd.DataFrame([{"mode": "encoder", "init": "standard", "seed": s, "quantity": "symmetry", "step": 10,
                          "difference": d} for s, d in ((10, 0.01), (11, float("nan")))])
    monkeypatch.setattr(replicate, "device_differences", lambda steps: diff)
    judged = pd.DataFrame(_rows("a", "encoder", "standard", 10, "symmetry", [10], [0.1])
                          + _rows("b", "encoder", "standard", 11, "symmetry", [10], [0.3]))
    monkeypatch.setattr(replicate, "load_runs", lambda pattern: judged)
    row = replicate.device_effect_summary(steps=(10,), seeds=(10, 11)).iloc[0]
    assert math.isnan(row["max_abs_device_difference"]) and row["seed_sd"] == pytest.approx(np.std([0.1, 0.3], ddof=1))
