"""``companion score SOURCE``: per-layer symmetry and directionality of one checkpoint."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..base.errors import CompanionError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "score",
        help="score the query-key forms of a checkpoint (folder, .gguf file or hub id)",
        description="Read only the query/key projections of SOURCE and print the symmetry "
        "and directionality of every self-attention layer, with median and IQR across layers.",
    )
    p.add_argument("source", help="Hugging Face folder, .gguf file, hub id owner/name, or a "
                   "zoo name (companion zoo list)")
    p.add_argument("--per-head", action="store_true", help="also score every head")
    p.add_argument("--out", metavar="FILE.csv", help="write the tidy table to this CSV file")
    p.add_argument("--revision", help="hub revision (branch, tag or commit) to pin")
    p.add_argument("--pairing", choices=("grouped", "modulo"), default="grouped",
                   help="query/key head pairing for grouped-query attention (default: grouped)")
    p.add_argument("--gamma", type=float, default=2.0, help="outlier threshold in std (default 2)")
    p.add_argument("--variant", choices=("excess", "eq18"), default="excess",
                   help="directionality variant (default: excess, as in the published tables)")
    p.add_argument("--allow-pickle", action="store_true",
                   help="allow reading pytorch_model.bin (unpickling can run code)")
    p.add_argument("--bias-term", action="store_true",
                   help="also measure, on real inputs, the share of the logit variance over keys "
                   "carried by the terms the biases add (the key-bias term b_q^T W_k y without "
                   "rotary embeddings), which the form leaves out (zoo models with a query bias: "
                   "see companion.survey.bias_term.MEASURED)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..adapters import read_qk
    from ..base.outputs import check_table_output, check_writable, write_csv_atomic
    from ..survey.tables import layer_scores, summarize_layers
    from ..zoo.registry import is_zoo_name, zoo_path

    from ..adapters.reader import usable_path

    # options are checked before any tensor is read
    usable_path(args.source)
    if args.out == "":
        raise CompanionError("--out is empty; give a file name such as scores.csv, or leave --out out.")
    if not math.isfinite(args.gamma) or args.gamma < 0:
        raise CompanionError(f"--gamma {args.gamma} is not a finite number >= 0; the outlier "
                             "threshold is in standard deviations (the paper uses 2).")
    if args.out:
        check_writable(args.out, "--out file")
    zoo_name = args.source if is_zoo_name(args.source) else None
    if args.bias_term:
        from ..survey.bias_term import MEASURED

        if zoo_name not in MEASURED:
            raise CompanionError(
                f"--bias-term needs real layer inputs, which the package captures for the zoo "
                f"models {', '.join(MEASURED)}; {args.source!r} is not one of them. Drop "
                "--bias-term, or score one of those.")
    if args.revision is not None and (zoo_name or Path(args.source).exists()):
        raise CompanionError(f"--revision {args.revision} pins a hub revision, but {args.source} is a "
                             f"{'zoo model' if zoo_name else 'local path'}, which has only the files it holds; "
                             "drop --revision, or give a hub id owner/name.")
    if zoo_name:  # a bare zoo name: assemble (if needed) and read that
        args.source = str(zoo_path(args.source))
    elif "/" not in args.source and not Path(args.source).exists():
        import difflib

        from ..zoo.registry import zoo_names

        near = difflib.get_close_matches(args.source, zoo_names(), n=1)
        if near:
            raise CompanionError(f"{args.source!r} is not a zoo model; did you mean {near[0]!r}? "
                                 "(`companion zoo list` shows them)")
    if args.out:
        _refuse_writing_into_the_input(Path(args.out), Path(args.source))
        check_table_output(args.out, "--out file")   # nor a file that is not a table, or one of data/
    ckpt = read_qk(args.source, revision=args.revision, allow_pickle=args.allow_pickle,
                   progress=not args.quiet)
    df = layer_scores(ckpt, per_head=args.per_head, pairing=args.pairing, gamma=args.gamma,
                      variant=args.variant)
    if df.empty:
        raise CompanionError(f"{args.source} has no self-attention layers to score.")
    if not args.per_head:
        df = df.drop(columns="head")
    cols = ["component", "role", "layer"] + (["head"] if args.per_head else []) + [
        "symmetry", "directionality"]
    print(f"{ckpt.meta.get('name', args.source)}: family {ckpt.family}, "
          f"{ckpt.n_parameters:,} parameters, read {ckpt.bytes_read:,} bytes")
    print(df[cols].to_string(index=False, float_format=lambda v: f"{v:+.4f}"))
    summary = summarize_layers(df if args.per_head else df.assign(head=-1))
    print("\nacross layers: median [q25, q75]")
    for _, r in summary.iterrows():
        print(f"  {r['component']:>8} ({r['n_layers']} layers)  "
              f"symmetry {r['symmetry_median']:+.4f} [{r['symmetry_q25']:+.4f}, {r['symmetry_q75']:+.4f}]  "
              f"directionality {r['directionality_median']:+.4f} "
              f"[{r['directionality_q25']:+.4f}, {r['directionality_q75']:+.4f}]")
    if args.bias_term:
        from ..survey.bias_term import bias_term_table

        bt = bias_term_table([zoo_name])
        layers = bt[bt["head"] == -1]
        print("\nbias terms (b_q^T W_k y without rotation): share of the logit variance over keys, "
              "per layer (real inputs; see companion.survey.bias_term)")
        print(layers[["layer", "share"]].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        shares = bt.rename(columns={"share": "bias_term_share"})
        if args.per_head:  # head -1 is the layer, as in the scores
            df = df.merge(shares[["layer", "head", "bias_term_share"]], on=["layer", "head"], how="left")
        else:
            df = df.merge(shares[shares["head"] == -1][["layer", "bias_term_share"]], on="layer", how="left")
    if args.out:
        out = write_csv_atomic(df, args.out)
        print(f"wrote {len(df)} rows to {out}", file=sys.stderr)
    return 0


def _refuse_writing_into_the_input(out: Path, source: Path) -> None:
    """``--out`` may not replace the checkpoint file, or any file of the model's folder."""
    if not source.exists():
        return  # a hub id: nothing local to overwrite
    out_r, src_r = out.resolve(), source.resolve()
    folder = src_r if src_r.is_dir() else src_r.parent
    if out_r == src_r or (src_r.is_dir() and folder in out_r.parents) or (
            out.exists() and out_r.parent == folder and out_r.suffix.lower() != ".csv"):
        raise CompanionError(f"--out {out} would overwrite a file of the model being read ({source}); "
                             "write the table somewhere else, e.g. scores.csv in another folder.")
