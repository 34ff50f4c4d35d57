#!/usr/bin/env bash
# The objective-swap runs of data/runs/objective_swap_plan.md (rule: objective_swap in
# data/verdict_rules.yaml).  Usage:
#   bash data/runs/make_swap_runs.sh pilot    # MiniLM's learning-rate pilot (writes swap_lr_minilm.txt
#                                             # and appends its outcome to the plan)
#   bash data/runs/make_swap_runs.sh minilm   # MiniLM swap (causal next-token) and control (masked LM),
#                                             # seeds 1-3, resumable, RUN_JOBS=2 at a time
#   bash data/runs/make_swap_runs.sh smollm2-pilot  # SmolLM2's pilot (control objective only, largest
#                                             # rate first; writes swap_lr_smollm2.txt, appends to the plan)
#   bash data/runs/make_swap_runs.sh smollm2  # SmolLM2 swap (bidirectional, masked LM) and control
#                                             # (causal, next token), seed 1, 500 steps, both at once
source "$(dirname "$0")/common.sh"
PHASE=${1:-minilm}
[[ $PHASE == pilot || $PHASE == minilm || $PHASE == smollm2-pilot || $PHASE == smollm2 ]] || {
  echo "usage: $0 [pilot|minilm|smollm2-pilot|smollm2]" >&2; exit 2; }
if [[ $PHASE == smollm2-pilot ]]; then
  $PY - <<'PY'
import math, sys, time
from companion.train.text.data import token_data_for_corpus
from companion.train.runner.loop import TrainConfig, train
from companion.train.models.pretrained import pretrained_folder

data = token_data_for_corpus("wikipedia", 128, top_k=None, tokenizer_name=pretrained_folder("smollm2-135m"))
rows, chosen = [], None
for lr in (1e-4, 3e-5, 1e-5):  # largest first: the first that meets the rule is the largest that does
    cfg = TrainConfig(mode="decoder", init_from="smollm2-135m", top_k=None, seq_len=128, seed=0, steps=100,
                      batch_size=8, lr=lr, warmup=5, eval_every=100, eval_blocks=64, optimizer="adamw",
                      weight_decay=0.01, device="cpu")
    t0 = time.time()
    h = train(cfg, data=data)
    ev = h[h.quantity == "eval_loss"].set_index("step")["value"]
    c0, c1 = ev.iloc[0], ev.iloc[-1]
    ok = math.isfinite(c1) and c1 <= c0
    rows.append(f"| {lr:g} | {c0:.3f} | {c1:.3f} | {(time.time() - t0) / 100:.2f} | {'yes' if ok else 'no'} |")
    if ok:
        chosen = lr
        break
if chosen is None:
    sys.exit("pilot: no rate met the rule; see data/runs/objective_swap_plan.md")
open("data/runs/swap_lr_smollm2.txt", "w").write(f"{chosen:g}\n")
with open("data/runs/objective_swap_plan.md", "a") as fh:
    fh.write(f"\n## The pilot's outcome (SmolLM2)\n\nRun on {time.strftime('%Y-%m-%d', time.gmtime())} with "
             "`bash data/runs/make_swap_runs.sh smollm2-pilot` (CPU, two threads; control objective only):\n\n"
             "| lr | control loss, step 0 | step 100 | s/step | meets the rule |\n"
             "|---|---|---|---|---|\n" + "\n".join(rows) + f"\n\nSmolLM2's rate: {chosen:g}.\n")
print("LR", chosen)
PY
  exit $?
fi
if [[ $PHASE == smollm2 ]]; then
  [ -f data/runs/swap_lr_smollm2.txt ] || { echo "run the pilot first: bash $0 smollm2-pilot" >&2; exit 2; }
  LR=$(cat data/runs/swap_lr_smollm2.txt)
  run_s() {  # ROLE MODE SEED
    local name=swap-smollm2-$1-s$3
    [ -f data/runs/$name/history.csv ] && return 0
    nice -n ${RUN_NICE:-10} $PY -m companion.train.cli --from smollm2-135m --corpus wikipedia --seq-len 128 \
      --batch-size 8 --optimizer adamw --weight-decay 0.01 --threads 1 --mode $2 --seed $3 --lr $LR \
      --steps 500 --warmup 25 --eval-every 50 --eval-blocks 64 --eval-other --checkpoint-every 50 \
      --log-updates 10 --log $LOG --resume --out data/runs/$name > /dev/null 2>&1 || echo "FAILED $name"
  }
  pool run_s control decoder 1
  pool run_s swap encoder 1
  wait
  echo "swap runs (smollm2) done $(date -u)" >> $LOG
  exit 0
fi
FROM=all-minilm-l6-v2
COMMON="--from $FROM --corpus wikipedia --seq-len 128 --batch-size 8 --optimizer adamw --weight-decay 0.01 --threads 1"
if [[ $PHASE == pilot ]]; then
  $PY - <<'PY'
import math, sys, time
from companion.train.text.data import token_data_for_corpus
from companion.train.runner.loop import TrainConfig, train
from companion.train.models.pretrained import pretrained_folder

data = token_data_for_corpus("wikipedia", 128, top_k=None, tokenizer_name=pretrained_folder("all-minilm-l6-v2"))
rows, chosen = [], None
for lr in (1e-5, 3e-5, 1e-4):
    ends = {}
    for role, mode in (("control", "encoder"), ("swap", "decoder")):
        cfg = TrainConfig(size="bert-mini", mode=mode, init_from="all-minilm-l6-v2", top_k=None, seq_len=128, seed=0,
                          steps=100, batch_size=8, lr=lr, warmup=5, eval_every=100, eval_blocks=64,
                          optimizer="adamw", weight_decay=0.01, device="cpu")
        t0 = time.time()
        h = train(cfg, data=data)
        ev = h[h.quantity == "eval_loss"].set_index("step")["value"]
        ends[role] = (ev.iloc[0], ev.iloc[-1], time.time() - t0)
    (c0, c1, ct), (s0, s1, st) = ends["control"], ends["swap"]
    ok = math.isfinite(c1) and c1 <= c0 and math.isfinite(s1)
    rows.append(f"| {lr:g} | {c0:.3f} | {c1:.3f} | {s0:.3f} | {s1:.3f} | {ct / 100:.2f} / {st / 100:.2f} | {'yes' if ok else 'no'} |")
    if ok:
        chosen = lr
if chosen is None:
    sys.exit("pilot: no rate met the rule; see data/runs/objective_swap_plan.md")
open("data/runs/swap_lr_minilm.txt", "w").write(f"{chosen:g}\n")
with open("data/runs/objective_swap_plan.md", "a") as fh:
    fh.write(f"\n## The pilot's outcome (MiniLM)\n\nRun on {time.strftime('%Y-%m-%d', time.gmtime())} with "
             "`bash data/runs/make_swap_runs.sh pilot` (CPU, torch's default threads; the runs use one):\n\n"
             "| lr | control loss, step 0 | step 100 | swap loss, step 0 | step 100 | s/step control / swap | meets the rule |\n"
             "|---|---|---|---|---|---|---|\n" + "\n".join(rows) + f"\n\nMiniLM's rate: {chosen:g}.\n")
print("LR", chosen)
PY
  exit $?
fi
[ -f data/runs/swap_lr_minilm.txt ] || { echo "run the pilot first: bash $0 pilot" >&2; exit 2; }
LR=$(cat data/runs/swap_lr_minilm.txt)
run() {  # ROLE MODE SEED
  local name=swap-minilm-$1-s$3
  [ -f data/runs/$name/history.csv ] && return 0
  nice -n ${RUN_NICE:-10} $PY -m companion.train.cli $COMMON --mode $2 --seed $3 --lr $LR --steps 1000 --warmup 50 \
    --eval-every 50 --eval-blocks 128 --checkpoint-every 50 --log-updates 10 --log $LOG --resume \
    --out data/runs/$name > /dev/null 2>&1 || echo "FAILED $name"
}
for seed in 1 2 3; do
  pool run control encoder $seed
  pool run swap decoder $seed
done
wait
echo "swap runs (minilm) done $(date -u)" >> $LOG
