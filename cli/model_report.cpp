#include "cli/model_report.hpp"

#include <map>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/table.hpp"
#include "common/units.hpp"

namespace ragged::cli {
namespace {

using models::ModelSpec;
using models::UnitSpec;

// Tensor names relative to their unit ("layers.3.", GPT-2's "h.3.", MPT's
// "blocks.3." dropped), with expert indices collapsed.
std::string generic_name(const std::string& name) {
  static const std::regex layer_prefix(R"(^[A-Za-z_]+\.\d+\.)");
  static const std::regex expert_index(R"(\.experts\.\d+\.)");
  return std::regex_replace(std::regex_replace(name, layer_prefix, ""), expert_index, ".experts.*.");
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Units with the same tensors and compute, e.g. every dense block.
std::string unit_signature(const UnitSpec& unit, int64_t seq_len) {
  std::string signature = fmt::format("{}|{}", static_cast<int>(unit.kind), unit.compute.forward_flops_per_token(seq_len));
  for (const auto& t : unit.tensors) signature += generic_name(t.name) + shape_text(t.shape);
  return signature;
}

struct UnitRun {
  size_t first = 0;
  size_t count = 0;
};

std::vector<UnitRun> unit_runs(const ModelSpec& model, int64_t seq_len) {
  std::vector<UnitRun> runs;
  std::string previous;
  for (size_t i = 0; i < model.units.size(); ++i) {
    std::string signature = unit_signature(model.units[i], seq_len);
    if (!runs.empty() && signature == previous) {
      ++runs.back().count;
    } else {
      runs.push_back({i, 1});
    }
    previous = std::move(signature);
  }
  return runs;
}

std::string run_name(const ModelSpec& model, const UnitRun& run) {
  const std::string& first = model.units[run.first].name;
  if (run.count == 1) return first;
  const std::string& last = model.units[run.first + run.count - 1].name;
  size_t dot = first.rfind('.');
  return first + "-" + last.substr(dot + 1);
}

// What differs from a Llama block (GPT-2 style families), "" for Llama and the MoE families.
std::string describe_block_form(const models::ArchConfig& arch) {
  std::vector<std::string> notes;
  if (arch.norm == models::NormKind::kLayerNorm) notes.push_back(arch.norm_bias ? "LayerNorm with bias" : "LayerNorm");
  if (arch.mlp == models::MlpKind::kPlain) notes.push_back(arch.mlp_bias ? "2-matrix MLP with bias" : "2-matrix MLP");
  if (arch.qkv_fused) notes.push_back("fused qkv");
  if (arch.positions == models::PositionKind::kLearned) {
    notes.push_back(fmt::format("learned positions ({})", arch.max_positions));
  } else if (arch.positions == models::PositionKind::kAlibi) {
    notes.push_back("ALiBi");
  } else if (arch.rotary_dim > 0) {
    notes.push_back(fmt::format("rotary on {} of {} dims", arch.rotary_dim, arch.head_dim));
  }
  if (arch.parallel_block) notes.push_back(arch.shared_block_norm ? "parallel attention+MLP, one norm" : "parallel attention+MLP");
  if (!arch.final_norm) notes.push_back("no final norm");
  if (arch.embed_dim > 0) notes.push_back(fmt::format("token table {} wide, projected", arch.embed_dim));
  if (arch.embedding_norm) notes.push_back("embedding LayerNorm");
  if (notes.empty()) return "";
  if (arch.tie_embeddings) notes.push_back("tied embeddings");
  std::string text;
  for (const std::string& note : notes) text += "; " + note;
  return text;
}

std::string gflop(double flops) { return fmt::format("{:.3f}", flops / 1e9); }
std::string kib(double bytes) { return fmt::format("{:.1f}", bytes / 1024.0); }

}  // namespace

std::string describe_architecture(const models::ArchConfig& arch) {
  std::string text = fmt::format("hidden {}, {} layers, ", arch.hidden, arch.layers);
  if (arch.attention == models::AttentionKind::kMla) {
    text += fmt::format("MLA {} heads (q_lora {}, kv_lora {}, qk {}+{}, v {})", arch.heads, arch.q_lora_rank,
                        arch.kv_lora_rank, arch.qk_nope_head_dim, arch.qk_rope_head_dim, arch.v_head_dim);
  } else {
    text += fmt::format("{}/{} heads of {}", arch.heads, arch.kv_heads, arch.head_dim);
  }
  if (arch.is_moe()) {
    text += fmt::format(", {} experts top-{} of width {}", arch.experts, arch.experts_per_token, arch.moe_intermediate);
    if (arch.shared_experts) text += fmt::format(" + {} shared", arch.shared_experts);
    if (arch.first_dense_layers) text += fmt::format(", first {} dense (MLP {})", arch.first_dense_layers, arch.intermediate);
    if (arch.expert_storage == models::ExpertStorage::kFused) text += ", experts fused";
  } else {
    text += fmt::format(", MLP {}", arch.intermediate);
  }
  return text + fmt::format(", vocab {}", arch.vocab) + describe_block_form(arch);
}

void print_model_summary(const ModelSpec& model, int64_t seq_len, std::ostream& out) {
  double forward = 0, backward = 0;
  for (const auto& unit : model.units) {
    forward += unit.compute.forward_flops_per_token(seq_len);
    backward += unit.compute.backward_flops_per_token(seq_len);
  }
  out << fmt::format("{}  ({}, {})\n", model.name, model.arch.family, models::dtype_name(model.arch.dtype));
  out << fmt::format("  parameters     {} ({}), active per token {}\n", format_count(static_cast<double>(model.params())),
                     format_integer(model.params()), format_count(model.active_params()));
  out << fmt::format("  architecture   {}\n", describe_architecture(model.arch));
  out << fmt::format("  units          {} ({} tensors)\n", model.units.size(), model.tensor_count());
  out << fmt::format("  FLOPs/token    model {} at sequence {} (PaLM convention, for MFU); executed forward {} + backward {}\n",
                     format_flops(model.model_flops_per_token(seq_len)), seq_len, format_flops(forward), format_flops(backward));
}

void print_unit_table(const ModelSpec& model, int64_t seq_len, std::ostream& out) {
  Table table;
  table.column("unit", Table::Align::kLeft).column("count").column("tensors").column("params/unit").column("bytes/unit");
  table.column("fwd GFLOP/tok").column("bwd GFLOP/tok").column("act KiB/tok none").column("selective").column("full");
  for (const UnitRun& run : unit_runs(model, seq_len)) {
    const UnitSpec& unit = model.units[run.first];
    table.row({run_name(model, run), std::to_string(run.count), std::to_string(unit.tensors.size()),
               format_count(static_cast<double>(unit.params())), format_bytes(static_cast<double>(unit.bytes())),
               gflop(unit.compute.forward_flops_per_token(seq_len)), gflop(unit.compute.backward_flops_per_token(seq_len)),
               kib(unit.activations.saved_none), kib(unit.activations.saved_selective), kib(unit.activations.saved_full)});
  }
  int64_t bytes = 0;
  for (const auto& unit : model.units) bytes += unit.bytes();
  table.rule().row({"total", std::to_string(model.units.size()), std::to_string(model.tensor_count()),
                    format_count(static_cast<double>(model.params())), format_bytes(static_cast<double>(bytes)),
                    "", "", "", "", ""});
  table.print(out, "  ");
}

void print_tensor_table(const ModelSpec& model, std::ostream& out) {
  for (const UnitRun& run : unit_runs(model, 0)) {
    const UnitSpec& unit = model.units[run.first];
    out << fmt::format("\n  {}{}\n", run_name(model, run), run.count > 1 ? fmt::format(" (each of {})", run.count) : "");
    Table table;
    table.column("tensor", Table::Align::kLeft).column("shape", Table::Align::kLeft).column("role", Table::Align::kLeft);
    table.column("copies").column("params");
    std::vector<std::pair<std::string, std::pair<const models::TensorSpec*, int>>> rows;
    std::map<std::string, size_t> row_of;
    for (const auto& tensor : unit.tensors) {
      std::string key = generic_name(tensor.name) + shape_text(tensor.shape);
      auto [it, inserted] = row_of.emplace(key, rows.size());
      if (inserted) rows.push_back({generic_name(tensor.name), {&tensor, 0}});
      ++rows[it->second].second.second;
    }
    for (const auto& [name, entry] : rows) {
      const auto& [tensor, copies] = entry;
      table.row({name, shape_text(tensor->shape), std::string(models::role_name(tensor->role)), std::to_string(copies),
                 format_count(static_cast<double>(tensor->numel() * copies))});
    }
    table.print(out, "    ");
  }
}

nlohmann::json model_to_json(const ModelSpec& model, int64_t seq_len, bool with_tensors) {
  nlohmann::json units = nlohmann::json::array();
  for (const auto& unit : model.units) {
    nlohmann::json u = {
        {"name", unit.name},
        {"params", unit.params()},
        {"bytes", unit.bytes()},
        {"tensor_count", unit.tensors.size()},
        {"forward_flops_per_token", unit.compute.forward_flops_per_token(seq_len)},
        {"backward_flops_per_token", unit.compute.backward_flops_per_token(seq_len)},
        {"elementwise_bytes_per_token", unit.compute.elementwise_bytes_per_token()},
        {"activation_bytes_per_token",
         {{"none", unit.activations.saved_none}, {"selective", unit.activations.saved_selective},
          {"full", unit.activations.saved_full}, {"working", unit.activations.working}}},
    };
    if (with_tensors) {
      nlohmann::json tensors = nlohmann::json::array();
      for (const auto& t : unit.tensors) {
        tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"dtype", models::dtype_name(t.dtype)},
                           {"role", models::role_name(t.role)}, {"params", t.numel()}});
      }
      u["tensors"] = std::move(tensors);
    }
    units.push_back(std::move(u));
  }
  return {
      {"name", model.name},
      {"family", model.arch.family},
      {"dtype", models::dtype_name(model.arch.dtype)},
      {"params", model.params()},
      {"active_params", model.active_params()},
      {"tensor_count", model.tensor_count()},
      {"sequence_length", seq_len},
      {"model_flops_per_token", model.model_flops_per_token(seq_len)},
      {"executed_flops_per_token", model.executed_flops_per_token(seq_len)},
      {"architecture", describe_architecture(model.arch)},
      {"units", std::move(units)},
  };
}

}  // namespace ragged::cli
