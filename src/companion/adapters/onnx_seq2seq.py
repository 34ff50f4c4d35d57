"""An encoder/decoder model exported as two ONNX graphs in one folder (``encoder.onnx`` and
``decoder.onnx``, or ``encoder_model.onnx`` and ``decoder_model.onnx`` as Optimum names them).

Each graph is traced by :class:`~.onnx_graph.ONNXSource` (every ``Softmax`` back to its
query and key projections, int8 weights dequantized as :mod:`.onnx_quant` says), and the two
are one checkpoint whose tensors are named ``encoder::NAME`` and ``decoder::NAME``.  The
conversion function :func:`onnx_seq2seq` gives each traced attention its role:

* in the encoder graph, self-attention (queries and keys from the same tensor) is
  bidirectional, role ``encoder``;
* in the decoder graph, self-attention is the decoder's causal self-attention (T5, BART,
  Marian and Whisper decoders mask it; the mask is built from the sequence length at run
  time, so the graph holds no constant triangle to check), role ``causal``; attention whose
  keys are projected from another tensor (the encoder's output) is cross-attention, role
  ``cross``, which is not a self-attention form and is never scored as one.

Layers are numbered ``0 .. n-1`` within each (graph, role), in graph order.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from ..base.errors import CompanionError
from .families import LayerPlan
from .onnx_graph import ONNXSource, _to_linear_layout
from .tensor_source import TensorSource

__all__ = ["ONNXSeq2SeqSource", "onnx_seq2seq", "seq2seq_graphs"]

_FAMILY = "onnx-seq2seq"
_NAMES = {"encoder": ("encoder.onnx", "encoder_model.onnx"), "decoder": ("decoder.onnx", "decoder_model.onnx")}


def seq2seq_graphs(folder: Path) -> dict[str, Path] | None:
    """``{"encoder": path, "decoder": path}`` when ``folder`` holds both graphs, ``None`` when it
    holds neither; one without the other is refused by name."""
    found = {}
    for stack, names in _NAMES.items():
        hits = [folder / n for n in names if (folder / n).is_file()]
        if len(hits) > 1:
            raise CompanionError(f"{folder} holds {hits[0].name} and {hits[1].name}: two {stack} graphs; "
                                 "keep the one that belongs to the model.")
        if hits:
            found[stack] = hits[0]
    if len(found) == 1:   # half a pair: said so, not read as a folder with no config.json
        (stack, graph), = found.items()
        other = "decoder" if stack == "encoder" else "encoder"
        raise CompanionError(f"{folder} holds the {stack} graph {graph.name} but no {other} graph "
                             f"({' or '.join(_NAMES[other])}); add it, or point at {graph.name} itself "
                             "to read that graph alone.")
    return found if len(found) == 2 else None


class ONNXSeq2SeqSource(TensorSource):
    """Both graphs of an encoder/decoder ONNX export as one source (see the module docstring)."""

    kind = "onnx"

    def __init__(self, folder: str | os.PathLike):
        super().__init__(str(folder))
        graphs = seq2seq_graphs(Path(folder))
        if graphs is None:
            raise CompanionError(f"{folder} does not hold an encoder and a decoder graph "
                                 f"({' / '.join(_NAMES['encoder'])} and {' / '.join(_NAMES['decoder'])}).")
        self.parts = {stack: ONNXSource(path) for stack, path in graphs.items()}
        self.dtypes = {}
        stacks = {}
        for stack, src in self.parts.items():
            for name, shape in src.shapes.items():
                self.shapes[f"{stack}::{name}"] = shape
                self.dtypes[f"{stack}::{name}"] = src.dtypes[name]
            stacks[stack] = src.config["attention"]
        self.config = {"model_type": _FAMILY, "stacks": stacks,
                       "graphs": {stack: path.name for stack, path in graphs.items()}}
        self.families = {_FAMILY: onnx_seq2seq}
        self.quantization_handled = True
        self.own_quantization = next((s.own_quantization for s in self.parts.values() if s.own_quantization), None)
        self.bytes_read = sum(s.bytes_read for s in self.parts.values())

    def _split(self, name: str) -> tuple[ONNXSource, str]:
        stack, _, inner = name.partition("::")
        return self.parts[stack], inner

    @property
    def n_parameters(self) -> int:
        """Values of both graphs' parameters, a tensor stored in both (a shared embedding) once."""
        from .onnx_tensors import parameter_sizes

        seen = {}
        for src in self.parts.values():
            seen.update({identity: n for n, identity in parameter_sizes(src._inits, identities=True).values()})
        return sum(seen.values())

    def stored_nbytes(self, name: str) -> int:
        src, inner = self._split(name)
        return src.stored_nbytes(inner)

    def _load(self, name: str) -> torch.Tensor:
        src, inner = self._split(name)
        return src.get(inner)


def onnx_seq2seq(cfg: dict, keys) -> list[LayerPlan]:
    """Plans for both graphs: encoder self-attention, decoder causal self-attention and
    decoder cross-attention (see the module docstring)."""
    plans = []
    for stack in ("encoder", "decoder"):
        count: dict[str, int] = {}
        for a in cfg["stacks"][stack]:
            if a["role"] == "cross":
                if stack == "encoder":
                    raise CompanionError(f"the encoder graph's attention {a['softmax']!r} projects its queries "
                                         "and keys from different tensors: it is not an encoder graph.")
                role = "cross"
            elif stack == "decoder":
                role = "causal"
            elif a["role"] == "causal":
                raise CompanionError(f"the encoder graph's attention {a['softmax']!r} is masked causally: "
                                     "it is not an encoder graph.")
            else:
                role = "encoder"
            index = count.get(role, 0)
            count[role] = index + 1
            plans.append(LayerPlan(index, role, stack, (f"{stack}::{a['q_weight']}", f"{stack}::{a['k_weight']}"),
                                   a["n_heads"], a["n_heads"], _to_linear_layout(a["q_layout"], a["k_layout"]),
                                   name=f"{stack}:{a['softmax']}"))
    return plans
