"""A run joins a rules-v3/v4 body only if it was made as the body registers it (issue 74, runs
that join the wrong body): its whole configuration is compared with the registration
(:func:`companion.train.studies.registered_bodies.registered_config`, the plan's command read
by ``companion train``'s own parser), so a run with a symmetry penalty, of another size, from a
pretrained start, with another optimiser, precision, batch, warm-up, corpus, learning rate or
horizon is refused in one line naming the run and the field, even when every run of the body
shares the mistake (the runs are then all alike, and only the registration tells).  And a run
whose history lacks a layer the model has is refused by the run-log reader instead of being
averaged over fewer layers.

The runs are copies of landed runs (data/runs/mixv3-*), each edited in one way."""

from __future__ import annotations

import json
import random
import re
import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest

from companion.base.errors import CompanionError
from companion.rules.rulebook import load_rules
from companion.train.studies import registered_bodies as rb
from companion.train.studies import registration as reg

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "runs"
RUNS = sorted(f"mixv3-bert-mini-{arm}-s{seed}" for seed in (30, 31) for arm in ("encoder-standard", "decoder-standard"))
ENC = "mixv3-bert-mini-encoder-standard-s30"


@pytest.fixture(scope="module")
def rules():
    return load_rules(check_design=False)


@pytest.fixture
def body(rules):
    return dict(rules["bodies"]["english-mix-v3"])


@pytest.fixture
def root(tmp_path):
    for r in RUNS:
        shutil.copytree(DATA / r, tmp_path / r, ignore=shutil.ignore_patterns("*.sha256"))
    return tmp_path


def _read(body, root):
    return rb.body_runs_at_looks(body, body["registered"]["fixed"], None, root=root)


def _edit_all(root, change, runs=RUNS):
    for r in runs:
        path = root / r / "provenance.json"
        p = json.loads(path.read_text())
        change(p)
        path.write_text(json.dumps(p))


def _refused(body, root, *patterns):
    with pytest.raises(CompanionError) as err:
        _read(body, root)
    msg = str(err.value)
    assert "\n" not in msg
    for pat in patterns:
        assert re.search(pat, msg), msg
    return msg


def test_the_copied_runs_join_their_body(body, root):
    runs = _read(body, root)
    assert sorted(runs["run"].unique()) == RUNS


# ---------------------------------------------------------------- the whole configuration

#: every field that changes what a run learns, with a value another command would give it
CHANGES = [("penalty", "symmetric"), ("penalty_coef", 0.1), ("size", "bert-small"), ("init_from", "all-minilm-l6-v2"),
           ("optimizer", "sgd"), ("batch_size", 32), ("grad_accum", 2), ("warmup", 0), ("decay_steps", 5000),
           ("weight_decay", 0.0), ("max_grad_norm", 0.5), ("top_k", 4096), ("seq_len", 64), ("layers", 2),
           ("width", 128), ("heads", 2), ("smoothing", 0), ("eval_blocks", 160), ("eval_every", 500),
           ("eval_other", True), ("update_every", 50), ("extra", {"x": 1})]


@pytest.mark.parametrize("field, value", CHANGES)
def test_every_run_of_the_body_made_otherwise_is_refused_naming_the_field(body, root, field, value):
    """Every run shares the change, so the runs agree with one another: only the registration
    can refuse them."""
    _edit_all(root, lambda p: p["config"].update({field: value}))
    _refused(body, root, rf"^run mixv3-bert-mini-\S+ was made with {field} = ", "english-mix|English mix",
             "move it out of data/runs")


def test_the_fields_changed_are_every_field_that_is_not_the_device_s(body):
    """The table above misses no field of the registration (a new TrainConfig field would be
    compared, and should be changed here)."""
    want = reg.registered_config(body, "encoder/standard", 30)
    left = set(want) - {f for f, _ in CHANGES} - reg._DEVICE_FIELDS
    assert left == {"mode", "init", "seed", "steps", "lr", "corpus", "guard", "model_size"}


@pytest.mark.parametrize("field, value, pattern", [
    ("lr", 5e-5, "lr 5e-05"), ("steps", 20000, "steps 20000"), ("corpus", "wikipedia", "corpus 'wikipedia'")])
def test_the_body_s_own_fields_are_refused_as_before(body, root, field, value, pattern):
    _edit_all(root, lambda p: p["config"].update({field: value}))
    _refused(body, root, pattern)


def test_a_model_size_edited_apart_from_its_name_is_refused(body, root):
    _edit_all(root, lambda p: p["model_size"].update(hidden_size=512))
    _refused(body, root, "was made with model_size = ")


def test_a_field_the_run_does_not_record_is_refused_unless_the_run_predates_it(body, root, monkeypatch):
    _edit_all(root, lambda p: p["config"].pop("optimizer"))
    _refused(body, root, "records no optimizer", r"registered: 'adamw'")
    # a field companion train began recording after these runs started: read as registered
    monkeypatch.setattr(reg, "FIELDS_ADDED", {"optimizer": "2099-01-01T00:00:00+00:00"})
    assert sorted(_read(body, root)["run"].unique()) == RUNS
    # ... but not for a run that started after it was recorded
    monkeypatch.setattr(reg, "FIELDS_ADDED", {"optimizer": "2020-01-01T00:00:00+00:00"})
    _refused(body, root, "records no optimizer")


@pytest.mark.parametrize("device, field", [("cpu (1 threads)", "cpu_bf16"), ("NVIDIA H100 80GB HBM3", "bf16")])
def test_a_run_not_trained_under_bf16_autocast_on_its_device_is_refused(body, root, device, field):
    _edit_all(root, lambda p: (p["config"].update({field: False}), p["hardware"].update(device=device)))
    _refused(body, root, "did not train under bf16 autocast", re.escape(device.split(" (")[0] if "cpu" not in device
                                                                         else "CPU"))


def test_bf16_off_on_the_device_not_used_is_no_refusal(body, root):
    """A CPU run's GPU setting (bf16) does not change what it learned."""
    _edit_all(root, lambda p: p["config"].update(bf16=False))
    assert sorted(_read(body, root)["run"].unique()) == RUNS


def test_how_the_device_ran_may_differ(body, root):
    _edit_all(root, lambda p: p["config"].update(device="cpu", checkpoint_every=0, compile=False, keep_weights=[10000]))
    assert sorted(_read(body, root)["run"].unique()) == RUNS


def test_a_folder_that_names_another_arm_or_seed_is_refused(body, root):
    _edit_all(root, lambda p: p["config"].update(seed=31), runs=[ENC])
    _refused(body, root, f"run {ENC} trained encoder/standard seed 31, so its folder should be "
                         "mixv3-bert-mini-encoder-standard-s31")


def test_a_folder_whose_config_names_another_arm_is_refused(body, root):
    _edit_all(root, lambda p: p["config"].update(mode="decoder"), runs=[ENC])
    _refused(body, root, f"run {ENC} trained decoder/standard seed 30, so its folder should be")


def test_an_arm_the_body_does_not_register_is_refused(body, root):
    (root / ENC).rename(root / "mixv3-bert-mini-encoder-symmetric-s30")
    _edit_all(root, lambda p: p["config"].update(init="symmetric"), runs=["mixv3-bert-mini-encoder-symmetric-s30"])
    _refused(body, root, "trained the arm encoder/symmetric, which body .* does not register")


def test_fuzz_one_random_field_of_one_random_run(body, root):
    """60 random edits (a field of the registration given another value of its kind, in one
    run): each is refused in one line naming that run and that field."""
    rng = random.Random(74)
    want = reg.registered_config(body, "encoder/standard", 30)
    fields = sorted(f for f in want if f not in reg._DEVICE_FIELDS | {"mode", "init", "seed", "model_size"})
    originals = {r: (root / r / "provenance.json").read_text() for r in RUNS}
    refused = 0
    for _ in range(60):
        run, field = rng.choice(RUNS), rng.choice(fields)
        old = json.loads(originals[run])["config"][field]
        new = {bool: lambda v: not v, int: lambda v: v + rng.randint(1, 5), float: lambda v: v * rng.choice([0.5, 2, 3]) + rng.choice([0.1, 0.25]),
               str: lambda v: v + "-x", type(None): lambda v: rng.randint(1, 9)}.get(type(old), lambda v: None)(old)
        for r in RUNS:
            (root / r / "provenance.json").write_text(originals[r])
        _edit_all(root, lambda p: p["config"].update({field: new}), runs=[run])
        with pytest.raises(CompanionError) as err:
            _read(body, root)
        msg = str(err.value)
        assert "\n" not in msg and run in msg and (field in msg or field == "guard"), (run, field, new, msg)
        refused += 1
    assert refused == 60


# ---------------------------------------------------------------- the registration is the plan's command


def _script_options(script: str) -> dict:
    """The training options of a run script's COMMON line as bash expands it with the script's
    defaults, as ``{--flag: value}`` (no device, log or checkpoint options, which the
    registration leaves to the device)."""
    import subprocess

    text = (ROOT / "data" / "runs" / script).read_text()
    lines = [m.group(0) for m in re.finditer(r'^(STEPS|EVERY|WARMUP|KEEP|HALF)=.*$', text, re.M)]
    lines.append(re.search(r'^COMMON="[^"]*"', text, re.M).group(0))
    common = subprocess.run(["bash", "-c", "\n".join(lines) + '\nprintf %s "$COMMON"'], capture_output=True,
                            text=True, check=True, env={"PATH": "/usr/bin:/bin", "LOG": "log", "DEVICE_ARGS": ""}).stdout
    out = _options(common)
    for flag in ("--log", "--checkpoint-every", "--threads", "--device", "--cpu-bf16"):
        out.pop(flag, None)
    return out


def _options(text: str) -> dict:
    words, out, i = shlex.split(text), {}, 0
    while i < len(words):
        value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else True
        out[words[i]] = value
        i += 1 if value is True else 2
    return out


@pytest.mark.parametrize("script", ["make_v3_runs.sh", "make_chars_runs.sh", "device_v3.sh"])
def test_the_registered_options_are_the_run_scripts_options(script, rules):
    got = _script_options(script)
    body = rules["bodies"]["wikipedia-chars-v4" if script == "make_chars_runs.sh" else "english-mix-v3"]
    steps, lr = got.pop("--steps"), got.pop("--lr")
    assert int(steps) == body["steps"] and float(lr) == body["lr"]
    assert got == _options(reg.REGISTERED_OPTIONS)


@pytest.mark.parametrize("key", ["english-mix-v3", "wikipedia-v3", "wikipedia-chars-v4"])
@pytest.mark.parametrize("arm", ["encoder/standard", "encoder/symmetric", "authors-decoder/standard"])
def test_the_registration_is_what_companion_train_makes_of_the_plan_s_command(rules, key, arm):
    """The command parsed by ``companion train``'s own parser gives the registration, field
    for field (its defaults, top-k by corpus, the model size)."""
    import argparse
    import dataclasses

    from companion.train import cli

    body = rules["bodies"][key]
    command = (f"{reg.REGISTERED_OPTIONS} --steps {body['steps']} --lr {body['lr']} --corpus {body['corpus']} "
               f"--mode {arm.split('/')[0]} --init {arm.split('/')[1]} --seed 7 --out x")
    cfg = cli._config(cli._configure(argparse.ArgumentParser()).parse_args(shlex.split(command)))
    want = dict(dataclasses.asdict(cfg), model_size=dataclasses.asdict(cfg.model_size))
    got = reg.registered_config(body, arm, 7)
    assert got == want


@pytest.mark.parametrize("key", ["english-mix-v3", "wikipedia-v3", "wikipedia-chars-v4"])
def test_every_landed_run_of_every_body_is_its_registration(rules, key):
    """The landed runs were made by the plans' commands: each one's configuration is its
    registration in every field but the device's, and its body reads whole."""
    body = rules["bodies"][key]
    pattern = body["pattern"]
    landed = sorted(p for p in DATA.glob(pattern) if (p / "history.csv").exists()
                    and int(p.name.rsplit("-s", 1)[1]) in body["seeds"])
    assert landed
    for d in landed:
        prov = json.loads((d / "provenance.json").read_text())
        cfg = prov["config"]
        want = reg.registered_config(body, f"{cfg['mode']}/{cfg['init']}", cfg["seed"])
        for field, value in want.items():
            if field == "model_size":
                assert prov["model_size"] == value, d.name
            elif field not in reg._DEVICE_FIELDS:
                assert cfg[field] == value, (d.name, field, cfg[field], value)
    runs = rb.body_runs_at_looks(body, body["registered"]["fixed"], None)
    assert sorted(runs["run"].unique()) == [d.name for d in landed]


# ---------------------------------------------------------------- a layer missing from a history


def _history(root, run):
    return pd.read_csv(root / run / "history.csv")


@pytest.mark.parametrize("seed", range(12))
def test_fuzz_a_history_without_one_layer_of_a_quantity_is_refused(body, root, seed):
    """A per-layer quantity (symmetry, directionality) with one layer removed at every step,
    or only at the horizon, or a layer the model does not have added: refused, naming the run,
    the quantity and the layer, never averaged over the layers left."""
    rng = random.Random(seed)
    run = rng.choice(RUNS)
    hist = _history(root, run)
    quantity = rng.choice(sorted(hist.loc[hist["layer"] >= 0, "quantity"].unique()))
    layer = rng.randrange(4)
    how = rng.choice(["everywhere", "horizon", "extra"])
    if how == "everywhere":
        hist = hist[~((hist["quantity"] == quantity) & (hist["layer"] == layer))]
    elif how == "horizon":
        hist = hist[~((hist["quantity"] == quantity) & (hist["layer"] == layer) & (hist["step"] == 10000))]
    else:
        extra = hist[(hist["quantity"] == quantity) & (hist["layer"] == layer)].assign(layer=4 + layer)
        hist = pd.concat([hist, extra], ignore_index=True)
    hist.to_csv(root / run / "history.csv", index=False)
    pattern = (rf"run {run}: its history.csv logs {quantity} "
               + {"everywhere": rf"with no row for layer {layer}, but its provenance gives 4 layers",
                  "horizon": r"for \d+ of its \d+ layers and heads at step 10000",
                  "extra": rf"with rows for layer {4 + layer}, which the model does not have"}[how])
    _refused(body, root, pattern)


def test_a_complete_history_reads_the_mean_of_all_its_layers(body, root):
    """The control: the value read is the mean over the model's four layers, computed here
    from the file."""
    from companion.train.studies.evidence import arm_values

    runs = _read(body, root)
    hist = _history(root, ENC)
    rows = hist[(hist["quantity"] == "symmetry") & (hist["step"] == 10000) & (hist["head"] == -1)]
    assert sorted(rows["layer"]) == [0, 1, 2, 3]
    got = arm_values(runs, "symmetry", "encoder", "standard", step=10000)
    assert got[30] == pytest.approx(rows["value"].mean(), rel=1e-12)


def test_runs_made_by_the_gpu_script_join_their_body(body, root):
    """device_v3.sh's runs: on a GPU, bf16 autocast by default, no --cpu-bf16, no checkpoints."""
    _edit_all(root, lambda p: (p["config"].update(device="cuda", bf16=True, cpu_bf16=False, checkpoint_every=0),
                               p["hardware"].update(device="NVIDIA H100 80GB HBM3")))
    runs = _read(body, root)
    assert sorted(runs["run"].unique()) == RUNS and set(runs["device"]) == {"NVIDIA H100 80GB HBM3"}


# ---------------------------------------------------------------- version 2's bodies (no registration)

V2 = [f"mixblind-bert-mini-encoder-standard-s{s}" for s in (20, 21, 22)]
V2_BODY = {"label": "v2 body", "pattern": "mixblind-bert-mini-*", "seeds": [20, 21, 22], "steps": 10000, "lr": 0.001}


@pytest.fixture
def v2_root(tmp_path, monkeypatch):
    import companion.train.runner.runs as runs

    for r in V2:
        shutil.copytree(DATA / r, tmp_path / r, ignore=shutil.ignore_patterns("*.sha256"))
    monkeypatch.setattr(runs, "runs_root", lambda: tmp_path)
    return tmp_path


def _v2_read():
    from companion.train.studies.evidence import body_runs

    return body_runs(V2_BODY)


def test_fuzz_a_version_2_run_made_otherwise_than_its_body_s_others_is_refused(v2_root):
    """40 random edits of one field of one run of a version-2 body (which has no registration):
    each is refused in one line naming the run and the field."""
    rng = random.Random(2)
    originals = {r: (v2_root / r / "provenance.json").read_text() for r in V2}
    fields = sorted(f for f in json.loads(originals[V2[0]])["config"] if f not in reg.MAY_DIFFER | {"lr", "corpus"})
    for _ in range(40):
        run, field = rng.choice(V2), rng.choice(fields)
        old = json.loads(originals[run])["config"][field]
        new = {bool: lambda v: not v, int: lambda v: v + rng.randint(1, 5), float: lambda v: v * 2 + 0.1,
               str: lambda v: v + "-x", type(None): lambda v: rng.randint(1, 9)}.get(type(old), lambda v: None)(old)
        for r in V2:
            (v2_root / r / "provenance.json").write_text(originals[r])
        _edit_all(v2_root, lambda p: p["config"].update({field: new}), runs=[run])
        with pytest.raises(CompanionError) as err:
            _v2_read()
        msg = str(err.value)
        assert "\n" not in msg and run in msg, (run, field, new, msg)


def test_a_field_a_version_2_run_predates_is_read_as_its_default_and_only_then(v2_root):
    early = "2026-11-20T00:00:00Z"   # before companion train recorded the optimiser (2026-11-25)
    _edit_all(v2_root, lambda p: p.update(started=early), runs=V2)
    _edit_all(v2_root, lambda p: p["config"].pop("optimizer"), runs=[V2[1]])
    assert sorted(_v2_read()["run"].unique()) == V2
    # the same run started after the field was recorded: it should have recorded it
    _edit_all(v2_root, lambda p: p.update(started="2026-11-26T00:00:00Z"), runs=[V2[1]])
    with pytest.raises(CompanionError, match=f"run {V2[1]} was made with optimizer = unset, where the other runs"):
        _v2_read()
    # a run predating the field but trained otherwise than its default (recorded): refused
    _edit_all(v2_root, lambda p: (p.update(started=early), p["config"].update(optimizer="sgd")), runs=[V2[1]])
    with pytest.raises(CompanionError, match=f"run {V2[1]} was made with optimizer = 'sgd'"):
        _v2_read()


def test_a_start_is_the_stamp_or_the_end_less_the_duration():
    import datetime as dt

    assert reg.run_started({"started": "2026-11-20T01:00:00Z"}) == dt.datetime(2026, 11, 20, 1, tzinfo=dt.timezone.utc)
    assert reg.run_started({"date": "2026-11-20T01:00:00Z", "duration_s": 3600.0}) == dt.datetime(
        2026, 11, 20, 0, tzinfo=dt.timezone.utc)
    assert reg.run_started({"date": "2026-11-20T01:00:00Z"}) is None and reg.run_started({}) is None
    assert reg.run_started({"date": "2026-11-20T01:00:00Z", "duration_s": float("nan")}) is None


@pytest.mark.parametrize("key", ["wikipedia-bert-mini-blind", "english-mix-bert-mini-blind", "wikipedia-bert-mini",
                                 "wikipedia-regime", "wikipedia-regime-paper-lr", "manual-bert-mini", "manual-cpu"])
def test_every_version_2_body_still_reads_whole(key):
    """The landed version-2 bodies (whose older runs predate fields such as the optimiser) read
    every run their pattern and seeds name, counted here from the folders."""
    from companion.rules.rulebook import RULES_HISTORY
    from companion.train.studies.evidence import body_runs

    body = load_rules(RULES_HISTORY[2], check_design=False)["bodies"][key]
    body = dict(body, seeds=list(body["seeds"]) + list(body.get("extra_seeds", [])))
    patterns = body.get("patterns") or [body["pattern"]]
    want = set()
    for pat in patterns:
        for d in DATA.glob(pat):
            if (d / "history.csv").exists():
                cfg = json.loads((d / "provenance.json").read_text())["config"]
                if cfg["seed"] in body["seeds"] and cfg.get("penalty", "none") == "none":
                    want.add(d.name)
    assert want and set(body_runs(body)["run"].unique()) == want
