#pragma once
// Shared by the mesh Program tests (mesh_program_test.cpp,
// expert_mesh_program_test.cpp): the mesh collectives of one unit's ops, by
// group, kind and pass, and the tiny models they build.

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include <gtest/gtest.h>

#include "planner/mesh_collectives.hpp"
#include "planner/program.hpp"

namespace ragged::planner::mesh_test {

// Bytes of the mesh collectives of one unit's ops, by (group, kind, pass).
struct Key {
  Group group;
  OpKind kind;
  std::string pass;
  bool operator<(const Key& o) const {
    return std::tie(group, kind, pass) < std::tie(o.group, o.kind, o.pass);
  }
};

inline std::map<Key, std::pair<int, int64_t>> mesh_ops_of(const Program& p, int unit) {
  std::map<Key, std::pair<int, int64_t>> out;
  for (const Op& op : p.ops) {
    if (op.unit != unit || op.micro_batch != 0) continue;
    if (op.group != Group::kTensor && op.group != Group::kContext && op.group != Group::kExpert) continue;
    const std::string pass = op.name.find("(recompute)") != std::string::npos ? "recompute"
                             : op.name.find("(bwd)") != std::string::npos    ? "bwd"
                                                                             : "fwd";
    auto& [count, bytes] = out[{op.group, op.kind, pass}];
    ++count;
    bytes = op.bytes;
    EXPECT_EQ(op.stream, mesh_stream(op.group)) << op.name;
  }
  return out;
}

// The tiny Llama (width 256, 8 heads of 32, 4 key/value heads, 4 blocks) on 8 GPUs.
inline constexpr const char* kSequence = "micro_batch_size: 2 sequence_length: 512 ";

// A tiny Qwen3-style mixture of experts (8 experts, top 2) on one node of 8 H100.
inline constexpr const char* kTinyMoe =
    "model { inline_spec { family: \"qwen3_moe\" hidden_size: 128 num_layers: 2 vocab_size: 512\n"
    "                      intermediate_size: 256 num_attention_heads: 4 num_key_value_heads: 2 head_dim: 32\n"
    "                      num_experts: 8 experts_per_token: 2 moe_intermediate_size: 64 } }\n"
    "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n";

}  // namespace ragged::planner::mesh_test
