// Model tests of the pipeline's stages in the simulator (docs/SIMULATOR.md,
// "Pipeline stages"): hand-built stage Programs, one compute op per pass and
// a send and a receive between chunks, run on one simulated rank per stage.
// The expectation plays the same schedule out here, independently: a pass
// starts when its stage's previous pass has ended and what it receives has
// arrived; a transfer starts when the sender's pass has ended, the sender's
// previous send has gone and the receiver has taken its previous receive,
// and lasts NCCL's two-rank latency plus the bytes over the link (every GPU
// of a node sends to the next node at once: a node's NICs carry 8 of them).

#include <functional>
#include <map>
#include <tuple>

#include "sim_model_harness.hpp"

#include "planner/mesh.hpp"
#include "planner/pipeline_schedule.hpp"

namespace ragged::sim {
namespace {

using namespace model_test;
using planner::PipelineAction;
using planner::PipelineScheduleKind;
using Pass = PipelineAction::Pass;

struct PipelineSetup {
  PipelineScheduleKind kind = PipelineScheduleKind::kOneFOneB;
  int stages = 4;
  int micro_batches = 8;
  int chunks = 1;               // per stage (interleaved 1F1B's virtual stages)
  int gemms = 1;  // a forward is `gemms` 4096^3 GEMMs, a backward twice as many (each pass one launch)
  int64_t message = 64 << 20;   // bytes of one send
};

int chunk_of(const PipelineSetup& s, int stage, const PipelineAction& a) { return a.chunk * s.stages + stage; }
int last_chunk(const PipelineSetup& s) { return s.stages * s.chunks - 1; }
// The same id on a send and its receive: micro-batch, lower chunk, direction.
int64_t message_id(const PipelineSetup& s, int mb, int lower, bool backward) {
  return (int64_t{mb} * (last_chunk(s) + 1) + lower) * 2 + (backward ? 1 : 0);
}

// The stage's Program: per action, the receive, the pass, the send.
planner::Program stage_program(const PipelineSetup& s, int stage) {
  planner::Program p;
  p.mesh = {1, 8, 1, 1, 1, true, s.stages};  // a stage per node of 8
  p.shard_ranks = 8;
  p.stage = stage;
  p.stages = s.stages;
  planner::ProgramWriter w(&p);
  auto transfer = [&](OpKind kind, int mb, int lower, bool backward, int peer_chunk, std::vector<uint32_t> deps) {
    const Stream stream = kind == OpKind::kSend ? Stream::kPipelineSend : Stream::kPipelineRecv;
    const uint32_t id = w.collective(kind, stream, Group::kPipeline, 0, mb, "p2p", s.message, -1, std::move(deps));
    p.ops[id].peer = peer_chunk % s.stages;
    p.ops[id].message = message_id(s, mb, lower, backward);
    return id;
  };
  for (const PipelineAction& a : planner::stage_schedule(s.kind, s.stages, stage, s.micro_batches, s.chunks)) {
    const int c = chunk_of(s, stage, a);
    const bool backward = a.pass != Pass::kForward;
    // ZB-H1's weight gradients move nothing between stages.
    const bool moves = a.pass != Pass::kBackwardWeight;
    std::vector<uint32_t> deps;
    if (!backward && c > 0) deps.push_back(transfer(OpKind::kRecv, a.micro_batch, c - 1, false, c - 1, {}));
    if (backward && moves && c < last_chunk(s)) deps.push_back(transfer(OpKind::kRecv, a.micro_batch, c, true, c + 1, {}));
    planner::ComputeWork work;
    work.gemms.push_back({4096, 4096, 4096, a.pass == Pass::kBackward ? 2 * s.gemms : s.gemms});
    const uint32_t pass = w.compute(backward ? OpKind::kComputeBwd : OpKind::kComputeFwd, 0, a.micro_batch, "pass",
                                    work, deps);
    if (!backward && c < last_chunk(s)) transfer(OpKind::kSend, a.micro_batch, c, false, c + 1, {pass});
    if (backward && moves && c > 0) transfer(OpKind::kSend, a.micro_batch, c - 1, true, c - 1, {pass});
  }
  return p;
}

// The step the schedule takes when played out with passes of `forward` and
// `backward` seconds (ZB-H1's halves of a backward `forward` each) and
// transfers of `transfer` seconds.
double played_out(const PipelineSetup& s, double forward, double backward, double transfer) {
  std::vector<std::vector<PipelineAction>> orders;
  for (int st = 0; st < s.stages; ++st) orders.push_back(planner::stage_schedule(s.kind, s.stages, st, s.micro_batches, s.chunks));
  // Per message: the sender's pass, its position among the sender's sends
  // and among the receiver's receives.
  struct Message {
    int sender = -1, send_index = -1, receiver = -1, receive_index = -1;
    size_t pass = 0;
  };
  std::map<int64_t, Message> messages;
  std::vector<std::vector<int64_t>> sends(static_cast<size_t>(s.stages)), receives(static_cast<size_t>(s.stages));
  std::vector<std::vector<int64_t>> received_by(static_cast<size_t>(s.stages));  // per pass: its message or -1
  for (int st = 0; st < s.stages; ++st) {
    for (size_t i = 0; i < orders[st].size(); ++i) {
      const PipelineAction& a = orders[st][i];
      const int c = chunk_of(s, st, a);
      const bool back = a.pass != Pass::kForward;
      if (a.pass == Pass::kBackwardWeight) {  // moves nothing
        received_by[st].push_back(-1);
        continue;
      }
      int64_t in = -1;
      if (!back && c > 0) in = message_id(s, a.micro_batch, c - 1, false);
      if (back && c < last_chunk(s)) in = message_id(s, a.micro_batch, c, true);
      received_by[st].push_back(in);
      if (in >= 0) {
        messages[in].receiver = st;
        messages[in].receive_index = static_cast<int>(receives[st].size());
        receives[st].push_back(in);
      }
      int64_t out = -1;
      if (!back && c < last_chunk(s)) out = message_id(s, a.micro_batch, c, false);
      if (back && c > 0) out = message_id(s, a.micro_batch, c - 1, true);
      if (out >= 0) {
        messages[out].sender = st;
        messages[out].send_index = static_cast<int>(sends[st].size());
        messages[out].pass = i;
        sends[st].push_back(out);
      }
    }
  }
  std::map<std::pair<int, size_t>, double> pass_end;
  std::map<int64_t, double> arrival;
  std::function<double(int, size_t)> end_of;
  std::function<double(int64_t)> arrives;
  arrives = [&](int64_t id) {
    if (auto it = arrival.find(id); it != arrival.end()) return it->second;
    const Message& m = messages.at(id);
    double start = end_of(m.sender, m.pass);
    if (m.send_index > 0) start = std::max(start, arrives(sends[m.sender][m.send_index - 1]));
    if (m.receive_index > 0) start = std::max(start, arrives(receives[m.receiver][m.receive_index - 1]));
    return arrival[id] = start + transfer;
  };
  end_of = [&](int st, size_t i) {
    if (auto it = pass_end.find({st, i}); it != pass_end.end()) return it->second;
    double start = i > 0 ? end_of(st, i - 1) : 0.0;
    if (received_by[st][i] >= 0) start = std::max(start, arrives(received_by[st][i]));
    const double seconds = orders[st][i].pass == Pass::kBackward ? backward : forward;
    return pass_end[{st, i}] = start + seconds;
  };
  double step = 0;
  for (int st = 0; st < s.stages; ++st) step = std::max(step, end_of(st, orders[st].size() - 1));
  return step;
}

double simulated_step(const PipelineSetup& s) {
  const std::string out = run_in_child([&] {
    std::vector<planner::Program> programs;
    for (int st = 0; st < s.stages; ++st) programs.push_back(stage_program(s, st));
    std::vector<const planner::Program*> per_rank;
    ProgramRunOptions options;
    options.cluster = h100_cluster(s.stages);
    options.mode = SimulationMode::kFull;
    options.ranks.clear();
    for (int st = 0; st < s.stages; ++st) {
      per_rank.push_back(&programs[static_cast<size_t>(st)]);
      options.ranks.push_back({int64_t{st} * 8, 1.0});
    }
    const ProgramRun r = run_programs(per_rank, h100(), options);
    return nlohmann::json{{"step", r.step_seconds}, {"wait", r.pipeline_wait_seconds}}.dump();
  });
  return nlohmann::json::parse(out)["step"];
}

void expect_played_out(const PipelineSetup& s, const std::string& what) {
  // A pass's GEMMs run as one batched launch.
  const double gemm = gemm_seconds(4096, 4096, 4096, kH100Gemm4096) - kLaunch;
  const double forward = s.gemms * gemm + kLaunch;
  const double backward = 2 * s.gemms * gemm + kLaunch;
  // Every GPU of the sending node sends its message to the next node at once.
  const double transfer = nccl_ring(8.0 * static_cast<double>(s.message) / kNodeNetwork, 1, 1).seconds;
  const double expected = played_out(s, forward, backward, transfer);
  const double simulated = simulated_step(s);
  report(what, "played out", expected, "simulated", simulated);
  expect_relative(simulated, expected, 1e-6);
}

TEST(PipelineSimModel, OneFOneBRunsAsPlayedOut) {
  expect_played_out({}, "1F1B p 4 m 8, 64 MiB sends across nodes");
}

TEST(PipelineSimModel, GpipeRunsAsPlayedOut) {
  PipelineSetup s;
  s.kind = PipelineScheduleKind::kGpipe;
  expect_played_out(s, "GPipe p 4 m 8");
}

TEST(PipelineSimModel, InterleavedRunsAsPlayedOut) {
  PipelineSetup s;
  s.kind = PipelineScheduleKind::kInterleaved1F1B;
  s.chunks = 2;
  expect_played_out(s, "interleaved 1F1B v 2 p 4 m 8");
}

TEST(PipelineSimModel, ZeroBubbleH1RunsAsPlayedOutAndShortensTheStep) {
  PipelineSetup zb;
  zb.kind = PipelineScheduleKind::kZeroBubbleH1;
  expect_played_out(zb, "ZB-H1 p 4 m 8");
  PipelineSetup one;
  one.message = zb.message = 1 << 10;
  const double a = simulated_step(one), b = simulated_step(zb);
  std::printf("1F1B %.3f ms, ZB-H1 %.3f ms\n", a * 1e3, b * 1e3);
  EXPECT_LT(b, a);
}

TEST(PipelineSimModel, InterleavingShortensTheStepWhenTransfersAreCheap) {
  // The same work per stage, one chunk of 8 GEMMs per pass or two of 4:
  // a smaller bubble for twice the transfers, which cost next to nothing
  // here (and 1.4 ms each at 64 MiB: the played-out test above).
  PipelineSetup one;
  one.gemms = 8;
  one.message = 1 << 10;
  PipelineSetup interleaved = one;
  interleaved.kind = PipelineScheduleKind::kInterleaved1F1B;
  interleaved.chunks = 2;
  interleaved.gemms = 4;
  const double a = simulated_step(one), b = simulated_step(interleaved);
  std::printf("1F1B %.3f ms, interleaved v 2 %.3f ms\n", a * 1e3, b * 1e3);
  EXPECT_LT(b, 0.9 * a);
}

TEST(PipelineSimModel, MoreMicroBatchesShrinkTheBubble) {
  // Bubble share (step - ideal) / step against (p - 1) / (m + p - 1), with
  // passes long beside the transfers' latency (about 25 us).
  const int gemms = 8;
  const double pass = 3 * gemms * (gemm_seconds(4096, 4096, 4096, kH100Gemm4096) - kLaunch) + 2 * kLaunch;
  double previous = 1;
  for (int m : {4, 8, 16}) {
    PipelineSetup s;
    s.micro_batches = m;
    s.gemms = gemms;
    s.message = 1 << 10;  // next to nothing: the bubble alone
    const double step = simulated_step(s);
    const double bubble = 1 - m * pass / step;
    const double analytic = 3.0 / (m + 3.0);
    std::printf("1F1B p 4 m %2d: bubble %.4f, (p-1)/(m+p-1) %.4f\n", m, bubble, analytic);
    EXPECT_NEAR(bubble, analytic, 0.01);
    EXPECT_LT(bubble, previous);
    previous = bubble;
  }
}

}  // namespace
}  // namespace ragged::sim
