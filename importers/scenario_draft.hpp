#pragma once
// The part every format importer shares: a scenario being filled from a
// ConfigDocument, with a record of where each scenario field came from (the
// input's fields, the framework's defaults, the command line) and of what
// was not mapped; the cluster built from the command line; and the
// scenario written out as text with those records as comments, after the
// scenario loader's own checks (a failed check names the input field the
// scenario field came from).

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "importers/config_document.hpp"
#include "importers/import_config.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::importers {

class ScenarioDraft {
 public:
  ScenarioDraft(const ConfigDocument& doc, const ImportOptions& options, std::string name);

  scenarios::Scenario& scenario() { return scenario_; }
  scenarios::Training& training() { return *scenario_.mutable_training(); }
  const ConfigDocument& doc() const { return doc_; }
  const ImportOptions& options() const { return options_; }

  // `field` (a scenario path) = `value`, from the input fields `from`.
  void mapped(const std::string& field, const std::string& value, const std::vector<std::string>& from);
  // `field` = `value` where the input says nothing: the framework's default (`why`).
  void assumed(const std::string& field, const std::string& value, const std::string& why);
  // `field` = `value` from the command line (`flags`, or what it defaulted to).
  void from_command_line(const std::string& field, const std::string& value, const std::string& flags);
  // An input field whose value is what Ragged models anyway (`why`).
  void agrees(std::string_view path, const std::string& why);
  // An input field that matters to a step and that Ragged does not model: a
  // comment, and a warning on stderr when `warn`.
  void not_modelled(std::string_view path, const std::string& why, bool warn = false);
  // The same for every leaf under `prefix` not read yet.
  void not_modelled_section(std::string_view prefix, const std::string& why, bool warn = false);

  // model: --model when given (catalog name or config.json), else the
  // catalog model `catalog`; with neither, an InputError at `field` naming --model.
  void set_model(const std::string& catalog, const std::vector<std::string>& from, const std::string& field,
                 const std::string& why_none);
  bool model_from_command_line() const { return !options_.model.empty(); }

  // cluster: --gpus, else `config_gpus` (> 0 when the config fixes the count,
  // from the fields `from`); with neither, an InputError at `missing_field`
  // saying `missing_why` and naming --gpus. --gpu (default h100),
  // --gpus-per-node (default the GPU's NVLink domain, or fewer GPUs on one node).
  int64_t set_cluster(int64_t config_gpus, const std::vector<std::string>& from, const std::string& missing_field,
                      const std::string& missing_why);

  // Checks the scenario as the loader would and writes it out. Every leaf
  // nobody read is listed under the heading `why_ignored(path)` gives it.
  ImportedConfig finish(ConfigFormat format, const std::function<std::string(std::string_view)>& why_ignored);

 private:
  struct Record {
    std::string field;
    std::string value;
    std::string source;           // comment text: the input fields, or why
    std::vector<std::string> from;  // input paths (for errors)
  };

  const ConfigDocument& doc_;
  ImportOptions options_;
  scenarios::Scenario scenario_;
  std::vector<Record> mapped_;
  std::vector<Record> assumed_;
  std::vector<Record> command_line_;
  std::vector<std::string> agrees_;
  std::vector<std::string> not_modelled_;
  std::vector<std::string> warnings_;
};

// Text-format names of the enums the importers write.
std::string enum_text(scenarios::Strategy value);
std::string enum_text(scenarios::DType value);
std::string enum_text(scenarios::Checkpointing value);

}  // namespace ragged::importers
