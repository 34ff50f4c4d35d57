# Sourced by the make_*.sh scripts here: the shared set-up and a pool of background runs.
#   PY (default python) runs the package from src/, offline; RUN_JOBS (default 2) runs at a
#   time; every run appends its progress to data/runs/progress.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PY=${PY:-python}
JOBS=${RUN_JOBS:-2}
LOG=data/runs/progress.log

# pool CMD ARGS...: start CMD in the background once fewer than JOBS runs are going
pool() {
  while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || true; done
  "$@" &
}

# finished DIR STEPS: whether the run in DIR is a finished run of STEPS steps (its provenance
# asks for STEPS and its history reaches it); a short trial run left in the work folder is
# named on stderr and not copied as a finished run
finished() {
  local f
  for f in "$1/provenance.json" "$1/history.csv"; do   # a FIFO would block the reader, a link leads elsewhere
    if [ -L "$f" ] || [ ! -f "$f" ]; then echo "$f: not a regular file of a finished run; it is not copied" >&2; return 1; fi
  done
  $PY - "$1" "$2" <<'PYEOF'
import csv, json, sys
d, steps = sys.argv[1], int(sys.argv[2])
try:
    asked = int(json.load(open(f"{d}/provenance.json"))["config"]["steps"])
    last = max(int(float(r["step"])) for r in csv.DictReader(open(f"{d}/history.csv")))
except (OSError, ValueError, KeyError) as err:
    print(f"{d}: not a finished run ({err}); it is not copied", file=sys.stderr)
    sys.exit(1)
if asked != steps or last < steps:
    print(f"{d}: a run of {asked} steps that reached step {last}, not a finished run of {steps}; "
          "it is not copied (move it out of the work folder and run the script again)", file=sys.stderr)
    sys.exit(1)
PYEOF
}

# land NAME WORK STEPS [FILES...]: copy a finished run from WORK/NAME into data/runs/NAME
# (provenance, the FILES globs such as weight digests, then history.csv last, which marks a
# finished run); a run that is not a finished run of STEPS steps, or whose name has landed from
# elsewhere (a device) meanwhile, is not copied, and the log says why
land() {
  local name=$1 work=$2 steps=$3; shift 3
  # _land_put SRC DEST: copy SRC to DEST, replacing a link left at DEST (a link is never written
  # through: it may point at a user's file outside data/runs); anything else there is refused
  _land_put() {
    if [ -L "$1" ] || [ ! -f "$1" ]; then   # a FIFO would block cp for ever; a link would copy a file from elsewhere
      echo "NOT COPIED $name: $1 is not a regular file $(date -u)" >> $LOG; return 1
    fi
    if [ -L "$2" ]; then rm -f -- "$2"
    elif [ -e "$2" ] && [ ! -f "$2" ]; then echo "NOT COPIED $name: $2 is not a file $(date -u)" >> $LOG; return 1
    fi
    cp -- "$1" "$2"
  }
  if [ -L data/runs/$name ] || { [ -e data/runs/$name ] && [ ! -d data/runs/$name ]; }; then
    echo "NOT COPIED $name: data/runs/$name is a link or not a folder, which is never written into; remove it and run the script again $(date -u)" >> $LOG
    echo "data/runs/$name is a link or not a folder; remove it and run the script again" >&2
    return 1
  fi
  if [ -f data/runs/$name/history.csv ] && [ ! -L data/runs/$name/history.csv ]; then
    echo "NOT COPIED $name: data/runs/$name already holds a finished run; this one stays in $work $(date -u)" >> $LOG
    return 0
  fi
  finished "$work/$name" "$steps" || { echo "NOT COPIED $name: not a finished $steps-step run $(date -u)" >> $LOG; return 1; }
  mkdir -p data/runs/$name
  _land_put "$work/$name/provenance.json" data/runs/$name/provenance.json || return 1
  local f g
  for f in "$@"; do for g in "$work/$name"/$f; do _land_put "$g" "data/runs/$name/${g##*/}" || return 1; done; done
  _land_put "$work/$name/history.csv" data/runs/$name/history.csv || return 1   # last: history.csv marks a finished run
  echo "landed $name $(date -u)" >> $LOG
}
