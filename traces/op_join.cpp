#include "traces/op_join.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace ragged::traces {
namespace {

struct OpTime {
  const Event* first = nullptr;  // kind, stream, unit and name
  int64_t total_ns = 0;
  int steps = 0;
  double mean_s() const { return static_cast<double>(total_ns) * 1e-9 / steps; }
};

std::map<uint64_t, OpTime> op_times(const Trace& trace) {
  const int rank = trace.metadata().traced_ranks_size() ? trace.metadata().traced_ranks(0) : 0;
  std::map<uint64_t, OpTime> out;
  for (const Event& e : trace.events()) {
    if (e.rank() != rank) continue;
    OpTime& t = out[e.op_id()];
    if (t.first == nullptr) t.first = &e;
    t.total_ns += e.end_ns() - e.start_ns();
    ++t.steps;
  }
  return out;
}

template <typename Row>
std::vector<Row> largest_difference_first(std::vector<Row> rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return std::abs(a.difference_s()) > std::abs(b.difference_s()); });
  return rows;
}

}  // namespace

OpJoin join_ops(const Trace& predicted, const Trace& measured) {
  const std::map<uint64_t, OpTime> p = op_times(predicted), m = op_times(measured);
  OpJoin join;
  for (const auto& [id, pt] : p) {
    auto it = m.find(id);
    if (it == m.end() || it->second.first->kind() != pt.first->kind()) {
      ++join.unmatched;
      continue;
    }
    const Event& e = *pt.first;
    join.ops.push_back({id, e.kind(), e.stream(), e.unit(), e.name(), pt.mean_s(), it->second.mean_s()});
  }
  for (const auto& [id, mt] : m) join.unmatched += p.count(id) ? 0 : 1;
  return join;
}

std::vector<KindComparison> kinds_of(const std::vector<OpComparison>& ops) {
  std::map<OpKind, KindComparison> kinds;
  for (const OpComparison& op : ops) {
    KindComparison& k = kinds[op.kind];
    k.kind = op.kind;
    ++k.ops;
    k.predicted_s += op.predicted_s;
    k.measured_s += op.measured_s;
  }
  std::vector<KindComparison> out;
  for (const auto& [kind, k] : kinds) out.push_back(k);
  return out;
}

std::vector<OpComparison> worst_ops_first(std::vector<OpComparison> ops) { return largest_difference_first(std::move(ops)); }

std::vector<KindComparison> worst_kinds_first(std::vector<KindComparison> kinds) {
  return largest_difference_first(std::move(kinds));
}

}  // namespace ragged::traces
