// Context parallelism's keys and values on the host (workload_tp.cpp's
// exchanges under cp): a cp rank holds the head-tail chunks of every
// sequence (context_position), its attention core reads every rank's keys
// and values gathered and placed at their positions, and its backward sends
// each key's gradient back to the rank that holds it.

#include <algorithm>

#include "backend/workload_cp.hpp"

namespace ragged::backend {
namespace {

// Widths of a rank's keys and of its values (its kv heads).
int64_t key_width(const detail::AttentionLayout& lay) { return lay.kv_heads * lay.qk_dim; }
int64_t value_width(const detail::AttentionLayout& lay) { return lay.kv_heads * lay.v_dim; }

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
  const detail::AttentionLayout& lay = s.blocks.at(u).attention;
  const int64_t tokens = s.dims.tokens, local_len = s.dims.seq_len;
  const int64_t kw = key_width(lay), vw = value_width(lay), slot = tokens * (kw + vw);
  t.kv.assign(static_cast<size_t>(s.cp.size * slot), 0.0f);
  const auto fill = [&](int rank, const float* k, const float* v, bool every_key) {
    float* out = t.kv.data() + rank * slot;
    for (int64_t q = 0; q < s.sequences; ++q) {
      for (int64_t i = 0; i < local_len; ++i) {
        const int64_t row = q * local_len + i;
        const int64_t from = every_key ? q * s.seq_len + context_position(rank, s.cp.size, i, local_len) : row;
        std::copy(k + from * kw, k + (from + 1) * kw, out + row * kw);
        std::copy(v + from * vw, v + (from + 1) * vw, out + tokens * kw + row * vw);
      }
    }
  };
  const detail::AttentionCache& c = s.caches.at(u).attention;
  if (gather) {
    fill(s.cp.rank, c.k.data(), c.v.data(), false);
  } else {
    for (int q = 0; q < s.cp.size; ++q) fill(q, t.dk_all.data(), t.dv_all.data(), true);
  }
  return {t.kv.data(), slot};
}

// Every rank's keys and values, at their positions in their sequences.
void place_keys_and_values(HostWorkload::State& s, size_t u) {
  TpUnitState& t = s.tp_units.at(u);
  const detail::AttentionLayout& lay = s.blocks.at(u).attention;
  const int64_t tokens = s.dims.tokens, local_len = s.dims.seq_len;
  const int64_t kw = key_width(lay), vw = value_width(lay), slot = tokens * (kw + vw);
  t.k_all.resize(static_cast<size_t>(s.sequences * s.seq_len * kw));
  t.v_all.resize(static_cast<size_t>(s.sequences * s.seq_len * vw));
  for (int r = 0; r < s.cp.size; ++r) {
    const float* in = t.kv.data() + r * slot;
    for (int64_t q = 0; q < s.sequences; ++q) {
      for (int64_t i = 0; i < local_len; ++i) {
        const int64_t row = q * local_len + i;
        const int64_t to = q * s.seq_len + context_position(r, s.cp.size, i, local_len);
        std::copy(in + row * kw, in + (row + 1) * kw, t.k_all.data() + to * kw);
        std::copy(in + tokens * kw + row * vw, in + tokens * kw + (row + 1) * vw, t.v_all.data() + to * vw);
      }
    }
  }
}

// This rank's slot of the reduce-scattered gradients: its own keys' and values'.
void own_key_value_gradients(HostWorkload::State& s, size_t u) {
  TpUnitState& t = s.tp_units.at(u);
  const detail::AttentionLayout& lay = s.blocks.at(u).attention;
  const int64_t tokens = s.dims.tokens, kw = key_width(lay), vw = value_width(lay), slot = tokens * (kw + vw);
  const float* mine = t.kv.data() + s.cp.rank * slot;
  t.dk.assign(mine, mine + tokens * kw);
  t.dv.assign(mine + tokens * kw, mine + slot);
}


int64_t context_position(int rank, int size, int64_t index, int64_t local_len) {
  const int64_t chunk = local_len / 2;
  const int64_t which = index < chunk ? rank : 2 * size - 1 - rank;
  return which * chunk + index % chunk;
}

}  // namespace ragged::backend
