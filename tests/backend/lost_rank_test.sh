#!/usr/bin/env bash
# A lost rank is a clear, bounded failure: `mpirun -np 2 ragged run ...
# --collective-timeout 5` with rank 1 stopped by SIGSTOP must end within 15 s,
# non-zero, with one line naming rank 1 and the timeout.
# Usage: lost_rank_test.sh MPIEXEC RAGGED [mpirun flags...]
set -u
mpiexec=$1; ragged=$2; shift 2
tag="lost-rank-$$-$RANDOM"
err=$(mktemp); out=$(mktemp)
source "$(dirname "$0")/lost_rank_lib.sh"
trap cleanup EXIT

"$mpiexec" -np 2 "$@" -x RAGGED_TEST_TAG="$tag" "$ragged" run tiny-llama-4xcpu --gpus 2 --steps 5000 \
  --collective-timeout 5 > "$out" 2> "$err" &
launcher=$!

# Let both ranks start training (the watchdog starts once the Program is built).
victim=$(wait_for_rank_1) || exit 1
sleep 2
kill -STOP $victim
stopped=$(date +%s%N)
expect_job_ended $stopped 15000 "^ragged: error: rank 0 waited"
line=$(grep "^ragged: error: rank 0 waited" "$err")
[[ $line == *"--collective-timeout 5"* && $line == *"rank 1"* ]] || { echo "the line names neither rank 1 nor the timeout"; exit 1; }
echo "ok"
