"""The survey's shipped null draws (data/null/) are exactly what the CPU draws, and they are
read back only for the request they hold."""

import numpy as np
import pandas as pd
import pytest


def test_shipped_draws_are_exactly_what_the_cpu_draws_and_are_read_back(tmp_path, monkeypatch):
    import companion.core.null as N

    out = tmp_path / "iid-n5-cpu.csv.gz"
    monkeypatch.setattr(N, "shipped_null_file", lambda n: tmp_path / f"iid-n{n}-cpu.csv.gz")
    N.ship_null([16, 24], 5, out=out)
    fresh = N.null_scores(16, n_samples=5, seed=16, device="cpu", shipped=False)
    read = N.null_scores(16, n_samples=5, seed=16, device="cpu")
    pd.testing.assert_frame_equal(read, fresh, check_exact=True)
    # a request the file does not hold (another seed, another count) is drawn, not read
    other = N.null_scores(16, n_samples=5, seed=3, device="cpu")
    assert not np.array_equal(other["symmetry"].to_numpy(), fresh["symmetry"].to_numpy())
    assert len(N.null_scores(24, n_samples=4, seed=24, device="cpu")) == 4


def test_the_shipped_gpu_size_draws_match_a_fresh_cpu_draw_at_the_narrow_widths():
    import companion.core.null as N

    path = N.shipped_null_file(200)
    if not path.is_file():
        pytest.skip(f"{path} is not shipped")
    table = pd.read_csv(path)
    assert table.groupby("d").size().eq(200).all() and (table["seed"] == table["d"]).all()
    assert table["d"].max() == 8192
    for d in (64, 384):
        fresh = N.null_scores(d, n_samples=200, seed=d, device="cpu", shipped=False)
        read = N.null_scores(d, n_samples=200, seed=d, device="cpu")
        pd.testing.assert_frame_equal(read, fresh, check_exact=True)
    # the widest width follows the exact law of the i.i.d. symmetry score (mean 1/d): the
    # sample mean of 200 draws lies within 5 standard errors of it
    law, wide = N.symmetry_null_law(8192), table[table["d"] == 8192]["symmetry"]
    assert abs(wide.mean() - law.mean()) < 5 * law.std() / np.sqrt(len(wide))
