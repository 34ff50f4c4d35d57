"""Premises of Thm. S1.12, Cor. S1.13 and Thm. S1.14 measured on small trained models.

The theorems of Appendix S1.4 rest on statements about the coefficients ``beta_ij`` of the
rank-one update (Prop. 2.2) and about the spread of row and column norms of ``W_qk``.  This
module measures them on :class:`~companion.core.tiny_attention.TinyAttentionModel` with an
explicit matrix per layer, so that ``beta_ij = dL/ds_ij`` is read off the logits:

* :func:`update_anatomy` splits the summed update of one batch at initialisation into its
  diagonal terms (``i = j``, symmetric by construction) and the rest, and reports how close
  it is to rank one and how its singular vectors sit relative to the ``[MASK]`` embedding
  and to the mean input; the symmetry of a rank-one matrix ``u v^T`` is ``cos(u, v)^2``.
* :func:`train_and_measure` trains with one objective and, at chosen steps, records the
  symmetry of each layer's form, the statistics of ``(beta_ij, beta_ji)`` pairs
  (Thm. S1.14's premise, Eqs. S113-S114) and the variances of row and column norms
  (Eqs. S100-S101, S103).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..base.errors import CompanionError
from ..core.scores import symmetry_score
from ..core.theory import beta_pair_statistics, norm_spread
from ..core.tiny_attention import TinyAttentionModel, objective_loss

__all__ = ["update_anatomy", "train_and_measure", "log_variance_ratio_null"]

_OBJECTIVES = ("autoregressive", "bidirectional")


def _check(objective: str, seqs) -> torch.Tensor:
    if objective not in _OBJECTIVES:
        raise CompanionError(f"objective must be one of {_OBJECTIVES}, got {objective!r}.")
    raw = np.asarray(seqs)
    if raw.size and (not np.issubdtype(raw.dtype, np.integer) or raw.min() < 0):   # a cast read 1.7 as token 1
        what = f"{raw.dtype} (float ids)" if not np.issubdtype(raw.dtype, np.integer) else f"the id {int(raw.min())}"
        raise CompanionError(f"sequences hold {what}; pass token ids, whole numbers >= 0, in an integer array.")
    seqs = torch.as_tensor(raw, dtype=torch.long)
    if seqs.ndim != 2:
        raise CompanionError(f"sequences must be 2-D [n_sequences, N], got shape {tuple(seqs.shape)}.")
    return seqs


def _loss(model, batch, objective, gen, mask_id, mask_rate=0.15):
    return objective_loss(model, batch, objective, gen, mask_id, mask_rate)


def update_anatomy(seqs, objective: str, d: int = 32, n_batches: int = 6, batch_size: int = 32,
                   seed: int = 0) -> dict:
    """Anatomy of the summed update ``G = sum beta_ij x_i x_j^T`` of a one-layer model at init.

    Returns the symmetry of ``G``, the share of ``||G||_F^2`` in its top singular value, the
    cosine between its top left (query-side) and right (key-side) singular vectors, the
    cosines of the top left vector with the ``[MASK]`` embedding and with the mean input,
    and the share of ``||G||_F`` carried by the diagonal terms ``beta_ii x_i x_i^T``.
    """
    seqs = _check(objective, seqs)
    V = int(seqs.max()) + 2
    model = TinyAttentionModel(V, d=d, n_layers=1, explicit=True, max_len=seqs.shape[1], seed=seed).double()
    gen = torch.Generator().manual_seed(seed)
    G = torch.zeros(d, d, dtype=torch.float64)
    diag = torch.zeros(d, d, dtype=torch.float64)
    inputs = []
    for _ in range(n_batches):
        batch = seqs[torch.randint(len(seqs), (batch_size,), generator=gen)]
        model.zero_grad()
        loss, _ = _loss(model, batch, objective, gen, V - 1)
        loss.backward()
        beta = model.store["scores"][0].grad[:, 0].detach()
        X = model.store["inputs"][0].detach()
        G += model.blocks[0].W.grad.detach()
        diag += torch.einsum("nii,nia,nic->ac", beta, X, X)
        inputs.append(X.reshape(-1, d))
    G, diag = G.numpy(), diag.numpy()
    u, s, vt = np.linalg.svd(G)
    mean_input = torch.cat(inputs).mean(0).numpy()
    e_mask = model.emb.weight[V - 1].detach().numpy()

    def cos(a, b):
        return float(abs(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b)))

    return {"symmetry": symmetry_score(G),
            "top_singular_share": float(s[0] ** 2 / (s ** 2).sum()),
            "cos_left_right": float(u[:, 0] @ vt[0]),
            "cos_left_mask": cos(u[:, 0], e_mask),
            "cos_left_mean_input": cos(u[:, 0], mean_input),
            "cos_right_mean_input": cos(vt[0], mean_input),
            "diagonal_share": float(np.linalg.norm(diag) / np.linalg.norm(G))}


def train_and_measure(seqs, objective: str, steps: int, checkpoints, d: int = 32, n_layers: int = 2,
                      batch_size: int = 32, lr: float = 3e-3, seed: int = 0) -> pd.DataFrame:
    """Train a model with explicit forms ``W_l`` with Adam; measure at each checkpoint.

    At every step in ``checkpoints`` (and before any update when 0 is listed) one fresh
    batch is passed forward and backward *without* an update, and per layer the table gets
    ``symmetry`` of ``W_l``, the ``beta`` pair statistics (``correlation`` and ``same_sign``
    over pairs where both coefficients are non-zero, ``one_zero`` the share of pairs where
    one is zero) and ``row_var``, ``col_var`` of the row and column norms of ``W_l``.
    """
    seqs = _check(objective, seqs)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # models this small train fastest on one thread
    try:
        return _train_and_measure(seqs, objective, steps, checkpoints, d, n_layers, batch_size, lr, seed)
    finally:
        torch.set_num_threads(threads)


def _train_and_measure(seqs, objective, steps, checkpoints, d, n_layers, batch_size, lr, seed):
    if steps < 0 or any(c < 0 or c > steps for c in checkpoints):
        raise CompanionError(f"checkpoints must lie in [0, steps={steps}], got {list(checkpoints)}.")
    V = int(seqs.max()) + 2
    model = TinyAttentionModel(V, d=d, n_layers=n_layers, explicit=True, max_len=seqs.shape[1], seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed + 1)
    probe = torch.Generator().manual_seed(seed + 2)
    wanted, rows = set(checkpoints), []
    for step in range(steps + 1):
        if step in wanted:
            batch = seqs[torch.randint(len(seqs), (batch_size,), generator=probe)]
            model.zero_grad()
            loss, _ = _loss(model, batch, objective, probe, V - 1)
            loss.backward()
            for l, block in enumerate(model.blocks):
                W = block.W.detach().double().numpy()
                beta = model.store["scores"][l].grad[:, 0].detach().double().numpy()
                rows.append({"objective": objective, "step": step, "layer": l, "seed": seed,
                             "symmetry": symmetry_score(W), **beta_pair_statistics(beta),
                             **{k: v for k, v in norm_spread(W).items() if k in ("row_var", "col_var")}})
        if step == steps:
            break
        batch = seqs[torch.randint(len(seqs), (batch_size,), generator=gen)]
        loss, n_pred = _loss(model, batch, objective, gen, V - 1)
        opt.zero_grad()
        (loss / n_pred).backward()
        opt.step()
    return pd.DataFrame(rows)


def log_variance_ratio_null(d: int, n_samples: int = 2000, seed: int = 0) -> np.ndarray:
    """``log(row_var / col_var)`` of the norms of i.i.d. Gaussian ``d x d`` matrices.

    The reference for Cor. S1.13 (Eq. S103): a matrix whose rows and columns are
    exchangeable has this distribution, centred on zero.
    """
    for name, v, low in (("d", d, 2), ("n_samples", n_samples, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            # d = 1: one row and one column have no spread, and every ratio (the band) was NaN
            raise CompanionError(f"log_variance_ratio_null needs {name} a whole number >= {low}; got {v!r}.")
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n_samples, d, d))
    rows, cols = np.linalg.norm(M, axis=2), np.linalg.norm(M, axis=1)
    return np.log(rows.var(axis=1, ddof=1) / cols.var(axis=1, ddof=1))


# ------------------------------------------------------------------- Thm. S1.12's premise on real text


def wikipedia_windows(n: int = 64, kind: str = "document-aligned") -> np.ndarray:
    """Windows of ``n`` WordPiece ids (all-MiniLM-L6-v2's tokenizer) of the Wikipedia corpus.

    ``document-aligned``: one window per document, its first ``n`` tokens (documents shorter
    than ``n`` are left out); ``packed``: the documents concatenated and cut into
    consecutive windows, as the training runs see them.
    """
    from .stdlib_corpus import minilm_tokenizer
    from ..train.text.data import load_texts

    if kind not in ("document-aligned", "packed"):
        raise CompanionError(f"kind must be 'document-aligned' or 'packed'; got {kind!r}.")
    tok = minilm_tokenizer()
    docs = [tok.encode(t, add_special_tokens=False) for t in load_texts("wikipedia")]
    if kind == "document-aligned":
        rows = [d[:n] for d in docs if len(d) >= n]
        return np.asarray(rows, dtype=np.int64)
    flat = np.fromiter((i for d in docs for i in d), dtype=np.int64)
    return flat[: flat.size // n * n].reshape(-1, n)


def context_ratio_share(seqs, vocab_size: int, min_count: int = 100, n_boot: int = 2000,
                        level: float = 0.95, seed: int = 0, n_bag: int = 20000) -> dict:
    """Eq. S96's premise on windows: the share of frequent-token occurrences whose type is
    more often context than predicted (``mu_c > mu_p``, Eqs. S72-S73).

    The share is a mean of indicators, ``1[mu_c > mu_p]`` per type weighted by its
    occurrences.  An indicator jumps when a type's ratio crosses 1, so a resampled share jumps
    too, and a percentile interval can leave the plug-in share at its own edge (one heavy type
    whose ratio sits at 1 is in or out).  The interval reported is therefore that of the
    *bagged* share -- the mean of the share over bootstrap resamples of whole windows, each
    type counted with the probability that its resampled ratio is above 1 -- with the
    infinitesimal-jackknife standard error of Efron (2014, *J. Amer. Statist. Assoc.* 109,
    991-1007) and the Monte Carlo bias correction of Wager, Hastie & Efron (2014, *JMLR* 15,
    1625-1651): ``V = sum_j cov_j^2 - n/B^2 sum_b (t_b - mean t)^2``, with ``cov_j`` the
    covariance over resamples of window ``j``'s weight with the share, and a normal interval
    ``bagged +- z sd`` (Poisson(1) weights, ``n_bag`` resamples).

    Returns ``share`` (the plug-in share), ``bagged``, ``se`` and its interval ``low`` and
    ``high``; ``low_percentile`` and ``high_percentile`` (the percentile interval of the
    plug-in share over ``n_boot`` resamples, rules v2's interval, shown for comparison);
    one-sided p-values of the bagged share against one half; ``n_windows``, ``n_types`` and
    ``per_type``: a table of the frequent types' ``ratio = mu_c / mu_p`` with its percentile
    interval, occurrence count and ``p_above``, the share of resamples with ratio above 1.
    """
    from scipy import sparse
    from scipy.stats import norm

    from ..core.theory import autoregressive_counts

    seqs = np.asarray(seqs)
    if seqs.ndim != 2 or not np.issubdtype(seqs.dtype, np.integer):
        raise CompanionError(f"seqs must be a 2-D array of token ids [n_windows, N]; got shape "
                             f"{seqs.shape} of {seqs.dtype}.")
    n_win, N = seqs.shape
    if n_win < 2 or n_bag < 10 or n_boot < 100:
        raise CompanionError(f"need at least 2 windows, n_boot >= 100 and n_bag >= 10; got {n_win} windows, "
                             f"n_boot={n_boot}, n_bag={n_bag}.")
    occ = np.bincount(seqs.ravel(), minlength=vocab_size)
    types = np.flatnonzero(occ >= min_count)
    if types.size == 0:
        raise CompanionError(f"no token type occurs {min_count} times in {n_win} windows; use more text "
                             "or a lower min_count.")
    col = np.searchsorted(types, seqs)
    keep = (col < types.size) & (types[np.minimum(col, types.size - 1)] == seqs)
    k = np.tile(np.arange(1, N + 1), (n_win, 1))
    r = np.repeat(np.arange(n_win), N).reshape(n_win, N)

    def per_window(weights):
        return sparse.csr_matrix((weights[keep].astype(float), (r[keep], col[keep])),
                                 shape=(n_win, types.size))

    C, P, O = per_window(N - k), per_window(k - 1), per_window(np.ones_like(k))
    mu_c, mu_p = autoregressive_counts(seqs, vocab_size)      # the closed sums, as a cross-check
    assert np.allclose(np.asarray(C.sum(0)).ravel() / n_win, mu_c[types])
    CT, PT, OT = (M.T.tocsr().astype(np.float32) for M in (C, P, O))
    DT = (CT - PT).tocsr()

    def stats(W, ratios=True):
        """Shares (and ratios) of the resamples whose window weights are the rows of ``W``."""
        W = W.astype(np.float32).T
        d, o = (DT @ W).T, (OT @ W).T
        share = (o * (d > 0)).sum(1) / o.sum(1)
        if not ratios:
            return share, None
        c = (CT @ W).T
        return share, c / np.maximum(c - d, 1e-12)

    share, ratio = (x[0] for x in stats(np.ones((1, n_win))))
    share, ratio = float(share), ratio.astype(float)
    rng = np.random.default_rng(seed)
    from scipy.stats import poisson
    poisson_cdf = poisson.cdf(np.arange(10), 1.0).astype(np.float32)   # P(X > 9) = 1e-7: the tail is cut
    n_rows = max(1, 2_000_000 // n_win)                        # resamples per block of work
    t, S1, S2 = np.empty(n_bag), np.zeros(n_win), np.zeros(n_win)
    boot_share, boot_ratio = [], []
    for s in range(0, max(n_bag, n_boot), n_rows):
        m = min(n_rows, max(n_bag, n_boot) - s)
        if s < n_boot:                                         # v2's percentile interval: multinomial
            W = rng.multinomial(n_win, np.full(n_win, 1 / n_win), size=min(m, n_boot - s))
            sh, ra = stats(W)
            boot_share.append(sh); boot_ratio.append(ra)
        if s < n_bag:                                          # the bagged share: Poisson(1) weights
            u = rng.random((min(m, n_bag - s), n_win), dtype=np.float32)
            W = np.searchsorted(poisson_cdf, u).astype(np.float32)   # inverse CDF of Poisson(1): #{cdf < u}
            sh, _ = stats(W, ratios=False)
            sh = sh.astype(float)
            t[s:s + len(sh)] = sh
            S1 += W.T @ sh
            S2 += W.sum(0)
    boot_share, boot_ratio = np.concatenate(boot_share), np.concatenate(boot_ratio)
    bagged = float(t.mean())
    cov = (S1 - bagged * S2) / n_bag
    var = float((cov ** 2).sum() - n_win / n_bag ** 2 * ((t - bagged) ** 2).sum())
    se = float(np.sqrt(max(var, 0.0)))
    z = norm.ppf(0.5 + level / 2)
    a = (1 - level) / 2
    plo, phi = np.quantile(boot_share, [a, 1 - a])
    rlo, rhi = np.quantile(boot_ratio, [a, 1 - a], axis=0)
    per_type = pd.DataFrame({"type": types, "count": occ[types], "ratio": ratio, "low": rlo, "high": rhi,
                             "p_above": (boot_ratio > 1).mean(0)})
    # with no spread the share is what it is: 'above' and 'below' one half are each certain or
    # impossible, and a share at exactly one half is neither (1 - p_above read it surely below)
    p_above = float(norm.sf((bagged - 0.5) / se)) if se > 0 else float(bagged <= 0.5)
    p_below = 1.0 - p_above if se > 0 else float(bagged >= 0.5)
    return {"share": float(share), "bagged": bagged, "se": se,
            "low": float(max(0.0, bagged - z * se)), "high": float(min(1.0, bagged + z * se)),
            "low_percentile": float(plo), "high_percentile": float(phi), "n_windows": int(n_win),
            "n_bag": int(n_bag), "mc_correction": float(n_win / n_bag ** 2 * ((t - bagged) ** 2).sum()),
            # one-sided p-values of the bagged share against the rule's 0.5 (normal, infinitesimal jackknife)
            "p_above_half": p_above, "p_below_half": p_below,
            "n_types": int(types.size), "per_type": per_type.sort_values("count", ascending=False,
                                                                        ignore_index=True)}
