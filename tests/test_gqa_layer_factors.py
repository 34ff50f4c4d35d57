"""Grouped-query layers are scored from factors with the query heads of each key head summed.

``M = sum_h Wq_h^T Wk_g(h) = sum_g (sum_{h: g(h)=g} Wq_h)^T Wk_g`` (issue 71): the layer's
form has rank ``<= n_kv_heads * d_head``, and its scores come from small Gram matrices.  Every
test here compares the package's scores with the form built independently in NumPy, as an
explicit sum over the query heads with their key heads, and scored by the definitions
written out again below (Def. 3.1; Def. 3.2 with the ``excess`` and ``eq18`` variants).
Per-head rows must keep each query head with its own key head: they are compared with
``M_h = Wq_h^T Wk_g(h)``, never with a group's sum.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

from adapters_data import zoo_checkpoint
from companion.adapters import read_qk
from companion.adapters.types import QKCheckpoint, QKLayer
from companion.core.bilinear import layer_factors
from companion.core.scores import structure_scores
from companion.survey.tables import layer_scores

TOL = 1e-9  # issue 71: every layer's scores equal to the dense route's within this

# the zoo's grouped-query models and their (query heads, key heads) in every layer
GQA_ZOO = {"smollm2-135m": (9, 3), "gemma-3-270m": (4, 1), "qwen2.5-coder-0.5b": (14, 2)}


# ----------------------------------------------------------------------------- references


def kv_head(h: int, n_heads: int, n_kv: int, pairing: str) -> int:
    """The key head query head ``h`` reads: consecutive groups (``repeat_kv``) or modulo."""
    return h // (n_heads // n_kv) if pairing == "grouped" else h % n_kv


def dense_head_forms(Wq: np.ndarray, Wk: np.ndarray, n_heads: int, n_kv: int,
                     pairing: str) -> list[np.ndarray]:
    """``[M_h]``: ``M_h = Wq_h^T Wk_g(h)``, each ``d x d``, in float64."""
    Wq, Wk = np.asarray(Wq, np.float64), np.asarray(Wk, np.float64)
    dh = Wq.shape[0] // n_heads
    forms = []
    for h in range(n_heads):
        g = kv_head(h, n_heads, n_kv, pairing)
        forms.append(Wq[h * dh:(h + 1) * dh].T @ Wk[g * dh:(g + 1) * dh])
    return forms


def dense_layer_form(Wq, Wk, n_heads, n_kv, pairing) -> np.ndarray:
    """The layer's ``M = sum_h M_h`` (Eq. S20), summed head by head."""
    M = np.zeros((Wq.shape[1], Wq.shape[1]))
    for Mh in dense_head_forms(Wq, Wk, n_heads, n_kv, pairing):
        M += Mh
    return M


def dense_layer_form_one_product(Wq, Wk, n_heads, n_kv, pairing) -> np.ndarray:
    """The same ``M`` as :func:`dense_layer_form`, the head sum done inside one product:
    ``Wq^T`` times the key rows each query row's head reads (``d x (H d_head) x d``)."""
    Wq, Wk = np.asarray(Wq, np.float64), np.asarray(Wk, np.float64)
    dh = Wq.shape[0] // n_heads
    rows = [kv_head(h, n_heads, n_kv, pairing) * dh + i for h in range(n_heads) for i in range(dh)]
    return Wq.T @ Wk[rows]


def ref_symmetry(M: np.ndarray) -> float:
    """``tr(M M) / ||M||_F^2`` (Def. 3.1), with ``M`` first brought to unit scale."""
    M = M / np.abs(M).max()
    return float(np.clip(np.sum(M * M.T) / np.sum(M * M), -1.0, 1.0))


def _outlier_mass(norms: np.ndarray, gamma: float, variant: str) -> float:
    threshold = norms.mean() + gamma * norms.std(ddof=1)
    excess = norms - threshold
    out = excess > 64 * np.finfo(np.float64).eps * norms.max()  # ties are not outliers
    return float(np.sum(excess[out]) if variant == "excess" else np.sum(norms[out]))


def ref_directionality(M: np.ndarray, gamma: float = 2.0, variant: str = "excess") -> float:
    """``(R - C) / (R + C)`` over the row and column norms above ``mean + gamma * std``
    (Def. 3.2, Eq. 17), 0 when no norm is an outlier."""
    M = M / np.abs(M).max()
    R = _outlier_mass(np.linalg.norm(M, axis=1), gamma, variant)
    C = _outlier_mass(np.linalg.norm(M, axis=0), gamma, variant)
    return 0.0 if R + C == 0 else (R - C) / (R + C)


def assert_scores(got: dict, M: np.ndarray, variant: str, what: str) -> None:
    sym, dirn = ref_symmetry(M), ref_directionality(M, variant=variant)
    assert abs(float(got["symmetry"]) - sym) <= TOL, f"{what}: symmetry {got['symmetry']} vs dense {sym}"
    assert abs(float(got["directionality"]) - dirn) <= TOL, (
        f"{what}: directionality {got['directionality']} vs dense {dirn}")


# ----------------------------------------------------------------------------- the zoo


@pytest.fixture(scope="module", params=sorted(GQA_ZOO))
def gqa_model(request):
    name = request.param
    return name, read_qk(zoo_checkpoint(name), progress=False)  # skips, naming the packages


@pytest.mark.slow
def test_every_layer_of_each_gqa_zoo_model_scores_as_its_dense_form(gqa_model):
    name, ckpt = gqa_model
    layers = ckpt.self_attention_layers()
    assert layers
    table = layer_scores(ckpt).set_index(["component", "layer", "head"])
    for layer in layers:
        H, KV = layer.n_heads, layer.n_kv_heads
        assert (H, KV) == GQA_ZOO[name]
        Wq, Wk = layer.Wq.double().numpy(), layer.Wk.double().numpy()
        M = dense_layer_form_one_product(Wq, Wk, H, KV, "grouped")
        where = f"{name} {layer.component} layer {layer.index}"
        # what `companion score` prints (the route structure_scores picks) ...
        row = table.loc[(layer.component, layer.index, -1)]
        assert_scores(row, M, "excess", where)
        # ... and each route on its own, from factors of n_kv * d_head rows, not n_heads * d_head
        A, B = layer.layer_factors()
        assert A.shape == B.shape == (KV * layer.d_head, layer.d_model)
        for factored in (True, False):
            assert_scores(structure_scores(Wq=A, Wk=B, factored=factored), M, "excess",
                          f"{where} (factored={factored})")
        # per head: query head h with its own key head, never the group's sum
        if layer is layers[0] or layer is layers[-1]:
            heads = layer_scores(QKCheckpoint(ckpt.source, ckpt.family, [layer]), per_head=True)
            heads = heads.set_index("head")
            assert heads.loc[-1, "symmetry"] == row["symmetry"]
            for h, Mh in enumerate(dense_head_forms(Wq, Wk, H, KV, "grouped")):
                assert_scores(heads.loc[h], Mh, "excess", f"{where} head {h}")


@pytest.mark.slow
def test_the_modulo_pairing_of_each_gqa_zoo_model_scores_as_its_dense_form(gqa_model):
    name, ckpt = gqa_model
    layers = ckpt.self_attention_layers()
    for layer in (layers[0], layers[-1]):
        ck = QKCheckpoint(ckpt.source, ckpt.family, [layer], meta=ckpt.meta)
        table = layer_scores(ck, pairing="modulo", variant="eq18")
        Wq, Wk = layer.Wq.double().numpy(), layer.Wk.double().numpy()
        M = dense_layer_form_one_product(Wq, Wk, layer.n_heads, layer.n_kv_heads, "modulo")
        assert_scores(table.iloc[0], M, "eq18", f"{name} layer {layer.index} (modulo)")
        if layer.n_kv_heads > 1:  # with one key head both pairings are the same form
            grouped = dense_layer_form_one_product(Wq, Wk, layer.n_heads, layer.n_kv_heads, "grouped")
            assert not np.allclose(M, grouped)


# ----------------------------------------------------------------------------- random shapes


@st.composite
def gqa_layers(draw):
    n_kv = draw(st.integers(1, 4))
    group = draw(st.integers(2, 5))
    d_head = draw(st.integers(1, 8))
    d = draw(st.integers(3, 48))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    H = n_kv * group
    # heads of different magnitudes (powers of two), so a group's sum is not dominated evenly
    q_scale = 2.0 ** rng.integers(-20, 21, size=H).repeat(d_head)[:, None]
    k_scale = 2.0 ** rng.integers(-20, 21, size=n_kv).repeat(d_head)[:, None]
    Wq = (rng.standard_normal((H * d_head, d)) * q_scale).astype(draw(st.sampled_from([np.float64, np.float32])))
    Wk = (rng.standard_normal((n_kv * d_head, d)) * k_scale).astype(Wq.dtype)
    return Wq, Wk, H, n_kv


@given(gqa_layers(), st.sampled_from(["grouped", "modulo"]), st.sampled_from(["excess", "eq18"]))
def test_factored_layer_scores_of_random_gqa_shapes_equal_the_dense_form(layer, pairing, variant):
    Wq, Wk, H, KV = layer
    M = dense_layer_form(Wq, Wk, H, KV, pairing)
    np.testing.assert_allclose(dense_layer_form_one_product(Wq, Wk, H, KV, pairing), M,
                               rtol=1e-12, atol=1e-12 * np.abs(M).max())  # the zoo test's M
    A, B = layer_factors(torch.from_numpy(Wq), torch.from_numpy(Wk), H, KV, pairing)
    d_head = Wq.shape[0] // H
    assert A.shape == B.shape == (KV * d_head, Wq.shape[1])  # rank n_kv * d_head, not H * d_head
    np.testing.assert_allclose((A.double().T @ B.double()).numpy(), M,
                               rtol=1e-12, atol=1e-12 * np.abs(M).max())
    for factored in (True, False, None):
        got = structure_scores(Wq=A, Wk=B, variant=variant, factored=factored)
        assert_scores(got, M, variant, f"factored={factored}")
    # the same through the table, per layer and per head
    ck = QKCheckpoint("random", "test", [QKLayer(0, "causal", torch.from_numpy(Wq),
                                                 torch.from_numpy(Wk), H, KV)])
    table = layer_scores(ck, per_head=True, pairing=pairing, variant=variant).set_index("head")
    assert_scores(table.loc[-1], M, variant, "layer row")
    for h, Mh in enumerate(dense_head_forms(Wq, Wk, H, KV, pairing)):
        if np.abs(Mh).max() > 0:
            assert_scores(table.loc[h], Mh, variant, f"head {h}")


def test_layer_factors_sum_the_query_heads_of_each_key_head():
    Wq = torch.arange(6 * 2, dtype=torch.float32).reshape(6, 2)  # 3 heads of d_head 2
    Wk = torch.ones(2, 2)
    A, B = layer_factors(Wq, Wk, n_heads=3, n_kv_heads=1)
    assert A.dtype == torch.float64 and torch.equal(B, Wk)
    assert torch.equal(A, (Wq[0:2] + Wq[2:4] + Wq[4:6]).double())
    A2, _ = layer_factors(torch.randn(8, 3), torch.randn(4, 3), n_heads=4, n_kv_heads=2,
                          pairing="modulo")
    assert A2.shape == (4, 3)
    # multi-head attention: the projections as they are, nothing summed or converted
    q, k = torch.randn(4, 3), torch.randn(4, 3)
    A3, B3 = layer_factors(q, k, n_heads=2)
    assert A3.dtype == torch.float32 and torch.equal(A3, q) and torch.equal(B3, k)
