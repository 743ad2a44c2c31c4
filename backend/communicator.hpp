#pragma once
// The collectives the backend runs, on one group of ranks: in place on the
// DBuffer, like NCCL's in-place all-gather (each rank's input is its own
// slot of the output) and reduce-scatter (each rank's output is its own slot
// of the input). Implementations: local (one rank), mpi (host buffers, MPI),
// nccl (device buffers, CUDA). Element type fp32 on the host.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ragged::backend {

class Watchdog;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "local", "mpi", "nccl"

  // buffer holds size() slots of `count` elements; slot rank() is the input.
  virtual void all_gather_in_place(float* buffer, int64_t count) = 0;
  // buffer holds size() slots of `count` elements; afterwards slot rank()
  // holds the elementwise sum of every rank's slot rank().
  virtual void reduce_scatter_in_place(float* buffer, int64_t count) = 0;
  // Elementwise sum over the group, in place.
  virtual void all_reduce_in_place(float* buffer, int64_t count) = 0;
  // Variable-size all-to-all: send[i] elements at send_displs[i] of `send`
  // go to rank i; recv[i] elements from rank i land at recv_displs[i].
  virtual void all_to_all_v(const float* send, std::span<const int64_t> send_counts, std::span<const int64_t> send_displs,
                            float* recv, std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs) = 0;
  // Point-to-point, between pipeline stages: `count` elements to or from
  // rank `peer`, matched by `tag` (0 to max_tag()). send copies the data
  // and returns at once, the transfer finishing by wait_sends(), so two
  // stages sending to each other at the same time cannot deadlock; recv
  // waits for its message. One rank has no peer: InternalError.
  virtual void send(const float* data, int64_t count, int peer, int64_t tag);
  virtual void recv(float* data, int64_t count, int peer, int64_t tag);
  virtual void wait_sends();
  virtual int64_t max_tag() const { return 0; }
  // The ranks of this group that pass the same `color`, numbered by `key`
  // (MPI_Comm_split; every rank calls it); ordered reductions carry over.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // Every rank of the group has arrived. MPI's waits without holding a core,
  // so ranks that wait for one rank's long serial work (rank 0's reference
  // training) leave the CPU to it when ranks outnumber cores.
  virtual void barrier() = 0;
  // Ends every rank of the job after an error on this one (a rank that
  // failed alone would leave the others waiting in a collective forever).
  virtual void abort(int exit_code) = 0;
  // Sum of a value over the group (losses, checks).
  virtual double sum(double value) = 0;
  // Starts a collective watchdog over this group (backend/watchdog.hpp); a
  // collective call itself, on every rank. None where no rank can be lost
  // (one process) or `timeout_s` is 0.
  virtual std::unique_ptr<Watchdog> start_watchdog(double timeout_s);

  // Ordered reductions: reduce-scatter sums the ranks' slots in rank order
  // (0 + r0 + r1 + ...), as the single-process reference does, so results are
  // bitwise reproducible; costs an all-to-all instead of MPI's own reduction.
  void set_ordered_reductions(bool ordered) { ordered_reductions_ = ordered; }
  bool ordered_reductions() const { return ordered_reductions_; }

 private:
  bool ordered_reductions_ = false;
};

// InternalError unless an all_to_all_v in a group of `ranks` has one count
// and one displacement per rank, none negative. Every communicator checks
// this first.
void check_all_to_all_v(int ranks, std::span<const int64_t> send_counts,
                        std::span<const int64_t> send_displs, std::span<const int64_t> recv_counts,
                        std::span<const int64_t> recv_displs);

// One rank, no communication.
std::unique_ptr<Communicator> make_local_communicator();

// The world of an MPI launch (mpirun -np N); throws InputError when Ragged was
// built without MPI. Initialises MPI on first use; finalises at exit.
std::unique_ptr<Communicator> make_mpi_communicator();

// True when this process was started by an MPI launcher with more than one rank.
bool launched_by_mpi();
// This process's rank as the launcher announced it, before MPI starts (0
// without a launcher; -1 when a launcher gave no rank).
int launcher_rank();

}  // namespace ragged::backend
