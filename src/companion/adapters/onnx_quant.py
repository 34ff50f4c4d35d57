"""Integer query/key weights in an ONNX graph, found by following the projection's nodes.

Quantizing exporters give the stored weights anonymous names (``onnx::MatMul_1022_quantized``,
``val_57_q``), so a projection's weight, scale and zero point are found from the nodes that
use them.  Three patterns are read, each dequantized exactly as the graph computes it:

* onnxruntime's *dynamic* quantization of a projection,
  ``Mul(Cast(MatMulInteger(x_q, W_q, x_zp, w_zp)), Mul(x_scale, w_scale))``: the weight is
  ``W = (W_q - w_zp) * w_scale`` (``[in, out]``; one scale for the tensor or one per output
  column); the activations' own rounding (``DynamicQuantizeLinear``) is not part of the weight.
  With a bias the product sits under an ``Add`` (BERT); without one it is the projection (T5);
* *weight-only* int8, ``MatMul(x, Mul(Cast(W_q), scale))``: ``W = W_q * scale``;
* ``MatMul(x, DequantizeLinear(W_q, scale[, zero_point]))``: ``W = (W_q - zero_point) * scale``
  along the operator's ``axis`` (the output columns, or one scale for the tensor).

The stored weight must be int8 or uint8: any other element type (int4, int16, a float8) is
refused by name, since its rule is not one of these.
"""

from __future__ import annotations

__all__ = ["Untraceable", "integer_projection", "weight_only_projection", "INTEGER_TYPES"]


class Untraceable(Exception):
    """A node on an attention's path is not the pattern expected there."""


#: ONNX element types a quantized q/k weight may have: TensorProto.INT8 = 3, UINT8 = 2
INTEGER_TYPES = {3: "int8", 2: "uint8"}
_TYPE_NAMES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
               10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16",
               17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz",
               21: "uint4", 22: "int4", 23: "float4e2m1"}


def _stored_integer_matrix(g, w: str, node) -> None:
    """``w`` is an int8/uint8 matrix initializer; else one refusal naming what it is."""
    if w not in g.inits or len(g.inits[w].dims) != 2:
        raise Untraceable(f"{node.op_type} {node.name!r} has no integer weight matrix initializer")
    t = g.inits[w].data_type
    if t not in INTEGER_TYPES:
        raise Untraceable(f"the weight {w!r} of {node.op_type} {node.name!r} is stored as "
                          f"{_TYPE_NAMES.get(t, f'ONNX element type {t}')}, a type this reader does not "
                          "dequantize (int8 and uint8 only)")


def _stored(g, name: str) -> str | None:
    """``name`` when it is an initializer (a stored scale or zero point), else ``None``."""
    return name if name and name in g.inits else None


def integer_projection(g, name: str) -> dict | None:
    """``Mul(Cast(MatMulInteger(x_q, W, x_zp, w_zp)), Mul(x_scale, w_scale))`` at ``name``, else ``None``.

    Returns the names needed to dequantize ``W`` and the projection's input ``x`` (the input
    of the ``DynamicQuantizeLinear`` that made ``x_q``).
    """
    node = g.producer.get(name)
    if node is None or node.op_type != "Mul" or len(node.input) != 2:
        return None
    for prod_in, scale_in in (node.input, node.input[::-1]):
        p = g.producer.get(prod_in)
        while p is not None and p.op_type == "Cast":
            p = g.producer.get(p.input[0])
        if p is None or p.op_type != "MatMulInteger":
            continue
        inputs = list(p.input) + [""] * (4 - len(p.input))
        x_q, w, _, w_zp = inputs[:4]
        _stored_integer_matrix(g, w, p)
        if w_zp and w_zp not in g.inits:
            raise Untraceable(f"MatMulInteger {p.name!r}: the weight zero point is computed, not stored")
        s = g.producer.get(scale_in)
        w_scale = None
        if scale_in in g.inits:
            w_scale = scale_in
        elif s is not None and s.op_type == "Mul":
            stored = [i for i in s.input if i in g.inits]
            if len(stored) == 1:
                w_scale = stored[0]
        if w_scale is None:
            raise Untraceable(f"MatMulInteger {p.name!r}: no stored weight scale in {node.name!r}")
        q = g.producer.get(x_q)
        x = q.input[0] if q is not None and q.op_type == "DynamicQuantizeLinear" else x_q
        return dict(weight=w, zero_point=w_zp or None, weight_scale=w_scale, input=x, scheme="dynamic int8")
    return None


def _axis(node, default: int = 1) -> int:
    attrs = {a.name: a for a in node.attribute}
    # block_size is looked at whatever the attributes' order: blocks read as one scale per
    # column would broadcast the [in, out / block] scales into another matrix
    if "block_size" in attrs and attrs["block_size"].i:
        raise Untraceable(f"DequantizeLinear {node.name!r} uses blocks of {attrs['block_size'].i}, which this "
                          "reader does not dequantize")
    return int(attrs["axis"].i) if "axis" in attrs else default


def weight_only_projection(g, w: str) -> dict | None:
    """The weight operand ``w`` of a ``MatMul`` computed from a stored integer matrix, else ``None``.

    ``Mul(Cast(W_q), scale)`` (either operand order) or ``DequantizeLinear(W_q, scale[, zp])``;
    returns ``weight``, ``zero_point`` (or ``None``) and ``weight_scale`` names.
    """
    node = g.producer.get(w)
    if node is None:
        return None
    if node.op_type == "DequantizeLinear":
        inputs = list(node.input) + [""] * (3 - len(node.input))
        stored, scale, zp = inputs[:3]
        _stored_integer_matrix(g, stored, node)
        if _stored(g, scale) is None or (zp and _stored(g, zp) is None):
            raise Untraceable(f"DequantizeLinear {node.name!r}: its scale or zero point is computed, not stored")
        scale_dims = list(g.inits[scale].dims)
        axis = _axis(node)
        if scale_dims and scale_dims != [1] and axis not in (1, -1):
            raise Untraceable(f"DequantizeLinear {node.name!r} scales along axis {axis}, not the "
                              "output columns of a [in, out] weight")
        return dict(weight=stored, zero_point=zp or None, weight_scale=scale, scheme="DequantizeLinear int8")
    if node.op_type != "Mul" or len(node.input) != 2:
        return None
    for cast_in, scale_in in (node.input, node.input[::-1]):
        c = g.producer.get(cast_in)
        if c is None or c.op_type != "Cast" or not c.input or c.input[0] not in g.inits:
            continue
        _stored_integer_matrix(g, c.input[0], c)
        if _stored(g, scale_in) is None:
            raise Untraceable(f"Mul {node.name!r}: the scale of the integer weight {c.input[0]!r} is "
                              "computed, not stored")
        return dict(weight=c.input[0], zero_point=None, weight_scale=scale_in, scheme="weight-only int8")
    return None
