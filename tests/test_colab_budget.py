"""The T4 estimate of each chapter's gpu-size time (issue 45): the stated ratios, the
per-chapter dominant costs, the rule, and the status page's table built from them."""

import csv
import math

import pandas as pd
import pytest

from companion.book import colab_budget as cb
from companion.book.chapter_times import COLUMNS, TIMES, book_chapters

H100 = "NVIDIA H100 80GB HBM3"
FLOPS = 989.4 / 65.0       # H100 SXM dense BF16 tensor / T4 FP16 tensor (NVIDIA data sheets)
MEMORY = 3350.0 / 320.0    # HBM3 3.35 TB/s / GDDR6 320 GB/s
HOST = 16 / 2              # the H100 machine's cores / a Colab runtime's vCPUs


def _times(rows):
    return pd.DataFrame([{"chapter": c, "size": "gpu", "device": d,
                          "cpu_cores": 2 if d == "cpu" else 16, "seconds": s, "outcome": o,
                          "note": n, "date": "2026-11-25"} for c, d, s, o, n in
                         [(*r, "") if len(r) == 4 else r for r in rows]], columns=COLUMNS)


RATIOS = {"flops": FLOPS, "memory": MEMORY, "host_bound": HOST, "io": 1.0}


def _estimate(rows, costs):
    return cb.colab_estimates(_times(rows), costs=costs, ratios=RATIOS,
                              chapters=list(costs)).set_index("chapter")


# --------------------------------------------------------------------------- the stated ratios
def test_the_ratios_are_the_vendor_figures_divided():
    ratios = cb.load_ratios()
    assert ratios == pytest.approx({"flops": 15.2215, "memory": 10.46875, "host_bound": 8.0,
                                    "io": 1.0}, rel=1e-4)
    with open(cb.RATIOS_CSV, newline="") as f:
        rows = {r["dominant_cost"]: r for r in csv.DictReader(f)}
    assert "H100" in rows["flops"]["source"] and "T4 datasheet" in rows["flops"]["source"]
    assert "datasheet" in rows["memory"]["source"]
    assert "assumption" in rows["io"]["source"]


def test_the_host_ratio_uses_the_cores_recorded_with_the_h100_times():
    with open(cb.RATIOS_CSV, newline="") as f:
        host = next(r for r in csv.DictReader(f) if r["dominant_cost"] == "host_bound")
    cores = set()
    for path in TIMES.glob("gpu-size-h100-*.csv"):
        with open(path, newline="") as f:
            cores |= {int(r["cpu_cores"]) for r in csv.DictReader(f)}
    assert cores == {int(float(host["h100"]))}


def test_a_ratio_table_without_every_cost_or_a_source_is_refused(tmp_path):
    good = cb.RATIOS_CSV.read_text().splitlines()
    (tmp_path / "r.csv").write_text("\n".join(l for l in good if not l.startswith("memory")))
    with pytest.raises(ValueError, match="missing \\['memory'\\]"):
        cb.load_ratios(tmp_path / "r.csv")
    (tmp_path / "r.csv").write_text(
        "dominant_cost,quantity,h100,t4,unit,source\n"
        + "".join(f"{c},x,1,1,u,{'' if c == 'io' else 's'}\n" for c in cb.COSTS))
    with pytest.raises(ValueError, match="io row needs"):
        cb.load_ratios(tmp_path / "r.csv")


# --------------------------------------------------------------------------- dominant costs
def test_every_chapter_of_the_book_has_one_dominant_cost_and_a_reason():
    with open(cb.BUDGET_CSV, newline="") as f:
        rows = list(csv.DictReader(f))
    names = [r["chapter"] for r in rows]
    assert sorted(names) == sorted(book_chapters())  # no chapter missing, none extra or twice
    assert {"fig3_decided", "mechanism", "objective_swap"} <= set(names)
    assert all(r["dominant_cost"] in cb.COSTS and len(r["reason"]) > 20 for r in rows)
    assert cb.load_dominant_costs() == {r["chapter"]: r["dominant_cost"] for r in rows}


def test_a_cost_table_missing_a_chapter_or_naming_an_unknown_cost_is_refused(tmp_path):
    p = tmp_path / "b.csv"
    p.write_text("chapter,dominant_cost,reason\na,flops,trains\n")
    with pytest.raises(ValueError, match="no dominant cost for \\['b'\\]"):
        cb.load_dominant_costs(p, chapters=["a", "b"])
    p.write_text("chapter,dominant_cost,reason\na,gpu,trains\n")
    with pytest.raises(ValueError, match="need a cost"):
        cb.load_dominant_costs(p, chapters=["a"])
    p.write_text("chapter,dominant_cost,reason\na,io,reads\na,flops,trains\n")
    with pytest.raises(ValueError, match="listed twice"):
        cb.load_dominant_costs(p, chapters=["a"])


# --------------------------------------------------------------------------- the rule
def test_device_bound_chapters_scale_by_their_costs_ratio_and_are_flagged_past_30_minutes():
    t = _estimate([("small", H100, 100.0, "finished"), ("big", H100, 200.0, "finished"),
                   ("mem", H100, 100.0, "finished"), ("big", "cpu", 50.0, "finished")],
                  {"small": "flops", "big": "flops", "mem": "memory"})
    assert t.at["small", "t4_s"] == pytest.approx(100 * 989.4 / 65)  # 1,522 s < 1,800 s
    assert t.at["small", "over_t4_budget"] == "no" and t.at["small", "flags"] == ""
    assert t.at["small", "t4"] == "~1,522" and t.at["small", "h100"] == "100"
    # a flops chapter is not capped by its CPU time: 3,044 s, over the T4 budget
    assert t.at["big", "t4_s"] == pytest.approx(3044.3, abs=0.1)
    assert t.at["big", "over_t4_budget"] == "yes" and t.at["big", "flags"] == "T4 over 30 min"
    assert t.at["mem", "t4_s"] == pytest.approx(1046.875)


def test_host_bound_work_scales_by_the_cores_capped_by_two_cpu_cores():
    t = _estimate([("capped", H100, 200.0, "finished"), ("capped", "cpu", 806.0, "finished"),
                   ("scaled", H100, 20.0, "finished"), ("scaled", "cpu", 400.0, "finished"),
                   ("nocpu", H100, 20.0, "finished")],
                  {"capped": "host_bound", "scaled": "host_bound", "nocpu": "host_bound"})
    assert t.at["capped", "t4_s"] == 806.0      # 200 x 8 = 1,600 > 806 measured on 2 cores
    assert t.at["scaled", "t4_s"] == 160.0      # 20 x 8 = 160 < 400
    assert t.at["nocpu", "t4_s"] == 160.0 and math.isnan(t.at["nocpu", "cpu_s"])


def test_a_long_h100_time_is_flagged_even_when_the_t4_estimate_fits():
    t = _estimate([("long", H100, 700.0, "finished"), ("long", "cpu", 900.0, "finished")],
                  {"long": "host_bound"})
    assert t.at["long", "over_h100_budget"] == "yes" and t.at["long", "over_t4_budget"] == "no"
    assert t.at["long", "flags"] == "H100 over 10 min"


def test_an_h100_run_over_its_budget_gives_a_lower_bound():
    t = _estimate([("train", H100, 470.0, "over the budget"), ("train", "cpu", 9241.0, "finished"),
                   ("tiny", H100, 470.0, "over the budget"), ("tiny", "cpu", 860.0, "finished"),
                   ("slow", H100, 470.0, "over the budget"), ("slow", "cpu", 5000.0, "finished")],
                  {"train": "flops", "tiny": "host_bound", "slow": "host_bound"})
    assert t.at["train", "t4"] == ">= 7,154" and t.at["train", "t4_bound"] == "at least"
    assert t.at["train", "over_t4_budget"] == "yes" and t.at["train", "over_h100_budget"] == "unknown"
    assert t.at["train", "h100"] == "over 470"
    assert "T4 over 30 min" in t.at["train", "flags"] and "over 470 s" in t.at["train", "flags"]
    # host-bound: at least 470 x 8 = 3,760 s, but two CPU cores did all of it in 860 s
    assert t.at["tiny", "t4_s"] == 860.0 and t.at["tiny", "t4_bound"] == "about"
    # ... unless the CPU took longer than the bound: then the bound stands
    assert t.at["slow", "t4_s"] == 3760.0 and t.at["slow", "t4_bound"] == "at least"


def test_without_a_finished_h100_time_nothing_is_invented():
    t = _estimate([("broke", H100, 4.7, "stopped", "ModuleNotFoundError: No module named 'x'"),
                   ("broke", "cpu", 143.0, "finished"), ("never", "cpu", 5131.0, "finished")],
                  {"broke": "host_bound", "never": "flops"})
    for ch in ("broke", "never"):
        assert math.isnan(t.at[ch, "h100_s"]) and math.isnan(t.at[ch, "t4_s"])
        assert t.at[ch, "t4"] == "not estimated (no H100 time)"
        assert t.at[ch, "over_t4_budget"] == "unknown" and t.at[ch, "flags"] == "H100 not measured"
    assert t.at["never", "h100"] == "not measured" and t.at["never", "cpu_s"] == 5131.0
    assert t.at["broke", "h100"] == "not measured (stopped: ModuleNotFoundError)"


def test_the_recorded_times_give_the_estimates_computed_by_hand():
    t = cb.colab_estimates().set_index("chapter")
    costs = cb.load_dominant_costs()
    ratios = {"flops": FLOPS, "memory": MEMORY, "host_bound": HOST, "io": 1.0}
    h100, cpu = {}, {}
    for path in TIMES.glob("*.csv"):
        if path.name.startswith("colab_"):
            continue
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["size"] != "gpu":
                    continue
                if "H100" in r["device"]:
                    h100[r["chapter"]] = (float(r["seconds"]), r["outcome"])
                elif r["device"] == "cpu" and r["outcome"] == "finished":
                    cpu[r["chapter"]] = float(r["seconds"])
    assert list(t.index) == book_chapters()
    for ch in t.index:
        seconds, outcome = h100.get(ch, (None, "not run"))
        if outcome not in ("finished", "over the budget"):
            assert math.isnan(t.at[ch, "t4_s"]) and "not measured" in t.at[ch, "h100"], ch
            continue
        want = seconds * ratios[costs[ch]]
        if costs[ch] == "host_bound" and ch in cpu:
            want = min(want, cpu[ch])
        assert t.at[ch, "t4_s"] == pytest.approx(want), ch
    # the numbers this reads today (2026-11-25 H100 sitting, 2-core CPU files)
    assert t.at["measuring", "t4_s"] == pytest.approx(805.9)
    assert t.at["symmetric_init", "over_t4_budget"] == "yes"
    assert t.at["objectives_to_structure", "t4_s"] == pytest.approx(859.5)
    assert t.at["survey", "h100"] == "not measured"


# --------------------------------------------------------------------------- the status page
def test_the_status_page_table_shows_all_three_times_per_chapter():
    from companion.book.build_status import BUDGET_HEADS, gpu_size_budget

    rows, rule = gpu_size_budget()
    assert BUDGET_HEADS == ["chapter", "dominant cost", "H100 s (measured)", "T4 s (estimate)",
                            "CPU s (2 cores)", "flags"]
    assert [r["chapter"] for r in rows] == book_chapters()
    by = {r["chapter"]: r for r in rows}
    assert by["measuring"]["H100 s (measured)"] == "202" and by["measuring"]["T4 s (estimate)"] == "~806"
    assert by["measuring"]["CPU s (2 cores)"] == "806" and by["measuring"]["flags"] == "none"
    assert by["training_dynamics"]["H100 s (measured)"] == "not measured"
    assert by["training_dynamics"]["CPU s (2 cores)"] == "5,131"
    assert by["teaching"]["CPU s (2 cores)"] == "not measured"
    assert "NVIDIA" in rule and "Estimates, not measurements" in rule and "30 minutes" in rule


def test_a_chapter_without_a_dominant_cost_gets_no_estimate_on_the_page():
    t = cb.colab_estimates(_times([("new", H100, 10.0, "finished")]), costs={}, ratios=RATIOS,
                           chapters=["new"]).set_index("chapter")
    assert t.at["new", "dominant_cost"] == "not recorded" and math.isnan(t.at["new", "t4_s"])
    assert t.at["new", "t4"] == "not estimated (no dominant cost recorded)"
    assert t.at["new", "flags"] == "dominant cost not recorded" and t.at["new", "h100"] == "10"
