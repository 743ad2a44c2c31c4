#include "backend/host_optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "planner/ragged_shard.hpp"
#include "planner/redistribution.hpp"

namespace ragged::backend {

using scenarios::Optimizer;

// No default branch: a new optimizer kind fails to compile cleanly (-Wswitch)
// until it is handled here, and an unset kind (the scenario defaults always
// set one) stops the run instead of training with some other optimizer.
TensorRule tensor_rule(const Optimizer& o, const models::TensorSpec& t) {
  switch (o.kind_case()) {
    case Optimizer::kAdamw: return TensorRule::kAdamW;
    case Optimizer::kAdam8Bit: return t.is_matrix() ? TensorRule::kAdam8bit : TensorRule::kAdamW;
    case Optimizer::kMuon: return planner::handled_whole(t) ? TensorRule::kMuon : TensorRule::kAdamW;
    case Optimizer::kShampoo: return planner::handled_whole(t) ? TensorRule::kShampoo : TensorRule::kAdamW;
    case Optimizer::kSgd: return TensorRule::kSgd;
    case Optimizer::KIND_NOT_SET: break;
  }
  throw_assertion("kind_case() is set", __FILE__, __LINE__, "tensor_rule: the optimizer has no kind");
}

AdamWParams adamw_params(const Optimizer& o) {
  const scenarios::AdamW* a = nullptr;
  switch (o.kind_case()) {
    case Optimizer::kAdamw: a = &o.adamw(); break;
    case Optimizer::kAdam8Bit: a = &o.adam8bit().adam(); break;
    case Optimizer::kMuon: a = &o.muon().adamw(); break;
    case Optimizer::kShampoo: a = &o.shampoo().adamw(); break;
    case Optimizer::kSgd:
    case Optimizer::KIND_NOT_SET: break;
  }
  RAGGED_ASSERT(a != nullptr, "adamw_params: the optimizer applies no AdamW");
  return {a->lr(), a->beta1(), a->beta2(), a->eps(), a->weight_decay()};
}

MuonParams muon_params(const Optimizer& o) {
  RAGGED_ASSERT(o.has_muon(), "muon_params: the optimizer is not Muon");
  return {o.muon().lr(), o.muon().momentum(), o.muon().ns_steps(), 0.0};
}

ShampooParams shampoo_params(const Optimizer& o) {
  RAGGED_ASSERT(o.has_shampoo(), "shampoo_params: the optimizer is not Shampoo");
  const scenarios::Shampoo& s = o.shampoo();
  return {s.lr(), s.epsilon(), s.weight_decay(), s.block_size(), s.precondition_frequency()};
}

SgdParams sgd_params(const Optimizer& o) {
  RAGGED_ASSERT(o.has_sgd(), "sgd_params: the optimizer is not SGD");
  return {o.sgd().lr(), o.sgd().momentum(), o.sgd().weight_decay()};
}

Adam8bitTiles adam8bit_tiles(const scenarios::Optimizer& o, const models::TensorSpec& tensor, int64_t tensor_offset) {
  return {o.adam8bit().block_rows(), o.adam8bit().block_cols(), tensor.row_length(), tensor.rows() / tensor.matrices(),
          tensor_offset / tensor.row_length()};
}

bool starts_tile_row(const Adam8bitTiles& tiles, int64_t tensor_offset) {
  if (tensor_offset % tiles.row_length != 0) return false;
  const int64_t row = tensor_offset / tiles.row_length;
  return (tiles.matrix_rows > 0 ? row % tiles.matrix_rows : row) % tiles.rows == 0;
}

// Per-element state is packed: each view's moments (or codes) hold only the
// elements the view's rule updates, at the packed offset its map gives for
// the view's shard offset, so what the state holds is what the rule needs.
struct HostOptimizer::UnitState {
  std::vector<float> m, v;                   // AdamW's moments (m also Muon's momentum), packed
  std::map<int64_t, size_t> m_at, v_at, code_at;  // view shard offset -> packed offset
  // Muon's and Shampoo's update, indexed by shard offset: made by momentum()
  // and gone after update(), a transient of the optimizer step as in the
  // PyTorch implementations, not state kept between steps.
  std::vector<float> update;
  std::vector<int8_t> m_codes;
  std::vector<uint8_t> v_codes;
  std::map<int64_t, std::pair<int64_t, int64_t>> scale_base;  // piece shard offset -> (scale index, blocks)
  std::vector<float> m_scales, v_scales;
  std::map<size_t, std::vector<float>> gathered;  // owned matrix index -> whole matrix on its owner
  std::map<size_t, ShampooMatrix> shampoo;        // owned matrix index -> its factors, on its owner, across steps
};

HostOptimizer::HostOptimizer(const scenarios::Optimizer& optimizer, std::vector<UnitShard>* shards,
                             std::vector<planner::OwnedMatrix> owned, Communicator* comm, Communicator* expert_comm)
    : optimizer_(optimizer), shards_(shards), owned_(std::move(owned)), comm_(comm), expert_comm_(expert_comm) {
  for (const planner::OwnedMatrix& m : owned_) {
    const auto& t = (*shards_)[static_cast<size_t>(m.unit)].spec().tensors[static_cast<size_t>(m.tensor)];
    if (t.matrices() > 1) {
      throw InputError(fmt::format("{} on the host needs one matrix per tensor; {} stores {} (fused experts)",
                                   optimizer_.has_muon() ? "Muon" : "Shampoo", t.name, t.matrices()));
    }
  }
  for (const UnitShard& s : *shards_) {
    auto state = std::make_unique<UnitState>();
    if (optimizer_.has_shampoo()) {
      const ShampooParams p = shampoo_params(optimizer_);
      const int unit = static_cast<int>(state_.size());
      for (size_t i = 0; i < owned_.size(); ++i) {
        const planner::OwnedMatrix& m = owned_[i];
        if (m.unit == unit && m.owner == comm_for(m.group).rank()) {
          state->shampoo.emplace(i, shampoo_matrix(m.rows, m.cols, p.block_size));
        }
      }
    }
    size_t moments = 0, second = 0, codes = 0;
    for (const planner::ShardView& view : s.views()) {
      const auto n = static_cast<size_t>(view.elements);
      switch (tensor_rule(optimizer_, s.spec().tensors[static_cast<size_t>(view.tensor)])) {
        case TensorRule::kAdamW:
          state->v_at[view.shard_offset] = second;
          second += n;
          [[fallthrough]];
        case TensorRule::kMuon:
          state->m_at[view.shard_offset] = moments;
          moments += n;
          break;
        case TensorRule::kAdam8bit:
          state->code_at[view.shard_offset] = codes;
          codes += n;
          break;
        case TensorRule::kShampoo: break;  // the owner keeps the factors
        case TensorRule::kSgd:
          if (sgd_params(optimizer_).momentum == 0.0) break;  // no state
          state->m_at[view.shard_offset] = moments;
          moments += n;
          break;
      }
    }
    state->m.assign(moments, 0.0f);
    state->v.assign(second, 0.0f);
    if (optimizer_.has_adam8bit()) {
      state->m_codes.assign(codes, 0);
      state->v_codes.assign(codes, 0);
      int64_t scales = 0;
      for (const planner::ShardView& view : s.views()) {
        const models::TensorSpec& t = s.spec().tensors[static_cast<size_t>(view.tensor)];
        if (tensor_rule(optimizer_, t) != TensorRule::kAdam8bit) continue;
        const Adam8bitTiles tiles = adam8bit_tiles(optimizer_, t, view.tensor_offset);
        RAGGED_ASSERT(starts_tile_row(tiles, view.tensor_offset), "a shard must start 8-bit Adam's tiles on a tile row");
        const int64_t blocks = adam8bit_num_blocks(view.elements, tiles);
        state->scale_base[view.shard_offset] = {scales, blocks};
        scales += blocks;
      }
      state->m_scales.assign(static_cast<size_t>(scales), 0.0f);
      state->v_scales.assign(static_cast<size_t>(scales), 0.0f);
    }
    state_.push_back(std::move(state));
  }
}

HostOptimizer::~HostOptimizer() = default;

void HostOptimizer::momentum(int unit) {
  const UnitShard& s = shard(unit);
  UnitState& st = *state_[static_cast<size_t>(unit)];
  st.update.assign(static_cast<size_t>(s.shard_size()), 0.0f);
  for (const planner::ShardView& view : s.views()) {
    const auto at = static_cast<size_t>(view.shard_offset), n = static_cast<size_t>(view.elements);
    switch (tensor_rule(optimizer_, s.spec().tensors[static_cast<size_t>(view.tensor)])) {
      case TensorRule::kMuon:
        muon_momentum(std::span<const float>(&s.grad()[at], n), std::span<float>(&st.m[st.m_at.at(view.shard_offset)], n),
                      std::span<float>(&st.update[at], n), muon_params(optimizer_));
        break;
      case TensorRule::kShampoo:  // no momentum: the owner preconditions the gradient itself
        std::copy_n(&s.grad()[at], n, &st.update[at]);
        break;
      case TensorRule::kAdamW:
      case TensorRule::kAdam8bit:
      case TensorRule::kSgd: break;  // updated on the shard alone
    }
  }
}

namespace {

planner::RaggedShard placement_of(const UnitShard& s, int tensor) {
  const auto& t = s.spec().tensors[static_cast<size_t>(tensor)];
  if (s.contiguous()) {
    return planner::shard_from_contiguous(t.shape, 1, s.map().unsharded_offset(tensor), s.shard_size(), s.ranks());
  }
  return planner::shard_from_rank_major(t.shape, planner::ChunkRule::kDim0Rows, s.ranks());
}

// This rank's view of `tensor` (its piece of the tensor in the shard).
const planner::ShardView* view_of(const UnitShard& s, int tensor) {
  for (const planner::ShardView& v : s.views()) {
    if (v.tensor == tensor) return &v;
  }
  return nullptr;
}

}  // namespace

// Moves every Muon matrix of the unit between the shards and its owner:
// `to_owner` gathers (shards -> whole matrix), else scatters back.
static void exchange(const UnitShard& s, const std::vector<planner::OwnedMatrix>& owned, int unit, bool to_owner,
                     std::vector<float>& update, std::map<size_t, std::vector<float>>& gathered, Communicator& comm) {
  const int world = comm.size(), me = comm.rank();
  std::vector<std::vector<float>> send(static_cast<size_t>(world));
  struct Placement {
    size_t matrix;
    planner::Transfer transfer;
  };
  std::vector<Placement> receives;
  for (size_t i = 0; i < owned.size(); ++i) {
    const planner::OwnedMatrix& m = owned[i];
    if (m.unit != unit) continue;
    const planner::RaggedShard sharded = placement_of(s, m.tensor);
    const planner::RaggedShard whole =
        planner::RaggedShard::whole_on(m.owner, world, s.spec().tensors[static_cast<size_t>(m.tensor)].shape);
    const auto transfers = to_owner ? planner::redistribute(sharded, whole) : planner::redistribute(whole, sharded);
    const planner::ShardView* mine = view_of(s, m.tensor);
    if (me == m.owner && to_owner) gathered[i].assign(static_cast<size_t>(m.rows * m.cols), 0.0f);
    for (const planner::Transfer& t : transfers) {
      if (t.src_rank == me) {
        const float* source = to_owner ? &update[static_cast<size_t>(mine->shard_offset + t.src_offset)]
                                       : &gathered.at(i)[static_cast<size_t>(t.src_offset)];
        send[static_cast<size_t>(t.dst_rank)].insert(send[static_cast<size_t>(t.dst_rank)].end(), source, source + t.elements);
      }
      if (t.dst_rank == me) receives.push_back({i, t});
    }
  }
  std::vector<int64_t> send_counts(static_cast<size_t>(world)), send_displs(static_cast<size_t>(world));
  std::vector<float> send_buffer;
  for (int r = 0; r < world; ++r) {
    send_displs[static_cast<size_t>(r)] = static_cast<int64_t>(send_buffer.size());
    send_counts[static_cast<size_t>(r)] = static_cast<int64_t>(send[static_cast<size_t>(r)].size());
    send_buffer.insert(send_buffer.end(), send[static_cast<size_t>(r)].begin(), send[static_cast<size_t>(r)].end());
  }
  std::vector<int64_t> recv_counts(static_cast<size_t>(world), 0), recv_displs(static_cast<size_t>(world));
  for (const Placement& p : receives) recv_counts[static_cast<size_t>(p.transfer.src_rank)] += p.transfer.elements;
  int64_t total = 0;
  for (int r = 0; r < world; ++r) {
    recv_displs[static_cast<size_t>(r)] = total;
    total += recv_counts[static_cast<size_t>(r)];
  }
  std::vector<float> recv_buffer(static_cast<size_t>(total));
  comm.all_to_all_v(send_buffer.data(), send_counts, send_displs, recv_buffer.data(), recv_counts, recv_displs);
  // Receives arrive per source in the order the sender packed them: matrix
  // order, then transfer order, which is the order of `receives` per source.
  std::vector<int64_t> cursor = recv_displs;
  for (const Placement& p : receives) {
    const float* data = &recv_buffer[static_cast<size_t>(cursor[static_cast<size_t>(p.transfer.src_rank)])];
    cursor[static_cast<size_t>(p.transfer.src_rank)] += p.transfer.elements;
    float* target = to_owner ? &gathered.at(p.matrix)[static_cast<size_t>(p.transfer.dst_offset)]
                             : &update[static_cast<size_t>(view_of(s, owned[p.matrix].tensor)->shard_offset + p.transfer.dst_offset)];
    std::copy_n(data, p.transfer.elements, target);
  }
}

Communicator& HostOptimizer::comm_for(planner::Group group) const {
  if (group != planner::Group::kExpertShard) return *comm_;
  RAGGED_ASSERT(expert_comm_ != nullptr, "the routed experts' matrices need their expert shard group");
  return *expert_comm_;
}

// A unit's matrices share its group (planner::UnitPlan::group).
static planner::Group unit_group(const std::vector<planner::OwnedMatrix>& owned, int unit) {
  for (const planner::OwnedMatrix& m : owned) {
    if (m.unit == unit) return m.group;
  }
  return planner::Group::kShard;
}

void HostOptimizer::gather_to_owners(int unit) {
  UnitState& st = *state_[static_cast<size_t>(unit)];
  exchange(shard(unit), owned_, unit, true, st.update, st.gathered, comm_for(unit_group(owned_, unit)));
}

void HostOptimizer::orthogonalize(int unit, int64_t step) {
  UnitState& st = *state_[static_cast<size_t>(unit)];
  for (auto& [index, matrix] : st.gathered) {
    if (optimizer_.has_muon()) {
      newton_schulz(matrix, owned_[index].rows, owned_[index].cols, muon_params(optimizer_).ns_steps);
    } else {
      RAGGED_ASSERT(optimizer_.has_shampoo(), "only Muon and Shampoo gather matrices to owners");
      shampoo_precondition(matrix, st.shampoo.at(index), step, shampoo_params(optimizer_));
    }
  }
}

void HostOptimizer::scatter_from_owners(int unit) {
  UnitState& st = *state_[static_cast<size_t>(unit)];
  exchange(shard(unit), owned_, unit, false, st.update, st.gathered, comm_for(unit_group(owned_, unit)));
  st.gathered.clear();
}

void HostOptimizer::update(int unit, int64_t step) {
  UnitShard& s = (*shards_)[static_cast<size_t>(unit)];
  UnitState& st = *state_[static_cast<size_t>(unit)];
  for (const planner::ShardView& view : s.views()) {
    const models::TensorSpec& t = s.spec().tensors[static_cast<size_t>(view.tensor)];
    const auto at = static_cast<size_t>(view.shard_offset), n = static_cast<size_t>(view.elements);
    std::span<float> params(&s.master()[at], n);
    std::span<const float> grads(&s.grad()[at], n);
    switch (tensor_rule(optimizer_, t)) {
      case TensorRule::kAdamW:
        adamw_step(params, grads, std::span<float>(&st.m[st.m_at.at(view.shard_offset)], n),
                   std::span<float>(&st.v[st.v_at.at(view.shard_offset)], n), step, adamw_params(optimizer_));
        break;
      case TensorRule::kAdam8bit: {
        auto [base, blocks] = st.scale_base.at(view.shard_offset);
        const size_t code = st.code_at.at(view.shard_offset);
        adam8bit_step(params, grads, std::span<int8_t>(&st.m_codes[code], n),
                      std::span<float>(&st.m_scales[static_cast<size_t>(base)], static_cast<size_t>(blocks)),
                      std::span<uint8_t>(&st.v_codes[code], n),
                      std::span<float>(&st.v_scales[static_cast<size_t>(base)], static_cast<size_t>(blocks)),
                      adam8bit_tiles(optimizer_, t, view.tensor_offset), step, adamw_params(optimizer_));
        break;
      }
      case TensorRule::kMuon:
        muon_apply(params, std::span<const float>(&st.update[at], n), t.rows() / t.matrices(), t.row_length(),
                   muon_params(optimizer_));
        break;
      case TensorRule::kShampoo:
        shampoo_apply(params, std::span<const float>(&st.update[at], n), shampoo_params(optimizer_));
        break;
      case TensorRule::kSgd: {
        const auto buffer = st.m_at.find(view.shard_offset);
        sgd_step(params, grads, buffer == st.m_at.end() ? std::span<float>() : std::span<float>(&st.m[buffer->second], n),
                 step, sgd_params(optimizer_));
        break;
      }
    }
  }
  std::vector<float>().swap(st.update);
}

namespace {

// A view whose shard offset is its packed offset in a state array.
planner::ShardView packed(const planner::ShardView& view, const std::map<int64_t, size_t>& at) {
  planner::ShardView moved = view;
  moved.shard_offset = static_cast<int64_t>(at.at(view.shard_offset));
  return moved;
}

template <typename T>
int64_t bytes_of(const std::vector<T>& v) {
  return static_cast<int64_t>(v.size() * sizeof(T));
}

}  // namespace

int64_t HostOptimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& state : state_) {
    const UnitState& s = *state;
    bytes += bytes_of(s.m) + bytes_of(s.v) + bytes_of(s.update) + bytes_of(s.m_codes) + bytes_of(s.v_codes) +
             bytes_of(s.m_scales) + bytes_of(s.v_scales);
    for (const auto& [index, matrix] : s.gathered) bytes += bytes_of(matrix);
    for (const auto& [index, matrix] : s.shampoo) {
      for (const ShampooBlock& b : matrix.blocks) {
        bytes += bytes_of(b.left) + bytes_of(b.right) + bytes_of(b.left_root) + bytes_of(b.right_root);
      }
    }
  }
  return bytes;
}

std::optional<NonFinite> HostOptimizer::first_non_finite_state(int unit) const {
  const UnitShard& s = shard(unit);
  const UnitState& st = *state_[static_cast<size_t>(unit)];
  for (const planner::ShardView& view : s.views()) {
    const models::TensorSpec& t = s.spec().tensors[static_cast<size_t>(view.tensor)];
    std::optional<NonFinite> found;
    switch (tensor_rule(optimizer_, t)) {
      case TensorRule::kAdamW:
        found = first_non_finite(s, packed(view, st.m_at), st.m, Quantity::kFirstMoment);
        if (!found) found = first_non_finite(s, packed(view, st.v_at), st.v, Quantity::kSecondMoment);
        break;
      case TensorRule::kMuon:
        found = first_non_finite(s, packed(view, st.m_at), st.m, Quantity::kMomentum);
        break;
      case TensorRule::kSgd:
        if (st.m_at.contains(view.shard_offset)) found = first_non_finite(s, packed(view, st.m_at), st.m, Quantity::kMomentum);
        break;
      case TensorRule::kAdam8bit: {  // the codes are integers; the scales carry the range
        const auto [base, blocks] = st.scale_base.at(view.shard_offset);
        for (const std::vector<float>* scales : {&st.m_scales, &st.v_scales}) {
          std::span<const float> mine(&(*scales)[static_cast<size_t>(base)], static_cast<size_t>(blocks));
          found = first_non_finite(mine, s.tensor_id(view.tensor), Quantity::kQuantScale);
          if (found) break;
        }
        break;
      }
      case TensorRule::kShampoo:  // no state on the shard: the owner keeps the factors
        break;
    }
    if (found) return found;
  }
  // Shampoo's factors and their roots, on the owner of each matrix (float64).
  for (const auto& [index, matrix] : st.shampoo) {
    const int64_t tensor_id = s.tensor_id(owned_[index].tensor);
    for (const ShampooBlock& block : matrix.blocks) {
      for (const std::vector<double>* factor : {&block.left, &block.right, &block.left_root, &block.right_root}) {
        for (size_t e = 0; e < factor->size(); ++e) {
          if (!std::isfinite((*factor)[e])) {
            return NonFinite{Quantity::kPreconditioner, tensor_id, static_cast<int64_t>(e),
                             static_cast<float>((*factor)[e]), 0, s.rank()};
          }
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace ragged::backend
