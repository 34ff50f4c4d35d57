"""Test helper: the query-key logits a model computes, captured from its own forward pass.

Nothing here reads the checkpoint layout the way the adapters do.  The logits are taken
where the model itself holds per-head queries and keys:

* ``"interface"``: models that call an attention function from transformers'
  ``AttentionInterface``; a registered function records ``query [b, H, s, dh]`` and
  ``key [b, H_kv, s, dh]`` and then runs SDPA;
* ``"attn_method"``: models with their own ``_attn(query, key, ...)`` method (GPT-1,
  ImageGPT, GPT-Neo, GPT-J before transformers 5.24), wrapped on the instance; a model
  whose attention has no such method any more is recorded through ``"interface"``;
* ``"proj_outputs"``: the outputs of separate query/key ``Linear`` modules (DeBERTa-v2,
  WavLM: multi-head attention, where the sum over heads is the full dot product);
* ``"deberta_v1"``: DeBERTa v1's ``transpose_for_scores`` output, split as the model does;
* ``"functional_mha"``: models that hand their projection weights to
  ``torch.nn.functional.multi_head_attention_forward`` (WavLM); the weights passed as
  ``q_proj_weight``/``k_proj_weight`` and the inputs are recorded, and the logits follow
  PyTorch's definition ``q = x Wq^T + b_q`` (summed over heads: the full dot product).

Inputs ``x`` (query side) and ``y`` (key side) are the inputs of the query and key
projection modules.  Rotary embeddings are avoided by giving decoder models sequences of
length one (rotation at position 0 is the identity); biases are removed by double
centring: ``H L H = (H X) M (H Y)^T`` for ``L = X M Y^T + X u 1^T + 1 v^T Y^T + c``.
"""

from __future__ import annotations

import re
from collections import defaultdict

import torch

_CAPTURED: dict[int, list] = defaultdict(list)
_REGISTERED = False
CAPTURE = "companion_capture"


def _register():
    global _REGISTERED
    if _REGISTERED:
        return
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def capture(module, query, key, value, attention_mask, **kwargs):
        _CAPTURED[id(module)].append((query.detach().clone(), key.detach().clone()))
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)

    AttentionInterface.register(CAPTURE, capture)
    _REGISTERED = True


def _flat_heads(t: torch.Tensor) -> torch.Tensor:
    """[b, H, s, dh] -> [b*s, H, dh]."""
    b, h, s, dh = t.shape
    return t.permute(0, 2, 1, 3).reshape(b * s, h, dh)


def _flat_tokens(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1, t.shape[-1])


def _centre(L: torch.Tensor) -> torch.Tensor:
    L = L - L.mean(dim=0, keepdim=True)
    return L - L.mean(dim=1, keepdim=True)


class LogitRecorder:
    """Record, per self-attention layer, query inputs X, key inputs Y and logits L."""

    def __init__(self, model, layers: list[tuple[str, int, str, str]], mode: str,
                 key_transposed: bool = False):
        """``layers``: (component, index, q-module name, k-module name) per layer."""
        self.model = model
        self.mode = mode
        self.key_transposed = key_transposed
        modules = dict(model.named_modules())
        self.layers = []
        self.handles = []
        self.calls: dict[tuple[str, int], list] = defaultdict(list)
        for component, index, qname, kname in layers:
            qmod, kmod = modules[qname], modules[kname]
            attn = modules[qname.rsplit(".", 1)[0]]
            self.layers.append((component, index, qmod, kmod, attn))
        if mode == "attn_method" and not all(hasattr(a, "_attn") for *_, a in self.layers):
            # the model moved onto transformers' attention interface (GPT-J since
            # transformers 5.24): its per-head queries and keys are taken there instead
            mode = self.mode = "interface"
        self._inputs: dict[int, list] = defaultdict(list)
        self._outputs: dict[int, list] = defaultdict(list)
        if mode == "interface":
            _register()
            model.set_attn_implementation(CAPTURE)
        self._restore = None
        if mode == "functional_mha":
            self._patch_functional_mha()
        for component, index, qmod, kmod, attn in self.layers:
            # ids are reused once an object is freed: drop anything an earlier model left
            # under this module's id (seen as a stale extra capture under xdist)
            _CAPTURED.pop(id(attn), None)
            for mod in {id(qmod): qmod, id(kmod): kmod}.values():
                self.handles.append(mod.register_forward_hook(self._hook))
            if mode == "attn_method":
                self._wrap_attn(attn)
            if mode == "deberta_v1":
                self._wrap_deberta(attn)

    def _hook(self, module, args, output):
        self._inputs[id(module)].append(args[0].detach().clone())
        self._outputs[id(module)].append(output.detach().clone())

    def _patch_functional_mha(self):
        import torch.nn.functional as F

        orig = F.multi_head_attention_forward
        by_weight = {id(qmod.weight): attn for _, _, qmod, _, attn in self.layers}

        def wrapped(query, key, value, *a, **kw):
            attn = by_weight.get(id(kw.get("q_proj_weight")))
            if attn is not None:
                _CAPTURED[id(attn)].append((query.detach().clone(), key.detach().clone(),
                                            kw["q_proj_weight"].detach().clone(),
                                            kw["k_proj_weight"].detach().clone()))
            return orig(query, key, value, *a, **kw)

        F.multi_head_attention_forward = wrapped
        self._restore = lambda: setattr(F, "multi_head_attention_forward", orig)

    def _wrap_attn(self, attn):
        orig = attn._attn

        def wrapped(query, key, value, *a, **kw):
            k = key.transpose(-1, -2) if self.key_transposed else key
            _CAPTURED[id(attn)].append((query.detach().clone(), k.detach().clone()))
            return orig(query, key, value, *a, **kw)

        attn._attn = wrapped

    def _wrap_deberta(self, attn):
        orig = attn.transpose_for_scores

        def wrapped(x):
            out = orig(x)
            if out.shape[-1] == 3 * attn.attention_head_size:  # the fused in_proj output
                q, k, _ = out.chunk(3, dim=-1)  # as DisentangledSelfAttention.forward does
                _CAPTURED[id(attn)].append((q.detach().clone(), k.detach().clone()))
            return out

        attn.transpose_for_scores = wrapped

    def results(self):
        """{(component, index): [(X, Y, L), ...]} with one entry per call of the layer."""
        from transformers.models.llama.modeling_llama import repeat_kv

        out = {}
        for component, index, qmod, kmod, attn in self.layers:
            xs, ys = self._inputs[id(qmod)], self._inputs[id(kmod)]
            entries = []
            if self.mode == "functional_mha":
                for xq, xk, wq, wk in _CAPTURED.pop(id(attn), []):
                    X, Y = _flat_tokens(xq.transpose(0, 1)), _flat_tokens(xk.transpose(0, 1))
                    L = (X.double() @ wq.double().T) @ (Y.double() @ wk.double().T).T
                    entries.append((X, Y, L))
            elif self.mode == "proj_outputs":
                qs, ks = self._outputs[id(qmod)], self._outputs[id(kmod)]
                for x, y, q, k in zip(xs, ys, qs, ks):
                    L = _flat_tokens(q).double() @ _flat_tokens(k).double().T
                    entries.append((_flat_tokens(x), _flat_tokens(y), L))
            else:
                caps = _CAPTURED.pop(id(attn), [])
                assert len(caps) == len(xs), (component, index, len(caps), len(xs))
                for x, y, (q, k) in zip(xs, ys, caps):
                    n_rep = q.shape[1] // k.shape[1]
                    k = repeat_kv(k, n_rep)  # the model's own query/key head pairing
                    Q, K = _flat_heads(q).double(), _flat_heads(k).double()
                    L = torch.einsum("nhd,mhd->nm", Q, K)
                    entries.append((_flat_tokens(x), _flat_tokens(y), L))
            out[(component, index)] = entries
        return out

    def close(self):
        for h in self.handles:
            h.remove()
        if self._restore is not None:
            self._restore()


def named_layers(model, patterns: list[tuple[str, str, str]]):
    """(component, index, q name, k name) from module names with ``{i}`` for the layer."""
    names = set(n for n, _ in model.named_modules())
    layers = []
    for component, qpat, kpat in patterns:
        regex = re.compile(re.escape(qpat).replace(r"\{i\}", r"(\d+)"))
        for n in sorted(names):
            m = regex.fullmatch(n)
            if m:
                i = int(m.group(1))
                kname = kpat.format(i=i)
                assert kname in names, kname
                layers.append((component, i, n, kname))
    return layers


def compare(M: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, L: torch.Tensor,
            scale: float = 1.0) -> float:
    """Relative error between the centred logits and ``scale * x^T M y`` (centred)."""
    X, Y = X.double(), Y.double()
    pred = _centre(scale * X @ M.double() @ Y.T)
    obs = _centre(L.double())
    assert obs.norm() > 0, "captured logits are constant: the check would be vacuous"
    return float((pred - obs).norm() / obs.norm())


def encoder_logit_errors(model, ckpt, q_pattern: str, k_pattern: str, mode: str,
                         input_ids: torch.Tensor) -> dict[int, float]:
    """Run a double-precision encoder on ``input_ids``, record each layer's logits and return
    :func:`compare`'s error of every layer's form ``M`` (from ``ckpt``) against them."""
    from companion.core.bilinear import bilinear_form

    layers = named_layers(model, [("encoder", q_pattern, k_pattern)])
    rec = LogitRecorder(model, layers, mode)
    with torch.no_grad():
        model(input_ids=input_ids)
    rec.close()
    captured = rec.results()
    errors = {}
    for layer in ckpt.layers:
        (X, Y, L), = captured[("encoder", layer.index)]
        M = bilinear_form(layer.Wq.double(), layer.Wk.double(), layer.n_heads)
        errors[layer.index] = compare(M, X, Y, L)
    return errors
