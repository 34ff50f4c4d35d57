"""The initializers of an ONNX graph read as tensors: their shapes and kinds, the bytes each is
stored in, and their values decoded.

:class:`~.onnx_graph.ONNXSource` reads every initializer through these functions.  A DOUBLE
initializer stays float64 (1e-50 or 1e50 weights would become 0 or Inf in float32).  An int8
query or key weight that :func:`~.onnx_graph.trace_attention` found under a quantized
projection (:mod:`.onnx_quant`) is read under its stored name with the suffix
:data:`DEQUANTIZED`, as the graph computes it: ``W = (W_int - zero_point) * scale``, per output
column.  Data that does not fit the type and dims its initializer declares (a corrupt file) is
refused in one line.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..base.errors import CompanionError

__all__ = ["DEQUANTIZED", "initializer_table", "dequantized_weights", "initializer_nbytes", "decode_initializer",
           "parameter_sizes"]

DEQUANTIZED = "::dequantized"  # suffix of a weight read as (W_int - zero point) * scale


def initializer_table(graph) -> tuple[dict, dict, dict]:
    """The graph's initializers by name, with each one's shape and kind (``F32`` for every
    floating element type, ``I64`` for any other), in graph order."""
    import onnx

    inits = {i.name: i for i in graph.initializer}
    shapes, dtypes = {}, {}
    for init in graph.initializer:
        shapes[init.name] = tuple(int(d) for d in init.dims)
        floating = init.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                                      onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16)
        dtypes[init.name] = "F32" if floating else "I64"
    return inits, shapes, dtypes


def dequantized_weights(attention: list[dict], shapes: dict, dequant: dict, dtypes: dict) -> list[str]:
    """Each traced query or key weight that is stored as integers becomes a weight of its own,
    ``<stored>::dequantized`` (float, the stored shape), entered in ``shapes``, ``dtypes`` and
    ``dequant`` (name -> stored weight, zero point, scale) and named in ``attention`` in place of
    the stored one; returns the quantization schemes met, in order."""
    schemes = []
    for a in attention:
        for side in ("q", "k"):
            quant = a[f"{side}_quant"]
            if quant is None:
                continue
            stored = a[f"{side}_weight"]
            name = f"{stored}{DEQUANTIZED}"
            dequant[name] = (stored, quant["zero_point"], quant["scale"])
            schemes += [quant["scheme"]] if quant["scheme"] not in schemes else []
            shapes[name], dtypes[name] = shapes[stored], "F32"
            a[f"{side}_weight"] = name
    return schemes


def initializer_nbytes(inits: dict, dequant: dict, shapes: dict, name: str) -> int:
    """Bytes of the stored initializer: 1 per int8 weight, 2 per float16, 8 per double."""
    from onnx.helper import tensor_dtype_to_np_dtype

    stored = dequant.get(name, (name,))[0]
    try:
        width = np.dtype(tensor_dtype_to_np_dtype(inits[stored].data_type)).itemsize
    except (KeyError, TypeError, ValueError):   # an element type numpy has no dtype for
        width = 4
    return math.prod(shapes[name]) * width


def decode_initializer(inits: dict, dequant: dict, shapes: dict, name: str, location: str) -> torch.Tensor:
    """The values of initializer ``name`` (a dequantized weight's computed from its stored
    integers); refused in one line, naming it, when its data does not fit its type and dims."""
    try:
        return _decoded(inits, dequant, name)
    except CompanionError:
        raise
    except (ValueError, TypeError) as exc:   # data that does not fit the dims or type it declares
        stored = dequant.get(name, (name,))[0]
        raise CompanionError(
            f"{location}: the initializer {stored!r} {shapes.get(stored)} holds data that does not "
            f"fit its type and dims ({' '.join(str(exc).split())[:120]}); the file is corrupt. Download or "
            "export it again."
        ) from None


def _decoded(inits: dict, dequant: dict, name: str) -> torch.Tensor:
    from onnx import numpy_helper

    if name in dequant:  # W = (W_int - zero_point) * scale, per output column
        stored, zero_point, scale = dequant[name]
        w = numpy_helper.to_array(inits[stored]).astype(np.float64)
        if zero_point is not None:
            w = w - numpy_helper.to_array(inits[zero_point]).astype(np.float64)
        w = w * numpy_helper.to_array(inits[scale]).astype(np.float64)
        return torch.from_numpy(w.astype(np.float32))
    # DOUBLE stays float64: 1e-50 or 1e50 weights would become 0 or Inf in float32
    keep = np.float64 if inits[name].data_type == 11 else np.float32
    return torch.from_numpy(np.array(numpy_helper.to_array(inits[name]), dtype=keep))


def parameter_sizes(inits: dict, identities: bool = False) -> dict[str, tuple[int, tuple]]:
    """``{name: (values, identity)}`` of the initializers that are the model's parameters: every
    floating one, and every integer one of 8 bits or fewer with two or more axes (a quantized weight
    matrix, embedding or kernel: counted as int8 weights were not, so an int8 MiniLM of 22.6M
    parameters counted 1.9M); in a quantized graph not the ``*_scale`` and ``*_zero_point`` tensors
    of its weights, and never integer shapes, indices or position ids.  ``identity`` (shape, type and
    a hash of the bytes, for tensors of two or more axes) tells a tensor stored again in a second
    graph of one model (T5's embedding in its encoder and decoder graphs); without ``identities`` it is
    the name (no bytes hashed).  A tied output matrix stored again transposed counts once
    (:func:`_transposed_copies`)."""
    import hashlib

    import onnx
    from onnx import numpy_helper

    T = onnx.TensorProto
    floating = (T.FLOAT, T.FLOAT16, T.DOUBLE, T.BFLOAT16)
    narrow = tuple(getattr(T, n) for n in ("INT8", "UINT8", "INT4", "UINT4") if hasattr(T, n))
    quantized = any(i.data_type in narrow and len(i.dims) >= 2 for i in inits.values())
    out = {}
    for name, init in inits.items():
        if init.data_type in floating:
            if quantized and name.endswith(("_scale", "_scales", "_zero_point", "_zero_points")):
                continue
        elif not (init.data_type in narrow and len(init.dims) >= 2):
            continue
        dims = tuple(int(d) for d in init.dims)
        identity: tuple = (name,)
        if identities and len(dims) >= 2:
            raw = init.raw_data or numpy_helper.to_array(init).tobytes()
            identity = (dims, int(init.data_type), hashlib.sha256(raw).hexdigest())
        out[name] = (math.prod(dims), identity)
    for name in _transposed_copies(inits, [n for n in out if inits[n].data_type in floating]):
        del out[name]
    return out


def _transposed_copies(inits: dict, names: list[str]) -> set[str]:
    """The 2-D initializers (not square) that hold another one's transpose, value for value: a tied
    output matrix that the exporter's constant folding stored again as ``W^T`` for its ``MatMul``,
    beside the embedding ``W`` that a ``Gather`` reads (a GPT-2 export holds its 38.6M-value embedding
    twice).  ``num_parameters()`` counts that matrix once; a matrix of one repeated value tells nothing."""
    from onnx import numpy_helper

    by_shape: dict[tuple, list[str]] = {}
    for n in names:
        dims = tuple(int(d) for d in inits[n].dims)
        if len(dims) == 2 and dims[0] != dims[1] and 0 not in dims:
            by_shape.setdefault(dims, []).append(n)
    order = {n: i for i, n in enumerate(names)}
    values: dict[str, np.ndarray] = {}

    def value(n):
        if n not in values:
            values[n] = numpy_helper.to_array(inits[n])
        return values[n]

    copies: set[str] = set()
    for dims, originals in by_shape.items():
        for a in originals:
            for b in by_shape.get(dims[::-1], []):
                if a in copies or b in copies or order[b] < order[a]:   # the later of the two is the copy
                    continue
                x, y = value(a), value(b)
                # a first row against a first column rules out two matrices of a layer's feed-forward at once
                if np.array_equal(x[0], y[:, 0]) and x.min() != x.max() and np.array_equal(x, y.T):
                    copies.add(b)
    return copies
