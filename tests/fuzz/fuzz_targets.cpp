#include "fuzz_targets.hpp"

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "cli/cli.hpp"
#include "common/file_io.hpp"
#include "common/errors.hpp"
#include "importers/import_config.hpp"
#include "models/hf_config.hpp"
#include "models/model_spec.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/compute_model.hpp"
#include "traces/chrome_trace.hpp"
#include "traces/protobuf_log.hpp"
#include "traces/trace_compare.hpp"
#include "traces/trace_io.hpp"
#include "traces/trace_stats.hpp"
#include "traces/trace_validate.hpp"
#include "validation/validation_set.hpp"

namespace ragged::fuzz {
namespace {

// The file of this process's own that a path-reading entry point is fed
// through, removed when the process exits (libFuzzer and the replay both end
// with exit()): runs left one file per process in the temporary folder.
class InputFile {
 public:
  InputFile(const std::string& stem, const std::string& extension)
      : path_(std::filesystem::temp_directory_path() / (stem + "-" + std::to_string(::getpid()) + extension)) {}
  ~InputFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  const std::filesystem::path& write(std::string_view data) const {
    write_file_atomically(path_, std::string(data));
    return path_;
  }

 private:
  std::filesystem::path path_;
};

// A scenario as `ragged scenario validate` reads it: parsed, defaulted,
// validated, its model built and its granularity checked.
void load_scenario(std::string_view data, scenarios::ScenarioFormat format, const char* origin) {
  try {
    planner::resolve_scenario(scenarios::parse_scenario(data, format, origin, "."));
  } catch (const InputError&) {
  }
}

void scenario_textproto(std::string_view data) { load_scenario(data, scenarios::ScenarioFormat::kText, "fuzz.textproto"); }
void scenario_json(std::string_view data) { load_scenario(data, scenarios::ScenarioFormat::kJson, "fuzz.json"); }

// A config.json as `ragged inspect` reads it.
void hf_config(std::string_view data) {
  try {
    const models::ModelSpec model = models::build_model(models::arch_from_hf_json(data, "fuzz/config.json"));
    static_cast<void>(model.executed_flops_per_token(4096));
  } catch (const InputError&) {
  }
}

// A trace as `ragged compare` reads it, then every report that reads a valid one.
void trace(std::string_view data, traces::TraceFormat format) {
  traces::capture_protobuf_logs();  // as the command does: protobuf's own log joins the error
  try {
    const traces::Trace t = traces::parse_trace(data, format, "fuzz-trace");
    traces::check_trace(t, "fuzz-trace");
    static_cast<void>(traces::totals_by_kind(t));
    static_cast<void>(traces::step_count(t));
    static_cast<void>(traces::to_chrome_trace(t));
    static_cast<void>(traces::compare_traces(t, t));
  } catch (const InputError&) {
  }
}

void trace_binary(std::string_view data) { trace(data, traces::TraceFormat::kBinary); }

// JSON when the text opens with '{', else text format.
void trace_text(std::string_view data) {
  const size_t first = data.find_first_not_of(" \t\r\n");
  trace(data, first != std::string_view::npos && data[first] == '{' ? traces::TraceFormat::kJson : traces::TraceFormat::kText);
}

// A calibration file as `ragged simulate --calibration` reads it (the reader
// takes a path: the input goes through a file of this process's own), then a
// GEMM, an attention and a memory-bound op costed with it.
void calibration(std::string_view data) {
  static const InputFile file("ragged-fuzz-calibration", ".json");
  const std::filesystem::path& path = file.write(data);
  try {
    const sim::ComputeModel model = sim::ComputeModel::from_calibration(path, "h100");
    static_cast<void>(model.gemm_seconds({4096, 4096, 4096, 1}));
    planner::AttentionWork attention;
    attention.batch = 1;
    attention.seq_len = 4096;
    attention.heads = 32;
    attention.qk_head_dim = attention.v_head_dim = 128;
    attention.flops = 1e12;
    static_cast<void>(model.attention_seconds(attention, true));
    static_cast<void>(model.memory_seconds(1e9));
  } catch (const InputError&) {
  }
}

// A validation set (validation/runs.textproto) as `ragged validate` reads it,
// its scenario files looked for in the repository's validation folder.
void validation_set(std::string_view data) {
  try {
    static_cast<void>(validation::parse_validation_set(data, "fuzz/runs.textproto", validation::default_validation_dir()));
  } catch (const InputError&) {
  }
}

// A training config as `ragged scenario import` reads it (through a file of
// this process's own, named with the format's extension), on 8 GPUs with the
// flags a DeepSpeed config needs. What the importer writes must load: a
// scenario of its own that the loader refuses is a finding.
void import_config(std::string_view data, const char* extension) {
  static const InputFile toml("ragged-fuzz-import", ".toml"), yaml("ragged-fuzz-import", ".yaml"),
      json("ragged-fuzz-import", ".json");
  const std::string_view format(extension);
  const std::filesystem::path& path = (format == ".toml" ? toml : format == ".yaml" ? yaml : json).write(data);
  importers::ImportOptions options;
  options.gpus = 8;
  if (std::string_view(extension) == ".json") {
    options.model = "llama3-8b";
    options.sequence_length = 2048;
    options.micro_batch = 1;
  }
  std::string text;
  try {
    text = importers::import_config(path, options).scenario_text;
  } catch (const InputError&) {
    return;
  }
  try {
    scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "imported", ".");
  } catch (const InputError& e) {
    throw InternalError(std::string("the importer wrote a scenario the loader refuses: ") + e.what());
  }
}

void import_torchtitan(std::string_view data) { import_config(data, ".toml"); }
void import_llm_foundry(std::string_view data) { import_config(data, ".yaml"); }
void import_deepspeed(std::string_view data) { import_config(data, ".json"); }

// The command line: one argument per line. Only the commands that read and
// print run (models, inspect, scenario, plan, compare); simulate, run and
// validate start simulations or MPI and write files. Exit code 1 is a finding.
void cli_args(std::string_view data) {
  std::vector<std::string> args = {"ragged"};
  std::string current;
  for (char c : data) {
    if (c == '\n') {
      args.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  args.push_back(std::move(current));
  const std::string& command = args[1];
  if (command != "models" && command != "inspect" && command != "scenario" && command != "plan" &&
      command != "compare" && command != "--help" && command != "--version") {
    return;
  }
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out, err;
  const int code = cli::run(static_cast<int>(argv.size()), argv.data(), out, err);
  if (code == cli::kExitInternal) throw InternalError("ragged exited 1: " + err.str());
}

const std::vector<FuzzTarget> kTargets = {
    {"scenario_textproto", scenario_textproto},
    {"scenario_json", scenario_json},
    {"hf_config", hf_config},
    {"trace_binary", trace_binary},
    {"trace_text", trace_text},
    {"cli_args", cli_args},
    {"calibration", calibration},
    {"validation_set", validation_set},
    {"import_torchtitan", import_torchtitan},
    {"import_llm_foundry", import_llm_foundry},
    {"import_deepspeed", import_deepspeed},
};

}  // namespace

const std::vector<FuzzTarget>& fuzz_targets() { return kTargets; }

const FuzzTarget* find_fuzz_target(std::string_view name) {
  for (const FuzzTarget& target : kTargets) {
    if (name == target.name) return &target;
  }
  return nullptr;
}

}  // namespace ragged::fuzz
