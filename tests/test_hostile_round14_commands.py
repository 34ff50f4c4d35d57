"""The ``companion`` command line apart from training, as a careful but adversarial user meets
it: misspelt commands, actions and options, each subcommand's help, output paths at odd places,
names and cells holding a newline or an escape sequence, a folder name that is not UTF-8, a
hub revision that is empty or ``..``, a layer that has no score, and the corpus and zoo commands
given names they do not know.

Each case states the right behaviour: a one-line refusal on stderr naming the input and the fix
(a non-zero exit, no traceback, nothing fetched or written), or a value computed apart from the
code under test.  Nothing here reaches the network: whatever would download is replaced by a
stub that fails the case if it is called."""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import signal
import stat
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from companion.cli import build_parser, main
from companion.judge import claims, training_claims
from one_line import one_line_error
from test_verdicts_cli import V3, book  # noqa: F401  (fixture: two claims, no minutes of computing)


# ----------------------------------------------------------------------------- helpers

def _run(argv, capsys):
    """``companion ARGV`` -> (exit status, stdout, stderr); argparse's refusals give their code."""
    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    got = capsys.readouterr()
    return rc, got.out, got.err


def _err_line(err: str) -> str:
    """The refusal's line: argparse writes its usage first, then one ``error:`` line."""
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@contextmanager
def _within(seconds: int):
    """Fail (rather than hang) when the block does not end within ``seconds``."""
    def _late(*_):
        raise AssertionError(f"no end within {seconds} s")

    old = signal.signal(signal.SIGALRM, _late)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _llama(folder: Path, layers: int = 3, hidden: int = 64, heads: int = 8, kv: int = 2, seed: int = 0) -> dict:
    """A LLaMA checkpoint of random query and key weights only (all the score reads), written as
    safetensors with its config.json; returns the weights written."""
    import json

    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(seed)
    d_head = hidden // heads
    weights = {}
    for i in range(layers):
        weights[f"model.layers.{i}.self_attn.q_proj.weight"] = torch.randn(hidden, hidden, generator=g)
        weights[f"model.layers.{i}.self_attn.k_proj.weight"] = torch.randn(kv * d_head, hidden, generator=g)
    folder.mkdir(parents=True)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": hidden,
        "num_attention_heads": heads, "num_key_value_heads": kv, "num_hidden_layers": layers}))
    return weights


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny random LLaMA (3 layers, 8 query heads, 2 key/value heads), written once."""
    folder = tmp_path_factory.mktemp("model") / "m"
    return folder, _llama(folder)


@pytest.fixture(scope="module")
def square(tmp_path_factory):
    """A tiny LLaMA with one key head per query head, so a layer's form is Wq^T Wk itself."""
    folder = tmp_path_factory.mktemp("square") / "sq"
    return folder, _llama(folder, layers=2, hidden=32, heads=4, kv=4, seed=1)


def _copy(model, tmp_path, name="m"):
    dest = tmp_path / name
    shutil.copytree(model[0], dest)
    return dest


def _edit_config(folder: Path, **fields) -> None:
    import json

    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(fields)
    (folder / "config.json").write_text(json.dumps(cfg))


def _zero_query(folder: Path, layer: int) -> None:
    """Write the query weight of ``layer`` as zeros (a pruned layer: its form is zero)."""
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    t = load_file(str(path))
    key = f"model.layers.{layer}.self_attn.q_proj.weight"
    t[key] = t[key] * 0
    save_file(t, str(path), metadata={"format": "pt"})


@pytest.fixture
def no_hub(monkeypatch):
    """The hub allowed (HF_HUB_OFFLINE off), every request of it failing the case; the calls are kept."""
    from huggingface_hub import constants

    from companion.adapters import hub

    calls = []

    def never(url, *a, **k):
        calls.append(url)
        raise AssertionError(f"the network was reached: {url}")

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub, "_http_get", never)
    monkeypatch.setattr(hub, "_http_get_once", never)
    monkeypatch.setattr("urllib.request.urlopen", never)
    return calls


def _no_reads(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a tensor was read before the options were checked")

    monkeypatch.setattr("companion.adapters.read_qk", refuse)


def _subparsers(parser):
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _every_command(parser=None, words=()):
    """(argv words, parser) of every command and action of ``companion``."""
    parser = parser or build_parser()
    sub = _subparsers(parser)
    for name, child in (sub.choices.items() if sub else ()):
        yield (*words, name), child
        yield from _every_command(child, (*words, name))


NOT_MINE = {("train",)}   # its options are another module's


# ============================================================ 1. misspelt commands, actions and options

@pytest.mark.parametrize("argv, meant", [
    (["scor", "x"], "'score'"),
    (["verdict"], "'verdicts'"),
    (["zoo", "fetc", "x"], "'fetch'"),
    (["corpus", "lst"], "'list'"),
    (["score", "x", "--pairing", "group"], "'grouped'"),
])
def test_a_misspelt_command_action_or_choice_is_refused_naming_the_one_meant(capsys, argv, meant):
    rc, _, err = _run(argv, capsys)
    line = _err_line(err)
    assert rc == 2 and f"did you mean {meant}" in line


@pytest.mark.parametrize("argv, usage, meant", [
    (["verdicts", "--clam", "table_1"], "usage: companion verdicts", "--claim"),
    (["score", "x", "--outt", "s.csv"], "usage: companion score", "--out"),
    (["score", "x", "--per-haed"], "usage: companion score", "--per-head"),
    (["zoo", "fetch", "x", "--verify"], "usage: companion zoo fetch", None),
    (["corpus", "prepare", "kjv", "--jbos", "2"], "usage: companion corpus prepare", "--jobs"),
])
def test_an_unknown_option_is_refused_under_the_usage_of_its_own_command(capsys, monkeypatch, tmp_path, argv, usage,
                                                                         meant):
    """argparse refused it under ``usage: companion [-h] COMMAND ...``, as if the command itself were wrong."""
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    _no_reads(monkeypatch)
    rc, _, err = _run(argv, capsys)
    line = _err_line(err)
    assert rc == 2 and err.startswith(usage) and "unrecognized arguments" in line
    if meant:
        assert f"did you mean '{meant}'" in line


def test_a_word_that_is_close_to_no_option_is_refused_without_a_guess(capsys):
    rc, _, err = _run(["verdicts", "--zzzzzz"], capsys)
    line = _err_line(err)
    assert rc == 2 and "--zzzzzz" in line and "did you mean" not in line


def test_an_abbreviated_option_that_is_unambiguous_is_still_taken(book, capsys):
    rc, out, _ = _run(["verdicts", "--train"], capsys)
    assert rc == 0 and "look 1 of 4 (3 seeds)" in out


def test_no_command_prints_the_commands_and_exits_non_zero(capsys):
    rc, out, _ = _run([], capsys)
    assert rc == 2
    for name in ("corpus", "score", "survey", "train", "verdicts", "zoo"):
        assert f"\n    {name} " in out


# ============================================================ 2. help

@pytest.mark.parametrize("words", [w for w, _ in _every_command()], ids=" ".join)
def test_every_help_runs_and_says_what_each_option_and_argument_is(capsys, words):
    rc, out, _ = _run([*words, "--help"], capsys)
    assert rc == 0 and out.startswith(f"usage: companion {' '.join(words)}")
    if words in NOT_MINE:
        return
    parser = dict(_every_command())[words]
    silent = [a.dest for a in parser._actions if not a.help and not isinstance(a, argparse._SubParsersAction)]
    assert silent == []


def test_score_help_says_a_hub_id_is_read_over_the_network_and_how_to_forbid_it(capsys):
    _, out, _ = _run(["score", "--help"], capsys)
    text = " ".join(out.split())
    assert "network" in text and "HF_HUB_OFFLINE" in text


@pytest.mark.parametrize("action", ["fetch", "prepare"])
def test_the_corpus_actions_that_download_say_so(action):
    corpus = dict(_every_command())[("corpus",)]
    said = {a.dest: a.help for a in _subparsers(corpus)._choices_actions}
    assert "network" in said[action]


def test_verdicts_help_says_it_computes_locally_and_how_long_the_first_call_takes(capsys):
    _, out, _ = _run(["verdicts", "--help"], capsys)
    text = " ".join(out.split())
    assert "no network" in text and "few minutes" in text and "COMPANION_VERDICT_CACHE" in text


def test_survey_help_says_that_by_default_it_reaches_the_hub(capsys):
    _, out, _ = _run(["survey", "--help"], capsys)
    text = " ".join(out.split())
    options = text[text.rindex("--online"):].split("--no-per-head")[0]   # the options' help, past the usage line
    assert "default" in options and "HF_HUB_OFFLINE" in options


# ============================================================ 3. what reaches the terminal

def test_an_escape_sequence_in_a_models_config_reaches_stderr_as_text(model, tmp_path, capsys):
    folder = _copy(model, tmp_path)
    _edit_config(folder, model_type="x\n\x1b]0;owned\x07\x1b[2J")
    line = one_line_error(["score", str(folder), "--quiet"], capsys, "unknown architecture", r"\x1b")
    assert "\x1b" not in line and "\x07" not in line


def test_a_newline_in_an_out_name_that_is_a_folder_keeps_the_refusal_on_one_line(model, tmp_path, capsys):
    (tmp_path / "a\nb.csv").mkdir()
    one_line_error(["score", str(model[0]), "--quiet", "--out", str(tmp_path / "a\nb.csv")], capsys,
                   "is a folder", r"a\nb.csv")


def test_a_newline_in_an_out_name_writes_that_file_and_says_so_on_one_line(model, tmp_path, capsys):
    out = tmp_path / "x\ny.csv"
    rc, _, err = _run(["score", str(model[0]), "--quiet", "--out", str(out)], capsys)
    assert rc == 0 and len(pd.read_csv(out)) == 3
    assert err.strip().splitlines() == [f"wrote 3 rows to {tmp_path}/x\\ny.csv"]


def test_an_error_from_the_operating_system_shows_its_file_name_as_text(tmp_path, capsys, monkeypatch):
    import companion.commands.zoo as zoo_cmd

    name = str(tmp_path / "no\x1b[2Jaccess")

    def denied(args):
        raise PermissionError(errno.EACCES, "Permission denied", name)

    monkeypatch.setattr(zoo_cmd, "run", denied)
    line = one_line_error(["zoo", "list"], capsys, "Permission denied", r"no\x1b[2Jaccess")
    assert "\x1b" not in line


def test_a_folder_whose_name_is_not_utf8_is_scored_with_its_bytes_escaped(model, tmp_path, capsys):
    """The name went into a pandas table as a lone surrogate: pyarrow's UnicodeEncodeError, a traceback."""
    folder = Path(os.fsdecode(bytes(tmp_path) + b"/m\xff"))
    shutil.copytree(model[0], folder)
    out = tmp_path / "s.csv"
    rc, stdout, err = _run(["score", str(folder), "--quiet", "--out", str(out)], capsys)
    assert rc == 0, err
    assert stdout.startswith("m\\xff: family llama")
    assert set(pd.read_csv(out)["model"]) == {"m\\xff"}


def test_a_newline_and_an_escape_in_a_verdict_cell_stay_in_one_cell_of_one_row(book, capsys, monkeypatch):
    frame = V3.assign(claim="Fig. B\nb is \x1b[31mlarger", why="a\rb")
    monkeypatch.setattr(training_claims, "training_verdicts", lambda *a, **k: frame)
    rc, out, _ = _run(["verdicts", "--training"], capsys)
    lines = out.splitlines()
    assert rc == 0 and len(lines) == 2 and "\x1b" not in out and "\r" not in out
    assert lines[1].startswith("b ") and lines[1].endswith(r"Fig. B\nb is \x1b[31mlarger")


def test_a_verdict_csv_keeps_the_cell_as_it_is(book, tmp_path, capsys, monkeypatch):
    frame = V3.assign(claim="Fig. B\nb is larger")
    monkeypatch.setattr(training_claims, "training_verdicts", lambda *a, **k: frame)
    assert main(["verdicts", "--training", "--csv", str(tmp_path / "t.csv")]) == 0
    assert pd.read_csv(tmp_path / "t.csv")["claim"].iloc[0] == "Fig. B\nb is larger"


@pytest.mark.parametrize("key", ["<script>alert(1)</script>", "table_1\nholds", "../../etc/passwd", ""])
def test_a_claim_key_with_markup_a_newline_or_a_path_is_refused_in_one_line(book, capsys, key):
    line = one_line_error(["verdicts", "--claim", key], capsys, "unknown claim", "the keys are: a, b, c")
    assert repr(key) in line


def test_a_claim_read_under_a_rules_file_with_an_escape_in_its_text_prints_it_as_text(book, capsys, monkeypatch):
    import companion.rules.rulebook as rulebook

    monkeypatch.setattr(rulebook, "load_rules", lambda *a, **k: {
        "version": 4, "claims": {"c": {"claim": "C\x1b[2J is\nlarger"}}})
    monkeypatch.setattr(training_claims, "training_verdicts", lambda *a, **k: pd.DataFrame())
    rc, out, _ = _run(["verdicts", "--claim", "c"], capsys)
    assert rc == 0 and "\x1b" not in out and out.splitlines()[0] == r"C\x1b[2J is\nlarger"


# ============================================================ 4. score: sources

def test_an_empty_folder_is_refused_naming_it_and_what_a_model_folder_holds(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    one_line_error(["score", str(tmp_path / "empty")], capsys, str(tmp_path / "empty"), "config.json")


def test_a_folder_of_other_files_is_refused_naming_it(tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("x")
    one_line_error(["score", str(tmp_path / "notes")], capsys, str(tmp_path / "notes"), "config.json")


def test_a_path_through_a_file_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "f.txt").write_text("x")
    one_line_error(["score", str(tmp_path / "f.txt" / "sub")], capsys, str(tmp_path / "f.txt" / "sub"))


def test_a_link_to_itself_is_refused_in_one_line(tmp_path, capsys):
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    one_line_error(["score", str(tmp_path / "loop")], capsys, str(tmp_path / "loop"))


def test_a_fifo_as_the_model_is_refused_at_once(tmp_path, capsys):
    os.mkfifo(tmp_path / "model.gguf")
    with _within(20):
        one_line_error(["score", str(tmp_path / "model.gguf")], capsys, "model.gguf")


@pytest.mark.parametrize("fifo", ["model.safetensors", "config.json"])
def test_a_model_folder_holding_a_fifo_is_refused_at_once_naming_it(model, tmp_path, capsys, fifo):
    folder = _copy(model, tmp_path)
    (folder / fifo).unlink()
    os.mkfifo(folder / fifo)
    with _within(20):
        one_line_error(["score", str(folder), "--quiet"], capsys, fifo, "FIFO")


@pytest.mark.parametrize("revision", ["..", "."])
def test_a_hub_revision_that_is_a_dot_segment_is_refused_before_any_request(no_hub, capsys, revision):
    one_line_error(["score", "owner/name", "--revision", revision, "--quiet"], capsys, repr(revision))
    assert no_hub == []


@pytest.mark.parametrize("revision", ["", "  "])
def test_an_empty_hub_revision_is_refused_not_read_as_main(no_hub, capsys, revision):
    """``--revision "$REV"`` with REV unset pinned the hub's main branch without a word."""
    one_line_error(["score", "owner/name", "--revision", revision, "--quiet"], capsys, "--revision is empty")
    assert no_hub == []


@pytest.mark.parametrize("hub_id", ["owner/na?me", "owner/..", "owner/name#x", "a/b/c"])
def test_a_hub_id_that_would_name_another_resource_is_refused_before_any_request(no_hub, capsys, hub_id):
    one_line_error(["score", hub_id, "--quiet"], capsys)
    assert no_hub == []


def test_a_hub_id_while_the_hub_is_switched_off_says_so_and_sends_nothing(no_hub, capsys, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    one_line_error(["score", "owner/name", "--quiet"], capsys, "HF_HUB_OFFLINE")
    assert no_hub == []


def test_a_zoo_name_misspelt_is_refused_with_the_one_meant_and_nothing_read(capsys, monkeypatch):
    _no_reads(monkeypatch)
    one_line_error(["score", "sre-embedin"], capsys, "did you mean 'sre-embedding'")


def test_a_revision_with_a_local_model_is_refused(model, capsys, monkeypatch):
    _no_reads(monkeypatch)
    one_line_error(["score", str(model[0]), "--revision", "v1"], capsys, "--revision v1", "local path")


# ============================================================ 5. score: numbers

def test_each_layers_printed_symmetry_is_its_forms_trace_ratio_to_four_decimals(square, capsys):
    """s = tr(M^2) / ||M||_F^2 of M = Wq^T Wk (Def. 3.1), from the weights the model was built with."""
    rc, out, _ = _run(["score", str(square[0]), "--quiet"], capsys)
    assert rc == 0
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("decoder causal")]
    assert len(rows) == 2
    for layer, row in enumerate(rows):
        q, k = (square[1][f"model.layers.{layer}.self_attn.{w}_proj.weight"].double().numpy() for w in "qk")
        m = q.T @ k
        assert row[3] == f"{np.trace(m @ m) / np.sum(m * m):+.4f}"


def test_the_printed_median_and_quartiles_are_those_of_the_layers_in_the_csv(model, tmp_path, capsys):
    """Three layers: the median is the middle one, the quartiles halfway to the ends (linear)."""
    out = tmp_path / "s.csv"
    rc, stdout, _ = _run(["score", str(model[0]), "--quiet", "--out", str(out)], capsys)
    v = sorted(pd.read_csv(out)["symmetry"])
    q25, q75 = (v[0] + v[1]) / 2, (v[1] + v[2]) / 2
    assert f"symmetry {v[1]:+.4f} [{q25:+.4f}, {q75:+.4f}]" in stdout


def test_a_layer_whose_form_is_zero_is_shown_without_a_score_and_named(model, tmp_path, capsys):
    """It printed NaN in the table and '+nan [+nan, +nan]' across layers, with no word why."""
    folder = _copy(model, tmp_path)
    _zero_query(folder, 1)
    rc, out, _ = _run(["score", str(folder), "--quiet"], capsys)
    assert rc == 0 and "nan" not in out.lower()
    row = next(line for line in out.splitlines() if line.split()[:3] == ["decoder", "causal", "1"])
    assert row.split()[3:] == ["no", "score", "no", "score"]
    assert "symmetry no score  directionality no score" in out
    assert "no score for 1 of 3 rows (decoder layer 1)" in out and "zero" in out


def test_a_zero_layer_still_writes_an_empty_cell_in_the_csv(model, tmp_path, capsys):
    folder = _copy(model, tmp_path)
    _zero_query(folder, 1)
    out = tmp_path / "s.csv"
    assert main(["score", str(folder), "--quiet", "--out", str(out)]) == 0
    t = pd.read_csv(out).set_index("layer")
    assert np.isnan(t.loc[1, "symmetry"]) and np.isfinite(t.loc[[0, 2], "symmetry"]).all()


def test_a_score_that_rounds_to_zero_is_printed_without_a_minus_sign(tmp_path, capsys):
    """A layer built with symmetry -0.00004 (M = Wq^T Wk with Wq = I: a skew part a shade larger than
    its symmetric part) printed -0.0000; the CSV keeps its value."""
    import json

    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(3)
    a = torch.randn(16, 16, generator=g, dtype=torch.float64)
    skew, sym = (a - a.T) / 2, (a + a.T) / 2
    target = -4e-5   # (|S|^2 - |A|^2) / (|S|^2 + |A|^2) with S scaled by c
    c = (((1 + target) / (1 - target)) * skew.pow(2).sum() / sym.pow(2).sum()).sqrt()
    m = skew + c * sym
    folder = tmp_path / "tiny"
    folder.mkdir()
    save_file({"model.layers.0.self_attn.q_proj.weight": torch.eye(16), "model.layers.0.self_attn.k_proj.weight":
               m.float()}, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 16, "num_attention_heads": 2, "num_key_value_heads": 2,
        "num_hidden_layers": 1}))
    m32 = m.float().double().numpy()
    expected = np.trace(m32 @ m32) / np.sum(m32 * m32)
    assert -5e-5 < expected < -3e-5
    rc, out, _ = _run(["score", str(folder), "--quiet", "--out", str(tmp_path / "s.csv")], capsys)
    assert rc == 0 and pd.read_csv(tmp_path / "s.csv")["symmetry"].iloc[0] == pytest.approx(expected, abs=1e-7)
    row = next(line for line in out.splitlines() if line.split()[:3] == ["decoder", "causal", "0"])
    assert row.split()[3] == "+0.0000" and "-0.0000" not in out


def test_scoring_the_config_file_names_the_model_by_its_folder(model, tmp_path, capsys):
    """``score m/config.json`` called the model 'config' in the header and in the table's model column."""
    out = tmp_path / "s.csv"
    rc, stdout, _ = _run(["score", str(model[0] / "config.json"), "--quiet", "--out", str(out)], capsys)
    assert rc == 0 and stdout.startswith("m: family llama")
    assert set(pd.read_csv(out)["model"]) == {"m"}


# ============================================================ 6. score: --out

def test_out_into_the_models_folder_named_through_its_config_is_refused_and_the_file_kept(model, tmp_path, capsys):
    """Through config.json the model's own labels.csv was replaced by the table."""
    folder = _copy(model, tmp_path)
    (folder / "labels.csv").write_text("label\nkeep\n")
    one_line_error(["score", str(folder / "config.json"), "--quiet", "--out", str(folder / "labels.csv")],
                   capsys, "would overwrite a file of the model")
    assert (folder / "labels.csv").read_text() == "label\nkeep\n"


def test_out_given_with_dot_dot_is_written_exactly_there(model, tmp_path, capsys, monkeypatch):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert main(["score", str(model[0]), "--quiet", "--out", "../up/s.csv"]) == 0
    assert len(pd.read_csv(tmp_path / "up" / "s.csv")) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["up", "work"] and not any((tmp_path / "work").iterdir())


def test_out_through_a_folder_link_into_the_model_is_refused(model, tmp_path, capsys):
    folder = _copy(model, tmp_path)
    os.symlink(folder, tmp_path / "view")
    one_line_error(["score", str(folder), "--quiet", "--out", str(tmp_path / "view" / "s.csv")], capsys,
                   "would overwrite a file of the model")
    assert not (folder / "s.csv").exists()


def test_out_at_an_existing_table_replaces_it_whole(model, tmp_path, capsys):
    out = tmp_path / "s.csv"
    out.write_text("old\n" * 1000)
    assert main(["score", str(model[0]), "--quiet", "--out", str(out)]) == 0
    assert "old" not in out.read_text() and len(pd.read_csv(out)) == 3


def test_a_failure_while_writing_leaves_the_previous_table_and_no_temporary(model, tmp_path, capsys, monkeypatch):
    out = tmp_path / "s.csv"
    out.write_text("previous\n")

    def half(self, buf=None, **k):
        buf.write("model,fam")
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(pd.DataFrame, "to_csv", half)
    one_line_error(["score", str(model[0]), "--quiet", "--out", str(out)], capsys, str(out), "unchanged")
    assert out.read_text() == "previous\n" and sorted(p.name for p in tmp_path.iterdir()) == ["s.csv"]


def test_a_refused_score_leaves_no_folder_made_for_its_out(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    one_line_error(["score", str(tmp_path / "empty"), "--out", str(tmp_path / "new" / "deep" / "s.csv")], capsys,
                   "config.json")
    assert not (tmp_path / "new").exists()


# ============================================================ 7. verdicts: --csv

def test_verdicts_csv_at_a_fifo_is_refused_at_once_before_any_computing(book, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(claims, "all_verdicts", lambda: (_ for _ in ()).throw(AssertionError("computed")))
    os.mkfifo(tmp_path / "v.csv")
    with _within(20):
        one_line_error(["verdicts", "--csv", str(tmp_path / "v.csv")], capsys, "not a regular file")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "v.csv").st_mode)


def test_verdicts_csv_through_a_link_is_refused_and_the_linked_file_kept(book, tmp_path, capsys):
    (tmp_path / "mine.csv").write_text("mine\n")
    os.symlink(tmp_path / "mine.csv", tmp_path / "v.csv")
    one_line_error(["verdicts", "--csv", str(tmp_path / "v.csv")], capsys, "symbolic link")
    assert (tmp_path / "mine.csv").read_text() == "mine\n"


def test_verdicts_csv_given_with_dot_dot_is_written_exactly_there(book, tmp_path, capsys, monkeypatch):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert main(["verdicts", "--csv", "../v.csv"]) == 0
    assert list(pd.read_csv(tmp_path / "v.csv")["key"]) == ["a", "b"]
    assert not any((tmp_path / "work").iterdir())


def test_a_full_disk_during_the_verdicts_csv_leaves_the_previous_file(book, tmp_path, capsys, monkeypatch):
    out = tmp_path / "v.csv"
    out.write_text("key,status,claim\nold,holds,kept\n")
    real = os.fdopen

    class Full:
        def __init__(self, f):
            self._f = f

        def write(self, data):
            self._f.write(data[:5])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __getattr__(self, name):
            return getattr(self._f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._f.close()

    monkeypatch.setattr(os, "fdopen", lambda *a, **k: Full(real(*a, **k)))
    rc, _, err = _run(["verdicts", "--csv", str(out)], capsys)
    assert rc == 2 and "Traceback" not in err
    assert [line for line in err.splitlines() if "error" in line] == [
        f"companion verdicts: error: cannot write {out}: the disk is full; free some space (the previous file, "
        "if any, is unchanged)."]
    assert out.read_text() == "key,status,claim\nold,holds,kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.csv"]


def test_verdicts_rules_that_are_a_folder_are_refused_in_one_line(tmp_path, capsys):
    one_line_error(["verdicts", "--training", "--rules", str(tmp_path)], capsys, str(tmp_path))


def test_verdicts_rules_at_a_fifo_are_refused_at_once(tmp_path, capsys):
    os.mkfifo(tmp_path / "rules.yaml")
    with _within(20):
        one_line_error(["verdicts", "--training", "--rules", str(tmp_path / "rules.yaml")], capsys, "rules.yaml")


def test_a_missing_value_in_the_training_table_prints_as_nan_and_not_as_a_number(book, capsys, monkeypatch):
    monkeypatch.setattr(training_claims, "training_verdicts", lambda *a, **k: V3.assign(d=float("nan")))
    _, out, _ = _run(["verdicts", "--training"], capsys)
    cells = out.splitlines()[1].split("  ")
    assert "nan" in [c.strip() for c in cells]


def test_every_cell_of_the_printed_status_table_is_its_rows_value(book, capsys):
    rc, out, _ = _run(["verdicts"], capsys)
    header, *rows = out.split("\n\n")[0].splitlines()
    assert header.split() == ["key", "status", "claim"]
    assert [r.split(None, 2) for r in rows] == [["a", "inconclusive", "claim a"], ["b", "inconclusive", "claim b"]]


# ============================================================ 8. corpus

@pytest.fixture
def corpus_stubs(tmp_path, monkeypatch):
    """An empty cache; fetching and preparing recorded, never run."""
    from companion.train.text import corpora, prepare

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    calls = []
    monkeypatch.setattr(corpora, "fetch_corpus", lambda name, quiet=False: calls.append(("fetch", name)))
    monkeypatch.setattr(prepare, "prepare", lambda names, **k: calls.append(("prepare", list(names))) or [])
    return calls


@pytest.mark.parametrize("action", ["fetch", "prepare", "path"])
@pytest.mark.parametrize("name", ["nosuch", "../kjv", "kjv\n", "KJV"])
def test_an_unknown_corpus_is_refused_and_nothing_fetched(corpus_stubs, capsys, action, name):
    one_line_error(["corpus", action, name], capsys, "unknown corpus", "companion corpus list")
    assert corpus_stubs == []


def test_a_misspelt_corpus_is_refused_with_the_one_meant_and_the_names(corpus_stubs, capsys):
    from companion.train.text.corpora import CORPORA

    one_line_error(["corpus", "fetch", "kj"], capsys, "did you mean 'kjv'", ", ".join(CORPORA))
    assert corpus_stubs == []


def test_corpus_fetch_all_fetches_each_corpus_once_in_order(corpus_stubs, capsys):
    from companion.train.text.corpora import CORPORA

    rc, out, _ = _run(["corpus", "fetch", "all"], capsys)
    assert rc == 0 and corpus_stubs == [("fetch", n) for n in sorted(CORPORA)]
    assert len(out.splitlines()) == len(CORPORA)


def test_corpus_path_all_is_refused_not_answered_with_one_corpus(corpus_stubs, capsys):
    """It printed the archive(s) of the first corpus alone, as if they were every corpus's."""
    one_line_error(["corpus", "path", "all"], capsys, "one corpus name", "companion corpus list")


def test_corpus_path_of_a_bundled_corpus_says_it_has_no_archive(corpus_stubs, capsys):
    one_line_error(["corpus", "path", "python-docs"], capsys, "bundled")


def test_corpus_path_of_an_unfetched_corpus_names_the_fetch_and_fetches_nothing(corpus_stubs, capsys):
    one_line_error(["corpus", "path", "kjv"], capsys, "not fetched", "companion corpus fetch kjv")
    assert corpus_stubs == []


def test_corpus_list_names_what_an_unfetched_corpus_of_several_archives_lacks(corpus_stubs, capsys):
    """english-mix, not fetched, read 'not fetched (None)': it has no one package."""
    from companion.train.text.corpora import CORPORA

    rc, out, _ = _run(["corpus", "list"], capsys)
    line = next(line for line in out.splitlines() if line.startswith("english-mix "))
    parts = CORPORA["english-mix"].sources
    assert rc == 0 and "None" not in line and f"{len(parts)} of its {len(parts)} archives missing" in line
    assert all(p.package in line for p in parts)


def test_corpus_list_lines_up_its_columns_whatever_the_longest_name(corpus_stubs, capsys):
    from companion.train.text.corpora import CORPORA

    _, out, _ = _run(["corpus", "list"], capsys)
    lines = [line for line in out.splitlines() if line.split()[0] in CORPORA]
    starts = {line.index(CORPORA[line.split()[0]].domain) for line in lines}
    assert len(lines) == len(CORPORA) and len(starts) == 1


def test_corpus_prepare_of_a_bad_job_count_is_one_line_and_fetches_nothing(tmp_path, capsys, monkeypatch):
    from companion.train.text import prepare

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    fetched = []
    monkeypatch.setattr(prepare, "fetch_corpus", lambda *a, **k: fetched.append(a))
    one_line_error(["corpus", "prepare", "kjv", "--jobs", "-3"], capsys, "jobs", "-3")
    assert fetched == []


# ============================================================ 9. zoo

@pytest.fixture
def zoo_stubs(tmp_path, monkeypatch):
    from companion.zoo import assembly

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    calls = []
    monkeypatch.setattr(assembly, "fetch_model", lambda model, **k: calls.append(model.name) or tmp_path / model.name)
    return calls


@pytest.mark.parametrize("action", ["fetch", "path"])
@pytest.mark.parametrize("name", ["nosuch", "../whisper-base", "whisper-base\n", "all-"])
def test_an_unknown_zoo_name_is_refused_and_nothing_assembled(zoo_stubs, capsys, action, name):
    one_line_error(["zoo", action, name], capsys, "is not in the model zoo", "companion zoo list")
    assert zoo_stubs == []


def test_a_misspelt_zoo_name_is_refused_with_the_one_meant(zoo_stubs, capsys):
    one_line_error(["zoo", "fetch", "sre-embedin"], capsys, "did you mean 'sre-embedding'")
    assert zoo_stubs == []


def test_zoo_fetch_all_assembles_every_zoo_model_once_and_no_held_one(zoo_stubs, capsys):
    from companion.zoo.registry import HELD, zoo_names

    rc, out, _ = _run(["zoo", "fetch", "all"], capsys)
    assert rc == 0 and zoo_stubs == zoo_names() and not set(zoo_stubs) & set(HELD)
    assert len(out.splitlines()) == len(zoo_names())


def test_zoo_path_prints_the_path_the_assembly_gives_and_nothing_else(zoo_stubs, capsys, tmp_path):
    rc, out, _ = _run(["zoo", "path", "whisper-base"], capsys)
    assert rc == 0 and out == f"{tmp_path / 'whisper-base'}\n" and zoo_stubs == ["whisper-base"]


# ============================================================ 10. survey and the rest

def test_survey_with_a_bad_device_is_one_line_and_makes_no_folder(tmp_path, capsys):
    one_line_error(["survey", "--device", "bogus", "--out", str(tmp_path / "s")], capsys, "--device 'bogus'")
    assert not (tmp_path / "s").exists()


def test_survey_out_at_a_fifo_is_refused_at_once(tmp_path, capsys):
    os.mkfifo(tmp_path / "s")
    with _within(20):
        one_line_error(["survey", "--offline", "--out", str(tmp_path / "s")], capsys, str(tmp_path / "s"))


def test_survey_online_and_offline_together_are_refused_by_the_parser(capsys):
    rc, _, err = _run(["survey", "--online", "--offline"], capsys)
    assert rc == 2 and "not allowed with argument" in _err_line(err)


def test_an_interrupt_ends_a_command_with_status_130_and_one_word(capsys, monkeypatch):
    import companion.commands.zoo as zoo_cmd

    def stop(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(zoo_cmd, "run", stop)
    rc, _, err = _run(["zoo", "list"], capsys)
    assert rc == 130 and err.strip() == "interrupted"


def test_a_full_disk_from_a_command_is_one_line_naming_the_file(capsys, monkeypatch, tmp_path):
    import companion.commands.zoo as zoo_cmd

    def full(args):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x"))

    monkeypatch.setattr(zoo_cmd, "run", full)
    one_line_error(["zoo", "list"], capsys, "No space left on device", str(tmp_path / "x"), "free some space")


@pytest.mark.parametrize("source", ["", "   "])
def test_an_empty_model_name_is_refused_not_read_as_the_current_folder(model, capsys, monkeypatch, source):
    """``companion score "$MODEL"`` with MODEL unset scored whatever folder it was run in."""
    monkeypatch.chdir(model[0])
    _no_reads(monkeypatch)
    one_line_error(["score", source, "--quiet"], capsys, "empty")


def test_claim_with_rules_is_refused_with_a_fix_that_is_not_refused_in_turn(book, capsys, tmp_path):
    """``--claim K --rules F`` said 'add --training', and --claim with --training is refused too."""
    line = one_line_error(["verdicts", "--claim", "b", "--rules", str(tmp_path / "r.yaml")], capsys, "--claim", "--rules")
    assert "add --training" not in line
    assert main(["verdicts", "--claim", "b"]) == 0   # the fix it names runs
