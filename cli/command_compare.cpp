// ragged compare PREDICTED MEASURED: step time, peak memory and per-op-kind
// time, predicted (ragged simulate --trace) against measured (ragged run --trace).

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/table.hpp"
#include "common/errors.hpp"
#include "common/units.hpp"
#include "traces/trace_comparability.hpp"
#include "traces/trace_compare.hpp"
#include "traces/kineto_import.hpp"
#include "traces/trace_io.hpp"
#include "traces/trace_names.hpp"

namespace ragged::cli {

void add_compare_command(CLI::App& app, Context& context) {
  auto predicted = std::make_shared<std::string>();
  auto measured = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto force = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("compare", "Compare a predicted trace with a measured one, op kind by op kind");
  cmd->add_option("predicted", *predicted, "Trace written by `ragged simulate --trace`")->required();
  cmd->add_option("measured", *measured,
                  "Trace written by `ragged run --trace`, or a PyTorch profiler (Kineto) trace of the same run's "
                  "steps (JSON from torch.profiler)")
      ->required();
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->add_flag("--force", *force, "Compare traces of different runs (model, GPUs, strategy, batch ...) anyway, with a warning");
  cmd->callback([&context, predicted, measured, json, force] {
    const traces::Trace predicted_trace = traces::read_trace(*predicted);
    const traces::Trace measured_trace = traces::read_measured_trace(*measured, predicted_trace);
    // Traces of different runs make errors of their differences: refused, naming them.
    const traces::Comparability comparable = traces::comparability(predicted_trace, measured_trace);
    if (!comparable.comparable()) {
      if (!*force) {
        throw InputError(fmt::format("the traces are of different runs: {}; pass --force to compare them anyway",
                                     comparable.describe()));
      }
      context.err << "ragged: warning: "
                  << one_line(fmt::format("the traces are of different runs: {}; compared anyway (--force)",
                                          comparable.describe()))
                  << '\n';
    }
    traces::TraceComparison c = traces::compare_traces(predicted_trace, measured_trace);
    if (*json) {
      nlohmann::json kinds = nlohmann::json::array();
      for (const auto& k : c.kinds) {
        kinds.push_back({{"kind", traces::op_kind_name(k.kind)}, {"ops", k.ops}, {"predicted_s", k.predicted_s},
                         {"measured_s", k.measured_s}, {"relative_error", k.relative_error()}});
      }
      context.out << nlohmann::json{{"predicted_step_s", c.predicted_step_s}, {"measured_step_s", c.measured_step_s},
                                    {"step_time_error", c.step_error()}, {"predicted_peak_bytes", c.predicted_peak_bytes},
                                    {"measured_peak_bytes", c.measured_peak_bytes}, {"peak_memory_error", c.memory_error()},
                                    {"peak_memory_counts", "persistent state + parameter and gradient buffers, allocated at issue"},
                                    {"predicted_concurrent_peak_bytes", c.predicted_concurrent_bytes},
                                    {"predicted_persistent_bytes", c.predicted_persistent_bytes},
                                    {"measured_persistent_bytes", c.measured_persistent_bytes},
                                    {"predicted_buffer_bytes", c.predicted_buffer_bytes()},
                                    {"measured_buffer_bytes", c.measured_buffer_bytes()},
                                    {"predicted_peak_reserved_bytes", c.predicted_reserved_bytes},
                                    {"predicted_peak_allocated_bytes", c.predicted_allocated_bytes},
                                    {"measured_held_bytes", c.measured_reserved_bytes},
                                    {"measured_steps", c.measured_steps},
                                    {"executor_notes", c.executor_notes},
                                    {"different_runs", comparable.differences},
                                    {"predicted_exposed_comm_s", c.predicted_exposed_s},
                                    {"measured_exposed_comm_s", c.measured_exposed_s}, {"predicted_mfu", c.predicted_mfu},
                                    {"measured_mfu", c.measured_mfu},
                                    {"joined_ops", c.joined_ops}, {"unmatched_ops", c.unmatched_ops}, {"kinds", kinds}}
                             .dump(2)
                  << '\n';
      return;
    }
    context.out << fmt::format("step time     predicted {}, measured {} (mean of {} steps): {:+.1f}%\n",
                               format_seconds(c.predicted_step_s), format_seconds(c.measured_step_s), c.measured_steps,
                               100 * c.step_error());
    context.out << fmt::format("peak memory   predicted {}, measured {}: {:+.1f}% (persistent state + parameter and "
                               "gradient buffers allocated at issue, on both sides)\n",
                               format_bytes(static_cast<double>(c.predicted_peak_bytes)),
                               format_bytes(static_cast<double>(c.measured_peak_bytes)), 100 * c.memory_error());
    context.out << fmt::format("                persistent state  predicted {} (the strategy's), measured {} (what the "
                               "executor holds)\n                buffers at peak   predicted {}, measured {}\n",
                               format_bytes(static_cast<double>(c.predicted_persistent_bytes)),
                               format_bytes(static_cast<double>(c.measured_persistent_bytes)),
                               format_bytes(static_cast<double>(c.predicted_buffer_bytes())),
                               format_bytes(static_cast<double>(c.measured_buffer_bytes())));
    for (const std::string& note : c.executor_notes) context.out << "              executor: " << note << '\n';
    context.out << fmt::format("              not compared: on the simulated device timeline the same buffers peak at "
                               "{} (streams run ahead), and with activations, workspaces and the allocator {} reserved, "
                               "{} allocated; the run held {} (state and its arena)\n",
                               format_bytes(static_cast<double>(c.predicted_concurrent_bytes)),
                               format_bytes(static_cast<double>(c.predicted_reserved_bytes)),
                               format_bytes(static_cast<double>(c.predicted_allocated_bytes)),
                               format_bytes(static_cast<double>(c.measured_reserved_bytes)));
    context.out << fmt::format("exposed comm  predicted {}, measured {}\n", format_seconds(c.predicted_exposed_s),
                               format_seconds(c.measured_exposed_s));
    context.out << fmt::format("MFU           predicted {:.1f}%, measured {:.1f}%\n", 100 * c.predicted_mfu,
                               100 * c.measured_mfu);
    context.out << fmt::format("ops joined by id: {} ({} in one trace only)\n\n", c.joined_ops, c.unmatched_ops);
    Table table;
    context.out << fmt::format("per op kind: predicted step against the mean of the {} measured steps\n",
                               c.measured_steps);
    table.column("op kind", Table::Align::kLeft).column("ops").column("predicted").column("measured").column("error");
    for (const auto& k : c.kinds) {
      table.row({std::string(traces::op_kind_name(k.kind)), std::to_string(k.ops), format_seconds(k.predicted_s),
                 format_seconds(k.measured_s), k.measured_s > 0 ? fmt::format("{:+.1f}%", 100 * k.relative_error()) : "-"});
    }
    table.print(context.out);
  });
}

}  // namespace ragged::cli
