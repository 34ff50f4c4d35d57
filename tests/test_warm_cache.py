"""The build's verdict tables are computed ahead of the chapters, under the kernels' cache folder."""

from __future__ import annotations

from companion.base import paths
from companion.judge import claims, warm_cache


def test_warming_asks_for_what_the_chapters_read_in_the_kernels_cache_folder(monkeypatch):
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", "-")    # so that the variable is restored (or removed) after
    monkeypatch.delenv("COMPANION_VERDICT_CACHE")
    asked = []

    def record(name):
        import os
        return lambda *a: asked.append((name, a, os.environ.get("COMPANION_VERDICT_CACHE"))) or [1, 2]

    monkeypatch.setattr(claims, "all_verdicts", record("all_verdicts"))
    monkeypatch.setattr(claims, "training_tests_table", record("training"))
    monkeypatch.setattr(claims, "swap_tests_table", record("swap"))
    assert warm_cache.main() == 0
    assert {where for *_, where in asked} == {str(paths.VERDICT_CACHE)}
    assert [n for n, *_ in asked] == ["all_verdicts"] + ["training"] * 4 + ["swap"]
    # the keys are those of the empirical family: a renamed claim would warm nothing
    assert {a[0] for n, a, _ in asked if n == "training"} <= {f.__name__ for f in claims.VERDICTS}


def test_the_kernels_default_to_the_same_folder():
    startup = (paths.ROOT / "book" / "_ipython" / "profile_default" / "startup" / "00_figures_as_images.py").read_text()
    assert "VERDICT_CACHE" in startup and 'setdefault("COMPANION_VERDICT_CACHE"' in startup
