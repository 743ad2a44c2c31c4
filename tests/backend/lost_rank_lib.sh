# Shared by the lost-rank tests (lost_rank_test.sh, lost_worker_test.sh,
# stop_hook_test.sh): a job of tagged ragged processes, the ranks found by
# their tag, the job's end awaited and judged. Sourced after `tag`, `err` and
# `out` are set; `launcher` is the mpirun's pid.

ranks_with_tag() {  # pids of this test's ragged processes of rank $1
  for dir in /proc/[0-9]*; do
    [[ -r $dir/environ ]] || continue
    if tr '\0' '\n' < "$dir/environ" 2>/dev/null | grep -qx "RAGGED_TEST_TAG=$tag" &&
       tr '\0' '\n' < "$dir/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "${dir#/proc/}"
    fi
  done
}

cleanup() {
  for rank in 0 1; do for pid in $(ranks_with_tag $rank); do kill -KILL "$pid" 2>/dev/null; done; done
  rm -f "$err" "$out"
}

# The pid of rank 1 once it runs (exits the test when it never does). The
# start is not what these tests time: on a loaded machine mpirun may take
# tens of seconds to start its ranks, so the wait is long; its failure goes to
# stderr (stdout is the caller's capture).
wait_for_rank_1() {
  local victim="" deadline=$((SECONDS + 60))
  while (( SECONDS < deadline )); do
    victim=$(ranks_with_tag 1)
    [[ -n $victim ]] && break
    sleep 0.1
  done
  [[ -n $victim ]] || { echo "rank 1 never started within 60 s" >&2; cat "$err" >&2; exit 1; }
  echo "$victim"
}

# Waits up to 30 s for the job to end, then checks: non-zero exit, within $2
# ms of $1 (ns since the epoch), and a line of stderr matching $3.
expect_job_ended() {
  local since=$1 most_ms=$2 pattern=$3
  for _ in $(seq 1 300); do
    kill -0 $launcher 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 $launcher 2>/dev/null; then
    echo "the job still runs after 30 s"; kill -KILL $launcher; cat "$err"; exit 1
  fi
  wait $launcher; local code=$?
  local elapsed_ms=$(( ($(date +%s%N) - since) / 1000000 ))
  echo "exit $code, ended ${elapsed_ms} ms after the event"
  grep "^ragged:" "$err"
  [[ $code -ne 0 ]] || { echo "exit code 0"; exit 1; }
  (( elapsed_ms <= most_ms )) || { echo "took longer than $most_ms ms"; exit 1; }
  grep -q "$pattern" "$err" || { echo "no line matching: $pattern"; cat "$err"; exit 1; }
}
