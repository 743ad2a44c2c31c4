#pragma once
// A job's end, bounded. A rank's last MPI call, MPI_Finalize, waits for every
// rank: one stopped after the work's last collective (its node froze while
// rank 0 wrote the trace) would leave the others waiting there, past the
// collective watchdog (gone with the run) and the start-up deadline. So a
// rank that has finished its work arms this deadline, and at exit, before
// MPI_Finalize, the ranks meet point to point on MPI_COMM_WORLD (no
// collective, so that the missing ones can be named): each tells rank 0 it
// has ended, and rank 0 answers every rank once all have. Rank 0 still
// waiting after the timeout names the ranks that did not end and ends its
// process (kExitLostRank), which ends the job; a rank still waiting for rank
// 0's answer a little longer says that rank 0 did not end and does the same.

#include <string>
#include <vector>

namespace ragged::backend {

// Under an MPI launch with timeout_s > 0: the meeting at exit, bounded by
// timeout_s, named in the line by `option`. Without either: nothing.
void arm_exit_deadline(double timeout_s, std::string option = "--collective-timeout");

// The meeting (MPI's finalisation at exit calls it first); returns at once
// when no deadline was armed, and otherwise once every rank has ended or, on
// a rank that waited too long, not at all.
void meet_at_exit();

// This rank ends the job with an error every rank found: at exit it neither
// meets the others nor finalises MPI, whose MPI_Finalize would wait for ranks
// that are themselves waiting for this exit to end them (the launcher ends
// them as soon as this process has exited with its error code).
void end_job_at_exit();
bool ending_job_at_exit();

// The line rank 0 prints for the ranks that did not end (tests).
std::string ranks_that_did_not_end_line(const std::vector<int>& missing, double timeout_s, const std::string& option);

}  // namespace ragged::backend
