"""``companion score SOURCE``: per-layer symmetry and directionality of one checkpoint."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..base.errors import CompanionError
from ..base.paths import home_path


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "score",
        help="score the query-key forms of a checkpoint (folder, .gguf file or hub id)",
        description="Read only the query/key projections of SOURCE and print the symmetry "
        "and directionality of every self-attention layer, with median and IQR across layers.",
    )
    p.add_argument("source", help="Hugging Face folder, .gguf file, hub id owner/name (read over "
                   "the network: only the headers and the query/key tensors; HF_HUB_OFFLINE=1 refuses it), "
                   "or a zoo name (companion zoo list)")
    p.add_argument("--per-head", action="store_true", help="also score every head")
    p.add_argument("--out", metavar="FILE.csv", help="write the tidy table to this CSV file")
    p.add_argument("--revision", help="hub revision (branch, tag or commit) to pin; only with a hub id")
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
    from . import shown

    # options are checked before any tensor is read
    if not args.source.strip():   # Path("") is the current folder, which was read as the model
        raise CompanionError("the model to score is empty (an unset variable?); give a folder, a .gguf file, a hub "
                             "id owner/name or a zoo name (`companion zoo list`).")
    source = usable_path(args.source)
    if args.source.startswith("~"):   # "~/m" as quoted: every check below reads the folder meant
        args.source = str(source)
    if source.name == "config.json" and source.is_file():   # the model is its folder (its name, its files)
        args.source = str(source.parent)
    if args.out == "":
        raise CompanionError("--out is empty; give a file name such as scores.csv, or leave --out out.")
    args.out = home_path(args.out)   # --out=~/s.csv: the shell leaves a ~ after '=' as it is
    if args.revision is not None and not args.revision.strip():
        raise CompanionError("--revision is empty (an unset variable?); give a branch, tag or commit of the hub "
                             "repository, or leave --revision out for main.")
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
    if _read_from_the_hub(args.source):   # the network is used: said before the first request
        from ..adapters.hub import hub_endpoint

        at = f" at {shown(args.revision)}" if args.revision else ""
        print(f"reading {args.source}{at} from the hub at {shown(hub_endpoint())} over the network (headers and "
              "query/key tensors only; HF_HUB_OFFLINE=1 forbids it)", flush=True)
    ckpt = read_qk(args.source, revision=args.revision, allow_pickle=args.allow_pickle,
                   progress=not args.quiet)
    if "name" in ckpt.meta:   # a folder name that is not UTF-8 is no text a table can hold: its bytes escaped
        ckpt.meta["name"] = shown(str(ckpt.meta["name"]).encode("utf-8", "surrogateescape").decode(
            "utf-8", "backslashreplace"))
    df = layer_scores(ckpt, per_head=args.per_head, pairing=args.pairing, gamma=args.gamma,
                      variant=args.variant)
    if df.empty:
        raise CompanionError(f"{args.source} has no self-attention layers to score.")
    if not args.per_head:
        df = df.drop(columns="head")
    cols = ["component", "role", "layer"] + (["head"] if args.per_head else []) + [
        "symmetry", "directionality"]
    print(f"{shown(ckpt.meta.get('name', args.source))}: family {ckpt.family}, "
          f"{ckpt.n_parameters:,} parameters, read {ckpt.bytes_read:,} bytes")
    print(df[cols].to_string(index=False, na_rep="no score", float_format=_signed))
    summary = summarize_layers(df if args.per_head else df.assign(head=-1))
    print("\nacross layers: median [q25, q75]")
    for _, r in summary.iterrows():
        print(f"  {r['component']:>8} ({r['n_layers']} layers)  symmetry {_spread(r, 'symmetry')}  "
              f"directionality {_spread(r, 'directionality')}")
    unscored = df[df[["symmetry", "directionality"]].isna().any(axis=1)]
    if len(unscored):
        where = ", ".join(f"{r['component']} layer {r['layer']}" + (f" head {r['head']}" if args.per_head else "")
                          for _, r in unscored.head(8).iterrows()) + (", ..." if len(unscored) > 8 else "")
        print(f"\nno score for {len(unscored)} of {len(df)} rows ({where}): a query-key form that is zero has "
              "none (0/0), nor has a median across layers that takes one in")
    if args.bias_term:
        from ..survey.bias_term import bias_term_table

        bt = bias_term_table([zoo_name])
        layers = bt[bt["head"] == -1]
        print("\nbias terms (b_q^T W_k y without rotation): share of the logit variance over keys, "
              "per layer (real inputs; see companion.survey.bias_term)")
        print(layers[["layer", "share"]].to_string(index=False, na_rep="no share", float_format=lambda v: f"{v:.4f}"))
        shares = bt.rename(columns={"share": "bias_term_share"})
        if args.per_head:  # head -1 is the layer, as in the scores
            df = df.merge(shares[["layer", "head", "bias_term_share"]], on=["layer", "head"], how="left")
        else:
            df = df.merge(shares[shares["head"] == -1][["layer", "bias_term_share"]], on="layer", how="left")
    if args.out:
        out = write_csv_atomic(df, args.out)
        print(f"wrote {len(df)} rows to {shown(out)}", file=sys.stderr)
    return 0


def _read_from_the_hub(source: str) -> bool:
    """Whether the reader takes ``source`` as a hub id it reads over the network: ``owner/name``,
    no such path here (nor its ``owner`` folder), and ``HF_HUB_OFFLINE`` not set."""
    import os

    from ..adapters import hub
    from ..base.paths import is_hub_id

    return (is_hub_id(source) and "/" in source and not os.path.lexists(source)
            and not os.path.lexists(source.split("/")[0]) and not hub._hub_offline())


def _spread(row, score: str) -> str:
    """``+median [+q25, +q75]`` of one score across layers, ``no score`` where a layer has none."""
    values = [row[f"{score}_{q}"] for q in ("median", "q25", "q75")]
    if not all(math.isfinite(v) for v in values):
        return "no score"
    return f"{_signed(values[0])} [{_signed(values[1])}, {_signed(values[2])}]"


def _signed(v) -> str:
    """A score to four decimals with its sign; one that rounds to zero reads +0.0000 (never
    -0.0000: -0.00004 is no negative score at four decimals), one that is missing ``no score``."""
    if not math.isfinite(v):
        return "no score"
    text = f"{v:+.4f}"
    return "+0.0000" if text == "-0.0000" else text


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
