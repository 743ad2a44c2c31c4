#!/usr/bin/env bash
# A worker stopped once `mpirun ragged tune`'s search is done (before MPI's
# finalisation, which waits for every rank) is a clear, bounded failure: with
# rank 1 stopping itself there (RAGGED_TEST_STOP_RANK_AT_EXIT) and
# --task-timeout 3, the job must end within 30 s of the launch, non-zero,
# after the report, with one line, rank 0's, naming rank 1.
# Usage: tune_exit_stop_test.sh MPIEXEC RAGGED SCENARIO [mpirun flags...]
set -u
mpiexec=$1; ragged=$2; scenario=$3; shift 3
tag="tune-exit-stop-$$-$RANDOM"
err=$(mktemp); out=$(mktemp)
source "$(dirname "$0")/../backend/lost_rank_lib.sh"
trap cleanup EXIT

start=$(date +%s%N)
"$mpiexec" -np 2 "$@" -x RAGGED_TEST_TAG="$tag" -x RAGGED_TEST_STOP_RANK_AT_EXIT=1 "$ragged" tune "$scenario" \
  --strategies ragged --no-cache --jobs 1 --task-timeout 3 > "$out" 2> "$err" &
launcher=$!
expect_job_ended $start 30000 \
  "^ragged: error: rank 0: rank 1 did not reach the end of the job within --task-timeout 3 s"
lines=$(grep -c "^ragged:" "$err")
[[ $lines -eq 1 ]] || { echo "$lines lines from ragged, not one"; cat "$err"; exit 1; }
grep -q "^best: " "$out" || { echo "no report before the end"; cat "$out"; exit 1; }
echo "ok"
