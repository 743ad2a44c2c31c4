// The MPI communicator: the world of an `mpirun -np N` launch, host fp32
// buffers. Without MPI in the build only launched_by_mpi() is real and
// make_mpi_communicator() throws an InputError that says how to get MPI.
//
// Every MPI call goes through MPI_CHECK (backend/mpi_check.hpp). Each
// communicator works on its own duplicate of MPI_COMM_WORLD with
// MPI_ERRORS_RETURN, so a failing call throws InternalError instead of
// aborting the job, and Ragged's traffic never matches anyone else's.
//
// Reduction order: MPI leaves the order of a sum to the implementation (Open
// MPI picks ring, recursive doubling, ... by message and group size), so fp32
// sums of general data may differ in the last bits between group sizes, Open
// MPI versions or tunings. Tests and the collective self-test use small
// integers, whose sums are exact in fp32 in any order
// (backend/collective_check.hpp).

#include <charconv>
#include <initializer_list>
#include <cstdlib>
#include <string_view>

#include "backend/communicator.hpp"
#include "common/errors.hpp"

#ifdef RAGGED_HAVE_MPI
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <mutex>
#include <deque>
#include <thread>
#include <vector>

#include "backend/exit_deadline.hpp"
#include "backend/mpi_check.hpp"
#include "backend/progress.hpp"
#include "backend/watchdog_mpi.hpp"
#endif

namespace ragged::backend {
namespace {

// A whole number the launcher announced in the first of `variables` set
// (Open MPI's mpirun, or a PMI launcher: MPICH's hydra, Slurm's srun); -1
// when there is none.
int launcher_number(std::initializer_list<const char*> variables) {
  for (const char* variable : variables) {
    const char* text = std::getenv(variable);
    if (text == nullptr) continue;
    const std::string_view view(text);
    int value = 0;
    const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
    if (error == std::errc() && end == view.data() + view.size() && value >= 0) return value;
  }
  return -1;
}

}  // namespace

bool launched_by_mpi() { return launcher_number({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) > 1; }

int launcher_rank() { return launched_by_mpi() ? launcher_number({"OMPI_COMM_WORLD_RANK", "PMI_RANK"}) : 0; }

#ifdef RAGGED_HAVE_MPI

void throw_mpi_error(const char* call, const char* file, int line, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  std::string reason = fmt::format("MPI error code {}", code);
  if (MPI_Error_string(code, text, &length) == MPI_SUCCESS && length > 0) reason.assign(text, static_cast<size_t>(length));
  throw InternalError(fmt::format("{}:{}: {} failed: {}", file, line, call, reason));
}

namespace mpi_detail {
namespace {
std::atomic<int64_t> max_elements{INT_MAX};
}  // namespace

int64_t max_elements_per_call() { return max_elements.load(std::memory_order_relaxed); }

void set_max_elements_per_call(int64_t elements) {
  RAGGED_ASSERT(elements >= 1 && elements <= INT_MAX, "the elements of one MPI call must fit an int");
  max_elements.store(elements, std::memory_order_relaxed);
}

}  // namespace mpi_detail

namespace {

// Registered with atexit only when Ragged initialised MPI itself. The ranks
// meet first when the work armed the exit deadline (exit_deadline.hpp):
// MPI_Finalize waits for every rank, unbounded.
void finalize_mpi_at_exit() {
  int finalized = 1;
  if (ending_job_at_exit() || MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return;
  meet_at_exit();
  MPI_Finalize();
}

// MPI's level as MpiThreadLevel (MPI orders them: SINGLE < FUNNELED <
// SERIALIZED < MULTIPLE).
MpiThreadLevel to_thread_level(int provided) {
  if (provided >= MPI_THREAD_MULTIPLE) return MpiThreadLevel::kMultiple;
  if (provided >= MPI_THREAD_SERIALIZED) return MpiThreadLevel::kSerialized;
  if (provided >= MPI_THREAD_FUNNELED) return MpiThreadLevel::kFunneled;
  return MpiThreadLevel::kSingle;
}

// Checks the library's thread support against what every communicator needs;
// under MPI_THREAD_FUNNELED the calling thread must be MPI's main thread.
MpiThreadLevel checked_thread_level(int provided) {
  const MpiThreadLevel level = to_thread_level(provided);
  check_mpi_thread_level(level, MpiThreadUse::kCommunicators);
  if (level == MpiThreadLevel::kFunneled) {
    int main_thread = 0;
    MPI_CHECK(MPI_Is_thread_main(&main_thread));
    if (!main_thread)
      throw InternalError(
          "the MPI library provides only MPI_THREAD_FUNNELED and MPI is used from a thread other than the one that "
          "initialised it");
  }
  return level;
}

std::atomic<int> g_provided_level{-1};  // MpiThreadLevel once MPI is initialised and checked

}  // namespace

// Initialises MPI on first use, asking for MPI_THREAD_MULTIPLE: the
// collective watchdog calls MPI from its own thread while the run's thread is
// in a collective (start_watchdog refuses to start below it). Everything else
// calls MPI from one thread (calls on one communicator from one thread at a
// time, in the same order on every rank: MPI's rule for collectives), which
// MPI_THREAD_FUNNELED allows; below that, InputError. A program that
// initialised MPI itself also finalises it.
void ensure_mpi_initialized() {
  static std::mutex mutex;
  const std::lock_guard lock(mutex);
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized) {
    int finalized = 0;
    MPI_CHECK(MPI_Finalized(&finalized));
    if (finalized) throw InternalError("MPI has already been finalized in this process");
    int provided = MPI_THREAD_SINGLE;
    MPI_CHECK(MPI_Query_thread(&provided));
    g_provided_level.store(static_cast<int>(checked_thread_level(provided)), std::memory_order_release);
    return;
  }
  int provided = MPI_THREAD_SINGLE;
  MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
  if (std::atexit(finalize_mpi_at_exit) != 0) {
    MPI_Finalize();
    throw InternalError("cannot register MPI_Finalize at exit");
  }
  g_provided_level.store(static_cast<int>(checked_thread_level(provided)), std::memory_order_release);
}

MpiThreadLevel provided_mpi_thread_level() {
  ensure_mpi_initialized();
  return static_cast<MpiThreadLevel>(g_provided_level.load(std::memory_order_acquire));
}

namespace {

// A split reduce-scatter packs one piece of every slot into a temporary of at
// most this many elements (1 GiB of fp32).
constexpr int64_t kMaxPackedElements = int64_t{1} << 28;

// An MPI datatype freed when it goes out of scope.
class OwnedDatatype {
 public:
  OwnedDatatype() = default;
  OwnedDatatype(const OwnedDatatype&) = delete;
  OwnedDatatype& operator=(const OwnedDatatype&) = delete;
  ~OwnedDatatype() {
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);  // no throwing from a destructor
  }
  MPI_Datatype* out() { return &type_; }
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// One slot of `count` floats as a single element of a derived datatype, for
// slots larger than an int count: `count / chunk` chunks of `chunk` floats,
// then the rest, resized to an extent of exactly `count` floats so that
// element r of an all-gather lands on slot r. Data movement only: MPI's
// predefined reductions are not used on it.
void build_slot_datatype(int64_t count, int64_t chunk, OwnedDatatype& slot) {
  const int64_t chunks = count / chunk;
  const int64_t rest = count % chunk;
  if (chunks > INT_MAX) throw InputError(fmt::format("a slot of {} elements is too large for MPI", count));
  OwnedDatatype piece, body, tail, whole;
  MPI_CHECK(MPI_Type_contiguous(static_cast<int>(chunk), MPI_FLOAT, piece.out()));
  MPI_CHECK(MPI_Type_contiguous(static_cast<int>(chunks), piece.get(), body.out()));
  MPI_Datatype unpadded = body.get();
  if (rest > 0) {
    MPI_CHECK(MPI_Type_contiguous(static_cast<int>(rest), MPI_FLOAT, tail.out()));
    int lengths[2] = {1, 1};
    MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(chunks * chunk * static_cast<int64_t>(sizeof(float)))};
    MPI_Datatype types[2] = {body.get(), tail.get()};
    MPI_CHECK(MPI_Type_create_struct(2, lengths, displacements, types, whole.out()));
    unpadded = whole.get();
  }
  MPI_CHECK(MPI_Type_create_resized(unpadded, 0, static_cast<MPI_Aint>(count * static_cast<int64_t>(sizeof(float))),
                                    slot.out()));
  MPI_CHECK(MPI_Type_commit(slot.out()));
}

// An all_to_all_v count or displacement (check_all_to_all_v refused negative ones) as the int MPI takes.
int to_mpi_int(int64_t value, const char* what, size_t peer) {
  if (value > INT_MAX) {
    throw InputError(fmt::format("all_to_all_v: {} {} for rank {} exceeds {}, the most elements one MPI call can "
                                 "address; exchange fewer elements per call",
                                 what, value, peer, INT_MAX));
  }
  return static_cast<int>(value);
}

// Marks a collective on the progress board for the watchdog while in scope.
class InCollective {
 public:
  InCollective() { Progress::instance().enter_collective(); }
  ~InCollective() { Progress::instance().leave_collective(); }
  InCollective(const InCollective&) = delete;
  InCollective& operator=(const InCollective&) = delete;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    ensure_mpi_initialized();
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  // Takes ownership of `comm`, a communicator MPI_Comm_split made.
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  ~MpiCommunicator() override {
    // After MPI_Finalize (at exit) there is nothing left to free.
    int finalized = 1;
    if (comm_ != MPI_COMM_NULL && MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  void all_gather_in_place(float* buffer, int64_t count) override {
    const InCollective in_collective;
    RAGGED_ASSERT(count >= 0, "all_gather_in_place: negative count");
    if (count == 0) return;
    const int64_t max = mpi_detail::max_elements_per_call();
    if (count <= max) {
      MPI_CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer, static_cast<int>(count), MPI_FLOAT, comm_));
      return;
    }
    OwnedDatatype slot;
    build_slot_datatype(count, max, slot);
    MPI_CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer, 1, slot.get(), comm_));
  }

  void reduce_scatter_in_place(float* buffer, int64_t count) override {
    const InCollective in_collective;
    RAGGED_ASSERT(count >= 0, "reduce_scatter_in_place: negative count");
    if (count == 0) return;
    const int64_t max = mpi_detail::max_elements_per_call();
    const size_t bytes = static_cast<size_t>(count) * sizeof(float);
    if (ordered_reductions() && count <= max) {
      // Every rank's slot rank() comes here, summed in rank order.
      std::vector<float> slots(static_cast<size_t>(size_ * count));
      MPI_CHECK(MPI_Alltoall(buffer, static_cast<int>(count), MPI_FLOAT, slots.data(), static_cast<int>(count), MPI_FLOAT, comm_));
      float* out = buffer + rank_ * count;
      std::fill(out, out + count, 0.0f);
      for (int r = 0; r < size_; ++r) {
        const float* in = slots.data() + static_cast<size_t>(r * count);
        for (int64_t i = 0; i < count; ++i) out[i] += in[i];
      }
      return;
    }
    if (count <= max) {
      // With MPI_IN_PLACE the whole buffer is every rank's input, and MPI
      // writes this rank's reduced block at the START of the buffer (MPI-3.1
      // §5.10.1), not at slot rank(): move it there. Slot 0 is clobbered on
      // every rank, which the contract allows (only slot rank() is defined).
      MPI_CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, buffer, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm_));
      if (rank_ != 0) std::memcpy(buffer + rank_ * count, buffer, bytes);
      return;
    }
    // Split: piece [offset, offset + length) of every slot, packed contiguous,
    // reduce-scattered in place, then copied to the same piece of slot rank().
    // Pieces of slot rank() already packed are the only ones overwritten.
    const int64_t piece = std::clamp<int64_t>(kMaxPackedElements / size_, 1, max);
    std::vector<float> packed(static_cast<size_t>(size_ * std::min(piece, count)));
    for (int64_t offset = 0; offset < count; offset += piece) {
      const int64_t length = std::min(piece, count - offset);
      const size_t piece_bytes = static_cast<size_t>(length) * sizeof(float);
      for (int r = 0; r < size_; ++r) std::memcpy(packed.data() + r * length, buffer + r * count + offset, piece_bytes);
      MPI_CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, packed.data(), static_cast<int>(length), MPI_FLOAT, MPI_SUM,
                                         comm_));
      std::memcpy(buffer + rank_ * count + offset, packed.data(), piece_bytes);
    }
  }

  void all_reduce_in_place(float* buffer, int64_t count) override {
    const InCollective in_collective;
    RAGGED_ASSERT(count >= 0, "all_reduce_in_place: negative count");
    const int64_t max = ordered_reductions()
                            ? std::clamp<int64_t>(kMaxPackedElements / size_, 1, mpi_detail::max_elements_per_call())
                            : mpi_detail::max_elements_per_call();
    std::vector<float> slots;
    for (int64_t offset = 0; offset < count; offset += max) {
      const int length = static_cast<int>(std::min(max, count - offset));
      if (!ordered_reductions()) {
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer + offset, length, MPI_FLOAT, MPI_SUM, comm_));
        continue;
      }
      // Every rank's piece everywhere, summed in rank order (0 + r0 + r1 ...).
      slots.resize(static_cast<size_t>(size_) * static_cast<size_t>(length));
      MPI_CHECK(MPI_Allgather(buffer + offset, length, MPI_FLOAT, slots.data(), length, MPI_FLOAT, comm_));
      float* out = buffer + offset;
      std::fill(out, out + length, 0.0f);
      for (int r = 0; r < size_; ++r) {
        const float* in = slots.data() + static_cast<size_t>(r) * static_cast<size_t>(length);
        for (int i = 0; i < length; ++i) out[i] += in[i];
      }
    }
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    const InCollective in_collective;
    MPI_Comm part = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_split(comm_, color, key, &part));
    auto out = std::make_unique<MpiCommunicator>(part);
    out->set_ordered_reductions(ordered_reductions());
    return out;
  }

  // Counts and displacements must fit an int (InputError otherwise): Open MPI
  // 4 has no large-count all-to-all. `send` and `recv` must not overlap.
  void all_to_all_v(const float* send, std::span<const int64_t> send_counts, std::span<const int64_t> send_displs,
                    float* recv, std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs) override {
    const InCollective in_collective;
    check_all_to_all_v(size_, send_counts, send_displs, recv_counts, recv_displs);
    const auto peers = static_cast<size_t>(size_);
    std::vector<int> counts_out(peers), displs_out(peers), counts_in(peers), displs_in(peers);
    for (size_t i = 0; i < peers; ++i) {
      counts_out[i] = to_mpi_int(send_counts[i], "send count", i);
      displs_out[i] = to_mpi_int(send_displs[i], "send displacement", i);
      counts_in[i] = to_mpi_int(recv_counts[i], "receive count", i);
      displs_in[i] = to_mpi_int(recv_displs[i], "receive displacement", i);
    }
    MPI_CHECK(MPI_Alltoallv(send, counts_out.data(), displs_out.data(), MPI_FLOAT, recv, counts_in.data(),
                            displs_in.data(), MPI_FLOAT, comm_));
  }

  void send(const float* data, int64_t count, int peer, int64_t tag) override {
    check_peer(peer, tag);
    std::vector<float>& copy = pending_data_.emplace_back(data, data + count);
    MPI_Request& request = pending_.emplace_back();
    MPI_CHECK(MPI_Isend(copy.data(), to_mpi_int(count, "send count", static_cast<size_t>(peer)), MPI_FLOAT, peer,
                        static_cast<int>(tag), comm_, &request));
  }
  void recv(float* data, int64_t count, int peer, int64_t tag) override {
    const InCollective in_collective;
    check_peer(peer, tag);
    MPI_CHECK(MPI_Recv(data, to_mpi_int(count, "receive count", static_cast<size_t>(peer)), MPI_FLOAT, peer,
                       static_cast<int>(tag), comm_, MPI_STATUS_IGNORE));
  }
  void wait_sends() override {
    const InCollective in_collective;
    MPI_CHECK(MPI_Waitall(static_cast<int>(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE));
    pending_.clear();
    pending_data_.clear();
  }
  int64_t max_tag() const override {
    void* value = nullptr;
    int found = 0;
    MPI_CHECK(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &found));
    return found ? *static_cast<int*>(value) : 32767;  // the least MPI guarantees
  }

  void barrier() override {
    const InCollective in_collective;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_CHECK(MPI_Ibarrier(comm_, &request));
    // MPI_Barrier polls at full speed; a rank waiting here sleeps between
    // tests, longer as the wait grows (at most 2 ms late).
    auto pause = std::chrono::microseconds(20);
    for (int done = 0;;) {
      MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
      if (done) return;
      std::this_thread::sleep_for(pause);
      pause = std::min(2 * pause, std::chrono::microseconds(2000));
    }
  }
  std::unique_ptr<Watchdog> start_watchdog(double timeout_s) override {
    if (size_ == 1 || timeout_s <= 0) return nullptr;
    // Every rank has the same library, so every rank refuses here alike.
    check_mpi_thread_level(provided_mpi_thread_level(), MpiThreadUse::kWatchdog);
    return make_mpi_watchdog(comm_, timeout_s);
  }
  void abort(int exit_code) override { MPI_Abort(MPI_COMM_WORLD, exit_code); }

  double sum(double value) override {
    const InCollective in_collective;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, comm_));
    return value;
  }

 private:
  void check_peer(int peer, int64_t tag) const {
    RAGGED_ASSERT(peer >= 0 && peer < size_ && peer != rank_, fmt::format("point-to-point: no peer {}", peer));
    if (tag < 0 || tag > max_tag()) {
      throw InputError(fmt::format("point-to-point: message tag {} outside this MPI's 0..{}: use fewer micro-batches "
                                   "or pipeline chunks", tag, max_tag()));
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  // Sends in flight: their copies (a deque keeps each in place) and requests.
  std::deque<std::vector<float>> pending_data_;
  std::vector<MPI_Request> pending_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

#else  // no MPI in this build

std::unique_ptr<Communicator> make_mpi_communicator() {
  throw InputError("this build has no MPI: install libopenmpi-dev and rebuild");
}

#endif

}  // namespace ragged::backend
