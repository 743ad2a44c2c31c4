#pragma once
// Goodput: the share of the wall-clock time that advances training once
// interruptions, checkpoints and restarts are counted, from the simulated
// step and the checkpoint's cost. Interruptions arrive at a constant rate
// per GPU (a Poisson process), so the job's mean time between them, M, is
// the GPU's divided by the GPU count. Each interval of τ seconds of training
// ends with a checkpoint that pauses it for δ; an interruption costs a
// restart R (relaunch + checkpoint load) and the work since the last saved
// checkpoint. Daly's model of that cycle (Daly 2006, "A higher order
// estimate of the optimum checkpoint interval for restart dumps", FGCS 22)
// gives the expected wall time per second of training,
//   T_wall / T_train = M e^(R/M) (e^((τ+δ)/M) - 1) / τ,
// and its optimum τ; docs/SIMULATOR.md section 9 derives every input.

#include <cstdint>
#include <string>
#include <vector>

#include "planner/checkpoint_cost.hpp"

namespace ragged::planner {

struct GoodputInputs {
  ClusterShape cluster;
  int64_t checkpoint_bytes_per_gpu = 0;
  double step_time_s = 0;            // > 0: checkpoints fall between steps
  double tokens_per_s_per_gpu = 0;   // the healthy cluster's
  GoodputSettings settings;
};

struct GoodputEstimate {
  double job_mtbf_s = 0;  // infinity without interruptions
  CheckpointCost checkpoint;
  double restart_s = 0;          // relaunch + checkpoint load (+ the background write when asynchronous)
  double young_interval_s = 0;   // sqrt(2 δ M)
  double daly_interval_s = 0;    // Daly's higher-order optimum
  double interval_s = 0;         // the one used: given or Daly's, in whole steps; infinity: no checkpoints
  int64_t interval_steps = 0;    // 0: no checkpoints
  double lost_work_s = 0;        // expected work redone per interruption
  double goodput = 1;            // training time / wall time
  double effective_tokens_per_s_per_gpu = 0;
  double days_to_train = 0;      // 0 when train_tokens is not set
  std::vector<std::string> warnings;  // regimes where the job makes little progress
};

// sqrt(2 δ M) (Young 1974): the optimum of the first-order loss δ/τ + τ/(2M).
double young_interval(double pause_s, double mtbf_s);
// Daly 2006: sqrt(2δM) [1 + sqrt(δ/(2M))/3 + δ/(18M)] - δ for δ < 2M, else M.
double daly_interval(double pause_s, double mtbf_s);
// Daly's training share τ / (M e^(R/M) (e^((τ+δ)/M) - 1)); τ / (τ+δ) without interruptions.
double daly_goodput(double interval_s, double pause_s, double restart_s, double mtbf_s);

GoodputEstimate estimate_goodput(const GoodputInputs& inputs);

// A scenario's goodput around its (simulated) healthy step: scenario.goodput's
// settings and its cluster, with `checkpoint_bytes_per_gpu` already counted.
GoodputEstimate estimate_goodput(const scenarios::Scenario& scenario, double checkpoint_bytes_per_gpu,
                                 double step_time_s, double tokens_per_s_per_gpu);
// The same with its rank 0's checkpoint bytes.
GoodputEstimate estimate_goodput(const ResolvedScenario& resolved, double step_time_s, double tokens_per_s_per_gpu);

}  // namespace ragged::planner
