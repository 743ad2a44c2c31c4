#pragma once
// Internal to the host workload: context parallelism's exchange of keys and
// values (workload_cp.cpp), used by workload_tp.cpp's parts and exchanges.

#include <cstddef>

#include "backend/workload_state.hpp"

namespace ragged::backend {

// The keys the attention core of a cp rank reads: every token of its sequences.
detail::CoreShape core_over_every_key(const HostWorkload::State& s, const detail::AttentionLayout& lay);
// A cp rank's slot of unit u's exchange: its tokens' keys, then their values
// (gather), or the gradients it computed for rank q's keys and values in
// slot q (reduce-scatter).
TpExchange key_value_exchange(HostWorkload::State& s, size_t u, bool gather);
// After the gather: every rank's keys and values at their positions.
void place_keys_and_values(HostWorkload::State& s, size_t u);
// After the reduce-scatter: this rank's own keys' and values' gradients.
void own_key_value_gradients(HostWorkload::State& s, size_t u);

}  // namespace ragged::backend
