// A PyTorch profiler (Kineto) trace read as a measured trace against a
// prediction (traces/kineto_import): built here in the format torch.profiler
// exports (Chrome trace events: "ProfilerStep#N" and FSDP2's "FSDP::pre_forward
// (fqn)" user annotations, cuda_runtime launches and their kernels joined by
// args.correlation, NCCL kernels by name, "[memory]" instant events).

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/errors.hpp"
#include "kineto_writer.hpp"
#include "sample_trace.hpp"
#include "traces/kineto_import.hpp"
#include "traces/trace_compare.hpp"
#include "traces/trace_io.hpp"

namespace ragged::traces {
namespace {

using testing::KinetoWriter;

// A unit's forward or backward: its FSDP hooks around a compute kernel; the
// hook before also launches the unit's collective.
void unit_pass(KinetoWriter& w, const std::string& fqn, bool backward, double at, const std::string& collective) {
  const std::string pass = backward ? "backward" : "forward";
  w.annotation("FSDP::pre_" + pass + " (" + fqn + ")", at, at + 100);
  w.kernel(collective, at + 50, at + 60, at + 200);
  w.kernel("sm90_xmma_gemm_bf16bf16_bf16f32", at + 150, at + 200, at + 900);
  w.kernel("void at::native::vectorized_elementwise_kernel", at + 160, at + 900, at + 1000);
  w.annotation("FSDP::post_" + pass + " (" + fqn + ")", at + 300, at + 350);
}

// Two steps of the sample trace's two-unit Program, 30 ms each, with one
// all-reduce the Program does not have.
std::string two_steps() {
  KinetoWriter w;
  for (int s = 0; s < 2; ++s) {
    const double t = 1000 + s * 30000;
    w.annotation("ProfilerStep#" + std::to_string(5 + s), t, t + 30000);
    unit_pass(w, "model.layers.0", false, t + 100, "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)");
    unit_pass(w, "model.layers.1", false, t + 2000, "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)");
    unit_pass(w, "model.layers.1", true, t + 6000, "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)");
    unit_pass(w, "model.layers.0", true, t + 12000, "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)");
    w.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", t + 20000, t + 20010, t + 20100);
    w.memory(t + 500, int64_t{3} << 30, int64_t{4} << 30);
    w.memory(t + 7000, int64_t{5} << 30, int64_t{6} << 30);
  }
  return w.text();
}

TEST(KinetoImport, MatchesCollectivesInOrderAndFsdpUnitsByName) {
  const Trace predicted = testing::make_sample_trace();
  const KinetoImport k = import_kineto(two_steps(), predicted, "steps.json");
  EXPECT_EQ(k.steps, 2);
  EXPECT_EQ(k.kernels, 2 * (4 * 3 + 1));
  EXPECT_EQ(k.collectives_matched, 2 * 4);  // 2 all-gathers and 2 reduce-scatters a step
  EXPECT_EQ(k.collectives_unmatched, 2);    // the all-reduce, none in the Program
  EXPECT_EQ(k.compute_matched, 2 * 4);      // "model.layers.N" is the Program's "layers.N"
  EXPECT_EQ(k.compute_unmatched, 0);
  EXPECT_EQ(k.trace.metadata().source(), MEASURED);
  EXPECT_EQ(k.trace.metadata().device(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(k.trace.metadata().scenario_text(), predicted.metadata().scenario_text());
  // layers.1's backward (op 5) in step 2: its kernels from 6,200 to 7,000 us after the step began.
  bool seen = false;
  for (const Event& e : k.trace.events()) {
    if (e.op_id() != 5 || e.step() != 2) continue;
    EXPECT_EQ(e.kind(), COMPUTE_BWD);
    EXPECT_EQ(e.unit(), 1);
    EXPECT_EQ(e.start_ns(), (30000 + 6200) * 1000);
    EXPECT_EQ(e.end_ns(), (30000 + 7000) * 1000);
    seen = true;
  }
  EXPECT_TRUE(seen);
  // The second reduce-scatter of a step is the Program's second (op 8, layers.0).
  int reduce_scatters = 0;
  for (const Event& e : k.trace.events()) {
    if (e.kind() == REDUCE_SCATTER && e.step() == 1) {
      EXPECT_EQ(e.op_id(), reduce_scatters == 0 ? 6u : 8u);
      ++reduce_scatters;
    }
  }
  EXPECT_EQ(reduce_scatters, 2);
}

// `ragged simulate`'s Program allocates a unit's buffers before anything else of it ("alloc layers.0
// unsharded params", op 0): the unit is still "layers.0", so FSDP's "model.layers.0" spans join its
// compute (it was named "alloc", and no span of a real prediction was matched).
TEST(KinetoImport, AUnitIsNamedByItsComputeNotItsAllocations) {
  Trace predicted = testing::make_sample_trace();
  Event* alloc = predicted.add_events();
  *alloc = predicted.events(0);
  alloc->set_op_id(0);
  alloc->set_kind(ALLOC);
  alloc->set_unit(0);
  alloc->set_name("alloc layers.0 unsharded params");
  alloc->set_end_ns(alloc->start_ns());
  const KinetoImport k = import_kineto(two_steps(), predicted, "steps.json");
  EXPECT_EQ(k.compute_matched, 2 * 4);
  EXPECT_EQ(k.compute_unmatched, 0);
}

TEST(KinetoImport, StepsMemoryAndBusyTimesAreTheProfilersOwn) {
  const KinetoImport k = import_kineto(two_steps(), testing::make_sample_trace(), "steps.json");
  const Summary& s = k.trace.summary();
  ASSERT_EQ(s.per_step_size(), 2);
  EXPECT_DOUBLE_EQ(s.step_time_s(), 0.030);
  // Compute kernels: [200, 1000) in each of four unit passes: 800 us busy each.
  EXPECT_NEAR(s.compute_s(), 4 * 800e-6, 1e-12);
  // Collectives: four of 140 us, one of 90 us.
  EXPECT_NEAR(s.comm_s(), (4 * 140 + 90) * 1e-6, 1e-12);
  EXPECT_NEAR(s.exposed_comm_s(), 0.030 - 4 * 800e-6, 1e-12);
  EXPECT_EQ(s.peak_allocated_bytes(), int64_t{5} << 30);
  EXPECT_EQ(s.peak_reserved_bytes(), int64_t{6} << 30);
  EXPECT_EQ(k.trace.memory_size(), 4);
  EXPECT_FALSE(k.notes.empty());
}

TEST(KinetoImport, ComparesAgainstThePredictionOpByOp) {
  const Trace predicted = testing::make_sample_trace();
  const KinetoImport k = import_kineto(two_steps(), predicted, "steps.json");
  const TraceComparison c = compare_traces(predicted, k.trace);
  EXPECT_EQ(c.joined_ops, 8);  // every all-gather, forward, backward and reduce-scatter; not the optimizer
  EXPECT_EQ(c.measured_steps, 2);
  EXPECT_DOUBLE_EQ(c.measured_step_s, 0.030);
}

TEST(KinetoImport, AFileIsReadAsWhatItIs) {
  const testing::ScratchDir dir;
  const Trace predicted = testing::make_sample_trace();
  {
    std::ofstream out(dir / "kineto.json");
    out << two_steps();
  }
  const Trace measured = read_measured_trace(dir / "kineto.json", predicted);  // validated as every trace read
  EXPECT_EQ(measured.metadata().source(), MEASURED);
  EXPECT_EQ(measured.summary().per_step_size(), 2);
  write_trace(predicted, dir / "ragged.json");
  EXPECT_EQ(read_measured_trace(dir / "ragged.json", predicted).metadata().source(), PREDICTED);
}

TEST(KinetoImport, TellsAProfilerTraceFromARaggedOne) {
  EXPECT_TRUE(looks_like_kineto(two_steps()));
  EXPECT_FALSE(looks_like_kineto(trace_to_json(testing::make_sample_trace())));
}

TEST(KinetoImport, AnUnusableTraceIsAnErrorSayingHowToProfile) {
  const Trace predicted = testing::make_sample_trace();
  const auto message = [&](const std::string& text) {
    try {
      import_kineto(text, predicted, "p.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  KinetoWriter no_steps;
  no_steps.kernel("sm90_xmma_gemm", 10, 20, 30);
  EXPECT_NE(message(no_steps.text()).find("ProfilerStep#N"), std::string::npos) << message(no_steps.text());
  KinetoWriter no_kernels;
  no_kernels.annotation("ProfilerStep#1", 0, 100);
  EXPECT_NE(message(no_kernels.text()).find("ProfilerActivity.CUDA"), std::string::npos);
  EXPECT_NE(message("{\"traceEvents\": 3}").find("traceEvents"), std::string::npos);
  EXPECT_NE(message("{not json").find("p.json: not JSON"), std::string::npos);
  EXPECT_NE(message("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": \"late\"}]}").find("\"ts\""),
            std::string::npos);
}

}  // namespace
}  // namespace ragged::traces
