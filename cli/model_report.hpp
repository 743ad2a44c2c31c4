#pragma once
// The human and JSON views of a ModelSpec shared by `ragged models` and
// `ragged inspect`.

#include <ostream>

#include <nlohmann/json.hpp>

#include "models/model_spec.hpp"

namespace ragged::cli {

// Headline: parameters, architecture, units, FLOPs per token at `seq_len`.
void print_model_summary(const models::ModelSpec& model, int64_t seq_len, std::ostream& out);
// One row per run of identical consecutive units ("layers.3-60  x58").
void print_unit_table(const models::ModelSpec& model, int64_t seq_len, std::ostream& out);
// The tensors of each distinct unit, experts collapsed ("experts.*.gate_proj.weight  x256").
void print_tensor_table(const models::ModelSpec& model, std::ostream& out);

nlohmann::json model_to_json(const models::ModelSpec& model, int64_t seq_len, bool with_tensors);

// One-line architecture description: "hidden 4096, 32 layers, 32/8 heads of 128, MLP 14336".
std::string describe_architecture(const models::ArchConfig& arch);

}  // namespace ragged::cli
