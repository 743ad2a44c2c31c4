#!/usr/bin/env bash
# A rank that stops itself through a test hook, as a rank whose node froze
# would, is a clear, bounded failure: before MPI's start-up exchange (WHEN
# startup: RAGGED_TEST_STOP_RANK_AT_STARTUP, the start-up deadline) or once
# its work is done, before MPI's finalisation (WHEN exit:
# RAGGED_TEST_STOP_RANK_AT_EXIT, the exit deadline). `mpirun -np 2` of `ragged
# run` (--collective-timeout 3) or `ragged tune SCENARIO` (--task-timeout 3)
# with rank 1 stopping must end non-zero within 20 s (startup) or 30 s (exit,
# the work included) of the launch, with one `ragged:` line, rank 0's, naming
# the timeout; a search's report comes first.
# Usage: stop_hook_test.sh startup|exit MPIEXEC RAGGED run|tune:SCENARIO [mpirun flags...]
set -u
when=$1; mpiexec=$2; ragged=$3; command=$4; shift 4
tag="stop-$when-$$-$RANDOM"
err=$(mktemp); out=$(mktemp)
source "$(dirname "$0")/lost_rank_lib.sh"
trap cleanup EXIT

case $command in
  run) args=(run tiny-llama-4xcpu --gpus 2 --steps 2 --collective-timeout 3); option=--collective-timeout ;;
  tune:*) args=(tune "${command#tune:}" --strategies ragged --no-cache --jobs 1 --task-timeout 3); option=--task-timeout ;;
  *) echo "unknown command: $command"; exit 2 ;;
esac
case $when in
  startup) hook=RAGGED_TEST_STOP_RANK_AT_STARTUP; most_ms=20000
           pattern="^ragged: error: rank 0: the job did not start within $option 3 s" ;;
  exit) hook=RAGGED_TEST_STOP_RANK_AT_EXIT; most_ms=30000
        pattern="^ragged: error: rank 0: rank 1 did not reach the end of the job within $option 3 s" ;;
  *) echo "unknown moment: $when"; exit 2 ;;
esac

start=$(date +%s%N)
"$mpiexec" -np 2 "$@" -x RAGGED_TEST_TAG="$tag" -x "$hook=1" "$ragged" "${args[@]}" > "$out" 2> "$err" &
launcher=$!
expect_job_ended $start $most_ms "$pattern"
lines=$(grep -a -c "^ragged:" "$err")
[[ $lines -eq 1 ]] || { echo "$lines lines from ragged, not one"; cat "$err"; exit 1; }
if [[ $when == exit && $command == tune:* ]]; then
  grep -q "^best: " "$out" || { echo "no report before the end"; cat "$out"; exit 1; }
fi
echo "ok"
