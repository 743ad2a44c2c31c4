#pragma once
// The real compute of a training step on the host: every unit of the model
// forward and backward (dX and dW), on a synthetic batch with a real
// cross-entropy loss, so gradients are real: RMSNorm, the attention
// projections (GQA or MLA), causal softmax attention within each sequence
// (with GQA's shared kv heads and GPT-OSS's sink logits), the SwiGLU MLP or
// a mixture of experts routed by its gate's top-k (softmax over the chosen
// logits) plus shared experts, and the head. Not modelled: rotary position
// embeddings, sliding windows, DeepSeek's sigmoid/group-limited routing
// (workload_internal.hpp, docs/BACKEND.md). fp32 throughout; GEMMs through
// CBLAS (OpenBLAS), the rest in plain loops summing in double.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/model_spec.hpp"

namespace ragged::scenarios {
class Training;
}  // namespace ragged::scenarios

namespace ragged::backend {

// Token ids and next-token labels of `sequences` sequences, a pure function
// of (seed, index of the first sequence): every rank builds its own
// micro-batch, the single-rank reference builds the global batch.
struct Batch {
  int64_t sequences = 0;
  int64_t seq_len = 0;
  std::vector<int32_t> tokens;  // sequences * seq_len
  std::vector<int32_t> labels;
  // Index of the first sequence in the global batch (which sequences a rank
  // holds; the math of a token depends only on its own sequence).
  int64_t first_sequence = 0;
};

Batch synthetic_batch(uint64_t seed, int64_t first_sequence, int64_t sequences, int64_t seq_len, int64_t vocab);

// The initial value of element `index` of tensor `tensor` of the model: a
// pure function, so every rank initialises its own shard without talking.
float initial_value(uint64_t seed, const models::TensorSpec& tensor, int64_t tensor_id, int64_t index);

// Pointers to a unit's tensors in the unit's tensor order (contiguous each).
// With tied embeddings the head unit has no lm_head tensor: its forward and
// backward take one more pointer after the unit's own, the embedding table
// (params) and the embedding's gradient (grads); see head_reads_embedding.
using ConstTensors = std::vector<const float*>;
using Tensors = std::vector<float*>;

// InputError naming every part of `model` the workloads (host and GPU) do not
// compute: they run Llama-style and mixture-of-experts blocks (RMSNorm,
// separate q/k/v, a gated MLP, attention then MLP, one [vocab, hidden] token
// table), so a GPT-2 style model is refused rather than trained as another.
void check_workload_supported(const models::ModelSpec& model);

// InputError unless the scenario's AdamW runs as one fused update, as both
// backends run it (training.optimizer.adamw.implementation: the others are
// other stacks' kernels, which `ragged simulate` models).
void check_update_kernel(const scenarios::Training& training);

// InputError when the scenario's training loop computes metrics over the
// logits (training.outputs.metric_cross_entropies): the workloads compute
// the loss only, so the backends would run a Program they skip part of.
void check_loop_metrics(const scenarios::Training& training);
// InputError when the scenario's loop never steps its optimizer
// (training.optimizer_step false): the backends train.
void check_optimizer_step(const scenarios::Training& training);

// True when the head multiplies by the embedding table (tied embeddings).
bool head_reads_embedding(const models::ModelSpec& model);
// Pointers forward/backward of `unit` expect: its tensors, plus the embedding
// for a tied head.
size_t workload_tensor_count(const models::ModelSpec& model, int unit);

// A workload's place in its tensor-parallel group (docs/MESH.md): it holds
// one tp rank's part of the model (models::ModelSplit) and, with sequence
// parallelism, rows [rank * T / size, (rank + 1) * T / size) of each hidden
// state between the parts of its units.
struct TensorParallelRank {
  int rank = 0;
  int size = 1;
};

// A workload's place in its context-parallel group: of each sequence it
// holds the load-balanced chunks `rank` and 2 x size - 1 - rank of 2 x size
// equal chunks (torchtitan's head-tail split), and its attention reads every
// rank's keys and values.
struct ContextParallelRank {
  int rank = 0;
  int size = 1;
};

// A workload's place in its expert-parallel group (docs/MESH.md): of every
// mixture-of-experts layer it holds routed experts [rank x E / size, (rank +
// 1) x E / size) in a unit of their own (models::UnitKind::kExperts) and
// computes them for the rows every rank of the group routes there; its own
// tokens' rows go to their experts' ranks and come back.
struct ExpertParallelRank {
  int rank = 0;
  int size = 1;
};

// Position within its sequence of local token `index` (of `local_len` a
// sequence) of context-parallel rank `rank` of `size`.
int64_t context_position(int rank, int size, int64_t index, int64_t local_len);

// A tensor-parallel collective of one unit's part: which pass it serves
// (kAgain: a recomputed forward's, communication only: the host keeps its
// activations) and what it moves.
enum class TpPass { kForward, kBackward, kAgain };
enum class TpCollective {
  kAllGather,      // the hidden states (or their gradients) a part reads, from every rank's rows
  kReduceScatter,  // a part's partial sums, each rank keeping its rows' total
  kLossStats,      // the vocabulary-parallel loss's per-token statistics, gathered
  // Context parallelism: every cp rank's keys and values, gathered; the
  // gradients of each rank's keys and values, reduce-scattered.
  kKeyValueGather,
  kKeyValueGradientScatter,
};
struct TpStep {
  int unit = 0;
  models::UnitPart part = models::UnitPart::kWhole;
  TpPass pass = TpPass::kForward;
  TpCollective collective = TpCollective::kAllGather;
};
// `count` floats a rank, the ranks' slots one after another from `buffer`
// (the in-place layout of Communicator::all_gather_in_place and
// reduce_scatter_in_place); this rank's slot holds its input.
struct TpExchange {
  float* buffer = nullptr;
  int64_t count = 0;
};

// An expert-parallel all-to-all of an experts unit (the Program's "ep
// dispatch" and "ep combine" ops): the first of a pass's two sends each
// routed row to its expert's rank (forward: the expert's input, with the
// expert's index on that rank in front; backward: its output's gradient),
// the second returns what the experts made of them (forward: their outputs;
// backward: their input gradients). A recomputed pass (TpPass::kAgain)
// moves the forward's rows again, communication only.
struct EpStep {
  int unit = 0;
  TpPass pass = TpPass::kForward;
};
// `send_counts[r]` floats go to rank r of the group, one after another from
// `send`; whoever exchanges resizes `recv` and fills it with every rank's
// floats for this rank in rank order, their counts in `recv_counts`.
struct EpExchange {
  const float* send = nullptr;
  std::vector<int64_t> send_counts;
  std::vector<float>* recv = nullptr;
  std::vector<int64_t>* recv_counts = nullptr;
};

// InputError naming what the host's tensor parallelism does not compute for
// `model` (one tp rank's split) at `tp` ranks over micro-batches of `tokens`.
void check_tensor_parallel_supported(const models::ModelSpec& model, int tp, int64_t tokens, bool sequence_parallel);

class HostWorkload {
 public:
  HostWorkload(const models::ModelSpec& model, int64_t sequences, int64_t seq_len, TensorParallelRank tp = {},
               ContextParallelRank cp = {}, ExpertParallelRank ep = {});
  ~HostWorkload();
  HostWorkload(const HostWorkload&) = delete;
  HostWorkload& operator=(const HostWorkload&) = delete;

  // Starts a micro-batch.
  void set_batch(const Batch& batch);
  // Forward of unit u (in order 0..U-1): reads the activation unit u-1 left.
  // A tensor-parallel rank computes a block as its parts (models::UnitPart)
  // between the exchanges of tp_begin/tp_end.
  void forward(int unit, const ConstTensors& params, models::UnitPart part = models::UnitPart::kWhole);
  // The head's loss backward alone (the Program's loss_only op): the logits'
  // gradient, which the head's backward then reads; it runs it itself when
  // this was not called.
  void loss_backward(int unit);
  // Backward of unit u (in order U-1..0): adds this micro-batch's gradients
  // to `grads` and passes the activation gradient on.
  void backward(int unit, const ConstTensors& params, const Tensors& grads,
                models::UnitPart part = models::UnitPart::kWhole);
  // A tensor-parallel collective: the buffer to exchange (this rank's slot
  // filled), then, once the group exchanged it, what the result feeds (a
  // residual, the next part's input, the loss).
  TpExchange tp_begin(const TpStep& step);
  void tp_end(const TpStep& step);
  const TensorParallelRank& tensor_parallel() const;
  // An expert-parallel exchange: the rows to send, then, once the group
  // exchanged them, what the received rows feed (the experts' inputs or
  // output gradients on their rank; back home, the mixture's output or its
  // input gradient).
  EpExchange ep_begin(const EpStep& step);
  void ep_end(const EpStep& step);

  struct State;  // workload_state.hpp
  // Pipeline stages (a stage runs some units): the output of unit `unit`
  // (tokens x hidden), sent on to the next stage, and the same received
  // from the previous stage, as if this workload had run the unit; the
  // gradient of a unit's output, received from the next stage before the
  // backward of `unit`, and the one this stage's backward left for the
  // output of the unit before it, sent back.
  std::span<const float> output(int unit) const;
  void receive_output(int unit, std::span<const float> values);
  void receive_output_gradient(int unit, std::span<const float> values);
  std::span<const float> output_gradient(int unit) const;
  // Mean cross-entropy over the micro-batch's tokens, known after the head's
  // forward; backward differentiates this mean.
  double loss() const;
  // FLOPs of the GEMMs run so far (for the measured trace).
  double gemm_flops() const;
  // The experts block `unit` routed this micro-batch's tokens to (top_k per
  // token, in token order; empty for a dense block), known after its
  // forward: the gradient tests check that a perturbation kept the routing.
  std::vector<int64_t> routing(int unit) const;

 private:
  void tp_forward(int unit, const ConstTensors& params, models::UnitPart part);
  void tp_backward(int unit, const ConstTensors& params, const Tensors& grads, models::UnitPart part);
  // A part's exchange run in place when the workload has no tp group
  // (context parallelism alone): a gather of one rank, a sum of one.
  void local_exchange(int unit, models::UnitPart part, TpPass pass, TpCollective collective);
  // An experts unit's routed experts on this rank, over the rows the group sent.
  void experts_forward(int unit, const ConstTensors& params);
  void experts_backward(int unit, const ConstTensors& params, const Tensors& grads);
  bool in_parts(int unit) const;
  std::unique_ptr<State> state_;  // freed when the constructor throws too (LeakSanitizer found the raw pointer)
};

}  // namespace ragged::backend
