// Context parallelism's keys and values on the host (workload_tp.cpp's
// exchanges under cp): a cp rank holds the head-tail chunks of every
// sequence (context_position), its attention core reads every rank's keys
// and values gathered and placed at their positions, and its backward sends
// each key's gradient back to the rank that holds it.

#include <algorithm>

#include "backend/context_chunks.hpp"
#include "backend/workload_cp.hpp"

namespace ragged::backend {
namespace {

// A rank's slot of unit u's exchange: its tokens' keys and values (its kv heads).
KeyValueSlot key_value_slot(const HostWorkload::State& s, size_t u) {
  const detail::AttentionLayout& lay = s.blocks.at(u).attention;
  return {s.dims.tokens, lay.kv_heads * lay.qk_dim, lay.kv_heads * lay.v_dim};
}

}  // namespace

// The keys the attention core of a cp rank reads: every token of its sequences.
detail::CoreShape core_over_every_key(const HostWorkload::State& s, const detail::AttentionLayout& lay) {
  detail::CoreShape shape{s.sequences * s.seq_len, s.seq_len, lay.heads, lay.kv_heads, lay.qk_dim, lay.v_dim};
  shape.queries = s.dims.seq_len;
  shape.positions = s.positions.data();
  return shape;
}

// A cp rank's slot: its tokens' keys, then their values (gather), or the
// gradients it computed for rank q's keys and values in slot q (scatter).
TpExchange key_value_exchange(HostWorkload::State& s, size_t u, bool gather) {
  TpUnitState& t = s.tp_units.at(u);
  const KeyValueSlot slot = key_value_slot(s, u);
  const int64_t kw = slot.key_width, vw = slot.value_width;
  t.kv.assign(static_cast<size_t>(s.cp.size * slot.size()), 0.0f);
  // Row `row` of rank `rank`'s slot from row from[row] of k and v (null: row itself).
  const auto fill = [&](int rank, const float* k, const float* v, const int32_t* from) {
    float* out = t.kv.data() + rank * slot.size();
    for (int64_t row = 0; row < slot.tokens; ++row) {
      const int64_t at = from == nullptr ? row : from[row];
      std::copy(k + at * kw, k + (at + 1) * kw, out + row * kw);
      std::copy(v + at * vw, v + (at + 1) * vw, out + slot.values_at() + row * vw);
    }
  };
  const detail::AttentionCache& c = s.caches.at(u).attention;
  if (gather) {
    fill(s.cp.rank, c.k.data(), c.v.data(), nullptr);
  } else {
    const std::vector<int32_t> rows = gathered_key_rows(s.cp.size, s.sequences, s.seq_len);
    for (int q = 0; q < s.cp.size; ++q) fill(q, t.dk_all.data(), t.dv_all.data(), rows.data() + q * slot.tokens);
  }
  return {t.kv.data(), slot.size()};
}

// Every rank's keys and values, at their positions in their sequences.
void place_keys_and_values(HostWorkload::State& s, size_t u) {
  TpUnitState& t = s.tp_units.at(u);
  const KeyValueSlot slot = key_value_slot(s, u);
  const int64_t kw = slot.key_width, vw = slot.value_width;
  t.k_all.resize(static_cast<size_t>(s.sequences * s.seq_len * kw));
  t.v_all.resize(static_cast<size_t>(s.sequences * s.seq_len * vw));
  const std::vector<int32_t> rows = gathered_key_rows(s.cp.size, s.sequences, s.seq_len);
  for (int r = 0; r < s.cp.size; ++r) {
    const float* in = t.kv.data() + r * slot.size();
    for (int64_t row = 0; row < slot.tokens; ++row) {
      const int64_t to = rows[static_cast<size_t>(r * slot.tokens + row)];
      std::copy(in + row * kw, in + (row + 1) * kw, t.k_all.data() + to * kw);
      std::copy(in + slot.values_at() + row * vw, in + slot.values_at() + (row + 1) * vw, t.v_all.data() + to * vw);
    }
  }
}

// This rank's slot of the reduce-scattered gradients: its own keys' and values'.
void own_key_value_gradients(HostWorkload::State& s, size_t u) {
  TpUnitState& t = s.tp_units.at(u);
  const KeyValueSlot slot = key_value_slot(s, u);
  const float* mine = t.kv.data() + s.cp.rank * slot.size();
  t.dk.assign(mine, mine + slot.values_at());
  t.dv.assign(mine + slot.values_at(), mine + slot.size());
}

int64_t context_position(int rank, int size, int64_t index, int64_t local_len) {
  const int64_t chunk = local_len / 2;
  const int64_t which = index < chunk ? rank : 2 * size - 1 - rank;
  return which * chunk + index % chunk;
}

}  // namespace ragged::backend
