#include "tune/evaluation.hpp"

#include <cmath>

#include "common/errors.hpp"

namespace ragged::tune {

std::string outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kSimulated:
      return "simulated";
    case Outcome::kPruned:
      return "pruned";
    case Outcome::kInvalid:
      return "invalid";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kBounded:
      return "bounded";
  }
  return "?";
}

std::string prune_reason_text(PruneReason reason) {
  switch (reason) {
    case PruneReason::kPersistentState:
      return "sharded state alone over the budget";
    case PruneReason::kActivations:
      return "sharded state + activation floor over the budget";
    case PruneReason::kNone:
      break;
  }
  return "-";
}

int64_t memory_budget(int64_t capacity_bytes, double headroom) {
  return static_cast<int64_t>(std::floor(static_cast<double>(capacity_bytes) * (1 - headroom)));
}

nlohmann::json to_json(const Evaluation& e) {
  return {{"outcome", outcome_name(e.outcome)},
          {"prune_reason", static_cast<int>(e.prune_reason)},
          {"message", e.message},
          {"persistent_bytes", e.persistent_bytes},
          {"floor_bytes", e.floor_bytes},
          {"static_peak_bytes", e.static_peak_bytes},
          {"capacity_bytes", e.capacity_bytes},
          {"checkpoint_bytes_per_gpu", e.checkpoint_bytes_per_gpu},
          {"step_time_bound_s", e.step_time_bound_s},
          {"tokens_per_step", e.tokens_per_step},
          {"step_time_s", e.step_time_s},
          {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
          {"mfu", e.mfu},
          {"exposed_comm_s", e.exposed_comm_s},
          {"compute_s", e.compute_s},
          {"comm_s", e.comm_s},
          {"peak_reserved_bytes", e.peak_reserved_bytes},
          {"peak_allocated_bytes", e.peak_allocated_bytes},
          {"oom", e.oom},
          {"alloc_retries", e.alloc_retries},
          {"mode", e.mode},
          {"simulation_wall_s", e.simulation_wall_s},
          {"band_tokens_low", e.band_tokens_low},
          {"band_tokens_high", e.band_tokens_high},
          {"band_rows", e.band_rows},
          {"band_memory_low_bytes", e.band_memory_low_bytes},
          {"band_peak_bytes", e.band_peak_bytes},
          {"band_rule", e.band_rule},
          {"own_budget_bytes", e.own_budget_bytes},
          {"cached", e.cached}};
}

Evaluation evaluation_from_json(const nlohmann::json& j) {
  Evaluation e;
  const std::string outcome = j.at("outcome");
  if (outcome == "simulated")
    e.outcome = Outcome::kSimulated;
  else if (outcome == "pruned")
    e.outcome = Outcome::kPruned;
  else if (outcome == "failed")
    e.outcome = Outcome::kFailed;
  else if (outcome == "invalid")
    e.outcome = Outcome::kInvalid;
  else if (outcome == "bounded")
    e.outcome = Outcome::kBounded;
  else
    throw InternalError("an evaluation's outcome is simulated, pruned, invalid, failed or bounded, not " + outcome);
  const int reason = j.at("prune_reason");
  RAGGED_ASSERT(reason >= 0 && reason <= static_cast<int>(PruneReason::kActivations), "a prune reason is known");
  e.prune_reason = static_cast<PruneReason>(reason);
  e.message = j.at("message");
  e.persistent_bytes = j.at("persistent_bytes");
  e.floor_bytes = j.at("floor_bytes");
  e.static_peak_bytes = j.at("static_peak_bytes");
  e.capacity_bytes = j.at("capacity_bytes");
  e.checkpoint_bytes_per_gpu = j.at("checkpoint_bytes_per_gpu");
  e.step_time_bound_s = j.value("step_time_bound_s", 0.0);
  e.tokens_per_step = j.value("tokens_per_step", int64_t{0});
  e.step_time_s = j.at("step_time_s");
  e.tokens_per_s_per_gpu = j.at("tokens_per_s_per_gpu");
  e.mfu = j.at("mfu");
  e.exposed_comm_s = j.at("exposed_comm_s");
  e.compute_s = j.at("compute_s");
  e.comm_s = j.at("comm_s");
  e.peak_reserved_bytes = j.at("peak_reserved_bytes");
  e.peak_allocated_bytes = j.at("peak_allocated_bytes");
  e.oom = j.at("oom");
  e.alloc_retries = j.at("alloc_retries");
  e.mode = j.at("mode");
  e.simulation_wall_s = j.at("simulation_wall_s");
  e.band_tokens_low = j.value("band_tokens_low", 0.0);
  e.band_tokens_high = j.value("band_tokens_high", 0.0);
  e.band_rows = j.value("band_rows", int64_t{0});
  e.band_memory_low_bytes = j.value("band_memory_low_bytes", int64_t{0});
  e.band_peak_bytes = j.value("band_peak_bytes", int64_t{0});
  e.band_rule = j.value("band_rule", false);
  e.own_budget_bytes = j.value("own_budget_bytes", int64_t{0});
  e.cached = j.value("cached", false);
  return e;
}

}  // namespace ragged::tune
