"""A float forward pass of a Bergamot "tiny" Marian translation model, from the weights
:class:`~companion.adapters.marian_bin.MarianSource` reads.

Nothing else runs this format in Python, so this is the reference the reader is checked
against: greedy translations made here must equal those of the package's own engine
(``tests/test_adapters_marian.py``), which settles how the stored matrices are oriented.
The model, as its ``special:model.yml`` says: a 6-layer post-norm Transformer encoder
(width 256, 8 heads, ReLU feed-forward of 1536), embeddings scaled by ``sqrt(256)`` plus
sinusoidal positions (sines then cosines), the embedding tied to the output layer (with an
output bias); a 2-layer decoder whose self-attention is an SSRU cell
``f = sigmoid(x W_f + b_f)``, ``c_t = f * c_{t-1} + (1 - f) * (x W)``, output ``relu(c_t)``,
then attention over the encoder and a feed-forward block, each followed by residual and
layer norm.  The first target input is a zero vector.  Everything runs in float64; the
engine's int8 activations are not emulated (greedy choices agree all the same).
"""

from __future__ import annotations

import numpy as np

from ..base.errors import CompanionError
from .marian_bin import MarianSource

__all__ = ["MarianModel"]


class MarianModel:
    """Encoder, greedy decoder and the encoder's per-layer inputs of one Marian model."""

    def __init__(self, source: MarianSource):
        self.src = source
        cfg = source.marian_config
        counts = {}
        for key in ("dim-emb", "transformer-heads", "enc-depth", "dec-depth"):
            value = cfg.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                # a missing or malformed count said by name, never a KeyError from deep inside
                raise CompanionError(f"{source.path}: special:model.yml gives {key} as {value!r}, not a positive "
                                     "whole number, which the forward pass needs; the file is not a complete "
                                     "Marian transformer.")
            counts[key] = value
        self.dim, self.heads = counts["dim-emb"], counts["transformer-heads"]
        self.enc_depth, self.dec_depth = counts["enc-depth"], counts["dec-depth"]
        if self.dim % self.heads or self.dim % 2:
            raise CompanionError(f"{source.path}: special:model.yml's dim-emb {self.dim} does not split into "
                                 f"{self.heads} heads and into sines and cosines; the forward pass cannot run it.")
        self._cache: dict[str, np.ndarray] = {}
        self.E = self.W("Wemb")

    def W(self, name: str) -> np.ndarray:
        if name not in self._cache:
            if name not in self.src._items:
                raise CompanionError(f"{self.src.path} has no item {name!r}, which the forward pass of a Marian "
                                     "transformer needs; the file is incomplete or not such a model.")
            self._cache[name] = self.src.matrix(name)
        return self._cache[name]

    def _ln(self, x, p):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return self.W(p + "_ln_scale") * (x - m) / np.sqrt(v + 1e-9) + self.W(p + "_ln_bias")

    def positions(self, n: int, start: int = 0) -> np.ndarray:
        half = self.dim // 2
        v = np.arange(start, start + n)[:, None] * np.exp(np.arange(half) * -(np.log(10000.0) / (half - 1)))[None]
        return np.concatenate([np.sin(v), np.cos(v)], -1)

    def _attention(self, xq, xkv, p):
        W = self.W
        q, k, v = (x @ W(f"{p}_W{c}") + W(f"{p}_b{c}") for x, c in ((xq, "q"), (xkv, "k"), (xkv, "v")))
        dh = q.shape[-1] // self.heads
        split = lambda t: t.reshape(len(t), self.heads, dh).transpose(1, 0, 2)  # noqa: E731
        L = split(q) @ split(k).transpose(0, 2, 1) / np.sqrt(dh)
        P = np.exp(L - L.max(-1, keepdims=True))
        P /= P.sum(-1, keepdims=True)
        return (P @ split(v)).transpose(1, 0, 2).reshape(len(xq), -1) @ W(p + "_Wo") + W(p + "_bo")

    def _ffn(self, x, p):
        W = self.W
        h = np.maximum(0, x @ W(p + "_ffn_W1") + W(p + "_ffn_b1")) @ W(p + "_ffn_W2") + W(p + "_ffn_b2")
        return self._ln(x + h, p + "_ffn_ffn")

    def encode(self, ids, keep_inputs: bool = False):
        """The encoder's output; with ``keep_inputs`` also each layer's input ``[n, dim]``."""
        x = self.E[np.asarray(ids)] * np.sqrt(self.dim) + self.positions(len(ids))
        inputs = []
        for layer in range(1, self.enc_depth + 1):
            p = f"encoder_l{layer}"
            inputs.append(x)
            x = self._ln(x + self._attention(x, x, p + "_self"), p + "_self_Wo")
            x = self._ffn(x, p)
        return (x, inputs) if keep_inputs else x

    def translate(self, ids, max_len: int | None = None) -> list[int]:
        """Greedy decoding until ``</s>`` (id 0); ``ids`` end with ``</s>`` as Marian's do."""
        enc = self.encode(ids)
        cells = [np.zeros(self.dim) for _ in range(self.dec_depth)]
        prev, out = np.zeros(self.dim), []
        bias = self.W("decoder_ff_logit_out_b")[0]
        for t in range(max_len or int(2.5 * len(ids))):
            x = (prev * np.sqrt(self.dim) + self.positions(1, start=t)[0])[None]
            for layer in range(1, self.dec_depth + 1):
                p = f"decoder_l{layer}"
                f = 1 / (1 + np.exp(-(x @ self.W(p + "_rnn_Wf") + self.W(p + "_rnn_bf"))))[0]
                cells[layer - 1] = f * cells[layer - 1] + (1 - f) * (x @ self.W(p + "_rnn_W"))[0]
                x = self._ln(x + np.maximum(0, cells[layer - 1])[None], p + "_rnn_ffn")
                x = self._ln(x + self._attention(x, enc, p + "_context"), p + "_context_Wo")
                x = self._ffn(x, p)
            token = int(np.argmax(x[0] @ self.E.T + bias))
            if token == 0:
                break
            out.append(token)
            prev = self.E[token]
        return out
