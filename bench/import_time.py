"""Cold imports in a fresh process (``import companion``, the Sphinx extension, the claims): the
package as it is against the package at ``--base`` (default: the commit before the subpackage
layout), alternated run by run.

Each repeat starts two fresh interpreters, one per version, in alternating order, and times
``import companion`` inside each (``time.perf_counter`` around the import, so interpreter
start-up is left out); it also records which heavy libraries (torch, transformers, onnx,
pandas, scipy) the import loaded.  The base version is exported from git into a temporary
folder, so both run from plain source trees with the same interpreter.

    PYTHONPATH=src python bench/import_time.py [--base COMMIT] [--repeats 21] [--out bench/results/import_time.json]
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = "d78b895"  # the package before companion.{base,core,rules,zoo,survey,judge,book}
HEAVY = ["torch", "transformers", "onnx", "pandas", "scipy", "matplotlib"]
# what is imported: (label, module in the current layout, the same module at the base commit)
TARGETS = [("import companion", "companion", "companion"),
           ("the Sphinx extension (every book build)", "companion.book.sphinxext", "companion.sphinxext"),
           ("the claims and their verdicts", "companion.judge.claims", "companion.claims")]


def probe_code(module: str) -> str:
    return ("import sys, time, json, importlib; t0 = time.perf_counter(); "
            f"importlib.import_module({module!r}); dt = time.perf_counter() - t0; "
            f"print(json.dumps({{'seconds': dt, 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))")


def export_src(commit: str, dest: Path) -> Path:
    """``src/`` of ``commit``, written under ``dest``."""
    data = subprocess.run(["git", "archive", commit, "src"], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest / "src"


def probe(src: Path, module: str) -> dict:
    out = subprocess.run([sys.executable, "-c", probe_code(module)], env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True, cwd=src)
    return json.loads(out.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=BASE)
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        versions = {"base": export_src(args.base, Path(tmp)), "current": ROOT / "src"}
        for label, current, base in TARGETS:
            modules = {"base": base, "current": current}
            for key in versions:  # warm the file cache and the bytecode of both
                probe(versions[key], modules[key])
            times = {k: [] for k in versions}
            heavy = {}
            for i in range(args.repeats):
                order = list(versions) if i % 2 == 0 else list(reversed(versions))
                for key in order:
                    r = probe(versions[key], modules[key])
                    times[key].append(r["seconds"])
                    heavy[key] = r["heavy"]
            med = {k: statistics.median(v) for k, v in times.items()}
            results.append({"what": label, "modules": modules, "median_seconds": med,
                            "ratio_current_over_base": med["current"] / med["base"],
                            "heavy_libraries_loaded": heavy})
    result = {
        "what": "cold import in a fresh interpreter (seconds, the import only), the two versions alternated",
        "base_commit": args.base, "repeats": args.repeats, "targets": results,
        "machine": f"{platform.machine()} {platform.processor() or ''} python {platform.python_version()}".strip(),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
