#include "gui/models/whatif_settings.hpp"

namespace ragged::gui {
namespace {

// N slow ones chosen by the block's seed, replacing a listed choice (as the
// CLI's --slow-gpus N:F does); a fraction alone keeps the choice.
template <typename Slow>
void write_slow(Slow* block, void (Slow::*clear_list)(), int64_t count, double fraction, bool count_changed) {
  if (count_changed) {
    (block->*clear_list)();
    block->set_count(static_cast<int32_t>(count));
  }
  block->set_fraction(fraction);
}

}  // namespace

WhatIfSettings whatif_settings_of(const scenarios::Scenario& scenario) {
  WhatIfSettings s;
  const scenarios::WhatIf& w = scenario.whatif();
  if (w.has_slow_gpus()) {
    s.slow_gpus = w.slow_gpus().ranks_size() > 0 ? w.slow_gpus().ranks_size() : w.slow_gpus().count();
    s.slow_gpu_fraction = w.slow_gpus().fraction();
  }
  if (w.has_slow_links()) {
    s.slow_links = w.slow_links().nodes_size() > 0 ? w.slow_links().nodes_size() : w.slow_links().count();
    s.slow_link_fraction = w.slow_links().fraction();
  }
  s.jitter = w.jitter().relative_stddev();
  const scenarios::Goodput& g = scenario.goodput();
  s.interruptions_per_gpu_hour = g.interruptions_per_gpu_hour();
  s.restart_minutes = g.restart_minutes();
  s.storage_gbytes_per_s_per_node = g.storage_gbytes_per_s_per_node();
  s.storage_aggregate_tbytes_per_s = g.storage_aggregate_tbytes_per_s();
  s.async_checkpoint = g.async_checkpoint();
  s.train_tokens = g.train_tokens();
  return s;
}

scenarios::LoadedScenario apply_whatif_settings(const scenarios::LoadedScenario& base, const WhatIfSettings& settings) {
  const WhatIfSettings before = whatif_settings_of(base.scenario);
  if (settings == before) return base;
  scenarios::LoadedScenario out = base;
  scenarios::WhatIf* w = out.written.mutable_whatif();
  const bool gpus_changed = settings.slow_gpus != before.slow_gpus;
  if (gpus_changed || settings.slow_gpu_fraction != before.slow_gpu_fraction) {
    if (settings.slow_gpus == 0) w->clear_slow_gpus();
    else write_slow(w->mutable_slow_gpus(), &scenarios::SlowGpus::clear_ranks, settings.slow_gpus, settings.slow_gpu_fraction, gpus_changed);
  }
  const bool links_changed = settings.slow_links != before.slow_links;
  if (links_changed || settings.slow_link_fraction != before.slow_link_fraction) {
    if (settings.slow_links == 0) w->clear_slow_links();
    else write_slow(w->mutable_slow_links(), &scenarios::SlowLinks::clear_nodes, settings.slow_links, settings.slow_link_fraction, links_changed);
  }
  if (settings.jitter != before.jitter) {
    if (settings.jitter == 0) w->clear_jitter();
    else w->mutable_jitter()->set_relative_stddev(settings.jitter);
  }
  scenarios::Goodput* g = out.written.mutable_goodput();
  if (settings.interruptions_per_gpu_hour != before.interruptions_per_gpu_hour) {
    g->set_interruptions_per_gpu_hour(settings.interruptions_per_gpu_hour);
  }
  if (settings.restart_minutes != before.restart_minutes) g->set_restart_minutes(settings.restart_minutes);
  if (settings.storage_gbytes_per_s_per_node != before.storage_gbytes_per_s_per_node) {
    g->set_storage_gbytes_per_s_per_node(settings.storage_gbytes_per_s_per_node);
  }
  if (settings.storage_aggregate_tbytes_per_s != before.storage_aggregate_tbytes_per_s) {
    g->set_storage_aggregate_tbytes_per_s(settings.storage_aggregate_tbytes_per_s);
  }
  if (settings.async_checkpoint != before.async_checkpoint) g->set_async_checkpoint(settings.async_checkpoint);
  if (settings.train_tokens != before.train_tokens) g->set_train_tokens(settings.train_tokens);
  if (out.written.whatif().ByteSizeLong() == 0) out.written.clear_whatif();
  return scenarios::rebuild(std::move(out));
}

}  // namespace ragged::gui
