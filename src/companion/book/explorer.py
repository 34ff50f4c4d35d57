"""An offline explorer of real query-key forms, for the survey page.

A reader picks a checkpoint of the zoo, a layer and a head (or the whole layer) and sees
the form ``M`` as a heatmap beside its symmetric and skew-symmetric parts (Eq. 16), the
norms of its rows and columns (what the directionality score thresholds, Def. 3.2) and the
two scores. Everything runs in the page: no kernel, no library, no request.

To stay small (a few hundred kB for the whole zoo), each heatmap is ``M`` averaged over
``cells x cells`` blocks (24 by default) and stored as int8 with one scale per matrix. Block means commute
with transposition (the same blocks cut rows and columns), so the page computes the two
parts of the averaged matrix exactly as it would average the parts. The row and column
norms are those of the full ``M`` (root-mean-square over at most 48 blocks of indices);
the scores are computed on the full ``M`` by :mod:`companion.core.scores`.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import torch

from ..core.scores import directionality_score, symmetry_score

__all__ = ["block_means", "block_rms", "form_summaries", "head_summaries", "explorer_data", "explorer_html",
           "embed_json", "is_explorer_html"]


def _whole(value, what: str, least: int = 1) -> int:
    """``value`` as a whole number of at least ``least``, else a one-line ``ValueError`` naming ``what``."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"the explorer's {what} must be a whole number of at least {least} (got {value!r})")
    return int(value)


def _blocks(d: int, cells: int) -> torch.Tensor:
    """``[cells, d]`` averaging matrix of a grid of (nearly) equal consecutive blocks."""
    cells = min(_whole(cells, "number of cells (or bins)"), d)
    which = torch.div(torch.arange(d) * cells, d, rounding_mode="floor")
    P = torch.zeros(cells, d, dtype=torch.float64)
    P[which, torch.arange(d)] = 1.0
    return P / P.sum(dim=1, keepdim=True)


def block_means(M: torch.Tensor, cells: int) -> torch.Tensor:
    """``M`` (``[..., d, d]``) averaged over a ``cells x cells`` grid of (nearly) equal blocks."""
    P = _blocks(M.shape[-1], cells)
    return P @ M @ P.T


def block_rms(v: torch.Tensor, bins: int = 48) -> torch.Tensor:
    """Root mean square of ``v`` (``[..., d]``) over at most ``bins`` consecutive blocks."""
    P = _blocks(v.shape[-1], bins)
    return torch.sqrt((v**2) @ P.T)


def _int8(a: np.ndarray) -> tuple[str, float]:
    scale = float(np.abs(a).max()) or 1.0
    q = np.clip(np.round(a / scale * 127), -127, 127).astype(np.int8)
    return base64.b64encode(q.tobytes()).decode(), scale


def _unit(X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``X / s`` and ``s``, ``s`` the largest magnitude of each matrix of the stack (1 where it
    is 0): norms and products of the scaled matrices neither overflow (entries of 1e300)
    nor underflow (1e-300), and scale back by ``s``."""
    s = X.abs().amax(dim=(-1, -2), keepdim=True)
    s = torch.where(s > 0, s, torch.ones_like(s))
    return X / s, s


def form_summaries(M: torch.Tensor, cells: int = 24) -> list[dict]:
    """The explorer's record of each form of a stack ``[k, d, d]``: heatmap, norms, scores."""
    M = M.detach().double().cpu()
    U, s = _unit(M)
    heat = (block_means(U, cells) * s).numpy()
    rows = (block_rms(torch.linalg.vector_norm(U, dim=-1)) * s[..., 0]).numpy()
    cols = (block_rms(torch.linalg.vector_norm(U, dim=-2)) * s[..., 0]).numpy()
    sym = np.atleast_1d(symmetry_score(M))
    dirn = np.atleast_1d(directionality_score(M))
    return [_record(heat[i], rows[i], cols[i], sym[i], dirn[i]) for i in range(M.shape[0])]


def head_summaries(Q: torch.Tensor, K: torch.Tensor, cells: int = 24) -> list[dict]:
    """:func:`form_summaries` of the head forms ``Q_h^T K_h`` (``Q, K``: ``[h, d_head, d]``),
    computed from the factors without forming any ``d x d`` matrix."""
    from ..core.scores import directionality_score_factored, symmetry_score_factored

    Q, K = Q.detach().double().cpu(), K.detach().double().cpu()
    (Q1, sq), (K1, sk) = _unit(Q), _unit(K)   # Q^T K = sq sk Q1^T K1, no product over- or underflows
    s = sq * sk
    P = _blocks(Q.shape[-1], cells)
    heat = ((P @ Q1.transpose(-1, -2)) @ (K1 @ P.T) * s).numpy()
    rows2 = torch.einsum("hri,hrs,hsi->hi", Q1, K1 @ K1.transpose(-1, -2), Q1)   # ||row i of Q1^T K1||^2
    cols2 = torch.einsum("hri,hrs,hsi->hi", K1, Q1 @ Q1.transpose(-1, -2), K1)
    rows = (block_rms(rows2.clamp_min(0).sqrt()) * s[..., 0]).numpy()
    cols = (block_rms(cols2.clamp_min(0).sqrt()) * s[..., 0]).numpy()
    sym = np.atleast_1d(symmetry_score_factored(Q, K))
    dirn = np.atleast_1d(directionality_score_factored(Q, K))
    return [_record(heat[i], rows[i], cols[i], sym[i], dirn[i]) for i in range(Q.shape[0])]


def _score(x) -> float | None:
    """A score rounded to 6 decimals; ``None`` (shown as a dash) where it is undefined (a form
    of zeros has no symmetry), never a NaN the page would print.  The page shows 3 decimals:
    rounded first to 4, a score of 0.00049 was stored as 0.0005 and shown as 0.001."""
    x = float(x)
    return round(x, 6) if np.isfinite(x) else None


def _sig5(values) -> list[float]:
    """``values`` with 5 significant digits (5 decimals would write the norms of a form at
    1e-300 as zeros)."""
    return [float(f"{x:.5g}") for x in np.asarray(values, dtype=float)]


def _record(heat, rows, cols, sym, dirn) -> dict:
    h, scale = _int8(heat)
    return {"n": heat.shape[-1], "heat": h, "scale": scale, "rows": _sig5(rows), "cols": _sig5(cols),
            "symmetry": _score(sym), "directionality": _score(dirn)}


def explorer_data(live: dict, cells: int = 24, max_heads: int = 8) -> dict:
    """``{model: {component: [layer: {"all": summary, "heads": [summary, ...]}]}}`` for the
    zoo's checkpoints (``live``: key -> :class:`companion.adapters.types.QKCheckpoint`).

    ``max_heads`` caps the heads kept per layer (the first ones), to bound the page's size.
    """
    max_heads = _whole(max_heads, "max_heads", least=0)   # a negative cap would drop the last heads
    data: dict = {}
    for key, ckpt in sorted(live.items()):
        for layer in ckpt.self_attention_layers():
            Q, K = layer.head_factors("grouped")
            h = min(layer.n_heads, max_heads)
            entry = {"index": layer.index, "all": form_summaries(layer.form("grouped")[None], cells)[0],
                     "heads": head_summaries(Q[:h], K[:h], cells), "n_heads": layer.n_heads, "d": layer.d_model}
            data.setdefault(key, {}).setdefault(layer.component, []).append(entry)
    return data


_TEMPLATE = """
<div class="qk-explorer" id="qk-explorer">
<div class="qk-controls">
  <label>model <select class="qk-model"></select></label>
  <label>stack <select class="qk-component"></select></label>
  <label>layer <select class="qk-layer"></select></label>
  <label>head <select class="qk-head"></select></label>
</div>
<div class="qk-scores"></div>
<div class="qk-panels">
  <figure><canvas class="qk-m" width="256" height="256"></canvas><figcaption>M (block means)</figcaption></figure>
  <figure><canvas class="qk-s" width="256" height="256"></canvas><figcaption>symmetric part</figcaption></figure>
  <figure><canvas class="qk-n" width="256" height="256"></canvas><figcaption>skew-symmetric part</figcaption></figure>
  <figure><canvas class="qk-norms" width="320" height="256"></canvas><figcaption>row (orange) and column (blue) norms</figcaption></figure>
</div>
</div>
<style>
.qk-explorer .qk-panels { display: flex; flex-wrap: wrap; gap: 8px; }
.qk-explorer figure { margin: 0; text-align: center; font-size: 0.8em; }
.qk-explorer canvas { border: 1px solid #ccc; image-rendering: pixelated; }
.qk-explorer .qk-controls label { margin-right: 1em; }
.qk-explorer .qk-scores { margin: 0.5em 0; font-family: monospace; }
</style>
<script>
(function () {
  const DATA = __DATA__;
  const root = document.getElementById("qk-explorer");
  const $ = (c) => root.querySelector(c);
  const fill = (sel, items) => { sel.innerHTML = ""; items.forEach(([v, t]) => sel.add(new Option(t, v))); };
  function decode(rec) {
    const bytes = Uint8Array.from(atob(rec.heat), (c) => c.charCodeAt(0));
    const a = new Float64Array(bytes.length);
    for (let i = 0; i < bytes.length; i++) a[i] = (bytes[i] > 127 ? bytes[i] - 256 : bytes[i]) * rec.scale / 127;
    return a;
  }
  function colour(v, m) {  // blue (negative) - white - red (positive)
    const t = Math.max(-1, Math.min(1, v / (m || 1)));
    const c = Math.round(255 * (1 - Math.abs(t)));
    return t >= 0 ? [255, c, c] : [c, c, 255];
  }
  function heat(canvas, a, n) {
    const ctx = canvas.getContext("2d"), s = canvas.width / n;
    let m = 0; for (const v of a) m = Math.max(m, Math.abs(v));
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
      const [r, g, b] = colour(a[i * n + j], m);
      ctx.fillStyle = `rgb(${r},${g},${b})`; ctx.fillRect(j * s, i * s, Math.ceil(s), Math.ceil(s));
    }
  }
  function norms(canvas, rows, cols) {
    const ctx = canvas.getContext("2d"), w = canvas.width, h = canvas.height;
    ctx.clearRect(0, 0, w, h);
    const m = Math.max(...rows, ...cols) || 1;
    [[rows, "#e67e22"], [cols, "#2e86c1"]].forEach(([v, col]) => {
      ctx.strokeStyle = col; ctx.lineWidth = 2; ctx.beginPath();
      v.forEach((x, i) => { const X = 10 + i * (w - 20) / Math.max(v.length - 1, 1), Y = h - 10 - x / m * (h - 20);
                            i ? ctx.lineTo(X, Y) : ctx.moveTo(X, Y); });
      ctx.stroke();
    });
  }
  function draw() {
    const layers = DATA[$(".qk-model").value][$(".qk-component").value];
    const layer = layers[+$(".qk-layer").value];
    const h = $(".qk-head").value;
    const rec = h === "all" ? layer.all : layer.heads[+h];
    const n = rec.n, a = decode(rec), s = new Float64Array(n * n), k = new Float64Array(n * n);
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
      s[i * n + j] = (a[i * n + j] + a[j * n + i]) / 2; k[i * n + j] = (a[i * n + j] - a[j * n + i]) / 2;
    }
    heat($(".qk-m"), a, n); heat($(".qk-s"), s, n); heat($(".qk-n"), k, n); norms($(".qk-norms"), rec.rows, rec.cols);
    const score = (x) => (typeof x === "number" ? x.toFixed(3).replace(/^-(0[.]0+)$/, "$1") : "\u2014");  // never -0.000
    $(".qk-scores").textContent = `symmetry ${score(rec.symmetry)}   directionality ${score(rec.directionality)}` +
      `   (width ${layer.d}, ${layer.n_heads} head${layer.n_heads === 1 ? "" : "s"})`;
    root.dataset.shown = [$(".qk-model").value, $(".qk-component").value, $(".qk-layer").value, h].join("/");
  }
  function onLayer() {
    const layer = DATA[$(".qk-model").value][$(".qk-component").value][+$(".qk-layer").value];
    fill($(".qk-head"), [["all", "all heads (the layer's form)"]].concat(layer.heads.map((_, i) => [String(i), `head ${i}`])));
    draw();
  }
  function onComponent() {
    const layers = DATA[$(".qk-model").value][$(".qk-component").value];
    fill($(".qk-layer"), layers.map((l, i) => [String(i), `layer ${l.index}`])); onLayer();
  }
  function onModel() { fill($(".qk-component"), Object.keys(DATA[$(".qk-model").value]).map((c) => [c, c])); onComponent(); }
  fill($(".qk-model"), Object.keys(DATA).map((k) => [k, k]));
  $(".qk-model").onchange = onModel; $(".qk-component").onchange = onComponent;
  $(".qk-layer").onchange = onLayer; $(".qk-head").onchange = draw;
  onModel();
})();
</script>
"""


def embed_json(data) -> str:
    """``data`` as JSON that is safe inside an HTML ``<script>``: ``<``, ``>``, ``&`` and the
    two line separators JavaScript reads as line ends are written as ``\\uXXXX`` escapes, so
    a model's name holding ``</script>`` or ``<!--`` cannot end the script or open a comment,
    and the page's script reads the same data.  A NaN or an infinity (no JSON) is refused."""
    try:
        text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    except ValueError:
        raise ValueError("the explorer's data holds a NaN or an infinity, which its page cannot read as a number; "
                         "write None for a value that is undefined (form_summaries does).") from None
    for ch in ("<", ">", "&", "\u2028", "\u2029"):
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text


def explorer_html(data: dict) -> str:
    """The explorer as one self-contained HTML fragment (data inline, no outside request)."""
    if not data:
        raise ValueError("the explorer needs at least one checkpoint's forms (explorer_data returned nothing)")
    for key, parts in data.items():   # the page reads the data as a script's object, where this name sets
        for name in (key, *(parts if isinstance(parts, dict) else ())):   # the object's prototype: the model
            if str(name) == "__proto__":                                   # would vanish from its list
                raise ValueError(f"the explorer cannot show a model or stack named {name!r}; rename its key")
    return _TEMPLATE.replace("__DATA__", embed_json(data))


def is_explorer_html(fragment: str) -> bool:
    """Whether ``fragment`` is exactly what :func:`explorer_html` writes for the data it embeds:
    the template's own page and script around JSON that re-embeds to the same bytes (so every
    ``<``, ``>`` and ``&`` of the data is an escape and nothing but data sits in the script).
    The notebooks carry such an output as it is (its script is this module's); any other HTML
    that runs code is not carried (:func:`companion.book.editions.notebook_cells.carry_outputs`)."""
    head, tail = _TEMPLATE.split("__DATA__")
    if not (isinstance(fragment, str) and fragment.startswith(head) and fragment.endswith(tail)
            and len(fragment) > len(head) + len(tail)):
        return False
    try:
        data = json.loads(fragment[len(head):len(fragment) - len(tail)])
    except ValueError:
        return False
    return isinstance(data, dict) and bool(data) and explorer_html(data) == fragment
