#include <algorithm>

#include "common/errors.hpp"
#include "planner/program_builder_internal.hpp"

namespace ragged::planner::internal {

void ProgramBuilder::issue_gathers_through(int through) {
  while (next_gather_ < gathers_.size() && next_gather_ <= through) {
    const int k = next_gather_;
    if (gathers_[k].emitted) {  // the root's head, gathered with the embedding
      ++next_gather_;
      continue;
    }
    std::vector<uint32_t> deps;
    if (int slot = k - window_; slot >= 0) {
      const Gather& g = gathers_[slot];
      if (g.is_freed)
        deps.push_back(g.freed);
      else if (g.is_computed && ((kept_gathered(g.unit) && !g.backward) || reshards_each_pass()))
        deps.push_back(g.computed);
      else
        return;
    }
    if (int same = gathers_.previous_of_unit(k); same >= 0) {
      if (!gathers_[same].is_freed) return;
      deps.push_back(gathers_[same].freed);
    }
    emit_gather(k, std::move(deps));
    ++next_gather_;
    if (root_group() && gathers_[k].unit == 0 && !gathers_[k].backward) gather_root_head(gathers_[k].micro_batch);
  }
}

void ProgramBuilder::gather_root_head(int mb) {
  const int k = gathers_.find(units_ - 1, mb, false);
  if (k < 0 || gathers_[k].emitted) return;
  std::vector<uint32_t> deps;
  if (int same = gathers_.previous_of_unit(k); same >= 0) {
    RAGGED_ASSERT(gathers_[same].is_freed, "the root's head is freed in the backward before the next gather");
    deps.push_back(gathers_[same].freed);
  }
  emit_gather(k, std::move(deps));
}

void ProgramBuilder::emit_gather(int k, std::vector<uint32_t> slot_free) {
  Gather& g = gathers_[k];
  if (traits_.replicated_params) {
    cast_replicated_params(g);
    return;
  }
  const UnitLayout& layout = unit(g.unit).layout;
  // FSDP1's limiter blocks the CPU until the unit leaving the window is
  // freed; it synchronizes on free events only, which a unit the root keeps
  // gathered has not recorded.
  std::vector<uint32_t> host_waits;
  for (uint32_t dep : slot_free) {
    if (traits_.gather_window_blocks_host && program_.ops[dep].kind == OpKind::kFree) host_waits.push_back(dep);
  }
  if (g.micro_batch == fenced_micro_batch_) slot_free.insert(slot_free.end(), fence_.begin(), fence_.end());
  // ZeRO-3 fetches a unit group by group (planner/zero3_fetch.hpp), one
  // collective each; the others gather the unit at once.
  std::vector<std::vector<int>> groups = layout.fetch_groups;
  if (groups.empty()) groups.emplace_back();
  std::optional<uint32_t> last;
  for (const std::vector<int>& group : groups) {
    const auto [alloc, gathered] = gather_group(g, group, last ? std::vector<uint32_t>{*last} : slot_free);
    if (!last) host(alloc).waits = host_waits;
    last = gathered;
  }
  g.ready = *last;
  g.emitted = true;
}

void ProgramBuilder::cast_replicated_params(Gather& g) {
  g.emitted = true;
  if (bytes_.param == bytes_.master || distopt_) return;  // Megatron's model holds its parameters in the compute dtype
  const int u = g.unit;
  const int64_t elements = gathered_elements(u);
  const int out =
      w_.buffer(spec(u).name + " autocast params", BufferKind::kUnshardedParams, u, elements * bytes_.param);
  w_.alloc(out, Stream::kCompute, {});
  g.ready = w_.traffic(OpKind::kCast, Stream::kCompute, u, g.micro_batch, gather_label(g) + " autocast cast",
                       elements * (bytes_.master + bytes_.param), {}, out);
  host(g.ready).framework_ops = tensors(u, false);
  g.params_buffers.push_back(out);
}

std::pair<uint32_t, uint32_t> ProgramBuilder::gather_group(Gather& g, const std::vector<int>& group,
                                                           std::vector<uint32_t> deps) {
  const int u = g.unit;
  const UnitLayout& layout = unit(u).layout;
  const bool whole = group.empty();
  const std::string what = group_suffix(group);
  const std::string label = gather_label(g);
  const int64_t shard_elements = whole ? shard(u) : group_shard_elements(layout, group);
  const int64_t gathered_bytes =
      whole ? gathered_elements(u) * bytes_.param : layout.ranks * shard_elements * bytes_.param;
  const bool copied = whole ? layout.copies.all_gather_out > 0 : group.size() > 1;
  const int64_t copy_in = whole ? layout.copies.all_gather_in : (copied ? shard_elements : 0);
  const int64_t params = group_params(u, group);
  int out = w_.buffer(spec(u).name + " unsharded params" + what, BufferKind::kUnshardedParams, u, gathered_bytes);
  program_.buffers[static_cast<size_t>(out)].tensors = group;
  const uint32_t alloc = w_.alloc(out, Stream::kAllGather, std::move(deps));
  uint32_t last = alloc;
  if (traits_.cast_before_gather && bytes_.param != bytes_.master) {
    last = w_.traffic(OpKind::kCast, Stream::kAllGather, u, g.micro_batch, label + " cast shard",
                      shard_elements * (bytes_.master + bytes_.param), {last}, out);
    if (traits_.cast_per_parameter) host(last).framework_ops = params;
  }
  if (copy_in > 0) {
    last = w_.traffic(OpKind::kCopyIn, Stream::kAllGather, u, g.micro_batch, label + " all-gather copy-in" + what,
                      copy_in * 2 * bytes_.param, {last}, out);
    host(last).list_tensors = params;
  }
  last = w_.collective(OpKind::kAllGather, Stream::kAllGather, unit(u).group, u, g.micro_batch,
                       label + " all-gather" + what, gathered_bytes, out, {last});
  // Without a copy-out the parameters' views are set up at the gather.
  if (traits_.views_per_parameter && !copied) host(last).param_views = params;
  if (copied)
    g.copy_sources.emplace_back(out, last);
  else
    g.params_buffers.push_back(out);
  return {alloc, last};
}

uint32_t ProgramBuilder::params_ready(Gather& g) {
  const std::vector<std::pair<int, uint32_t>> sources = std::move(g.copy_sources);
  g.copy_sources.clear();
  for (const auto& [source, gathered] : sources) g.ready = copy_out(g, source, gathered);
  return g.ready;
}

uint32_t ProgramBuilder::copy_out(Gather& g, int source, uint32_t gathered) {
  const UnitLayout& layout = unit(g.unit).layout;
  const std::vector<int> group = program_.buffers[static_cast<size_t>(source)].tensors;
  const bool whole = group.empty();
  const std::string what = group_suffix(group);
  const std::string label = gather_label(g);
  std::vector<int64_t> pieces;
  if (whole) pieces = per_tensor_pieces(g.unit, bytes_.param, true);
  for (int t : group) pieces.push_back(layout.ranks * layout.slots[static_cast<size_t>(t)].length * bytes_.param);
  int64_t bytes = 0;
  for (int64_t piece : pieces) bytes += piece;
  const int64_t copied = whole ? layout.copies.all_gather_out : bytes / bytes_.param;
  const int64_t params = group_params(g.unit, group);
  int copies = w_.buffer(spec(g.unit).name + " parameter copies" + what, BufferKind::kParamCopies, g.unit,
                         whole ? gathered_elements(g.unit) * bytes_.param : bytes);
  program_.buffers[static_cast<size_t>(copies)].pieces = std::move(pieces);
  program_.buffers[static_cast<size_t>(copies)].tensors = group;
  compute_alloc(copies);
  uint32_t out = w_.traffic(
      OpKind::kCopyOut, Stream::kCompute, g.unit, g.micro_batch, label + " all-gather copy-out" + what,
      copied * 2 * bytes_.param,
      gathered == g.ready ? std::vector<uint32_t>{gathered} : std::vector<uint32_t>{gathered, g.ready}, copies);
  host(out).list_tensors = params;
  if (traits_.copy_out_per_parameter) host(out).framework_ops = params;
  if (traits_.views_per_parameter) host(out).param_views = params;
  if (traits_.fetch_blocks_host) host(out).waits = {g.ready};
  w_.free(source, Stream::kCompute, {out});
  g.params_buffers.push_back(copies);
  return out;
}

void ProgramBuilder::release_params(int k, uint32_t after) {
  Gather& g = gathers_[k];
  if (g.params_buffers.empty()) g.freed = after;  // DDP's own parameters: nothing to free
  for (int buffer : g.params_buffers) {
    g.freed = w_.free(buffer, Stream::kCompute, {after});
    const int64_t params = group_params(g.unit, program_.buffers[static_cast<size_t>(buffer)].tensors);
    if (traits_.reshard_per_parameter) host(g.freed).param_reshards = params;
  }
  g.is_freed = true;
}

}  // namespace ragged::planner::internal
