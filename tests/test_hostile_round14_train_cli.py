"""``companion train`` and its runner as a careful but adversarial user meets them: options
out of range or empty, ``--out`` and ``--log`` at odd places, a checkpoint edited with its
digest written again, provenance that must say what ran, the packer's jobs file and output
folder, and the run catalogue's reading of a provenance.

Each case states the right behaviour: a one-line refusal naming the input and the fix
(before ``--out`` is made where the input is an option), or a value computed apart from the
code under test.  Runs are a few steps of the ``micro`` model: on in-memory blocks through
:func:`companion.train.runner.loop.train`, or on the bundled python-docs corpus through the
command line, its token cache in this module's own temporary folder."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
import torch

from companion.base.cache import sha256_file
from companion.base.errors import CompanionError
from companion.cli import main as companion_main
from companion.train.models.objectives import MaskingSpec
from companion.train.runner.config import TrainConfig
from companion.train.runner.loop import train
from companion.train.text.data import TokenData
from one_line import one_line, one_line_error

torch.set_num_threads(1)

MICRO = ["train", "--size", "micro", "--steps", "2", "--eval-every", "1", "--warmup", "1",
         "--corpus", "python-docs", "--top-k", "64"]
VOCAB = 40


@pytest.fixture(scope="module", autouse=True)
def _token_cache(tmp_path_factory):
    """python-docs' token cache in this module's temporary folder, built once; the model's
    imports (torch's compiler, transformers' BERT) made once here, not in the first case."""
    from companion.train.text.data import token_data_for_corpus

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COMPANION_CACHE", str(tmp_path_factory.mktemp("cache")))
        token_data_for_corpus("python-docs", 16, top_k=64)
        train(_cfg(steps=1, eval_every=1), data=_data())
        yield


def _cli(argv, capsys):
    """``companion ARGV`` -> (exit status, stderr); argparse's own refusals give their code."""
    capsys.readouterr()
    try:
        rc = companion_main(argv)
    except SystemExit as exc:
        rc = exc.code
    return rc, capsys.readouterr().err


def _data(seed=0):
    g = torch.Generator().manual_seed(seed)
    phrase = torch.randint(5, VOCAB, (23,), generator=g)
    stream = phrase.repeat(4600 // 23 + 1)[:4592]
    blocks = stream.view(-1, 16)
    return TokenData(train=blocks[:-20], eval=blocks[-20:], vocab_size=VOCAB,
                     masking=MaskingSpec(mask_id=4, vocab_size=VOCAB, first_regular_id=5))


def _cfg(**kw):
    base = dict(size="micro", steps=4, batch_size=8, lr=3e-3, warmup=1, eval_every=2, eval_blocks=16,
                device="cpu")
    base.update(kw)
    return TrainConfig(**base)


# ============================================================ 1. options: one line, before --out is made

@pytest.mark.parametrize("extra, words", [
    # the objectives need two positions: this was refused only after --out was made, naming no option
    (["--seq-len", "1"], ["--seq-len", "1", "2"]),
    # refused by the data reader after --out was made, as 'top_k'
    (["--top-k", "-5"], ["--top-k", "-5"]),
    # --max-tokens bounds an online corpus only: with python-docs it was silently ignored
    (["--max-tokens", "1000"], ["--max-tokens", "online"]),
])
def test_an_option_the_run_cannot_honour_is_refused_in_one_line_before_out_is_made(tmp_path, capsys, extra, words):
    out = tmp_path / "run"
    one_line_error([*MICRO, *extra, "--out", str(out)], capsys, *words, within_s=30)
    assert not out.exists()


def test_max_tokens_with_a_local_corpus_file_is_refused_not_ignored(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n\n".join(f"the cat sat on the mat number {i} " * 4 for i in range(50)))
    out = tmp_path / "run"
    one_line_error([*MICRO, "--corpus", str(corpus), "--max-tokens", "500", "--out", str(out)], capsys,
                   "--max-tokens", "online", within_s=30)
    assert not out.exists()


@pytest.mark.parametrize("extra, words", [
    (["--threads", "0"], ["--threads must be >= 1", "0"]),
    (["--grad-accum", "0"], ["grad_accum must be >= 1", "0"]),
    (["--eval-every", "0"], ["eval_every must be >= 1", "0"]),
    (["--eval-every", "-1"], ["eval_every must be >= 1", "-1"]),
    (["--keep-weights", "5"], ["keep_weights", "1..2", "5"]),
    (["--keep-weights", "0"], ["--keep-weights", ">= 1", "0"]),
    (["--keep-weights", "1,x"], ["--keep-weights", "'x'"]),
    (["--warmup=-1"], ["warmup", "-1"]),
    (["--warmup", "3"], ["warmup", "3"]),
    (["--batch-size=-4"], ["batch_size must be >= 1", "-4"]),
    (["--checkpoint-every", "3"], ["--checkpoint-every 3 is longer than the run"]),
    (["--weight-decay", "inf"], ["weight_decay", "inf"]),
    (["--penalty-coef", "0.5"], ["penalty_coef", "--penalty"]),
    (["--log-updates", "0"], ["--log-updates must be >= 1"]),
    (["--resume", "--overwrite"], ["--resume and --overwrite"]),   # was refused after --out was made
    # an unset variable: '--corpus ""' was named as 'not a regular file'
    (["--corpus", ""], ["--corpus", "empty"]),
    # '--tokenizer "$TOK"' with TOK unset silently trained on the default tokenizer; a blank one
    # was refused after --out was made, as a hub id of bad characters
    (["--tokenizer", ""], ["--tokenizer", "empty"]),
    (["--tokenizer", " "], ["--tokenizer", "empty"]),
])
def test_a_count_or_number_out_of_range_is_refused_naming_it_before_out_is_made(tmp_path, capsys, extra, words):
    out = tmp_path / "run"
    rc, err = _cli([*MICRO, *extra, "--out", str(out)], capsys)
    last = err.strip().splitlines()[-1]
    assert rc == 2 and "Traceback" not in err, err
    for w in words:
        assert w in last, last
    assert not out.exists()


@pytest.mark.parametrize("top_k", [True, -1, 2.0])
def test_a_vocabulary_size_that_is_no_whole_number_of_ids_is_refused_by_the_config(top_k):
    # True was recorded in the run's configuration as the vocabulary size, and trained
    with pytest.raises(ValueError) as err:
        _cfg(top_k=top_k)
    assert "top_k" in one_line(err) and repr(top_k) in str(err.value)


def test_a_vocabulary_size_of_none_or_a_whole_number_is_taken():
    assert _cfg(top_k=None).top_k is None and _cfg(top_k=4096).top_k == 4096


@pytest.mark.parametrize("value", [-0.5, float("nan"), float("inf")])
def test_a_clipping_norm_below_zero_or_not_finite_is_refused(value):
    with pytest.raises(ValueError) as err:
        _cfg(max_grad_norm=value)
    assert "max_grad_norm" in one_line(err)


def test_a_clipping_norm_of_zero_trains_as_no_clipping_at_all():
    """max_grad_norm 0 turns clipping off: the same run as one clipped at a norm no gradient reaches."""
    off = train(_cfg(steps=1, eval_every=1, max_grad_norm=0.0), data=_data())
    huge = train(_cfg(steps=1, eval_every=1, max_grad_norm=1e30), data=_data())
    tight = train(_cfg(steps=1, eval_every=1, max_grad_norm=1e-6), data=_data())
    pd.testing.assert_frame_equal(off, huge)
    last = lambda h: float(h[(h["quantity"] == "eval_loss") & (h["step"] == 1)]["value"].iloc[0])  # noqa: E731
    assert last(off) != last(tight)   # the norm is read at all: clipping to 1e-6 trains another run


def test_the_learning_rate_logged_follows_warm_up_then_linear_decay_by_hand():
    """steps 4, warm-up 2, decay to 0 at step 8, lr 3e-3: the k-th update (k = 0..3) runs at
    lr (k + 1) / 2 while k < 2, then lr (8 - k) / (8 - 2)."""
    h = train(_cfg(steps=4, warmup=2, decay_steps=8, eval_every=4), data=_data())
    lr = h[h["quantity"] == "lr"].sort_values("step")
    expected = [3e-3 * 1 / 2, 3e-3 * 2 / 2, 3e-3 * 6 / 6, 3e-3 * 5 / 6]
    assert list(lr["step"]) == [1, 2, 3, 4]
    assert lr["value"].tolist() == pytest.approx(expected, rel=1e-12)


def test_a_warm_up_as_long_as_the_run_peaks_on_its_last_step():
    h = train(_cfg(steps=3, warmup=3, eval_every=3), data=_data())
    lr = h[h["quantity"] == "lr"].sort_values("step")["value"].tolist()
    assert lr == pytest.approx([1e-3, 2e-3, 3e-3], rel=1e-12)


# ============================================================ 2. --out: what it is, named as such

def test_out_that_is_a_fifo_is_named_as_a_fifo_and_left(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # was: 'cannot write to --out ... (File exists); choose a writable folder'
    one_line_error([*MICRO, "--out", str(fifo)], capsys, str(fifo), "FIFO", "not a folder", within_s=30)
    assert fifo.is_fifo()


def test_out_that_is_a_link_to_nothing_is_named_as_such_and_nothing_made_at_its_target(tmp_path, capsys):
    link = tmp_path / "run"
    link.symlink_to(tmp_path / "gone")
    one_line_error([*MICRO, "--out", str(link)], capsys, str(link), "symbolic link to nothing", within_s=30)
    assert link.is_symlink() and not (tmp_path / "gone").exists()


def test_out_that_is_a_file_is_named_as_a_file_and_kept(tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("mine\n")
    one_line_error([*MICRO, "--out", str(f)], capsys, str(f), "a file", "not a folder", within_s=30)
    assert f.read_text() == "mine\n"


@pytest.mark.parametrize("extra", [[], ["--resume"]])
def test_a_folder_named_like_the_history_is_not_called_a_finished_run(tmp_path, capsys, extra):
    out = tmp_path / "run"
    (out / "history.csv").mkdir(parents=True)
    (out / "history.csv" / "mine.txt").write_text("keep")
    line = one_line_error([*MICRO, *extra, "--out", str(out)], capsys, "history.csv", "is a folder", within_s=30)
    assert "finished run" not in line
    assert (out / "history.csv" / "mine.txt").read_text() == "keep"


def test_an_existing_folder_of_the_users_files_keeps_them_through_a_run_and_its_overwrite(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    (out / "data.csv").write_text("a,b\n1,2\n")
    assert _cli([*MICRO, "--out", str(out)], capsys)[0] == 0
    assert _cli([*MICRO, "--overwrite", "--out", str(out)], capsys)[0] == 0
    assert (out / "notes.txt").read_text() == "keep me" and (out / "data.csv").read_text() == "a,b\n1,2\n"
    assert (out / "history.csv").is_file()


@pytest.mark.parametrize("name", ["history.csv", "provenance.json", "checkpoint.pt"])
def test_a_link_at_a_run_file_is_refused_before_training_and_its_target_kept(tmp_path, capsys, name):
    target = tmp_path / "elsewhere.txt"
    target.write_text("the user's file\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / name).symlink_to(target)
    rc, err = _cli([*MICRO, "--overwrite", "--out", str(out)], capsys)
    assert rc == 2 and "Traceback" not in err and name in err
    assert target.read_text() == "the user's file\n" and (out / name).is_symlink()


def test_overwrite_removes_the_replaced_runs_kept_weights(tmp_path, capsys):
    """The weights an earlier run kept at step 1 are not the new run's: left beside its history
    they read as its own.  The new run keeps none, so none is left."""
    out = tmp_path / "run"
    assert _cli([*MICRO, "--keep-weights", "1", "--out", str(out)], capsys)[0] == 0
    assert (out / "weights-step1.safetensors").is_file()
    assert _cli([*MICRO, "--lr", "3e-3", "--overwrite", "--out", str(out)], capsys)[0] == 0
    assert json.loads((out / "provenance.json").read_text())["config"]["lr"] == 3e-3
    left = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert left == ["history.csv", "provenance.json"]


def test_overwrite_keeps_the_weights_its_new_run_keeps_and_a_folder_that_only_looks_like_them(tmp_path, capsys):
    out = tmp_path / "run"
    assert _cli([*MICRO, "--keep-weights", "1,2", "--out", str(out)], capsys)[0] == 0
    (out / "weights-step7.safetensors").mkdir()            # not a file a run writes
    (out / "weights-step7.safetensors" / "mine.txt").write_text("keep")
    (out / "weights-stepX.safetensors").write_text("not a step")
    assert _cli([*MICRO, "--keep-weights", "2", "--overwrite", "--out", str(out)], capsys)[0] == 0
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert names == ["history.csv", "provenance.json", "weights-step2.safetensors", "weights-step2.safetensors.sha256",
                     "weights-step7.safetensors", "weights-stepX.safetensors"]
    assert (out / "weights-step7.safetensors" / "mine.txt").read_text() == "keep"
    assert sha256_file(out / "weights-step2.safetensors") == (out / "weights-step2.safetensors.sha256").read_text().split()[0]


def test_a_failed_overwrite_keeps_the_old_runs_kept_weights(tmp_path, capsys):
    out = tmp_path / "run"
    assert _cli([*MICRO, "--keep-weights", "1", "--out", str(out)], capsys)[0] == 0
    before = (out / "weights-step1.safetensors").read_bytes()
    rc, err = _cli([*MICRO, "--overwrite", "--tokenizer", str(tmp_path / "no-such-tokenizer"), "--out", str(out)],
                   capsys)
    assert rc == 2 and "tokenizer" in err
    assert (out / "weights-step1.safetensors").read_bytes() == before


# ============================================================ 3. --log: never onto a file the run reads or writes

@pytest.mark.parametrize("name", ["history.csv", "provenance.json", "checkpoint.pt", "checkpoint.pt.sha256",
                                  ".train.lock", "weights-step1.safetensors", "sub/../history.csv"])
def test_a_log_onto_a_file_of_the_run_is_refused_before_out_is_touched(tmp_path, capsys, name):
    """Progress lines appended to history.csv (or the checkpoint) make a killed run's folder read
    as finished (or interrupted) with a file of log lines, and are lost when the run replaces it."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "sub").mkdir()
    one_line_error([*MICRO, "--keep-weights", "1", "--log", str(out / name), "--out", str(out)], capsys,
                   "--log", "--out", within_s=30)
    assert sorted(p.name for p in out.iterdir()) == ["sub"]


def test_a_log_onto_the_corpus_file_is_refused_and_the_corpus_unchanged(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n\n".join(f"the cat sat on the mat number {i} " * 4 for i in range(50)))
    before = corpus.read_bytes()
    out = tmp_path / "run"
    one_line_error([*MICRO, "--corpus", str(corpus), "--log", str(corpus), "--out", str(out)], capsys,
                   "--log", "--corpus", within_s=30)
    assert corpus.read_bytes() == before and not out.exists()


def test_a_log_inside_out_under_its_own_name_gets_every_progress_line(tmp_path, capsys):
    out = tmp_path / "run"
    log = out / "train.log"
    out.mkdir()
    assert _cli([*MICRO, "--log", str(log), "--out", str(out)], capsys)[0] == 0
    lines = log.read_text().splitlines()
    steps = [ln.split(" step ")[1].split()[0] for ln in lines if " step " in ln]
    assert steps == ["0/2", "1/2", "2/2"]
    assert (out / "history.csv").read_text().startswith("step,quantity,layer,head,value")


# ============================================================ 4. the process environment

@pytest.mark.parametrize("var", ["WORLD_SIZE", "RANK"])
def test_a_process_count_or_rank_that_is_no_number_is_named_in_one_line(tmp_path, capsys, monkeypatch, var):
    # was: "invalid literal for int() with base 10: 'two'" after --out was made
    monkeypatch.setenv(var, "two")
    out = tmp_path / "run"
    one_line_error([*MICRO, "--out", str(out)], capsys, var, "'two'", within_s=30)
    assert not out.exists()


def test_a_rank_beyond_the_processes_is_refused_not_trained_without_writing(tmp_path, capsys, monkeypatch):
    """RANK=3 with one process: the run trained as a rank that never writes, and ended with
    status 0 and no history, no provenance."""
    monkeypatch.setenv("RANK", "3")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    out = tmp_path / "run"
    one_line_error([*MICRO, "--out", str(out)], capsys, "RANK", "3", "0..0", within_s=30)
    assert not out.exists()


# ============================================================ 5. provenance says what ran

def _train_parser():
    from companion.train.cli import _configure

    return _configure(argparse.ArgumentParser(exit_on_error=False))


def _recorded_options(out):
    command = json.loads((out / "provenance.json").read_text())["command"]
    words = shlex.split(command)
    assert words[:2] == ["companion", "train"], command
    return _train_parser().parse_args(words[2:])


def test_the_recorded_command_is_the_run_not_the_calling_programs_arguments(tmp_path, capsys, monkeypatch):
    """Called from a program (a notebook, a script of the caller's own) the recorded command
    was that program's sys.argv; it must parse back to the options the run had."""
    out = tmp_path / "run"
    monkeypatch.setattr(sys, "argv", ["my_script.py", "train", "--steps", "999", "--lr", "5"])
    assert _cli([*MICRO, "--seed", "7", "--out", str(out)], capsys)[0] == 0
    got = _recorded_options(out)
    assert (got.steps, got.seed, got.lr, got.size, got.corpus, got.top_k, got.out) == (
        2, 7, 1e-3, "micro", "python-docs", 64, str(out))


def test_the_recorded_command_of_a_shell_call_is_its_own_words(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    argv = [*MICRO, "--seed", "4", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", ["companion", *argv])
    assert _cli(argv, capsys)[0] == 0
    command = json.loads((out / "provenance.json").read_text())["command"]
    assert command == "companion train " + " ".join(shlex.quote(a) for a in argv[1:])


def test_the_module_entry_point_records_its_own_arguments(tmp_path, capsys):
    from companion.train.cli import main

    out = tmp_path / "run"
    assert main([*MICRO[1:], "--seed", "5", "--out", str(out)]) == 0
    assert _recorded_options(out).seed == 5


def test_the_recorded_throughput_is_the_runs_tokens_over_its_duration(tmp_path, capsys):
    out = tmp_path / "run"
    assert _cli([*MICRO, "--batch-size", "4", "--grad-accum", "2", "--out", str(out)], capsys)[0] == 0
    meta = json.loads((out / "provenance.json").read_text())
    tokens = 2 * 4 * 2 * 16   # steps x batch x accumulation x the micro size's 16 positions
    assert meta["tokens_per_second"] * meta["seconds_per_step"] * 2 == pytest.approx(tokens, rel=2e-2)
    assert meta["model_size"]["seq_len"] == 16 and meta["resumed"] is False


def test_resume_into_a_folder_holding_only_a_stray_pending_digest_starts_a_new_run(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "checkpoint.pt.sha256.pending").write_text("0" * 64 + "\n")
    assert _cli([*MICRO, "--resume", "--out", str(out)], capsys)[0] == 0
    meta = json.loads((out / "provenance.json").read_text())
    assert meta["resumed"] is False
    assert sorted(pd.read_csv(out / "history.csv").query("quantity == 'eval_loss'")["step"]) == [0, 1, 2]


# ============================================================ 6. resume: a checkpoint edited, its digest rewritten

@pytest.fixture(scope="module")
def _stopped_once(tmp_path_factory):
    out = tmp_path_factory.mktemp("stopped") / "run"
    train(_cfg(), data=_data(), out_dir=out, stop_at=2)
    return out


def _stopped(tmp_path, source):
    import shutil

    return Path(shutil.copytree(source, tmp_path / "run"))


def _tampered(tmp_path, source, edit):
    out = _stopped(tmp_path, source)
    path = out / "checkpoint.pt"
    ck = torch.load(path, weights_only=True)
    edit(ck)
    torch.save(ck, path)
    (out / "checkpoint.pt.sha256").write_text(sha256_file(path) + "\n")
    return out


def _row(**kw):
    return {"step": 2, "quantity": "eval_loss", "layer": -1, "head": -1, "value": 1.0, **kw}


@pytest.mark.parametrize("name, edit, word", [
    # a traceback: dict("abc") and, after the whole run, "x" + 1.0
    ("its time so far is text", lambda ck: ck.update(elapsed="abc"), "elapsed"),
    ("its wall time is text", lambda ck: ck.update(elapsed={"wall": "x", "cpu": 1.0}), "elapsed"),
    # taken as they were: the run's duration and start written wrong into its provenance
    ("its wall time is negative", lambda ck: ck.update(elapsed={"wall": -5.0, "cpu": 1.0}), "elapsed"),
    ("its cpu time is not finite", lambda ck: ck.update(elapsed={"wall": 5.0, "cpu": float("nan")}), "elapsed"),
    ("its start is no time stamp", lambda ck: ck.update(started="yesterday"), "started"),
    ("its start is a number", lambda ck: ck.update(started=5), "started"),
    ("its sittings are text", lambda ck: ck.update(sittings="x"), "sittings"),
    ("its sittings are not records", lambda ck: ck.update(sittings=["a"]), "sittings"),
    # history rows: a step as text was a TypeError; a row without its quantity or with a text
    # value became a row of the run's history.csv that no reader takes
    ("a history step is text", lambda ck: ck["history"].append(_row(step="2")), "history"),
    ("a history row lacks its quantity", lambda ck: ck["history"].__setitem__(0, {"step": 0}), "history"),
    ("a history value is text", lambda ck: ck["history"].__setitem__(0, _row(step=0, value="x")), "history"),
    ("a history quantity is a number", lambda ck: ck["history"].__setitem__(0, _row(step=0, quantity=3)), "history"),
    # an AttributeError from deep inside the optimiser's load_state_dict
    ("its optimiser state is a number", lambda ck: ck.update(optimizer=5), "optimizer"),
])
def test_a_checkpoint_whose_record_is_not_a_runs_is_refused_in_one_line(tmp_path, _stopped_once, name, edit, word):
    out = _tampered(tmp_path, _stopped_once, edit)
    with pytest.raises(CompanionError) as err:
        train(_cfg(), data=_data(), out_dir=out, resume=True)
    assert word in one_line(err) and "checkpoint" in str(err.value)
    assert not (out / "history.csv").exists()


def test_a_checkpoint_with_its_own_record_resumes_to_the_uninterrupted_runs_history(tmp_path, _stopped_once):
    whole = train(_cfg(), data=_data())
    out = _stopped(tmp_path, _stopped_once)
    resumed = train(_cfg(), data=_data(), out_dir=out, resume=True)
    pd.testing.assert_frame_equal(resumed.reset_index(drop=True), whole.reset_index(drop=True))


def test_a_checkpoint_at_the_last_step_resumes_to_its_own_history_unchanged(tmp_path):
    out = tmp_path / "run"
    first = train(_cfg(), data=_data(), out_dir=out)          # checkpoint written at the last step
    again = train(_cfg(), data=_data(), out_dir=out, resume=True)
    pd.testing.assert_frame_equal(again.reset_index(drop=True), first.reset_index(drop=True))


@pytest.mark.parametrize("change, word", [({"steps": 6}, "steps: 4 -> 6"), ({"keep_weights": (3,)}, "keep_weights"),
                                          ({"eval_blocks": None}, "eval_blocks")])
def test_resume_under_a_longer_horizon_or_other_settings_is_refused_naming_them(tmp_path, _stopped_once, change,
                                                                                word):
    out = _stopped(tmp_path, _stopped_once)
    with pytest.raises(CompanionError) as err:
        train(_cfg(**change), data=_data(), out_dir=out, resume=True)
    assert "different configuration" in one_line(err) and word in str(err.value)


def test_cli_resume_of_a_checkpoint_step_past_the_horizon_is_refused_and_the_checkpoint_kept(tmp_path, capsys):
    out = tmp_path / "run"
    assert _cli([*MICRO, "--checkpoint-every", "1", "--keep-checkpoint", "--out", str(out)], capsys)[0] == 0
    (out / "history.csv").unlink()
    ck = torch.load(out / "checkpoint.pt", weights_only=True)
    ck["step"] = 5
    torch.save(ck, out / "checkpoint.pt")
    (out / "checkpoint.pt.sha256").write_text(sha256_file(out / "checkpoint.pt") + "\n")
    before = (out / "checkpoint.pt").read_bytes()
    one_line_error([*MICRO, "--resume", "--checkpoint-every", "1", "--out", str(out)], capsys, "step 5", "1..2",
                   "--overwrite", within_s=30)
    assert (out / "checkpoint.pt").read_bytes() == before and not (out / "history.csv").exists()


# ============================================================ 7. the packer

FAKE = textwrap.dedent(f"""\
    #!{sys.executable}
    # stand-in for `python -m companion.train.cli ...`: prints the options it was given
    import json, sys
    print("ARGV " + json.dumps(sys.argv[3:]), flush=True)
    """)


@pytest.fixture
def fake_python(tmp_path):
    path = tmp_path / "fakepy"
    path.write_text(FAKE)
    path.chmod(0o755)
    return str(path)


def _pack(argv, capsys):
    from companion.train.runner.pack import main

    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    return rc, err


def test_a_jobs_file_that_is_not_utf8_is_refused_naming_it(tmp_path, capsys):
    jobs = tmp_path / "jobs.txt"
    jobs.write_bytes(b"a --steps 2\n\xff\xfe --seed 1\n")
    rc, err = _pack([str(jobs), "--out", str(tmp_path / "o"), "--deadline", "5"], capsys)
    assert rc == 2 and "Traceback" not in err and str(jobs) in err and "UTF-8" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_a_pack_out_that_is_no_folder_is_refused_in_one_line_and_left(tmp_path, capsys, kind):
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("a --steps 2\n")
    out = tmp_path / "o"
    out.write_text("mine\n") if kind == "file" else os.mkfifo(out)
    rc, err = _pack([str(jobs), "--out", str(out), "--deadline", "5"], capsys)
    assert rc == 2 and "Traceback" not in err and str(out) in err and "not a folder" in err
    assert len(err.strip().splitlines()) == 1
    assert (out.read_text() == "mine\n") if kind == "file" else out.is_fifo()


def test_an_empty_pack_out_is_refused_and_nothing_written_in_the_working_folder(tmp_path, capsys, monkeypatch):
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("a --steps 2\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    rc, err = _pack([str(jobs), "--out", "", "--deadline", "5"], capsys)
    assert rc == 2 and "--out" in err and "empty" in err
    assert list(work.iterdir()) == []


def test_a_run_name_that_reads_as_an_option_is_refused_by_line():
    from companion.train.runner.pack import parse_jobs

    # with --out ., the run's folder '-x' reached companion train as '--out -x', an option
    with pytest.raises(CompanionError) as err:
        parse_jobs("ok --steps 2\n-x --steps 2\n")
    assert "line 2" in one_line(err) and "'-x'" in str(err.value)


def test_an_abbreviated_out_on_a_jobs_line_never_moves_its_run_out_of_its_folder(tmp_path, fake_python):
    from companion.train.runner.pack import parse_jobs, run_packed

    out = tmp_path / "o"
    jobs = parse_jobs(f"a --steps 2 --ou {tmp_path / 'elsewhere'}\n")
    run_packed(jobs, out, 1, 30, python=fake_python, poll_s=0.05, echo=lambda *_: None)
    argv = json.loads((out / "a.log").read_text().split("ARGV ", 1)[1].splitlines()[0])
    assert _train_parser().parse_args(argv).out == str(out / "a")


def test_the_pack_summary_reports_a_run_without_history_as_failed_with_its_exit(tmp_path, fake_python):
    from companion.train.runner.pack import parse_jobs, run_packed

    out = tmp_path / "o"
    summary = run_packed(parse_jobs("a --steps 2\nb --steps 3\n"), out, 2, 30, python=fake_python, poll_s=0.05,
                         echo=lambda *_: None)
    assert [(r["name"], r["status"]) for r in summary["runs"]] == [("a", "failed"), ("b", "failed")]
    assert json.loads((out / "pack_summary.json").read_text())["runs"][1]["reason"].startswith("exit status 0")


# ============================================================ 8. the run catalogue

def _catalogued(tmp_path, steps):
    root = tmp_path / "runs"
    run = root / "micro-s0"
    run.mkdir(parents=True)
    (root / "scripts.csv").write_text("pattern,script,plan,what\nmicro-*,make.sh,plan.md,micro runs\n")
    (run / "history.csv").write_text("step,quantity,layer,head,value\n0,eval_loss,-1,-1,1\n")
    (run / "provenance.json").write_text(json.dumps({"config": {"steps": steps, "seed": 0},
                                                     "started": "2026-12-01T10:00:00Z"}))
    return root


def test_the_catalogue_reads_a_whole_horizon_written_as_a_float_as_the_run(tmp_path):
    from companion.train.runner.runs import run_catalogue

    # read_run takes 10000.0 as the horizon 10000; the catalogue called it 'not a whole number'
    table = run_catalogue(_catalogued(tmp_path, 10000.0))
    assert table.loc[0, "steps"] == "10000" and table.loc[0, "n"] == 1


@pytest.mark.parametrize("steps", [2.5, -3, True, "100"])
def test_the_catalogue_refuses_a_horizon_that_is_no_whole_number(tmp_path, steps):
    from companion.train.runner.runs import run_catalogue

    with pytest.raises(CompanionError) as err:
        run_catalogue(_catalogued(tmp_path, steps))
    assert "steps" in one_line(err) and "provenance.json" in str(err.value)


# ============================================================ 9. further: --from, kept-weight lists, the runs table

@pytest.mark.parametrize("source", ["./no/such/model", "/no/such/model", "models/no/such", "no-such-model.gguf"])
def test_a_from_path_that_does_not_exist_is_named_as_missing_not_as_a_bad_hub_id(tmp_path, capsys, monkeypatch, source):
    # was: "Repo id must be in the form 'repo_name' or 'namespace/repo_name'"
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    line = one_line_error([*MICRO, "--top-k", "0", "--from", source, "--out", str(out)], capsys, "--from", source,
                          "no such", within_s=30)
    assert "Repo id" not in line and not out.exists()


def test_an_empty_from_is_refused_as_empty(tmp_path, capsys):
    rc, err = _cli([*MICRO, "--top-k", "0", "--from", "", "--out", str(tmp_path / "run")], capsys)
    assert rc == 2 and "--from is empty" in err.strip().splitlines()[-1] and not (tmp_path / "run").exists()


@pytest.mark.parametrize("value", [5, 2.0, "5"])
def test_kept_weights_that_are_no_list_of_steps_are_refused_as_a_value_error(value):
    # an int was a TypeError from tuple(5), which the command line would not catch as a bad option
    with pytest.raises(ValueError) as err:
        _cfg(keep_weights=value)
    assert "keep_weights" in one_line(err) and repr(value) in str(err.value)


def test_kept_weights_given_as_a_list_of_steps_are_taken_in_order():
    assert _cfg(keep_weights=[4, 2]).keep_weights == (4, 2)


def _runs_root(tmp_path, **config):
    root = tmp_path / "runs"
    run = root / "r1"
    run.mkdir(parents=True)
    (run / "history.csv").write_text("step,quantity,layer,head,value\n0,eval_loss,-1,-1,1\n")
    cfg = {"mode": "encoder", "init": "standard", "seed": 0, "size": "micro", "steps": 2, **config}
    (run / "provenance.json").write_text(json.dumps({"config": cfg}))
    return root


@pytest.mark.parametrize("config, word", [
    ({"penalty": "symmetric", "penalty_coef": "0.5"}, "penalty_coef"),   # a TypeError from '0.5' > 0
    ({"penalty": ["x"], "penalty_coef": 0.5}, "penalty"),                # labelled "+ ['x'] penalty x0.5"
    ({"penalty": "symmetric", "penalty_coef": True}, "penalty_coef"),    # labelled "x1"
])
def test_a_run_whose_penalty_is_not_one_is_refused_naming_the_run(tmp_path, config, word):
    from companion.train.runner.runs import load_runs

    with pytest.raises(CompanionError) as err:
        load_runs(root=_runs_root(tmp_path, **config))
    assert "r1" in one_line(err) and word in str(err.value)


def test_a_run_with_a_penalty_is_labelled_with_it():
    from companion.train.runner.runs import label_of

    assert label_of({"mode": "encoder", "init": "standard", "penalty": "skew", "penalty_coef": 0.25}) == \
        "encoder / standard + skew penalty x0.25"


def test_an_empty_list_of_run_names_is_named_as_such_not_as_a_pattern(tmp_path):
    from companion.train.runner.runs import load_runs

    with pytest.raises(FileNotFoundError) as err:
        load_runs(names=[], root=_runs_root(tmp_path))
    assert "names" in one_line(err) and "(pattern '*')" not in str(err.value)   # it named the pattern, unused


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_fifo_or_link_at_the_history_is_named_as_such_not_as_a_finished_run(tmp_path, capsys, kind):
    out = tmp_path / "run"
    out.mkdir()
    target = tmp_path / "elsewhere.csv"
    target.write_text("step,quantity,layer,head,value\n")
    os.mkfifo(out / "history.csv") if kind == "fifo" else (out / "history.csv").symlink_to(target)
    line = one_line_error([*MICRO, "--out", str(out)], capsys, "history.csv", within_s=30)
    assert "finished run" not in line and ("FIFO" in line if kind == "fifo" else "symbolic link" in line)
    assert target.read_text() == "step,quantity,layer,head,value\n"


def test_a_log_inside_an_out_folder_not_made_yet_is_taken(tmp_path, capsys):
    # was refused: "its folder ... does not exist; create it", though --out is made by the run
    out = tmp_path / "new" / "run"
    assert _cli([*MICRO, "--log", str(out / "train.log"), "--out", str(out)], capsys)[0] == 0
    assert sum(" step " in ln for ln in (out / "train.log").read_text().splitlines()) == 3


def test_a_log_in_a_folder_that_does_not_exist_elsewhere_is_still_refused(tmp_path, capsys):
    out = tmp_path / "run"
    one_line_error([*MICRO, "--log", str(tmp_path / "nowhere" / "train.log"), "--out", str(out)], capsys,
                   "does not exist", within_s=30)
    assert not out.exists()


@pytest.mark.parametrize("name, kw, edit, word", [
    # an empty list logged no update rows for the resumed steps, silently
    ("no starting forms", {"update_every": 1}, lambda ck: ck.update(update_initial=[]), "update_initial"),
    # a RuntimeError and a TypeError from deep inside the update recorder
    ("starting forms of another shape", {"update_every": 1},
     lambda ck: ck.update(update_initial=[torch.zeros(3, 3)] * 2), "update_initial"),
    ("starting forms as a table", {"update_every": 1}, lambda ck: ck.update(update_initial={"a": 1}), "update_initial"),
    # an AttributeError: a list has no shape
    ("seen blocks as a list", {"guard": True}, lambda ck: ck.update(seen=[1, 2]), "seen"),
])
def test_a_checkpoint_whose_recorder_or_guard_state_is_not_this_runs_is_refused(tmp_path, name, kw, edit, word):
    out = tmp_path / "run"
    train(_cfg(**kw), data=_data(), out_dir=out, stop_at=2)
    ck = torch.load(out / "checkpoint.pt", weights_only=True)
    edit(ck)
    torch.save(ck, out / "checkpoint.pt")
    (out / "checkpoint.pt.sha256").write_text(sha256_file(out / "checkpoint.pt") + "\n")
    with pytest.raises(CompanionError) as err:
        train(_cfg(**kw), data=_data(), out_dir=out, resume=True)
    assert word in one_line(err) and "checkpoint" in str(err.value)


def test_a_resumed_run_logging_updates_logs_them_as_the_uninterrupted_run(tmp_path):
    whole = train(_cfg(update_every=1), data=_data())
    out = tmp_path / "run"
    train(_cfg(update_every=1), data=_data(), out_dir=out, stop_at=2)
    resumed = train(_cfg(update_every=1), data=_data(), out_dir=out, resume=True)
    pd.testing.assert_frame_equal(resumed.reset_index(drop=True), whole.reset_index(drop=True))


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_training_on_a_gpu_this_machine_lacks_is_refused_in_one_line_not_an_assertion():
    # was torch's AssertionError "Torch not compiled with CUDA enabled" from inside the model's .to()
    with pytest.raises(CompanionError) as err:
        train(_cfg(device="cuda", steps=1, eval_every=1), data=_data())
    assert "cuda" in one_line(err) and "cpu" in str(err.value)


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_lock_of_out_that_is_no_file_is_refused_in_one_line_and_left(tmp_path, capsys, kind):
    out = tmp_path / "run"
    out.mkdir()
    lock = out / ".train.lock"
    lock.mkdir() if kind == "folder" else os.mkfifo(lock)
    one_line_error([*MICRO, "--out", str(out)], capsys, ".train.lock", "not a regular file", within_s=30)
    assert (lock.is_dir() if kind == "folder" else lock.is_fifo()) and not (out / "history.csv").exists()


def test_the_throughput_of_a_run_on_several_processes_counts_every_processs_tokens():
    """Under torchrun each of the W processes trains batch_size blocks per micro-batch (one
    global batch of W x batch_size): 10 steps x 4 blocks x 2 micro-batches x 2 processes x 16
    tokens = 2560 tokens in 8 s is 320 tokens a second (it counted one process's: 160)."""
    from companion.train.cli import _tokens_per_second

    cfg = _cfg(steps=10, batch_size=4, grad_accum=2, eval_every=5)
    assert _tokens_per_second(cfg, 8.0, world=2) == 320.0
    assert _tokens_per_second(cfg, 8.0) == 160.0


def test_a_run_through_a_link_to_a_folder_another_process_trains_into_is_refused(tmp_path, capsys):
    import subprocess

    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (real / ".train.lock").write_text(f"{holder.pid}\n")
        one_line_error([*MICRO, "--out", str(tmp_path / "link")], capsys, f"pid {holder.pid}", within_s=30)
        assert not (real / "history.csv").exists()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("stop_at", [0, -3, 2.5, True, "5"])
def test_a_stop_step_that_takes_no_step_is_refused_before_anything_is_set_up(stop_at, tmp_path):
    from companion.base.errors import CompanionError
    from companion.train.runner.loop import train

    with pytest.raises(CompanionError, match="stop_at=.*give a step of 1 or more"):
        train(_cfg(), _data(), out_dir=tmp_path / "run", stop_at=stop_at)
    assert not (tmp_path / "run").exists()


def test_a_stop_step_given_as_a_numpy_integer_stops_there_as_the_int_does(tmp_path, _stopped_once):
    """A step read from a table arrives as np.int64: it is that step (it was refused as no step)."""
    import numpy as np

    out = tmp_path / "run"
    train(_cfg(), data=_data(), out_dir=out, stop_at=np.int64(2))
    got = torch.load(out / "checkpoint.pt", weights_only=False)
    want = torch.load(_stopped_once / "checkpoint.pt", weights_only=False)
    assert got["step"] == want["step"] == 2
    assert all(torch.equal(got["model"][k], want["model"][k]) for k in want["model"])


@pytest.mark.parametrize("names", [lambda: (n for n in ["r1"]), lambda: "r1", lambda: Path("r1")],
                         ids=["generator", "text", "path"])
def test_run_names_given_as_a_generator_or_one_name_read_that_run(tmp_path, names):
    """A generator was used up by the test for an empty list (then 'no run directories'), and
    one name given as text was read letter by letter."""
    from companion.train.runner.runs import load_runs

    got = load_runs(names=names(), root=_runs_root(tmp_path))
    assert got["run"].tolist() == ["r1"] and got["value"].tolist() == [1]
