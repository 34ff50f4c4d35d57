"""ONNX graphs: find each attention's query and key projections by tracing the graph.

Exporters give the projection weights of an ONNX graph names such as
``onnx::MatMul_470``, and the order of initializers says nothing about their role.  So the
weights are found from the computation itself (paper, Eq. 1–2: the logits are
``q_i . k_j / sqrt(d_head)`` with ``q = W_q x + b_q``, ``k = W_k y + b_k``):

1. every ``Softmax`` node is one attention layer (in graph order, which ONNX requires to
   be topological);
2. from its input, walk back through the additive mask (``Add``/``Where``) and the scaling
   (``Div``/``Mul`` by a constant) to the ``MatMul`` of two computed tensors: its first
   operand is the query side (rows of the logits), its second the key side;
3. from each side, walk back through ``Transpose``/``Reshape`` (the head split; its target
   shape gives ``n_heads, d_head``) and constant scalings to ``Add(bias, MatMul(x, W))``,
   ``MatMul(x, W)`` or ``Gemm(x, W, b)``, with ``W`` an initializer: ``[in, out]`` for
   ``MatMul`` (``W^T`` is the ``nn.Linear`` weight), ``[out, in]`` when it comes through a
   ``Transpose`` or a ``Gemm`` with ``transB``.

Two further patterns are followed: a scaling by a scalar *computed from tensor shapes*
(``1/sqrt(sqrt(d_head))`` on each side, as some exporters write it; its value is not
needed for the form, and the reference tests supply ``1/sqrt(d_head)``), and int8 weights
(:mod:`.onnx_quant`): onnxruntime's dynamic quantization of a projection with or without a
bias, ``[Add(bias,] Mul(Cast(MatMulInteger(x_q, W_q8, x_zp, w_zp)), Mul(x_scale, w_scale)))``,
whose weight is dequantized as ``W = (W_q8 - w_zp) * w_scale`` (``[in, out]``), exactly what
the integer product computes up to the rounding of the activations, and weight-only int8
(``MatMul(x, Mul(Cast(W_q8), scale))`` or ``DequantizeLinear``).  An attention whose queries
and keys are projected from different tensors is cross-attention (role ``cross``).  Several ``Softmax`` nodes that use the same query
and key weights (a layer shared across depth, as in ALBERT) are one form: the layer is
read once and its uses are listed in ``config["attention"][i]["uses"]``.

A graph where one of these steps finds nothing (fused ``qkv`` with ``Split``, attention
in a custom operator, ...) raises one :class:`~companion.base.errors.CompanionError` naming the
file, the ``Softmax`` node and what was expected there.

The initializers are read as tensors (their kinds, stored bytes, decoded and dequantized
values) by :mod:`.onnx_tensors`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from ..base.errors import CompanionError
from .families import LayerPlan
from .onnx_masks import is_causal as _is_causal
from .onnx_quant import Untraceable as _Untraceable, integer_projection, weight_only_projection
from .onnx_tensors import (decode_initializer, dequantized_weights, initializer_nbytes, initializer_table,
                           parameter_sizes)
from .tensor_source import TensorSource

__all__ = ["ONNXSource", "trace_attention", "onnx_attention"]

_FAMILY = "onnx-attention"
_PASS_THROUGH = ("Transpose", "Reshape", "Identity", "Cast", "Squeeze", "Unsqueeze", "Contiguous")


class _Graph:
    """Producers and constant values of an ONNX graph."""

    def __init__(self, graph):
        from onnx import numpy_helper

        self.g = graph
        self.producer = {o: n for n in graph.node for o in n.output}
        self.inits = {i.name: i for i in graph.initializer}
        self._np = numpy_helper
        # the walks below revisit shared nodes: memoized on (name, depth), each graph node is
        # visited at most once per depth (a chain of diamonds would otherwise take 2^depth)
        self._memo: dict[tuple, object] = {}

    def _cached(self, kind: str, name: str, depth: int, compute):
        key = (kind, name, depth)
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def const(self, name: str, depth: int = 32):
        """The value of an initializer or ``Constant`` output, else ``None``."""
        if depth <= 0:
            return None
        if name in self.inits:
            return self._np.to_array(self.inits[name])
        node = self.producer.get(name)
        if node is not None and node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    return self._np.to_array(a.t)
                if a.name == "value_float":
                    return np.array(a.f, dtype=np.float32)
                if a.name == "value_floats":
                    return np.array(list(a.floats), dtype=np.float32)
                if a.name == "value_int":
                    return np.array(a.i)
                if a.name == "value_ints":
                    return np.array(list(a.ints))
        if node is not None and node.op_type in ("Unsqueeze", "Identity", "Cast"):
            inner = self.const(node.input[0], depth - 1) if node.input else None
            return None if inner is None else np.atleast_1d(inner)
        return None

    def shape_values(self, name: str) -> list[int | None]:
        """A reshape target with the entries known without running the graph."""
        value = self.const(name)
        if value is not None:
            return _integers(value, name)
        node = self.producer.get(name)
        if node is None or node.op_type != "Concat":
            return []
        out: list[int | None] = []
        for inp in node.input:
            v = self.const(inp)
            out.extend(_integers(v, inp) if v is not None else [None])
        return out

    def depends_on_matmul_of_activations(self, name: str, depth: int = 12) -> bool:
        return self._cached("matmul", name, depth, lambda: self._depends(name, depth))

    def _depends(self, name: str, depth: int) -> bool:
        node = self.producer.get(name)
        if node is None or depth == 0:
            return False
        if node.op_type == "MatMul" and all(self.const(i) is None for i in node.input):
            return True
        return any(self.depends_on_matmul_of_activations(i, depth - 1) for i in node.input)

    def shape_derived(self, name: str, depth: int = 16) -> bool:
        """Whether ``name`` is computed from constants and tensor *shapes* only (not values)."""
        return self._cached("shape", name, depth, lambda: self._shape_derived(name, depth))

    def _shape_derived(self, name: str, depth: int) -> bool:
        if self.const(name) is not None:
            return True
        node = self.producer.get(name)
        if node is None or depth == 0:
            return False
        if node.op_type == "Shape":
            return True
        if node.op_type not in ("Gather", "Slice", "Cast", "Sqrt", "Div", "Mul", "Add", "Sub",
                                "Unsqueeze", "Squeeze", "Concat", "Reciprocal", "Pow", "Identity"):
            return False
        return all(self.shape_derived(i, depth - 1) for i in node.input if i)

    def ancestors_ops(self, name: str, depth: int = 16) -> set[str]:
        return self._cached("ops", name, depth, lambda: frozenset(self._ancestors_ops(name, depth)))

    def _ancestors_ops(self, name: str, depth: int) -> set[str]:
        node = self.producer.get(name)
        if node is None or depth == 0:
            return set()
        ops = {node.op_type}
        for i in node.input:
            ops |= self.ancestors_ops(i, depth - 1)
        return ops


def _integers(value, name: str) -> list[int]:
    """A constant shape (a Reshape target) as whole numbers.  ONNX's Reshape takes int64; a
    float constant is accepted only where every value is whole (it reaches the Reshape
    through a Cast), never rounded: 4.5 heads are refused, not read as 4."""
    a = np.atleast_1d(np.asarray(value))
    if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
        a = a.astype(np.int64)
    if a.dtype.kind not in "iu":
        raise _Untraceable(f"the shape {name!r} holds {a.dtype} values that are not whole numbers "
                           "(ONNX's Reshape takes int64)")
    return [int(v) for v in a]


def _scalar(value) -> float | None:
    if value is None or np.size(value) != 1:
        return None
    a = np.asarray(value)
    if a.dtype.kind not in "biuf":
        raise _Untraceable(f"a constant scaling holds {a.dtype} values, not a number")
    return float(a.reshape(()))


def _inputs(node, n: int, at_least: bool = False) -> list[str]:
    """The inputs of ``node``, which its operator defines as ``n`` (or at least ``n``)."""
    got = list(node.input)
    if len(got) < n or (not at_least and len(got) != n) or not all(got[:n]):
        raise _Untraceable(f"{node.op_type} {node.name!r} has {len(got)} inputs, not the "
                           f"{n}{' or more' if at_least else ''} its operator takes")
    return got


def _divided(scale: float, by: float, node) -> float:
    if by == 0:
        raise _Untraceable(f"Div {node.name!r} divides by zero")
    return scale / by


def _scores_matmul(g: _Graph, name: str):
    """From a Softmax input back to the MatMul of queries and keys; the constant scale on the
    way, and whether a ``Transpose`` on the way swapped the logits' last two axes (then the
    MatMul's *second* operand gives the rows the Softmax sees: ``Transpose(k q^T) = q k^T``)."""
    scale, masks, swapped = 1.0, [], False
    for _ in range(32):
        node = g.producer.get(name)
        if node is None:
            raise _Untraceable(f"reached graph input {name!r} before a MatMul of queries and keys")
        op = node.op_type
        if op == "MatMul":
            _inputs(node, 2)
            if any(g.const(i) is not None for i in node.input):
                raise _Untraceable(f"MatMul {node.name!r} before the Softmax multiplies by a "
                                   "constant, not queries by keys")
            return node, scale, masks, swapped
        if op in ("Div", "Mul"):
            a, b = _inputs(node, 2)
            ca, cb = _scalar(g.const(a)), _scalar(g.const(b))
            if cb is not None:
                scale = _divided(scale, cb, node) if op == "Div" else scale * cb
                name = a
                continue
            if ca is not None and op == "Mul":
                scale, name = scale * ca, b
                continue
            raise _Untraceable(f"{op} {node.name!r} scales the logits by a computed tensor")
        if op in ("Add", "Where", "Sub"):
            _inputs(node, 3 if op == "Where" else 2)
            operands = node.input[1:] if op == "Where" else node.input
            paths = [i for i in operands if g.depends_on_matmul_of_activations(i)]
            if len(paths) != 1:
                raise _Untraceable(f"{op} {node.name!r}: cannot tell the logits from the mask")
            masks.extend(i for i in node.input if i != paths[0])
            name = paths[0]
            continue
        if op == "Transpose":
            perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), [])
            r = len(perm)
            if r < 2 or perm[-2:] not in ([r - 2, r - 1], [r - 1, r - 2]):
                raise _Untraceable(f"Transpose {node.name!r} (perm {perm or 'reversing every axis'}) between "
                                   "the Softmax and the scores MatMul moves the logits' query and key axes")
            swapped ^= perm[-2:] == [r - 1, r - 2]
        if op in _PASS_THROUGH:
            name = _inputs(node, 1, at_least=True)[0]
            continue
        raise _Untraceable(f"unexpected {op} node {node.name!r} between the Softmax and the "
                           "MatMul of queries and keys")
    raise _Untraceable("no MatMul of queries and keys within 32 nodes of the Softmax")


def _projection(g: _Graph, name: str, axis: int | None = None):
    """From one operand of the scores MatMul back to its projection ``x W + b``.

    ``axis``: the operand's axis the scores MatMul contracts (-1 for queries, -2 for keys),
    followed back through ``Transpose`` nodes: at the head split ``[..., n_heads, d_head]``
    it must be the last (``d_head``); a split whose heads are interleaved columns
    (``[..., d_head, n_heads]``) is refused, not read as blocks of rows."""
    scale, heads = 1.0, None
    for _ in range(32):
        node = g.producer.get(name)
        if node is None:
            raise _Untraceable(f"reached graph input {name!r} before a projection MatMul")
        op = node.op_type
        if op == "Reshape" and heads is None:
            shape = g.shape_values(_inputs(node, 2)[1])
            if len(shape) >= 2 and shape[-1] and shape[-2]:
                if shape[-1] < -1 or shape[-2] < -1:
                    raise _Untraceable(f"Reshape {node.name!r} asks for {shape[-2]} heads of {shape[-1]} "
                                       "dimensions; ONNX allows no size below -1")
                if axis is not None and axis != -1:
                    raise _Untraceable(f"Reshape {node.name!r} splits [..., {shape[-2]}, {shape[-1]}] but the "
                                       f"scores MatMul contracts its axis {axis}, not the last: the heads are not "
                                       "blocks of rows of the projection")
                heads = (shape[-2], shape[-1], len(shape))
            name = node.input[0]
            continue
        if op == "Transpose" and heads is None and axis is not None:
            perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), [])
            axis = perm[axis % len(perm)] - len(perm) if perm and -len(perm) <= axis else None
        if op in _PASS_THROUGH or (op == "Concat" and len(node.input) == 1):   # a cache of no past keys
            name = _inputs(node, 1, at_least=True)[0]
            continue
        if op in ("Div", "Mul"):
            a, b = _inputs(node, 2)
            quantized = integer_projection(g, name) if op == "Mul" else None
            if quantized is not None:   # an int8 projection without a bias (T5)
                return dict(quantized, bias=None, scale=scale, heads=heads, layout="in_out")
            ca, cb = _scalar(g.const(a)), _scalar(g.const(b))
            if cb is not None:
                scale, name = (_divided(scale, cb, node) if op == "Div" else scale * cb), a
                continue
            if ca is not None and op == "Mul":
                scale, name = scale * ca, b
                continue
            if op == "Mul" and (g.shape_derived(b) or g.shape_derived(a)):
                scale, name = float("nan"), (a if g.shape_derived(b) else b)
                continue
            raise _Untraceable(f"{op} {node.name!r} on a projection is not a constant scaling")
        if op == "Add":
            a, b = _inputs(node, 2)
            if a in g.inits and b not in g.inits:
                a, b = b, a
            if b not in g.inits:
                raise _Untraceable(f"Add {node.name!r} on a projection adds no bias initializer")
            quantized = integer_projection(g, a)
            if quantized is not None:
                return dict(quantized, bias=b, scale=scale, heads=heads, layout="in_out")
            return dict(_projection_matmul(g, a), bias=b, scale=scale, heads=heads)
        if op == "MatMul":
            return dict(_projection_matmul(g, name), bias=None, scale=scale, heads=heads)
        if op == "Gemm":  # alpha * A B' + beta * C, B' = B^T when transB
            attrs = {a.name: a for a in node.attribute}
            if "transA" in attrs and attrs["transA"].i:
                raise _Untraceable(f"Gemm {node.name!r} transposes its input (transA)")
            x, w = _inputs(node, 2, at_least=True)[:2]
            if w not in g.inits or len(g.inits[w].dims) != 2:
                raise _Untraceable(f"Gemm {node.name!r} has no weight matrix initializer")
            alpha = attrs["alpha"].f if "alpha" in attrs else 1.0
            layout = "out_in" if "transB" in attrs and attrs["transB"].i else "in_out"
            bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
            return dict(weight=w, bias=bias, input=x, scale=scale * alpha, heads=heads, layout=layout)
        raise _Untraceable(f"unexpected {op} node {node.name!r} where a query/key projection "
                           "(MatMul with a weight initializer, then Add of a bias) was expected")
    raise _Untraceable("no projection within 32 nodes of the scores MatMul")


def _projection_matmul(g: _Graph, name: str) -> dict:
    """``MatMul(x, W)`` with ``W`` an initializer ``[in, out]``, a ``Transpose`` of one, or
    computed from a stored integer matrix (:func:`~.onnx_quant.weight_only_projection`)."""
    node = g.producer.get(name)
    if node is None or node.op_type != "MatMul":
        found = "a graph input" if node is None else f"{node.op_type} {node.name!r}"
        raise _Untraceable(f"expected MatMul(x, W) under the bias Add, found {found}")
    x, w = _inputs(node, 2)
    layout = "in_out"
    quantized = weight_only_projection(g, w) if w not in g.inits else None
    if quantized is not None:
        return dict(quantized, input=x, layout=layout)
    t = g.producer.get(w)
    if w not in g.inits and t is not None and t.op_type == "Transpose" and t.input[0] in g.inits:
        perm = [list(a.ints) for a in t.attribute if a.name == "perm"]
        if perm in ([], [[1, 0]]):
            w, layout = t.input[0], "out_in"
    if w not in g.inits:
        raise _Untraceable(f"MatMul {node.name!r} has no weight initializer (fused or computed "
                           "projection)")
    if len(g.inits[w].dims) != 2:
        raise _Untraceable(f"weight {w!r} of MatMul {node.name!r} is not a matrix")
    return dict(weight=w, input=x, layout=layout)


def _in_out_shape(g: _Graph, projection: dict) -> list[int]:
    """A projection weight's shape as ``[in, out]``, whichever layout it is stored in."""
    dims = [int(v) for v in g.inits[projection["weight"]].dims]
    return dims if projection["layout"] == "in_out" else dims[::-1]


def _softmax_over_queries(sm, rank: int, opset: int | None) -> bool:
    """Whether the ``Softmax`` normalises each *column* of the logits (``axis`` -2: the columns
    are then the queries, and the scores MatMul's second operand the query side).  The last
    axis (the default) is the keys'; any other axis is no attention and is refused."""
    axis = next((int(a.i) for a in sm.attribute if a.name == "axis"), None)
    if axis is None:
        if opset is None or opset >= 13:
            return False
        axis = 1   # before opset 13 the default axis is 1: all but the batch axis, flattened
    if opset is not None and opset < 13 and axis not in (-1, rank - 1):
        raise _Untraceable(f"the Softmax normalises over axis {axis} and every axis after it, flattened "
                           f"(opset {opset}), not over the keys of each query")
    norm = axis - rank if axis >= 0 else axis
    if norm == -1:
        return False
    if norm == -2 and (opset is None or opset >= 13):   # before opset 13 the axes from it on are flattened
        return True
    raise _Untraceable(f"the Softmax normalises over axis {axis} of {rank}-axis logits (opset {opset}), "
                       "neither the keys' axis (the last) nor the queries'")


def trace_attention(graph, location: str = "the ONNX graph", opset: int | None = None) -> list[dict]:
    """One entry per ``Softmax``: query/key weight and bias names, heads, scale, inputs.

    The query side is the operand of the scores ``MatMul`` whose rows the ``Softmax``
    normalises over the keys (paper, Eq. 1-2): the first, unless a ``Transpose`` of the
    logits or a ``Softmax`` over axis -2 makes it the second (``opset``: the graph's)."""
    g = _Graph(graph)
    layers = []
    softmaxes = [n for n in graph.node if n.op_type == "Softmax"]
    if not softmaxes:
        raise CompanionError(
            f"{location} has no Softmax node, so no attention layer can be traced. Export the "
            "model with its attention in plain ONNX operators (not a fused Attention op)."
        )
    for index, sm in enumerate(softmaxes):
        try:
            mm, scale, masks, swapped = _scores_matmul(g, _inputs(sm, 1)[0])
            q = _projection(g, mm.input[0], -1)
            k = _projection(g, mm.input[1], -2)
            rank = (q["heads"] or k["heads"] or (0, 0, 4))[2]
            if swapped ^ _softmax_over_queries(sm, rank, opset):
                q, k = k, q
        except _Untraceable as exc:
            raise CompanionError(
                f"{location}: cannot trace attention {index} (Softmax {sm.name!r}) back to its "
                f"query and key projections: {exc}. Expected Softmax <- [Add mask] <- Div/Mul "
                "<- MatMul(q, k) with q, k from Transpose/Reshape of MatMul(x, W) + b."
            ) from None
        except CompanionError:
            raise
        except (ValueError, IndexError, TypeError, ArithmeticError) as exc:  # a node no exporter writes
            raise CompanionError(
                f"{location}: cannot trace attention {index} (Softmax {sm.name!r}): a node on its path is "
                f"malformed ({type(exc).__name__}: {' '.join(str(exc).split())[:160]}). Export the model again."
            ) from None
        wq, wk = _in_out_shape(g, q), _in_out_shape(g, k)
        heads = q["heads"] or k["heads"]
        if heads is None:
            raise CompanionError(
                f"{location}: attention {index} (Softmax {sm.name!r}) has no Reshape with a "
                "constant [..., n_heads, d_head] target, so its heads cannot be split."
            )
        n_heads, d_head, _ = heads
        # a Reshape target may leave one of the two to be inferred (-1), as ONNX allows
        if n_heads == -1 and d_head > 0 and wq[1] % d_head == 0:
            n_heads = wq[1] // d_head
        elif d_head == -1 and n_heads > 0 and wq[1] % n_heads == 0:
            d_head = wq[1] // n_heads
        if n_heads * d_head != wq[1] or wk[1] != wq[1]:
            raise CompanionError(
                f"{location}: attention {index}: query weight {tuple(wq)} and key weight "
                f"{tuple(wk)} do not split into {n_heads} heads of {d_head}."
            )
        layers.append(dict(
            index=index, softmax=sm.name, logits=sm.input[0], q_weight=q["weight"],
            k_weight=k["weight"], q_layout=q["layout"], k_layout=k["layout"], q_bias=q["bias"], k_bias=k["bias"], q_input=q["input"],
            k_input=k["input"], n_heads=int(n_heads), d_head=int(d_head),
            # nan where the graph computes the scale from shapes (not needed for the form)
            scale=float(scale * q["scale"] * k["scale"]),
            q_quant=_quant(q), k_quant=_quant(k),
            role=("cross" if _source(g, q["input"]) != _source(g, k["input"])
                  else "causal" if _is_causal(g, masks) else "encoder"),
        ))
    return _merge_shared(layers)


def _source(g: _Graph, name: str) -> str:
    """The tensor whose values ``name`` holds (through ``Identity``, ``Cast`` and reshapes):
    queries and keys projected from the same source are self-attention, from different ones
    cross-attention."""
    for _ in range(32):
        node = g.producer.get(name)
        if node is None or node.op_type not in ("Identity", "Cast", "Reshape", "Flatten", "Squeeze",
                                                "Unsqueeze") or not node.input:
            return name
        name = node.input[0]
    return name


def _quant(projection: dict) -> dict | None:
    if "zero_point" not in projection:
        return None
    return {"zero_point": projection["zero_point"], "scale": projection["weight_scale"],
            "scheme": projection["scheme"]}


def _merge_shared(layers: list[dict]) -> list[dict]:
    """One entry per distinct (query weight, key weight): a shared layer is one form.

    Every use keeps its ``Softmax`` and logits name in ``uses`` (graph order)."""
    merged: dict[tuple, dict] = {}
    for a in layers:
        key = (a["q_weight"], a["k_weight"])
        use = {"softmax": a["softmax"], "logits": a["logits"], "q_input": a["q_input"],
               "k_input": a["k_input"]}
        if key in merged:
            merged[key]["uses"].append(use)
            continue
        merged[key] = dict(a, index=len(merged), uses=[use])
    return list(merged.values())


class ONNXSource(TensorSource):
    """An ``.onnx`` file; initializers are the tensors, the traced attention is the config."""

    kind = "onnx"

    def __init__(self, path: str | os.PathLike):
        super().__init__(str(path))
        try:
            import onnx
        except ImportError as exc:  # pragma: no cover - onnx is a dependency
            raise CompanionError("reading .onnx files needs the 'onnx' package: "
                                 "pip install onnx") from exc
        path = Path(path)
        try:
            model = onnx.load(str(path))
        except Exception as exc:
            _refuse_missing_external_data(path)
            raise CompanionError(
                f"{path} is not a readable ONNX model ({type(exc).__name__}: "
                f"{str(exc)[:120]}). Download or export it again."
            ) from None
        graph = model.graph
        if not graph.node:
            raise CompanionError(f"{path} holds an empty ONNX graph (corrupt or not a model). "
                                 "Download or export it again.")
        self._inits, shapes, self.dtypes = initializer_table(graph)
        self.shapes.update(shapes)
        attention = trace_attention(graph, str(path), next(
            (int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), None))
        self._dequant: dict[str, tuple[str, str | None, str]] = {}
        schemes = dequantized_weights(attention, self.shapes, self._dequant, self.dtypes)
        # the integer weights the traced projections use are dequantized by _load; any other
        # integer tensor of the graph is never read as a q/k weight
        self.quantization_handled = True
        self.own_quantization = (f"onnx {' + '.join(schemes)} (dequantized with the graph's scales)"
                                 if self._dequant else None)
        self.config = {"model_type": _FAMILY, "attention": attention,
                       "opset": [(o.domain, o.version) for o in model.opset_import]}
        self.families = {_FAMILY: onnx_attention}
        # protobuf parses the whole file
        self.bytes_read = os.path.getsize(path)

    @property
    def n_parameters(self) -> int:
        """Values of the graph's parameters (:func:`~.onnx_tensors.parameter_sizes`): int8 weights
        counted, their scales and the dequantized copies of the q/k weights not."""
        return sum(n for n, _ in parameter_sizes(self._inits).values())

    def stored_nbytes(self, name: str) -> int:
        """Bytes of the stored initializer: 1 per int8 weight, 2 per float16, 8 per double."""
        return initializer_nbytes(self._inits, self._dequant, self.shapes, name)

    def _load(self, name: str) -> torch.Tensor:
        return decode_initializer(self._inits, self._dequant, self.shapes, name, self.location)


def _refuse_missing_external_data(path: Path) -> None:
    """A graph whose weights live in a data file beside it (``model.onnx_data``) that is not there:
    named, with the fix (the loader's own message, cut to a line, lost the file's name)."""
    import onnx

    try:
        graph = onnx.load(str(path), load_external_data=False).graph
    except Exception:
        return
    wanted = {e.value for init in graph.initializer if init.data_location == onnx.TensorProto.EXTERNAL
              for e in init.external_data if e.key == "location"}
    missing = sorted(w for w in wanted if not (path.parent / w).exists())
    if missing:
        raise CompanionError(f"{path} keeps its weights in the data file {missing[0]!r}, which is not beside it in "
                             f"{path.parent}; put that file (downloaded with the graph) next to it.")


def _to_linear_layout(q_layout: str, k_layout: str):
    """``nn.Linear`` layout ``[out, in]`` from ONNX's ``[in, out]`` (``MatMul``) where needed."""

    def extract(ts):
        q, k = ts
        q = q.T.contiguous() if q_layout == "in_out" else q
        k = k.T.contiguous() if k_layout == "in_out" else k
        return q, k

    return extract


def onnx_attention(cfg: dict, keys) -> list[LayerPlan]:
    """Plans from the traced attention layers (see :func:`trace_attention`)."""
    return [
        LayerPlan(a["index"], a["role"], "encoder" if a["role"] == "encoder" else "decoder",
                  (a["q_weight"], a["k_weight"]), a["n_heads"], a["n_heads"],
                  _to_linear_layout(a["q_layout"], a["k_layout"]),
                  name=a["softmax"])
        for a in cfg["attention"]
    ]
