#!/usr/bin/env bash
# A rank stopped before the job starts (before MPI's start-up exchange) is a
# clear, bounded failure too: `mpirun -np 2 ragged run ... --collective-timeout 3`
# with rank 1 stopping itself at start-up (RAGGED_TEST_STOP_RANK_AT_STARTUP)
# must end within 20 s, non-zero, with one line from rank 0 naming the timeout.
# Usage: startup_stop_test.sh MPIEXEC RAGGED [mpirun flags...]
set -u
mpiexec=$1; ragged=$2; shift 2
tag="startup-stop-$$-$RANDOM"
err=$(mktemp); out=$(mktemp)
cleanup() {
  for dir in /proc/[0-9]*; do
    [[ -r $dir/environ ]] || continue
    if tr '\0' '\n' < "$dir/environ" 2>/dev/null | grep -qx "RAGGED_TEST_TAG=$tag"; then
      kill -KILL "${dir#/proc/}" 2>/dev/null
    fi
  done
  rm -f "$err" "$out"
}
trap cleanup EXIT

start=$(date +%s%N)
"$mpiexec" -np 2 "$@" -x RAGGED_TEST_TAG="$tag" -x RAGGED_TEST_STOP_RANK_AT_STARTUP=1 "$ragged" run \
  tiny-llama-4xcpu --gpus 2 --steps 2 --collective-timeout 3 > "$out" 2> "$err" &
launcher=$!
for _ in $(seq 1 300); do
  kill -0 $launcher 2>/dev/null || break
  sleep 0.1
done
if kill -0 $launcher 2>/dev/null; then
  echo "the job still runs 30 s after it started with rank 1 stopped"; kill -KILL $launcher; cat "$err"; exit 1
fi
wait $launcher; code=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "exit $code, ended ${elapsed_ms} ms after the launch"
grep "^ragged:" "$err"
[[ $code -ne 0 ]] || { echo "exit code 0"; exit 1; }
(( elapsed_ms <= 20000 )) || { echo "took longer than 20 s"; exit 1; }
grep -q "^ragged: error: rank 0: the job did not start within --collective-timeout 3 s" "$err" ||
  { echo "no start-up line from rank 0"; cat "$err"; exit 1; }
echo "ok"
