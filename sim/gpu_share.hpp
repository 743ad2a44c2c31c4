#pragma once
// One GPU's shared resources while its streams run at once (docs/SIMULATOR.md
// section 6b). Work on a stream is bound by the SMs (GEMMs, attention) or by
// HBM bandwidth (element-wise traffic, copies, casts); a running collective
// holds NCCL's CTAs, one SM each, and makes HBM traffic at its nominal rate.
//  - SM-bound work runs at (SMs - CTAs of the running collectives) / SMs of
//    its rate alone;
//  - a persistent kernel (a Hopper GEMM) launches one CTA per SM, each with
//    1/SMs of its work: its CTAs start on the SMs free at its start, the rest
//    when SMs free up (a collective ends, or its own first CTAs finish), so
//    beside a collective it takes up to twice its time alone. Its CTAs hold
//    their SMs: a collective issued meanwhile waits for them (NCCL's CTAs
//    never share an SM), and a waiting collective gets freed SMs first;
//  - the block scheduler dispatches kernels' CTAs in the order the kernels
//    became ready: a collective issued while compute kernels are still
//    dispatching CTAs waits until they have all been dispatched (a kernel of
//    many waves: until it ends; a persistent one: until its last CTA starts);
//  - HBM is shared in proportion to demand: memory-bound kernels demand the
//    whole bandwidth B, collectives their traffic d; while the demands D
//    exceed B every consumer gets s = B / D of its demand, so memory-bound
//    work runs at s of its rate and collectives' links are scaled by s (the
//    callback).
// The representative rank's GPU stands for every GPU of its group (all run
// the same Program), so scaling its links slows every ring it is part of.
// Progress is integrated exactly between changes: a kernel waits for its
// remaining work at the current rate, woken early by any change.

#include <cstdint>
#include <functional>
#include <map>
#include <set>

#include <simgrid/s4u.hpp>

namespace ragged::sim {

struct GpuResources {
  int sms = 0;                 // 0: SM-bound work is not slowed by collectives
  double hbm_bytes_per_s = 0;  // 0: HBM is not shared (each kernel runs at its own rate)
};

struct CollectiveDemand {
  int ctas = 0;                // SMs NCCL's kernel holds while it runs
  double hbm_bytes_per_s = 0;  // HBM traffic at its nominal rate
};

class GpuShare {
 public:
  explicit GpuShare(GpuResources resources) : resources_(resources) {}

  // `callback(s)` scales the collectives' link rates whenever s changes.
  void on_collective_scale(std::function<void(double)> callback) { scale_callback_ = std::move(callback); }
  // Creates the engine objects; call inside the engine before the actors run.
  void create();

  // Blocking, in a stream actor: one kernel of `seconds` of work at its rate
  // alone; the memory-bound one as `kernels` equal kernels in a row.
  void run_sm_bound(double seconds) { run(Kind::kSm, seconds); }
  void run_memory_bound(double seconds, int64_t kernels = 1);
  // Blocking: a persistent kernel that takes `seconds` alone on every SM.
  void run_persistent(double seconds);

  // A collective holds its CTAs from begin to end; its HBM traffic counts
  // only while its bytes move (set_collective_traffic), not during the
  // latency the collapsed ring adds at its end. begin_collective blocks
  // until the compute kernels dispatching at its call have dispatched every
  // CTA and its CTAs find SMs that persistent kernels do not hold.
  int begin_collective(int ctas);
  void set_collective_traffic(int id, double hbm_bytes_per_s);
  void end_collective(int id);

 private:
  enum class Kind { kSm, kMemory };
  bool shared(Kind kind) const { return kind == Kind::kSm ? resources_.sms > 0 : resources_.hbm_bytes_per_s > 0; }
  void run(Kind kind, double seconds);
  double rate(Kind kind) const;
  double hbm_scale() const;
  int collective_ctas() const;
  int unheld_sms() const;  // SMs neither collectives nor persistent kernels hold
  void changed();

  GpuResources resources_;
  std::function<void(double)> scale_callback_;
  int sm_kernels_ = 0;
  int memory_kernels_ = 0;
  int persistent_ctas_ = 0;  // SMs the running CTAs of persistent kernels hold
  int pending_ctas_ = 0;     // CTAs of collectives waiting for SMs
  std::set<int> dispatching_;  // compute kernels with CTAs not dispatched yet
  int next_kernel_ = 0;
  std::map<int, CollectiveDemand> collectives_;
  int next_id_ = 0;
  double applied_scale_ = 1.0;
  simgrid::s4u::MutexPtr mutex_;
  simgrid::s4u::ConditionVariablePtr changed_;
};

}  // namespace ragged::sim
