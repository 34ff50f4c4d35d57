"""Whether an attention's mask, as an ONNX graph builds it, is causal (each query sees only the keys
at or before its own position): the test :mod:`.onnx_graph` applies to the masks between the
scores ``MatMul`` and the ``Softmax`` of each attention it traces.

``g`` is the traced graph (``onnx_graph._Graph``: ``const``, ``producer``, ``ancestors_ops``).
Causal: a mask built with ``Trilu``; a constant triangle given as the mask or cut, cast or chosen
from on the way (GPT-2's ``bias`` buffer sliced to the sequence); or a comparison of key
positions with query positions both counted by ``Range`` (transformers' ``_make_causal_mask``) or
``CumSum`` (positions summed up from the attention mask).
"""

from __future__ import annotations

import numpy as np

__all__ = ["is_causal"]


def is_causal(g, masks: list[str]) -> bool:
    """A mask built with ``Trilu`` or from a constant triangular matrix is causal: the matrix given
    as the mask, or cut from a constant triangle on the way (GPT-2's ``bias`` buffer, sliced to the
    sequence and used as a ``Where`` condition, was read as an encoder's mask)."""
    for m in masks:
        if "Trilu" in g.ancestors_ops(m):
            return True
        v = g.const(m)
        if v is not None and v.ndim >= 2 and v.shape[-1] == v.shape[-2] > 1:
            sq = v.reshape(-1, *v.shape[-2:])[0]
            if not np.array_equal(sq, sq.T):
                return True
        if any(_triangle(c) for c in _mask_constants(g, m)) or _compares_positions(g, m):
            return True
    return False


#: the ops that count positions: ``Range`` (``arange``) and ``CumSum`` (positions as a running sum of
#: ones or of the attention mask, ``cumsum(mask) - 1``, as decoders that allow left padding count them)
_COUNTERS = frozenset({"Range", "CumSum"})


def _compares_positions(g, name: str) -> bool:
    """Whether the mask ``name`` is built by comparing key positions with query positions, both
    counted by ``Range`` or ``CumSum`` (transformers' ``_make_causal_mask``: ``arange(n) < (arange(n) +
    1).view(n, 1)``, as exporters of BART, Marian and T5 decoders write it; or positions summed up from
    the attention mask).  A comparison with a constant (a relative position's bucket, a window) is no
    such mask."""
    seen, todo = set(), [name]
    while todo and len(seen) < 256:
        node = g.producer.get(todo.pop())
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if node.op_type in ("Less", "LessOrEqual", "Greater", "GreaterOrEqual") and len(node.input) == 2:
            a, b = node.input
            if all(g.const(x) is None and g.ancestors_ops(x) & _COUNTERS for x in (a, b)):
                return True
        todo.extend(node.input)
    return False


# ops a mask passes through unchanged in value (cut, cast, broadcast, negated, chosen between)
_MASK_PATH = {"Slice": 1, "Cast": 1, "Unsqueeze": 1, "Squeeze": 1, "Expand": 1, "Identity": 1,
              "Reshape": 1, "Gather": 1, "Not": 1, "Where": 3}


def _mask_constants(g, name: str, depth: int = 12):
    """The constants a mask is cut or cast from, following only :data:`_MASK_PATH` ops (and
    only their data input): never the arithmetic of a position bias."""
    v = g.const(name)
    if v is not None:
        yield v
        return
    node = g.producer.get(name)
    if depth > 0 and node is not None and node.op_type in _MASK_PATH:
        for i in node.input[:_MASK_PATH[node.op_type]]:
            yield from _mask_constants(g, i, depth - 1)


def _triangle(v) -> bool:
    """A square constant ``[..., n, n]`` (n > 1) with one value on and below the diagonal and
    another above it: a causal mask, whether stored as booleans, 0/1 or 0/-inf."""
    if v.ndim < 2 or v.shape[-1] != v.shape[-2] or v.shape[-1] < 2:
        return False
    sq = v.reshape(-1, *v.shape[-2:])[0]
    low = np.tril(np.ones(sq.shape, dtype=bool))
    inside, outside = np.unique(sq[low]), np.unique(sq[~low])
    return len(inside) == 1 and len(outside) == 1 and not np.array_equal(inside, outside)
