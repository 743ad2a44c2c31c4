#include "backend/communicator.hpp"

#include <fmt/format.h>

#include "backend/watchdog.hpp"
#include "common/errors.hpp"

namespace ragged::backend {

std::unique_ptr<Watchdog> Communicator::start_watchdog(double) { return nullptr; }

void Communicator::send(const float*, int64_t, int peer, int64_t) {
  throw InternalError(fmt::format("{} communicator of {} rank(s): no peer {} to send to", name(), size(), peer));
}

void Communicator::recv(float*, int64_t, int peer, int64_t) {
  throw InternalError(fmt::format("{} communicator of {} rank(s): no peer {} to receive from", name(), size(), peer));
}

void Communicator::wait_sends() {}

void check_all_to_all_v(int ranks, std::span<const int64_t> send_counts,
                        std::span<const int64_t> send_displs, std::span<const int64_t> recv_counts,
                        std::span<const int64_t> recv_displs) {
  const auto peers = static_cast<size_t>(ranks);
  RAGGED_ASSERT(send_counts.size() == peers && send_displs.size() == peers && recv_counts.size() == peers &&
                    recv_displs.size() == peers,
                fmt::format("all_to_all_v takes one count and one displacement per rank ({} ranks)", ranks));
  for (size_t p = 0; p < peers; ++p) {
    RAGGED_ASSERT(send_counts[p] >= 0 && send_displs[p] >= 0 && recv_counts[p] >= 0 && recv_displs[p] >= 0,
                  fmt::format("all_to_all_v: negative count or displacement for rank {}", p));
  }
}

}  // namespace ragged::backend
