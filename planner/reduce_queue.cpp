#include "planner/reduce_queue.hpp"

namespace ragged::planner {

ReduceQueue::ReduceQueue(const StrategyTraits& traits, const models::ModelSpec& model)
    : max_units_(traits.reduce_queue_units), max_elements_(traits.reduce_queue_elements(mean_block_params(model))) {}

std::vector<uint32_t> ReduceQueue::make_room() {
  int64_t queued = 0;
  for (const Reduction& r : in_flight_) queued += r.elements;
  std::vector<uint32_t> wait;
  const auto full = [&] {
    const int64_t n = static_cast<int64_t>(in_flight_.size());
    return (max_units_ >= 0 && n > max_units_) || (max_elements_ > 0 && queued > max_elements_);
  };
  while (!in_flight_.empty() && full()) {
    wait = {in_flight_.front().ended};
    queued -= in_flight_.front().elements;
    in_flight_.pop_front();
  }
  return wait;
}

int64_t mean_block_params(const models::ModelSpec& model) {
  int64_t sum = 0, blocks = 0, all = 0;
  for (const models::UnitSpec& s : model.units) {
    all += s.params();
    if (s.kind == models::UnitKind::kBlock) {
      sum += s.params();
      ++blocks;
    }
  }
  if (blocks == 0) return model.units.empty() ? 0 : all / static_cast<int64_t>(model.units.size());
  return sum / blocks;
}

}  // namespace ragged::planner
