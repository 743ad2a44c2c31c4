// The host workload's analytic gradients against central finite differences,
// for sampled elements and along whole-tensor directions of every tensor of
// every unit, on one small model per supported architecture feature.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "tests/backend/workload_test_helpers.hpp"

namespace ragged::backend {
namespace {

using test_util::ModelStore;
using test_util::NamedArch;

constexpr int64_t kGradientSequences = 2;
constexpr int64_t kGradientSeqLen = 4;
constexpr double kRelTol = 1e-2;
// Absolute slack, relative to the tensor's largest gradient: an element whose
// gradient is below ~0.1% of it moves the loss less than fp32 resolves.
constexpr double kGradFloor = 2e-3;
// Steps relative to an element's size (or its tensor's rms). One element
// moves the loss by ~1e-5 of its value, so its step is large to rise above
// fp32 rounding (the loss is close to quadratic in one element and central
// differences cancel that); a whole-tensor step shrinks with the tensor's
// size to stay in the linear regime.
constexpr double kElementStep = 0.2;
double direction_step(size_t numel) {
  return std::clamp(kElementStep / std::sqrt(static_cast<double>(numel)), 1e-3, kElementStep);
}

// Element indices checked in a tensor of n elements: both ends, a few spread
// by a fixed hash, and the largest analytic gradient.
std::vector<int64_t> sample_indices(const std::vector<float>& grad) {
  const auto n = static_cast<int64_t>(grad.size());
  std::vector<int64_t> out = {0, n - 1};
  for (uint64_t i = 1; i <= 4; ++i) out.push_back(static_cast<int64_t>((i * 2654435761ULL + 17) % grad.size()));
  const auto largest =
      std::max_element(grad.begin(), grad.end(), [](float a, float b) { return std::fabs(a) < std::fabs(b); });
  out.push_back(largest - grad.begin());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double rms(const std::vector<float>& values) {
  double sum = 0;
  for (float v : values) sum += static_cast<double>(v) * v;
  return std::sqrt(sum / static_cast<double>(values.size()));
}

class WorkloadGradientTest : public ::testing::TestWithParam<NamedArch> {
 protected:
  void SetUp() override {
    model_ = models::build_model(GetParam().arch);
    store_ = std::make_unique<ModelStore>(model_, 7);
    work_ = std::make_unique<HostWorkload>(model_, kGradientSequences, kGradientSeqLen);
    work_->set_batch(synthetic_batch(11, 3, kGradientSequences, kGradientSeqLen, model_.arch.vocab));
    store_->forward(*work_);
    store_->backward(*work_);
  }

  std::vector<std::vector<int64_t>> routings() const {
    std::vector<std::vector<int64_t>> out;
    for (int u = 0; u < store_->units(); ++u) out.push_back(work_->routing(u));
    return out;
  }

  // (L(w + d) - L(w - d)) / 2 for a perturbation d of tensor (u, i),
  // forwarding from `from`; nullopt when either side routes a token to other
  // experts (top-k routing makes the loss jump there).
  std::optional<double> central_difference(int u, size_t i, const std::vector<float>& d, int from) {
    std::vector<float>& w = store_->params[static_cast<size_t>(u)][i];
    const std::vector<float> original = w;
    const auto routed = routings();
    for (size_t e = 0; e < w.size(); ++e) w[e] = original[e] + d[e];
    const double plus = store_->forward(*work_, from);
    const bool same_plus = routings() == routed;
    for (size_t e = 0; e < w.size(); ++e) w[e] = original[e] - d[e];
    const double minus = store_->forward(*work_, from);
    const bool same_minus = routings() == routed;
    w = original;
    if (!same_plus || !same_minus) return std::nullopt;
    return (plus - minus) / 2.0;
  }

  // The same, shrinking d by 4 (up to 3 times) while the routing changes.
  std::optional<double> stable_difference(int u, size_t i, std::vector<float>& d, int from) {
    for (int tries = 0; tries < 4; ++tries) {
      if (const std::optional<double> fd = central_difference(u, i, d, from)) return fd;
      for (float& x : d) x /= 4.0f;
    }
    return std::nullopt;
  }

  models::ModelSpec model_;
  std::unique_ptr<ModelStore> store_;
  std::unique_ptr<HostWorkload> work_;
};

// Without sink logits a key bias shifts every score of a query alike, which
// the softmax ignores: its gradient is zero up to rounding.
bool softmax_invariant(const models::ModelSpec& model, const std::string& name) {
  return !model.arch.attention_sinks && name.ends_with("self_attn.k_proj.bias");
}

// An expert of its own tensors (per-expert storage) that no token of the
// batch was routed to: its gradient is zero.
bool unrouted_expert(const std::vector<int64_t>& routing, const std::string& name) {
  const size_t at = name.find("experts.");
  if (at == std::string::npos || name.find("shared_experts.") != std::string::npos) return false;
  const std::string rest = name.substr(at + 8);
  if (rest.empty() || std::isdigit(static_cast<unsigned char>(rest[0])) == 0) return false;
  const int64_t expert = std::stoll(rest);
  return std::find(routing.begin(), routing.end(), expert) == routing.end();
}

TEST_P(WorkloadGradientTest, MatchesFiniteDifferencesForEveryTensor) {
  const bool tied = head_reads_embedding(model_);
  int checked = 0, skipped = 0;
  for (int u = 0; u < store_->units(); ++u) {
    // A tied table feeds the head too: perturbing it reruns every unit.
    const int from = u == 0 && tied ? 0 : u;
    for (size_t i = 0; i < store_->params[static_cast<size_t>(u)].size(); ++i) {
      const std::string& name = model_.units[static_cast<size_t>(u)].tensors[i].name;
      const std::vector<float>& w = store_->params[static_cast<size_t>(u)][i];
      const std::vector<float>& g = store_->grads[static_cast<size_t>(u)][i];
      const double scale = std::max(rms(w), 1e-3);
      const double max_grad = std::fabs(
          *std::max_element(g.begin(), g.end(), [](float a, float b) { return std::fabs(a) < std::fabs(b); }));
      if (softmax_invariant(model_, name)) {
        EXPECT_LT(max_grad, 1e-6) << name;
        continue;
      }
      if (max_grad == 0.0) {
        EXPECT_TRUE(unrouted_expert(work_->routing(u), name)) << name << " gets no gradient";
        continue;
      }
      std::vector<float> d(w.size(), 0.0f);
      for (int64_t e : sample_indices(g)) {
        const auto k = static_cast<size_t>(e);
        const double eps = kElementStep * std::max(std::fabs(static_cast<double>(w[k])), scale);
        d[k] = static_cast<float>(eps);
        const std::optional<double> diff = stable_difference(u, i, d, from);
        const double step = (static_cast<double>(w[k] + d[k]) - static_cast<double>(w[k] - d[k])) / 2.0;
        d[k] = 0.0f;
        if (!diff) {
          ++skipped;
          continue;
        }
        const double fd = *diff / step;
        const double an = g[k];
        EXPECT_LE(std::fabs(fd - an), kRelTol * std::max(std::fabs(fd), std::fabs(an)) + kGradFloor * max_grad)
            << name << "[" << e << "]: finite difference " << fd << ", analytic " << an;
        ++checked;
      }
      // Along the gradient's signs (no cancellation), and along fixed random signs.
      for (int direction = 0; direction < 2; ++direction) {
        for (size_t e = 0; e < w.size(); ++e) {
          const bool positive = direction == 0 ? g[e] >= 0 : ((e * 2654435761ULL) >> 7) % 2 == 0;
          const double eps = direction_step(w.size()) * std::max(std::fabs(static_cast<double>(w[e])), scale);
          d[e] = static_cast<float>(positive ? eps : -eps);
        }
        const std::optional<double> fd = stable_difference(u, i, d, from);
        double expected = 0, magnitude = 0;
        for (size_t e = 0; e < w.size(); ++e) {
          expected += static_cast<double>(g[e]) * d[e];
          magnitude += std::fabs(static_cast<double>(g[e]) * d[e]);
        }
        std::fill(d.begin(), d.end(), 0.0f);
        if (!fd) {
          ++skipped;
          continue;
        }
        const double tol = direction == 0 ? kRelTol * std::fabs(expected) : 2 * kRelTol * magnitude;
        EXPECT_NEAR(*fd, expected, tol) << name << " along direction " << direction;
        ++checked;
      }
    }
    store_->forward(*work_, from);  // the unchanged activations again for the next unit
  }
  // Routing flips under every step shrink are rare: most checks run.
  EXPECT_GT(checked, 0);
  EXPECT_LE(skipped, checked / 10) << skipped << " checks skipped (routing changed), " << checked << " run";
}

INSTANTIATE_TEST_SUITE_P(WorkloadModels, WorkloadGradientTest, ::testing::ValuesIn(test_util::test_archs()),
                         [](const ::testing::TestParamInfo<NamedArch>& param) { return param.param.name; });

}  // namespace
}  // namespace ragged::backend
