"""A GGUF file in byte parts, read in place through its parts manifest
(companion.adapters.gguf_parts), on small files written here: a qwen2-architecture model with
Q4_K query/key weights (the block scheme of Qwen2.5-Coder-1.5B's q/k) cut into parts at
places that split the header and the tensors.

What it reads is checked against the ``gguf`` package's own reader and dequantisation of the
joined file; a part missing, truncated, out of order or rewritten, and a tensor type the
``gguf`` package does not know, are refused with the model's name and the reason.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from companion.adapters import read_qk
from companion.adapters.gguf_parts import MANIFEST_FORMAT, GGUFPartsSource, marker_of
from companion.base.errors import CompanionError

MODEL = "toy-qwen2"
LAYERS, HEADS, KV, D = 2, 4, 2, 256   # K-quant rows are blocks of 256


def _q4_k(rows: int, cols: int, rng) -> np.ndarray:
    """Random Q4_K blocks with finite scales: per 256 values, f16 d and dmin, 12 bytes of
    6-bit scales and mins, 128 bytes of 4-bit quants (144 bytes)."""
    blocks = rows * cols // 256
    raw = rng.integers(0, 256, size=(blocks, 144), dtype=np.uint8)
    raw[:, 0:2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)
    raw[:, 2:4] = np.frombuffer(np.float16(0.005).tobytes(), np.uint8)
    return raw.reshape(rows, cols // 256 * 144)


def write_qwen2_gguf(path: Path) -> Path:
    import gguf

    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_block_count(LAYERS)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV)
    w.add_embedding_length(D)
    w.add_string("general.name", "toy qwen2")
    for i in range(LAYERS):
        dk = KV * D // HEADS
        w.add_tensor(f"blk.{i}.attn_q.weight", _q4_k(D, D, rng),
                     raw_dtype=gguf.GGMLQuantizationType.Q4_K)
        w.add_tensor(f"blk.{i}.attn_q.bias", rng.standard_normal(D).astype(np.float32))
        w.add_tensor(f"blk.{i}.attn_k.weight", _q4_k(dk, D, rng),
                     raw_dtype=gguf.GGMLQuantizationType.Q4_K)
        w.add_tensor(f"blk.{i}.attn_k.bias", rng.standard_normal(dk).astype(np.float32))
        w.add_tensor(f"blk.{i}.attn_v.weight", rng.standard_normal((dk, D)).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def cut(data: bytes, folder: Path, cuts: list[int]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    bounds = [0, *cuts, len(data)]
    paths = []
    for i, (a, b) in enumerate(zip(bounds, bounds[1:]), start=1):
        p = folder / f"part{i:02d}.bin"
        p.write_bytes(data[a:b])
        paths.append(p)
    return paths


def manifest(paths: list[Path], dest: Path) -> Path:
    parts = [{"path": str(p), "size": p.stat().st_size, "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
              "marker": marker_of(p.stat())} for p in paths]
    whole = hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest()
    dest.write_text(json.dumps({"format": MANIFEST_FORMAT, "model": MODEL, "file": "toy.gguf",
                                "size": sum(p["size"] for p in parts), "sha256": whole, "parts": parts}))
    return dest


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """The joined file, its parts (cut inside the header and inside tensors) and their manifest."""
    root = tmp_path_factory.mktemp("gguf_parts")
    whole = write_qwen2_gguf(root / "toy.gguf")
    data = whole.read_bytes()
    paths = cut(data, root / "parts", [100, 1000, len(data) // 2 + 77, len(data) - 300])
    return whole, paths, manifest(paths, root / "toy.gguf.parts.json")


def test_the_parts_read_as_the_joined_file_and_as_gguf_dequantizes_it(split):
    import gguf

    whole, _, man = split
    parts, joined = read_qk(man, progress=False), read_qk(whole, progress=False)
    assert parts.family == joined.family == "qwen2" and len(parts.layers) == LAYERS
    ref = {t.name: t for t in gguf.GGUFReader(str(whole)).tensors}
    for a, b in zip(parts.layers, joined.layers):
        assert (a.role, a.component, a.n_heads, a.n_kv_heads) == ("causal", "decoder", HEADS, KV)
        assert a.Wq.shape == (D, D) and a.Wk.shape == (KV * D // HEADS, D)
        assert torch.equal(a.Wq, b.Wq) and torch.equal(a.Wk, b.Wk)
        for side, w in (("q", a.Wq), ("k", a.Wk)):
            t = ref[f"blk.{a.index}.attn_{side}.weight"]
            assert t.tensor_type == gguf.GGMLQuantizationType.Q4_K
            own = gguf.quants.dequantize(t.data, t.tensor_type).reshape(w.shape)
            np.testing.assert_array_equal(w.numpy(), own)


def test_only_the_query_and_key_tensors_are_read(split):
    _, _, man = split
    src = GGUFPartsSource(man)
    header = src.bytes_read
    ckpt = read_qk(man, progress=False)
    q4k = sum(src.stored_nbytes(f"blk.{i}.attn_{s}.weight") for i in range(LAYERS) for s in "qk")
    assert ckpt.bytes_read == header + q4k   # no bias, no value weight, no part joined on disk


def _copy(split, tmp_path) -> tuple[list[Path], Path]:
    _, paths, _ = split
    mine = []
    for p in paths:
        q = tmp_path / p.name
        q.write_bytes(p.read_bytes())
        mine.append(q)
    return mine, manifest(mine, tmp_path / "toy.gguf.parts.json")


def test_a_missing_part_is_refused_with_the_model_and_the_part(split, tmp_path):
    paths, man = _copy(split, tmp_path)
    paths[2].unlink()
    with pytest.raises(CompanionError, match=rf"{MODEL}: part 3 of 5 .* is missing"):
        read_qk(man, progress=False)


def test_a_part_that_stopped_half_way_is_refused_as_truncated(split, tmp_path):
    paths, man = _copy(split, tmp_path)
    data = paths[3].read_bytes()
    paths[3].write_bytes(data[: len(data) // 2])
    with pytest.raises(CompanionError, match=rf"{MODEL}: part 4 of 5 .* truncated"):
        read_qk(man, progress=False)


def test_parts_out_of_order_are_named_so(tmp_path):
    whole = write_qwen2_gguf(tmp_path / "toy.gguf")
    data = whole.read_bytes()
    size = len(data) // 4
    paths = cut(data, tmp_path / "parts", [size, 2 * size, 3 * size])   # parts 1-3 of one size
    man = manifest(paths, tmp_path / "toy.gguf.parts.json")
    a, b = paths[1].read_bytes(), paths[2].read_bytes()
    paths[1].write_bytes(b)
    paths[2].write_bytes(a)
    with pytest.raises(CompanionError, match=rf"{MODEL}: part 2 of 4 .* holds the bytes of part 3: the parts are out of order"):
        read_qk(man, progress=False)


def test_a_rewritten_part_is_refused_by_its_sha256(split, tmp_path):
    paths, man = _copy(split, tmp_path)
    data = bytearray(paths[2].read_bytes())
    data[10] ^= 0xFF
    paths[2].write_bytes(bytes(data))
    with pytest.raises(CompanionError, match=rf"{MODEL}: part 3 of 5 .* sha256 is not the recorded one"):
        read_qk(man, progress=False)


def test_an_unchanged_part_is_not_hashed_again(split, monkeypatch):
    from companion.adapters import gguf_parts

    _, _, man = split
    monkeypatch.setattr(gguf_parts, "_sha256", lambda path: pytest.fail(f"{path} hashed again"))
    assert len(read_qk(man, progress=False).layers) == LAYERS


def _ggml_type_offset(data: bytes, tensor: str) -> int:
    """Where the GGML type of ``tensor`` is stored in the header (after its name and dims)."""
    name = tensor.encode()
    at = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
    n_dims = struct.unpack_from("<I", data, at)[0]
    return at + 4 + 8 * n_dims


def test_a_tensor_type_gguf_does_not_know_is_refused_with_the_model(tmp_path):
    whole = write_qwen2_gguf(tmp_path / "toy.gguf")
    data = bytearray(whole.read_bytes())
    struct.pack_into("<I", data, _ggml_type_offset(bytes(data), "blk.1.attn_k.weight"), 99)
    man = manifest(cut(bytes(data), tmp_path / "parts", [500]), tmp_path / "toy.gguf.parts.json")
    with pytest.raises(CompanionError, match=rf"{MODEL} \(2 parts\) is not a readable GGUF file \(99 is not a valid"):
        read_qk(man, progress=False)


def test_parts_that_do_not_begin_a_gguf_file_are_refused(split, tmp_path):
    paths, _ = _copy(split, tmp_path)
    man = manifest(paths[1:], tmp_path / "late.gguf.parts.json")   # the first part left out
    with pytest.raises(CompanionError, match=rf"{MODEL}: its 4 parts do not begin a readable GGUF file"):
        read_qk(man, progress=False)


@pytest.mark.parametrize("text, why", [
    ("[]", "not a parts manifest"),
    (json.dumps({"format": MANIFEST_FORMAT, "parts": []}), "lists no parts"),
    (json.dumps({"format": MANIFEST_FORMAT, "size": 5, "parts": [{"path": "a", "size": 5}]}), "needs a path"),
    (json.dumps({"format": MANIFEST_FORMAT, "size": 9, "parts": [{"path": "a", "size": 5, "sha256": "0"}]}),
     "do not add up"),
])
def test_a_malformed_manifest_is_refused(tmp_path, text, why):
    man = tmp_path / "m.gguf.parts.json"
    man.write_text(text)
    with pytest.raises(CompanionError, match=why):
        read_qk(man, progress=False)
