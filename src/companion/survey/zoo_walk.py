"""The walk over the offline zoo: its models added to the catalog as survey entries
(:func:`with_zoo_entries`), and every zoo model read and scored without network
(:func:`score_zoo`, the survey chapter's live data)."""

from __future__ import annotations

import pandas as pd

from ..zoo.catalog import load_catalog

__all__ = ["with_zoo_entries", "score_zoo"]


def with_zoo_entries(catalog: pd.DataFrame) -> pd.DataFrame:
    """The catalog plus one entry per zoo model it does not already hold (key = zoo name).

    Zoo entries carry ``local = "zoo:NAME"``, the zoo's role and modality and no
    published numbers; ``n_params`` is left empty (the survey then counts it from the
    checkpoint's headers).
    """
    from ..zoo.registry import ZOO

    if "key" not in getattr(catalog, "columns", ()):
        from ..base.errors import CompanionError

        raise CompanionError("the catalog has no 'key' column; pass load_catalog()'s table.")
    known = set(catalog["key"])
    rows = []
    for m in ZOO.values():
        if m.catalog_key in known or m.name in known:
            continue
        rows.append({"key": m.name, "printed_names": "", "hub_id": m.model, "revision": "",
                     "family": m.reader, "modality": m.modality, "role": m.role,
                     "local": f"zoo:{m.name}", "notes": f"offline zoo model ({m.licence})",
                     "sources": "zoo", "known_problems": ""})
    if not rows:
        return catalog
    return pd.concat([catalog, pd.DataFrame(rows)], ignore_index=True)


def score_zoo(names: list[str] | None = None, per_head: bool = True,
              catalog: pd.DataFrame | None = None):
    """Read and score the offline zoo models (no network); the survey chapter's live data.

    Returns ``(checkpoints, scores, status)``: the :class:`QKCheckpoint` of each model read
    (by survey key: the catalog key where the catalog has the model, else the zoo name),
    their tidy scores (as :func:`score_entry`: both head pairings for grouped-query
    models with several key heads, :func:`~.tables.survey_pairings`; per-head rows with ``per_head``) and one status row per zoo model.

    A model whose reader module is not part of this installation is listed as
    ``"no reader"`` and skipped; every other failure (a missing package, a hash that does
    not match, a reader error) is raised, never skipped.
    """
    import time

    from ..adapters import read_qk
    from .tables import layer_scores, survey_pairings
    from ..zoo.registry import ZOO, reader_available, zoo_path

    cat = catalog if catalog is not None else load_catalog()
    if "key" in cat.columns and (twice := sorted({str(k) for k in cat["key"][cat["key"].duplicated()]})):
        from ..base.errors import CompanionError

        # its parameter count was read as a Series, and pd.isna() of it raised after the model was read
        raise CompanionError(f"the catalog lists {', '.join(twice)} more than once; keep one row per key "
                             "(load_catalog refuses such a file).")
    cat_params = cat.set_index("key")["n_params"] if "n_params" in cat.columns else pd.Series(dtype=float)
    checkpoints, tables, status = {}, [], []
    names = list(ZOO) if names is None else [names] if isinstance(names, str) else list(names)
    if twice := sorted({str(n) for n in names if names.count(n) > 1}):   # its layers came twice
        from ..base.errors import CompanionError

        raise CompanionError(f"{', '.join(twice)} named more than once in the zoo's survey walk; name each model once.")
    for name in names:   # an empty list scores nothing ('names or ZOO' read and scored the whole zoo)
        if name not in ZOO:   # a raw KeyError
            from ..base.errors import CompanionError

            raise CompanionError(f"{name!r} is not a model of the zoo's survey walk; `companion zoo list` shows "
                                 f"the names ({', '.join(ZOO)}).")
        m = ZOO[name]
        key = m.catalog_key or m.name
        row = {"name": name, "key": key, "model": m.model, "role": m.role,
               "modality": m.modality, "format": m.reader, "licence": m.licence,
               "sha256": m.sha256[:12], "status": "", "layers": 0, "seconds": float("nan")}
        if not reader_available(m):
            row["status"] = f"no reader ({m.reader_module} is not part of this build)"
            status.append(row)
            continue
        t0 = time.perf_counter()
        ckpt = read_qk(zoo_path(name), progress=False)
        n = cat_params.get(key)
        n = n if n is not None and not pd.isna(n) else ckpt.n_parameters
        # the pairings score_entry writes (modulo only where it differs: several key heads)
        for pairing in survey_pairings(ckpt):
            tables.append(layer_scores(ckpt, per_head=per_head, pairing=pairing)
                          .assign(key=key, zoo=name, n_params=n))
        checkpoints[key] = ckpt
        row.update(status="scored", layers=len(ckpt.self_attention_layers()),
                   seconds=time.perf_counter() - t0)
        status.append(row)
    scores = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    return checkpoints, scores, pd.DataFrame(status)
