// The geometry the dashboard draws, as plain code: layout pieces that tile
// every rank's shard, timeline bars that aggregate when zoomed out, sweep
// series and the OOM ranges they shade.

#include <algorithm>
#include <QtTest>

#include <cmath>
#include <cstdio>

#include <numeric>

#include "gui/models/layout_geometry.hpp"
#include "gui/models/plan_summary.hpp"
#include "gui/models/sweep_series.hpp"
#include "gui/models/timeline_geometry.hpp"
#include "gui/models/unit_layouts.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/simulation_child.hpp"

using namespace ragged;
using namespace ragged::gui;

namespace {

// Every drawn rank's pieces tile [0, S) in order.
void expect_tiles(const LayoutBars& bars) {
  int64_t at = 0;
  int rank = 0;
  for (const LayoutPiece& p : bars.pieces) {
    if (p.rank != rank) {
      QCOMPARE(at, bars.shard_size);
      QCOMPARE(p.rank, rank + 1);
      rank = p.rank;
      at = 0;
    }
    QCOMPARE(p.begin, at);
    QVERIFY(p.end > p.begin);
    at = p.end;
  }
  QCOMPARE(at, bars.shard_size);
  QCOMPARE(rank, bars.drawn_ranks - 1);
}

planner::UnitProblem two_tensors(int64_t a, int64_t b) {
  planner::UnitProblem problem;
  problem.tensors = {{a, 1, a, 1}, {b, 1, b, 1}};
  problem.ranks = 2;
  return problem;
}

traces::Summary summary(double tokens, int64_t peak, bool oom) {
  traces::Summary s;
  s.set_tokens_per_s_per_gpu(tokens);
  s.set_peak_reserved_bytes(peak);
  s.set_oom(oom);
  s.set_hbm_capacity_bytes(80);
  return s;
}

SimulationRow row(int64_t gpus, const char* strategy, bool oom) {
  auto trace = std::make_shared<traces::Trace>();
  *trace->mutable_summary() = summary(1000.0 / static_cast<double>(gpus), oom ? 100 : 50, oom);
  return {gpus, strategy, 1, {RunState::kDone, trace, "", 0, {}}};
}

}  // namespace

class GeometryTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void contiguous_layout_cuts_tensors_at_shard_boundaries() {
    planner::UnitLayout layout;
    layout.shard_size = 8;
    layout.ranks = 2;
    layout.slots = {{0, 10, false}, {10, 6, false}};
    const LayoutBars bars = layout_bars("ragged", two_tensors(10, 6), layout, {"a", "b"});
    expect_tiles(bars);
    QCOMPARE(bars.pieces.size(), size_t{3});  // rank 0: a[0,8); rank 1: a[8,10), b
    QCOMPARE(bars.pieces[1].tensor_begin, 8);
    QCOMPARE(bars.pieces[2].tensor, 1);
    QCOMPARE(bars.padding_elements(), 0);
    QCOMPARE(piece_at(bars, 1, 5)->tensor, 1);
    QVERIFY(piece_at(bars, 2, 0) == nullptr);
    // Hovering a's piece on rank 1: its name, its interval of the buffer, rank 1's local units.
    const std::string a = describe_piece(bars, bars.pieces[1]);
    QCOMPARE(a, std::string("a\ninterval [0, 10) of the 2 x 8 buffer\nlocal units of rank 1: elements [8, 10) of the "
                            "tensor (2), granule 1\nragged, rank 1, shard [0, 2)"));
  }

  void rank_major_layout_pads_each_chunk() {
    planner::UnitLayout layout;
    layout.shard_size = 8;
    layout.ranks = 2;
    layout.placement = planner::Placement::kRankMajor;
    layout.chunk_rule = planner::ChunkRule::kElements;
    layout.slots = {{0, 5, false}, {5, 3, false}};  // chunks of ceil(9/2) and ceil(6/2)
    const LayoutBars bars = layout_bars("zero3", two_tensors(9, 6), layout, {"a", "b"});
    expect_tiles(bars);
    QCOMPARE(bars.padding_elements(), 1);  // rank 1 holds 4 of a's 5-element chunk
    const LayoutPiece* pad = piece_at(bars, 1, 4);
    QCOMPARE(pad->tensor, -1);
    QCOMPARE(piece_at(bars, 1, 0)->tensor_begin, 5);
    QCOMPARE(describe_piece(bars, *pad), std::string("padding: 1 element\nzero3, rank 1, shard [4, 5)"));
    QVERIFY(describe_piece(bars, *piece_at(bars, 1, 6)).find("a chunk of 3 elements at offset 5 of every rank's shard") !=
            std::string::npos);
  }

  void gpt_oss_experts_at_256_gpus_ragged_against_fsdp2() {
    const auto resolved = planner::resolve_scenario(scenarios::load_scenario("gpt-oss-120b-256xh800"));
    const int unit = most_interesting_unit(resolved.model);
    QVERIFY(resolved.model.units[static_cast<size_t>(unit)].name.rfind("layers.", 0) == 0);
    const auto layouts = unit_layouts(resolved, unit, {scenarios::RAGGED, scenarios::FSDP2});
    QCOMPARE(layouts.size(), size_t{2});
    const int64_t params = resolved.model.units[static_cast<size_t>(unit)].params();
    for (const LayoutBars& bars : layouts) {
      QCOMPARE(bars.drawn_ranks, 256);
      expect_tiles(bars);
      int64_t data = 0;
      for (const LayoutPiece& p : bars.pieces) data += p.tensor >= 0 ? p.length() : 0;
      QCOMPARE(data, params);  // every element of every tensor drawn exactly once
      QCOMPARE(bars.padding_elements(), bars.shard_size * bars.ranks - params);
    }
    QVERIFY(layouts[0].padding_elements() <= layouts[1].padding_elements());
  }

  // Issue 51: the plan line said 98.2% and the Layout tab 49.8% for the same layer (padding over the
  // parameters against padding over the padded buffer). One definition now, the plan's (docs/METRICS.md:
  // (m*S - params) / params): the Layout tab's unit figure is the unit's plan, its model figure the plan
  // line's, in the same words.
  void layout_and_plan_line_show_one_padding_figure() {
    auto resolved = planner::resolve_scenario(scenarios::load_scenario("gpt-oss-120b-256xh800"));
    const int unit = most_interesting_unit(resolved.model);
    const int64_t params = resolved.model.units[static_cast<size_t>(unit)].params();
    for (scenarios::Strategy s : {scenarios::RAGGED, scenarios::FSDP2}) {
      const LayoutBars bars = unit_layouts(resolved, unit, {s}).front();
      const double unit_ratio = static_cast<double>(bars.shard_size * bars.ranks - params) / static_cast<double>(params);
      QVERIFY2(std::abs(bars.padding_ratio - unit_ratio) < 1e-12, bars.strategy.c_str());
      planner::ResolvedScenario as = resolved;
      as.loaded.scenario.mutable_training()->set_strategy(s);
      const PlanSummary plan = summarize_plan(as);
      QCOMPARE(bars.model_padding_ratio, plan.padding_ratio);
      const std::string header = layout_header(bars), line = plan_summary_line(plan);
      const std::string model_figure = padding_percent(plan.padding_ratio);
      QVERIFY2(header.find("(the model's " + model_figure + ")") != std::string::npos, header.c_str());
      QVERIFY2(line.find("padding " + model_figure + " of the parameters") != std::string::npos, line.c_str());
      QVERIFY2(header.find("padding " + padding_percent(unit_ratio) + " of the unit's parameters") != std::string::npos,
               header.c_str());
      std::printf("%s: unit %s, model %s\n", bars.strategy.c_str(), padding_percent(unit_ratio).c_str(), model_figure.c_str());
    }
  }

  void granule_marks_fall_every_granule_and_vanish_when_dense() {
    LayoutBars bars;
    bars.tensor_granules = {100};
    const LayoutPiece piece{0, 30, 480, 0, 250};  // tensor elements [250, 700)
    const auto marks = granule_marks(bars, piece, 1.0);
    QCOMPARE(marks.size(), size_t{4});  // 300, 400, 500, 600
    QCOMPARE(marks.front(), 30 + 50);
    for (size_t i = 1; i < marks.size(); ++i) QCOMPARE(marks[i] - marks[i - 1], 100);
    QVERIFY(granule_marks(bars, piece, 50.0).empty());  // 2 px apart: none
  }

  void timeline_of_a_10240_gpu_step_aggregates_when_zoomed_out() {
    const auto resolved = planner::resolve_scenario(scenarios::load_scenario("llama3-70b-10240xh100"));
    const traces::Trace trace = sim::simulate_in_child(resolved, {}).trace;
    const Timeline t = build_timeline(trace);
    QVERIFY(t.lanes.size() >= 3);  // compute, all-gather, reduce-scatter
    // Its tp 8 mesh: the tensor-parallel group's stream is a lane of its own.
    QVERIFY(std::any_of(t.lanes.begin(), t.lanes.end(),
                        [](const TimelineLane& lane) { return lane.name == "tensor_parallel"; }));
    QVERIFY(t.end_ns > t.begin_ns);
    QVERIFY(!t.memory.empty());
    const double width_px = 1000;
    const double ns_per_px = static_cast<double>(t.end_ns - t.begin_ns) / width_px;
    for (const TimelineLane& lane : t.lanes) {
      const auto bars = visible_bars(lane, t.begin_ns, t.end_ns + 1, ns_per_px);
      int ops = 0;
      for (const auto& b : bars) ops += b.ops;
      QCOMPARE(ops, static_cast<int>(lane.bars.size()));  // nothing lost in aggregation
      QVERIFY(bars.size() <= static_cast<size_t>(width_px) + 1);
      QCOMPARE(bars.front().start_ns, lane.bars.front().start_ns);
      for (size_t i = 1; i < bars.size(); ++i) QVERIFY(bars[i].start_ns >= bars[i - 1].start_ns);
      // Zoomed in to a nanosecond per pixel, every op is its own bar.
      const TimelineBar& first = lane.bars.front();
      const auto close = visible_bars(lane, first.start_ns, first.end_ns, 1.0);
      QVERIFY(!close.empty());
      QCOMPARE(close.front().ops, 1);
      const TimelineBar* hit = bar_at(lane, (first.start_ns + first.end_ns) / 2, 1.0);
      QVERIFY(hit != nullptr);
      QCOMPARE(hit->event, first.event);
    }
    for (MemoryQuantity quantity : {MemoryQuantity::kAllocator, MemoryQuantity::kStateAndBuffers}) {
      const auto memory = visible_memory(t.memory, t.begin_ns, t.end_ns + 1, ns_per_px, quantity);
      QVERIFY(memory.size() <= static_cast<size_t>(width_px) + 2);
      int64_t peak = 0;
      for (const auto& m : memory) peak = std::max(peak, memory_value(m, quantity));
      QCOMPARE(peak, t.peak(quantity));  // decimation keeps the peak
    }
    // The curves: the allocator's reserved bytes, and the state and buffers
    // the executor counts, whose peak is the summary's.
    QCOMPARE(t.peak(MemoryQuantity::kAllocator), trace.summary().peak_reserved_bytes());
    QCOMPARE(t.peak(MemoryQuantity::kStateAndBuffers), trace.summary().peak_state_and_buffers_bytes());
    QVERIFY(t.peak_state_and_buffers < t.peak_reserved);  // no activations, workspaces or cache in it
    QVERIFY(memory_axis_label(MemoryQuantity::kStateAndBuffers) != memory_axis_label(MemoryQuantity::kAllocator));
  }

  void a_multi_rank_trace_aggregates_its_ranks_and_drills_into_one() {
    traces::Trace trace = sim::simulate_in_child(planner::resolve_scenario(scenarios::load_scenario("tiny-llama-4xcpu")), {}).trace;
    // Rank 1 runs every op 1 us later and twice as long, and holds 1 MiB more.
    const int events = trace.events_size();
    const int rank0 = trace.metadata().traced_ranks(0);
    for (int i = 0; i < events; ++i) {
      traces::Event* e = trace.add_events();
      *e = trace.events(i);
      e->set_rank(rank0 + 1);
      e->set_start_ns(e->start_ns() + 1000);
      e->set_end_ns(e->start_ns() + 2 * (trace.events(i).end_ns() - trace.events(i).start_ns()));
    }
    const int samples = trace.memory_size();
    for (int i = 0; i < samples; ++i) {
      traces::MemorySample* m = trace.add_memory();
      *m = trace.memory(i);
      m->set_rank(rank0 + 1);
      m->set_reserved_bytes(m->reserved_bytes() + (1 << 20));
    }
    trace.mutable_metadata()->add_traced_ranks(rank0 + 1);

    const Timeline one = build_timeline(trace, rank0);
    const Timeline every = build_timeline(trace, kEveryRank);
    QCOMPARE(every.rank, kEveryRank);
    QCOMPARE(every.memory_rank, rank0 + 1);  // the higher reserved peak
    QCOMPARE(every.peak_reserved, one.peak_reserved + (1 << 20));
    QCOMPARE(every.lanes.size(), one.lanes.size());
    for (size_t l = 0; l < one.lanes.size(); ++l) {
      QCOMPARE(every.lanes[l].bars.size(), one.lanes[l].bars.size());  // one bar per op, not per rank
      for (const TimelineBar& bar : every.lanes[l].bars) {
        QCOMPARE(bar.ranks, 2);
        const traces::Event& longest = trace.events(bar.event);
        QCOMPARE(longest.rank(), rank0 + 1);  // twice as long there
        QCOMPARE(bar.end_ns, longest.end_ns());
        QCOMPARE(bar.start_ns, longest.start_ns() - 1000);  // rank 0's start
      }
    }
    const Timeline drilled = build_timeline(trace, rank0 + 1);
    QCOMPARE(drilled.rank, rank0 + 1);
    QCOMPARE(drilled.bar_count(), one.bar_count());
    QCOMPARE(drilled.lanes[0].bars[0].ranks, 1);
    // A single-rank trace asked for every rank is just its rank.
    trace.mutable_metadata()->clear_traced_ranks();
    trace.mutable_metadata()->add_traced_ranks(rank0);
    QCOMPARE(build_timeline(trace, kEveryRank).rank, rank0);
  }

  // A pipeline's trace seen whole: a lane per stage (its rank's compute),
  // the stages in rank order; the same op id on two stages is two ops.
  void a_pipeline_trace_shows_a_lane_per_stage() {
    scenarios::LoadedScenario loaded = scenarios::with_mesh(scenarios::load_scenario("tiny-llama-4xcpu"), 0, 0, 0, 2);
    loaded.written.mutable_training()->set_gradient_accumulation_steps(4);
    loaded = scenarios::rebuild(std::move(loaded));
    const traces::Trace trace = sim::simulate_in_child(planner::resolve_scenario(loaded), {}).trace;
    QCOMPARE(trace.metadata().traced_ranks_size(), 2);
    const Timeline every = build_timeline(trace, kEveryRank);
    QCOMPARE(every.lanes.size(), size_t{2});
    QCOMPARE(every.lanes[0].name, std::string("stage 0"));
    QCOMPARE(every.lanes[1].name, std::string("stage 1"));
    QVERIFY(every.lanes[0].rank < every.lanes[1].rank);
    for (const TimelineLane& lane : every.lanes) {
      const Timeline one = build_timeline(trace, lane.rank);
      size_t compute = 0;
      for (const TimelineLane& l : one.lanes) compute += l.stream == traces::COMPUTE ? l.bars.size() : 0;
      QCOMPARE(lane.bars.size(), compute);  // every compute op of the stage, none merged with the other's
      for (const TimelineBar& bar : lane.bars) QCOMPARE(trace.events(bar.event).rank(), lane.rank);
    }
    // The staircase: the last stage starts computing after the first.
    QVERIFY(every.lanes[1].bars.front().start_ns > every.lanes[0].bars.front().start_ns);
  }

  void sweep_series_and_oom_ranges() {
    QCOMPARE(sweep_gpu_counts().size(), size_t{12});
    QCOMPARE(sweep_gpu_counts().back(), 16384);
    std::vector<SimulationRow> rows = {row(8, "ragged", true),   row(8, "fsdp2", true),   row(16, "ragged", false),
                                       row(16, "fsdp2", true),   row(32, "ragged", false), row(32, "fsdp2", false),
                                       row(64, "ragged", true),  row(64, "fsdp2", true)};
    rows.push_back({128, "ragged", 0, {}});  // still queued: not drawn
    const auto series = sweep_series(rows);
    QCOMPARE(series.size(), size_t{2});
    QCOMPARE(series[0].strategy, std::string("ragged"));
    QCOMPARE(series[0].points.size(), size_t{4});
    QCOMPARE(series[1].points[1].row, 3);
    // A click's x picks the nearest swept count on the log axis: 40 GPUs is nearer 32 than 64.
    QCOMPARE(nearest_point(series, "fsdp2", 40)->gpus, 32);
    QCOMPARE(nearest_point(series, "fsdp2", 50)->gpus, 64);
    QCOMPARE(nearest_point(series, "ragged", 1)->gpus, 8);
    QCOMPARE(nearest_point(series, "fsdp2", 40)->row, 5);
    QVERIFY(nearest_point(series, "zero3", 40) == nullptr);
    const auto ranges = oom_ranges(series);
    QCOMPARE(ranges.size(), size_t{2});
    QCOMPARE(ranges[0].from, 8);
    QCOMPARE(ranges[0].to, 8);
    QCOMPARE(ranges[1].from, 64);
    // A trace written before the allocator's capacity was recorded: the HBM.
    QCOMPARE(sweep_capacity_bytes(rows), 80);
    for (SimulationRow& r : rows) {
      if (r.outcome.trace == nullptr) continue;  // the queued row
      auto trace = std::make_shared<traces::Trace>(*r.outcome.trace);
      trace->mutable_summary()->set_allocator_capacity_bytes(78);
      r.outcome.trace = trace;
    }
    QCOMPARE(sweep_capacity_bytes(rows), 78);
  }
};

QTEST_GUILESS_MAIN(GeometryTest)
#include "geometry_test.moc"
