"""Test helper: build malformed and tricky checkpoints programmatically.

Every builder writes into a folder it is given and returns what a test needs.  The good
checkpoints are tiny random LLaMA models saved by ``transformers`` itself; the bad ones
are made from them by editing bytes, headers, indexes or config fields, never by hand.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

import transformers as T

Q0 = "model.layers.0.self_attn.q_proj.weight"
K0 = "model.layers.0.self_attn.k_proj.weight"


# ----------------------------------------------------------------------------- good ones


def tiny_llama(folder, layers: int = 3, hidden: int = 64, heads: int = 8, kv: int = 2,
               seed: int = 0, **save) -> T.LlamaForCausalLM:
    """A random LLaMA (grouped-query) saved with ``save_pretrained(folder, **save)``."""
    torch.manual_seed(seed)
    cfg = T.LlamaConfig(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv,
                        num_hidden_layers=layers, intermediate_size=hidden + hidden // 2,
                        vocab_size=100, max_position_embeddings=32)
    model = T.LlamaForCausalLM(cfg)
    model.save_pretrained(folder, **save)
    return model


def sharded_llama(folder, layers: int = 3, **kw):
    """A tiny LLaMA in several shards with ``model.safetensors.index.json``."""
    model = tiny_llama(folder, layers=layers, max_shard_size="40KB", **kw)
    shards = sorted(Path(folder).glob("model-*.safetensors"))
    assert len(shards) >= 3, shards
    return model, shards


def qk_of(model, layer: int):
    att = model.model.layers[layer].self_attn
    return att.q_proj.weight.detach().clone(), att.k_proj.weight.detach().clone()


def edit_config(folder, **fields):
    path = Path(folder) / "config.json"
    cfg = json.loads(path.read_text())
    for k, v in fields.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    path.write_text(json.dumps(cfg))


def edit_index(folder, fn):
    path = Path(folder) / "model.safetensors.index.json"
    idx = json.loads(path.read_text())
    fn(idx)
    path.write_text(json.dumps(idx))


# ----------------------------------------------------------------------------- safetensors bytes


def write_raw_safetensors(path, header: dict | str, data: bytes) -> Path:
    """A ``.safetensors`` file with exactly this header (dict or JSON text) and data."""
    text = header if isinstance(header, str) else json.dumps(header)
    raw = text.encode()
    Path(path).write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return Path(path)


def two_tensor_header(**overrides) -> tuple[dict, bytes]:
    """A valid header of two F32 ``[2, 2]`` tensors ``a`` (bytes 0-16) and ``b`` (16-32)."""
    header = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
              "b": {"dtype": "F32", "shape": [2, 2], "data_offsets": [16, 32]}}
    for name, info in overrides.items():
        header[name] = {**header[name], **info}
    return header, np.arange(8, dtype=np.float32).tobytes()


MALFORMED_HEADERS = {
    # name: (header, data) that the safetensors library refuses
    "overlapping offsets": two_tensor_header(b={"data_offsets": [8, 24]}),
    "negative offset": two_tensor_header(a={"data_offsets": [-16, 0]}),
    "offsets past the end": (two_tensor_header()[0], np.arange(6, dtype=np.float32).tobytes()),
    "trailing bytes": (two_tensor_header()[0], np.arange(10, dtype=np.float32).tobytes()),
    "end before start": two_tensor_header(b={"data_offsets": [32, 16]}),
    "dtype and shape do not fit the bytes": two_tensor_header(a={"shape": [2, 3]}),
    "gap between tensors": ({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                             "b": {"dtype": "F32", "shape": [2, 2], "data_offsets": [20, 36]}},
                            np.arange(9, dtype=np.float32).tobytes()),
    "unknown dtype": two_tensor_header(a={"dtype": "F33"}),
    "negative dimension": two_tensor_header(a={"shape": [-2, -2]}),
    "header not an object": ("[1, 2]", b""),
    "offsets not integers": two_tensor_header(a={"data_offsets": [0.0, 16.0]}),
}


def header_with_huge_length(path) -> Path:
    """A header length far beyond the file's size."""
    Path(path).write_bytes(struct.pack("<Q", 2**62) + b"{}")
    return Path(path)


# ----------------------------------------------------------------------------- folders


def drop_a_shard_and_the_index(folder) -> Path:
    """Sharded LLaMA with its index and its second shard deleted."""
    _, shards = sharded_llama(folder)
    (Path(folder) / "model.safetensors.index.json").unlink()
    shards[1].unlink()
    return Path(folder)


def index_listing_some_shards(folder) -> Path:
    """The index forgets the last shard and the tensors in it (as if written mid-save)."""
    _, shards = sharded_llama(folder)
    last = shards[-1].name
    edit_index(folder, lambda idx: idx.__setitem__(
        "weight_map", {k: v for k, v in idx["weight_map"].items() if v != last}))
    shards[-1].unlink()
    return Path(folder)


def index_and_shard_names_without_the_last_shard(folder) -> Path:
    """Shards named ``-of-0000N`` but the index forgets the last one's tensors, file kept."""
    _, shards = sharded_llama(folder)
    last = shards[-1].name
    edit_index(folder, lambda idx: idx.__setitem__(
        "weight_map", {k: v for k, v in idx["weight_map"].items() if v != last}))
    return Path(folder)


def drop_a_layer(folder, layer: int = 1) -> Path:
    """Single-file LLaMA without any tensor of one layer."""
    tiny_llama(folder)
    path = Path(folder) / "model.safetensors"
    state = load_file(str(path))
    state = {k: v for k, v in state.items() if f"layers.{layer}." not in k}
    save_file(state, str(path), metadata={"format": "pt"})
    return Path(folder)


def same_tensor_in_two_shards(folder, honoured_by_index: bool = True):
    """A sharded LLaMA plus a stray shard holding a different ``q_proj`` of layer 0.

    With ``honoured_by_index`` the index still points at the true shard (the stray file is
    named in the index for another tensor); otherwise the index is removed.
    Returns (model, stray file).
    """
    model, shards = sharded_llama(folder)
    folder = Path(folder)
    idx = json.loads((folder / "model.safetensors.index.json").read_text())
    wm = idx["weight_map"]
    true_file = wm[Q0]
    other = next(s.name for s in shards if s.name != true_file)
    state = load_file(str(folder / other))
    state[Q0] = torch.full_like(qk_of(model, 0)[0], 3.0)  # a different q_proj, same shape
    save_file(state, str(folder / other), metadata={"format": "pt"})
    if not honoured_by_index:
        (folder / "model.safetensors.index.json").unlink()
    return model, folder / other


def unrelated_safetensors_files(folder) -> Path:
    """Two unrelated single-file models' weights in one folder, no index, no model.safetensors."""
    folder = Path(folder)
    tiny_llama(folder / "a")
    tiny_llama(folder / "b", seed=1)
    folder.joinpath("config.json").write_text((folder / "a" / "config.json").read_text())
    os.replace(folder / "a" / "model.safetensors", folder / "llama-a.safetensors")
    os.replace(folder / "b" / "model.safetensors", folder / "llama-b.safetensors")
    return folder


def index_pointing_outside(folder, how: str) -> Path:
    """A sharded LLaMA whose index names a shard outside the folder (``../``, absolute, symlink)."""
    _, shards = sharded_llama(folder)
    folder = Path(folder)
    outside = folder.parent / f"outside-{how}"
    outside.mkdir()
    victim = shards[0].name
    target = outside / victim
    os.replace(shards[0], target)
    if how == "dotdot":
        name = f"../{outside.name}/{victim}"
    elif how == "absolute":
        name = str(target)
    elif how == "symlink":
        (folder / "linked.safetensors").symlink_to(target)
        name = "linked.safetensors"
    else:
        raise ValueError(how)
    edit_index(folder, lambda idx: idx.__setitem__(
        "weight_map", {k: (name if v == victim else v) for k, v in idx["weight_map"].items()}))
    return folder


def nan_in_a_query(folder) -> Path:
    tiny_llama(folder)
    path = Path(folder) / "model.safetensors"
    state = load_file(str(path))
    state["model.layers.2.self_attn.q_proj.weight"][3, 5] = float("nan")
    save_file(state, str(path), metadata={"format": "pt"})
    return Path(folder)


def zero_size_query(folder) -> Path:
    """A config with no heads' worth of rows: q/k tensors of shape [0, d]."""
    from transformers import BertConfig, BertModel

    BertModel(BertConfig(hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
                         intermediate_size=64, vocab_size=100)).save_pretrained(folder)
    path = Path(folder) / "model.safetensors"
    state = load_file(str(path))
    for k in list(state):
        if k.endswith(("self.query.weight", "self.key.weight")):
            state[k] = torch.zeros(0, 32)
    save_file(state, str(path), metadata={"format": "pt"})
    return Path(folder)


# ----------------------------------------------------------------------------- quantized


def bnb_int8_llama(folder):
    """A LLaMA saved the way bitsandbytes 8-bit stores ``Linear8bitLt`` layers.

    Each linear weight becomes int8 ``round(W * 127 / absmax_row)`` with ``SCB = absmax_row``
    (LLM.int8's row-wise absmax quantization) and a ``weight_format`` marker.
    Returns (model, {name: the weight the stored integers and scales stand for}).
    """
    model = tiny_llama(folder)
    path = Path(folder) / "model.safetensors"
    state = load_file(str(path))
    floats = {}
    for k in list(state):
        if k.endswith("_proj.weight"):
            w = state[k].float()
            scb = w.abs().amax(dim=1)
            state[k] = torch.round(w * 127 / scb[:, None]).to(torch.int8)
            state[k[: -len("weight")] + "SCB"] = scb
            state[k[: -len("weight")] + "weight_format"] = torch.tensor(0, dtype=torch.uint8)
            floats[k] = state[k].float() * scb[:, None] / 127
    save_file(state, str(path), metadata={"format": "pt"})
    edit_config(folder, quantization_config={
        "quant_method": "bitsandbytes", "load_in_8bit": True, "load_in_4bit": False,
        "llm_int8_threshold": 6.0})
    return model, floats


def fp8_block_llama(folder, block=(16, 16)):
    """A LLaMA stored as fp8 (e4m3) with one ``weight_scale_inv`` per block (DeepSeek-V3 style).

    ``scale = absmax(block) / 448``; stored ``fp8(W / scale)``; ``W ~ fp8 * scale``.
    Returns (model, {name: the weight the stored fp8 values and scales stand for}).
    """
    model = tiny_llama(folder)
    path = Path(folder) / "model.safetensors"
    state = load_file(str(path))
    b0, b1 = block
    floats = {}
    for k in list(state):
        if k.endswith("_proj.weight"):
            w = state[k].float()
            r, c = w.shape
            nb0, nb1 = -(-r // b0), -(-c // b1)
            padded = torch.zeros(nb0 * b0, nb1 * b1)
            padded[:r, :c] = w
            blocks = padded.reshape(nb0, b0, nb1, b1)
            scale = blocks.abs().amax(dim=(1, 3)).clamp_min(1e-12) / 448.0
            stored = (blocks / scale[:, None, :, None]).to(torch.float8_e4m3fn)
            state[k] = stored.reshape(nb0 * b0, nb1 * b1)[:r, :c].contiguous()
            state[k[: -len("weight")] + "weight_scale_inv"] = scale
            floats[k] = (stored.float() * scale[:, None, :, None]).reshape(
                nb0 * b0, nb1 * b1)[:r, :c]
    save_file(state, str(path), metadata={"format": "pt"})
    edit_config(folder, quantization_config={
        "quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": list(block)})
    return model, floats


def gptq_like_llama(folder):
    """A LLaMA whose config says GPTQ, with ``qweight``/``scales`` in place of ``q_proj.weight``."""
    tiny_llama(folder)
    path = Path(folder) / "model.safetensors"
    state = load_file(str(path))
    for k in list(state):
        if k.endswith("_proj.weight"):
            w = state.pop(k)
            base = k[: -len("weight")]
            state[base + "qweight"] = torch.zeros(w.shape[1] // 8, w.shape[0], dtype=torch.int32)
            state[base + "scales"] = torch.ones(1, w.shape[0], dtype=torch.float16)
    save_file(state, str(path), metadata={"format": "pt"})
    edit_config(folder, quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 128})
    return Path(folder)


# ----------------------------------------------------------------------------- torch and GGUF


def legacy_pickle_folder(folder, model) -> Path:
    """``pytorch_model.bin`` in the pre-1.6 (non-zip) torch.save format, with config.json."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), folder / "pytorch_model.bin",
               _use_new_zipfile_serialization=False)
    model.config.to_json_file(folder / "config.json")
    return folder


def code_running_pickle_folder(folder, model, marker: Path) -> Path:
    """``pytorch_model.bin`` whose unpickling would create ``marker`` (it must not run)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    state = dict(model.state_dict())
    state["evil"] = Evil()
    torch.save(state, folder / "pytorch_model.bin")
    model.config.to_json_file(folder / "config.json")
    return folder


def tiny_gguf(path, layers: int = 2, block_count: int | None | bool = None, nan: bool = False,
              heads: int = 4, kv: int = 2, d: int = 32, head_count_as_float: float | None = None) -> Path:
    """A llama-architecture GGUF with F32 q/k tensors (optionally a NaN, a wrong or absent
    (``block_count=False``) block count, or a head count stored as a float)."""
    import gguf

    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(str(path), "llama")
    if block_count is not False:
        w.add_block_count(block_count if block_count is not None else layers)
    if head_count_as_float is not None:
        w.add_float32("llama.attention.head_count", head_count_as_float)
    else:
        w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_embedding_length(d)
    for i in range(layers):
        q = rng.standard_normal((d, d)).astype(np.float32)
        if nan and i == layers - 1:
            q[0, 0] = np.nan
        w.add_tensor(f"blk.{i}.attn_q.weight", q)
        w.add_tensor(f"blk.{i}.attn_k.weight",
                     rng.standard_normal((kv * d // heads, d)).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)


def truncated(path, keep: float = 0.6) -> Path:
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: int(len(data) * keep)])
    return Path(path)
