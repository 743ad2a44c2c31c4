// The one-rank communicator: the group is this process, every collective is
// the identity on its single slot.

#include <cstring>

#include "backend/communicator.hpp"
#include "common/errors.hpp"

namespace ragged::backend {
namespace {

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "local"; }

  // One slot: it is both the input and the output.
  void all_gather_in_place(float*, int64_t count) override { RAGGED_ASSERT(count >= 0, "negative count"); }
  void reduce_scatter_in_place(float*, int64_t count) override { RAGGED_ASSERT(count >= 0, "negative count"); }
  void all_reduce_in_place(float*, int64_t count) override { RAGGED_ASSERT(count >= 0, "negative count"); }

  void all_to_all_v(const float* send, std::span<const int64_t> send_counts, std::span<const int64_t> send_displs,
                    float* recv, std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs) override {
    check_all_to_all_v(1, send_counts, send_displs, recv_counts, recv_displs);
    RAGGED_ASSERT(send_counts[0] == recv_counts[0], "all_to_all_v: the local rank sends what it receives");
    if (send_counts[0] == 0) return;
    // memmove: a caller may shift data within one buffer.
    std::memmove(recv + recv_displs[0], send + send_displs[0], static_cast<size_t>(send_counts[0]) * sizeof(float));
  }

  std::unique_ptr<Communicator> split(int, int) override {
    auto out = std::make_unique<LocalCommunicator>();
    out->set_ordered_reductions(ordered_reductions());
    return out;
  }
  void barrier() override {}
  void abort(int) override {}  // one rank: nobody else to stop
  double sum(double value) override { return value; }
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator() { return std::make_unique<LocalCommunicator>(); }

}  // namespace ragged::backend
