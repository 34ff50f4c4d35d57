#!/usr/bin/env bash
# Writes the authors'-setting body (data/runs/chars_plan.md, make_chars_runs.sh) as a Slurm
# batch script: a job array of one task a run, in make_chars_runs.sh's order (`--list`), each
# task running that run's own resumable command (`make_chars_runs.sh --one INDEX`): it
# checkpoints into WORK/NAME, continues from there when the task starts again, records each
# sitting's device in the run's provenance (as `companion train` does), and copies a finished
# 10,000-step run into data/runs/NAME of this checkout, where the body reader looks.
#
# Usage: bash data/runs/chars_slurm.sh [FILE]      (the script on stdout without FILE), then
#        sbatch FILE       (again after a time limit or a failure: landed runs are skipped)
#   PARTITION (none: the cluster's default), ACCOUNT (none), TIME (06:00:00 a task; a run is
#   about 1.3 hours of one free core), CPUS (1 a task: the runs train on one thread), MEM (4G),
#   AT_ONCE (12 tasks at a time), OUTPUT (charsv4-%A_%a.out, in the folder sbatch runs in).
#   The runs' own variables, when set here, are written into the script and the others are
#   unset in each task, so a task runs what was written whatever the submitting shell holds:
#   PY (default: this checkout's .venv/bin/python), WORK or COMPANION_RUNS_WORK, STEPS, EVERY,
#   WARMUP, DEVICE_ARGS, LIMIT, RUN_NICE, RUNS_LOG.  To try a task here without Slurm:
#   SLURM_ARRAY_TASK_ID=0 bash FILE (written with STEPS=20 EVERY=10 WARMUP=5 WORK=/tmp/x).
set -euo pipefail
me=chars_slurm.sh
here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/../.." && pwd -P)
runner=$root/data/runs/make_chars_runs.sh

PARTITION=${PARTITION:-}
ACCOUNT=${ACCOUNT:-}
TIME=${TIME:-06:00:00}
CPUS=${CPUS:-1}
MEM=${MEM:-4G}
AT_ONCE=${AT_ONCE:-12}
OUTPUT=${OUTPUT:-charsv4-%A_%a.out}

bad() { echo "$me: $1" >&2; exit 2; }
(( $# <= 1 )) || bad "one argument at most (the file to write); got $#: $*"
[[ $TIME =~ ^([0-9]+-)?[0-9]+(:[0-9]{1,2}){0,2}$ ]] || bad "TIME=$TIME is not a Slurm time limit; use HH:MM:SS or D-HH:MM:SS, such as TIME=06:00:00"
[[ $CPUS =~ ^[1-9][0-9]*$ ]] || bad "CPUS=$CPUS is not a positive whole number of CPUs a task; use CPUS=1"
[[ $AT_ONCE =~ ^[1-9][0-9]*$ ]] || bad "AT_ONCE=$AT_ONCE is not a positive whole number of tasks at a time; use AT_ONCE=12"
[[ $MEM =~ ^[1-9][0-9]*[KMGT]?$ ]] || bad "MEM=$MEM is not a Slurm memory size; use a number with K, M, G or T, such as MEM=4G"
[[ $PARTITION =~ ^[A-Za-z0-9_.,-]*$ ]] || bad "PARTITION=$PARTITION is not a partition name (letters, digits, _ . , -); use one sinfo lists"
[[ $ACCOUNT =~ ^[A-Za-z0-9_.-]*$ ]] || bad "ACCOUNT=$ACCOUNT is not an account name (letters, digits, _ . -); use one sacctmgr lists"
[[ $OUTPUT =~ ^[A-Za-z0-9_.%/-]+$ ]] || bad "OUTPUT=$OUTPUT is not a plain file pattern (letters, digits, _ . % / -); use OUTPUT=charsv4-%A_%a.out"
file=${1:-}
if [ -n "$file" ]; then
  [ ! -d "$file" ] || bad "$file is a folder; name the batch file to write, such as $file/charsv4.sbatch"
  [ -d "$(dirname "$file")" ] || bad "the folder of $file does not exist; create it or write the file elsewhere"
  [ ! -L "$file" ] || bad "$file is a symbolic link; name a new file (the batch file is not written through a link)"
  if [ -e "$file" ]; then
    [ -f "$file" ] || bad "$file is not a regular file (a FIFO or device); name a new file"
    [ "$(sed -n 2p "$file")" = "#SBATCH --job-name=charsv4" ] || bad "$file exists and is not a batch file this script wrote; name a new file, or remove it yourself"
  fi
fi
[ -n "${PY:-}" ] || { if [ -x "$root/.venv/bin/python" ]; then PY=$root/.venv/bin/python; else PY=python; fi; }

names=$(bash "$runner" --list) || bad "make_chars_runs.sh --list failed; run it to see why"
mapfile -t names <<< "$names"
n=${#names[@]}
(( n > 0 )) && [ -n "${names[0]}" ] || bad "make_chars_runs.sh --list names no run (LIMIT=${LIMIT:-}?); unset LIMIT or raise it"

write() {
  echo "#!/usr/bin/env bash"
  echo "#SBATCH --job-name=charsv4"
  echo "#SBATCH --array=0-$((n - 1))%$AT_ONCE"
  echo "#SBATCH --time=$TIME"
  echo "#SBATCH --cpus-per-task=$CPUS"
  echo "#SBATCH --mem=$MEM"
  echo "#SBATCH --output=$OUTPUT"
  [ -z "$PARTITION" ] || echo "#SBATCH --partition=$PARTITION"
  [ -z "$ACCOUNT" ] || echo "#SBATCH --account=$ACCOUNT"
  cat <<EOF
# The authors'-setting body (data/runs/chars_plan.md) as a Slurm job array, written by
# data/runs/chars_slurm.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ): $n runs, one a task, in the order of
# make_chars_runs.sh --list.  Task i runs make_chars_runs.sh --one i, the resumable command the
# CPU script runs for its run i; submit again (sbatch) after a time limit: each task continues
# from its checkpoint, and a landed run is skipped.
set -euo pipefail
EOF
  local var
  for var in PY WORK COMPANION_RUNS_WORK STEPS EVERY WARMUP DEVICE_ARGS LIMIT RUN_NICE RUNS_LOG; do
    if [ -n "${!var+set}" ]; then printf 'export %s=%q\n' "$var" "${!var}"; else echo "unset $var"; fi
  done
  echo "names=("
  local i
  for ((i = 0; i < n; i++)); do echo "  ${names[i]}  # $i"; done
  echo ")"
  printf 'runner=%q\n' "$runner"
  cat <<'EOF'
i=${SLURM_ARRAY_TASK_ID:-}
if ! [[ $i =~ ^[0-9]+$ ]] || (( 10#$i >= ${#names[@]} )); then
  echo "SLURM_ARRAY_TASK_ID='$i' is not a task of this array (0 to $((${#names[@]} - 1))); submit this file with sbatch, or set SLURM_ARRAY_TASK_ID to one of them to run it here" >&2
  exit 2
fi
i=$((10#$i))
got=$(DRY=1 bash "$runner" --one "$i")
if [ "$got" != "${names[i]}" ]; then
  echo "task $i: make_chars_runs.sh's run $i is now '$got', not ${names[i]} as when this file was written; write it again with bash data/runs/chars_slurm.sh" >&2
  exit 2
fi
echo "task $i: ${names[i]} on $(hostname) from $(date -u +%Y-%m-%dT%H:%M:%SZ)"
bash "$runner" --one "$i"
echo "task $i: ${names[i]} done $(date -u +%Y-%m-%dT%H:%M:%SZ)"
EOF
}

if [ -n "$file" ]; then
  tmp="$file.tmp.$$"
  { write > "$tmp" && mv -f -- "$tmp" "$file"; } || { rm -f -- "$tmp"; bad "cannot write $file; name a file you can write"; }
  echo "$me: wrote $file: $n runs, tasks 0-$((n - 1)), $AT_ONCE at a time; submit it with: sbatch $file" >&2
else
  write
fi
