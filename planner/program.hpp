#pragma once
// The Program: the op graph of one training step on one rank, the contract
// between the simulator and the backend (both run exactly this list). Ops are
// in issue order; ops on one stream run in that order; a dependency on an op
// of another stream is an event wait. Every trace event carries the op id.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/model_spec.hpp"
#include "planner/group.hpp"
#include "planner/mesh.hpp"

namespace ragged::planner {

// The same vocabulary as traces/trace.proto's OpKind.
enum class OpKind {
  kAlloc,
  kFree,
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,
  kCopyIn,
  kCopyOut,
  kCast,
  kComputeFwd,
  kComputeBwd,
  kRecompute,
  kOptimizer,
  kGradAccumulate,
  // The training loop's metrics over a micro-batch's returned logits after
  // its backward (training.outputs.metric_cross_entropies): forward math on
  // the head's output, no gradient.
  kTrainMetrics,
  // An in-place element-wise scaling of a buffer: FSDP1's gradient pre- and
  // post-divide around the reduce-scatter. Executors run the pass at factor
  // 1 (they take the mean at the accumulation): its cost, not its math.
  kScale,
  // A pipeline stage's activations (forward) or their gradients (backward)
  // to or from a neighbouring stage (Op::peer), matched by Op::message.
  kSend,
  kRecv,
};

// The streams: the compute, FSDP's collectives, and one per mesh dimension
// whose collectives sit between a unit's kernels (tp, cp, ep).
enum class Stream {
  kCompute,
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kTensorParallel,
  kContextParallel,
  kExpertParallel,
  // Sends and receives between pipeline stages, each on its own stream so
  // that a stage's send never waits behind its receive of what its
  // neighbour sends after its own receive (NCCL's send and receive meet).
  kPipelineSend,
  kPipelineRecv,
};
inline constexpr size_t kStreams = 9;

std::string_view op_kind_name(OpKind kind);  // "all_gather", "compute_fwd", ...
std::string_view stream_name(Stream stream);  // "compute", "all_gather", ...

enum class BufferKind {
  kUnshardedParams,  // a unit's gathered parameters (the all-gather output)
  kParamCopies,      // per-tensor unsharded storage a copy-out fills (FSDP2, ZeRO-3)
  kUnshardedGrads,   // a unit's gradients as backward produces them
  kReduceInput,      // the reduce-scatter input when it is not the gradient buffer itself
  kActivations,      // what a unit's forward keeps for its backward
  kWorkspace,        // transient working memory of a compute op
  kOptimizer,        // transient buffers of the optimizer (Muon's gathered matrix)
  // A unit's sharded gradients from its first reduction of the step to the
  // training loop's zero_grad (StrategyTraits::grad_shards_freed_each_step);
  // other strategies keep them in PersistentMemory::gradients.
  kGradShards,
  // What the model returns and the training loop holds (scenario
  // training.outputs: Hugging Face's returned logits and key/value caches).
  kModelOutputs,
};
inline constexpr int kBufferKinds = 9;

// Parameters and gradients the Program moves (gathered, copied, produced by
// backward, reduced): with the persistent state, what every executor holds
// in its own buffers, activations and workspaces aside
// (Summary.peak_state_and_buffers_bytes).
inline bool is_parameter_or_gradient_buffer(BufferKind kind) {
  return kind == BufferKind::kUnshardedParams || kind == BufferKind::kParamCopies ||
         kind == BufferKind::kUnshardedGrads || kind == BufferKind::kReduceInput || kind == BufferKind::kGradShards;
}

struct Buffer {
  std::string name;
  BufferKind kind = BufferKind::kWorkspace;
  int unit = -1;
  int64_t bytes = 0;
  // Separate allocations making up the buffer (per-parameter storage of
  // FSDP2 and ZeRO-3); empty when it is one allocation.
  std::vector<int64_t> pieces;
  // The unit's tensors a buffer of one ZeRO-3 fetch group holds, in order
  // (UnitLayout::fetch_groups): one gathered into its own storage, or the
  // flat buffer of a set and the copies made out of it. Empty: every
  // tensor of the unit (the persistent ones of ZeRO-3 aside).
  std::vector<int> tensors;
};

// One GEMM: [m x k] @ [k x n], `count` independent copies.
struct Gemm {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t count = 1;
  bool weight_gradient = false;  // a backward's dW = dY^T X (what ZB-H1 runs apart)
  // The kernels the copies run as, each issued by the CPU as a library call
  // of its own: 1 (one batched or grouped launch), or `count` (one GEMM per
  // routed expert: ExpertKernel::kMultiStream), spread over `streams`.
  int64_t launches = 1;
  int64_t streams = 1;
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(count); }
  // The launches one after another on one stream (the others run beside them).
  int64_t serial_launches() const { return (launches + streams - 1) / streams; }
};

// The attention core of a compute op (FlashAttention style).
struct AttentionWork {
  int64_t batch = 0;
  int64_t seq_len = 0;
  int64_t heads = 0;
  int64_t qk_head_dim = 0;
  int64_t v_head_dim = 0;
  int64_t window = 0;  // 0: full causal
  double flops = 0;    // executed FLOPs of this op (forward, or the backward's 2.5x)
  // The kernel that runs it: FlashAttention-2, -3 (Hopper) or flash-attn's
  // Triton FlashAttention (FlashAttention-2's work at FlashAttention-1's speed).
  models::AttentionKernel kernel = models::AttentionKernel::kFlash2;
};

// What a compute, recompute or optimizer op does, for cost models and the
// backend's real kernels.
struct ComputeWork {
  std::vector<Gemm> gemms;
  AttentionWork attention;
  double elementwise_bytes = 0;  // memory-bound traffic (read + write)
  double other_flops = 0;        // non-GEMM math (Newton-Schulz is GEMMs; this is for the rest)
  // Kernels the element-wise traffic runs as: one per torch op in eager
  // PyTorch (eager_kernels.hpp), one per fused op when compiled. Each GEMM
  // entry (Gemm::launches of them) and the attention core are kernels of
  // their own.
  int64_t elementwise_kernels = 0;
  int64_t gemm_kernels() const {
    int64_t n = 0;
    for (const Gemm& g : gemms) n += g.launches;
    return n;
  }
  // Framework ops (each launching its kernel) the work is issued as.
  int64_t kernels() const { return gemm_kernels() + (attention.flops > 0 ? 1 : 0) + elementwise_kernels; }
};

// What the framework's CPU thread does to issue an op (docs/SIMULATOR.md,
// "The CPU issue path"): the simulator times it and lets no stream start the
// op before it is issued; the executors run the op and ignore this.
struct HostWork {
  int64_t framework_ops = 0;   // torch ops dispatched from Python, one kernel launch each
  int64_t list_tensors = 0;    // tensors in the op's foreach/split/cat lists (per-tensor preparation)
  int64_t param_views = 0;     // per-parameter views set up (unsharded parameters, gradient views)
  int64_t param_reshards = 0;  // per-parameter sharded views restored (reshard)
  // Ops the CPU thread blocks on (an event synchronize) before issuing this
  // one: a strategy's rate limiter or queue wait that waits on the host.
  std::vector<uint32_t> waits;
};

// Which pass of a unit a mesh collective serves. kRecompute: full
// checkpointing's recomputed forward (every collective of the forward
// again); kSelectiveRecompute: TorchTitan's op-level policy, which
// saves the outputs of mm, the attention and reduce_scatter_tensor but not of
// the sequence-parallel all-gathers, so the matmuls it recomputes gather their
// input again (torchtitan parallelize_llama.py, _save_list).
enum class Pass { kForward, kBackward, kRecompute, kSelectiveRecompute };

// Which part of an owner-based optimizer (Muon, Shampoo) an op is.
enum class OptimizerPhase { kNone, kMomentum, kGather, kOrthogonalize, kScatter, kUpdate };

struct Op {
  uint32_t id = 0;
  OpKind kind = OpKind::kComputeFwd;
  Stream stream = Stream::kCompute;
  int unit = -1;         // -1: not tied to one unit
  int micro_batch = -1;  // -1: once per step
  std::string name;      // "layers.3 all_gather (fwd)"
  // Index into Program::buffers: allocated, freed, or written; the head's
  // loss backward and GEMM backward: the logits' gradient, written by the
  // first (loss_only) and read by the second.
  int buffer = -1;
  bool loss_only = false;  // kComputeBwd of the head: its loss's backward alone, ahead of its GEMMs
  // kComputeBwd of ZB-H1's W: the weight gradients its input-gradient
  // backward (earlier, same unit and micro-batch) left for later.
  bool weight_gradients_only = false;
  // A block cut at its tensor-parallel collectives (planner::block_parts):
  // which side a compute op and its mesh collectives belong to.
  models::UnitPart part = models::UnitPart::kWhole;
  Pass pass = Pass::kForward;  // a mesh collective: the pass of its unit it serves
  Group group = Group::kNone;
  int peer = -1;           // kSend, kRecv: the other stage
  int64_t message = -1;    // kSend, kRecv: the same on the send and its receive; odd: a gradient
  // Collectives: the whole buffer (nccl-tests' S), an all-to-all's the bytes
  // its whole group sends; copies/casts: bytes read + written.
  int64_t bytes = 0;
  // Collectives: -1, NCCL's ring (its kernel holds the GPU's nccl_ctas);
  // from 0, a runtime's own transfer over peer-mapped memory (an overlapped
  // tp step, tp_overlap.hpp) holding that many SMs (0: the copy engines),
  // which pays one hop's latency, not a ring's.
  // Compute ops: -1, or the SMs its GEMMs leave to a transfer beside them
  // (Transformer Engine's sm_margin): they are then launched on the rest,
  // not one persistent CTA per SM.
  int ctas = -1;
  double flops = 0;      // compute ops: executed FLOPs
  ComputeWork work;      // compute, recompute and optimizer ops
  std::vector<uint32_t> deps;  // ops (on any stream) that must finish first
  OptimizerPhase phase = OptimizerPhase::kNone;  // optimizer ops and their all-to-alls
  // An ep dispatch or combine (kAllToAll over Group::kExpert): the model's
  // routed experts and the experts a token picks, from which the simulator
  // takes the bytes that cross the network (planner::expert_network_share).
  int64_t routed_experts = 0;
  int64_t experts_per_token = 0;
  HostWork host;         // the CPU's part of issuing it (an annotation for the simulator)
};

// A kSend/kRecv carries a micro-batch's activation gradient back a stage
// (else its activations forward).
inline bool carries_gradient(const Op& op) { return op.message % 2 == 1; }

// Bytes that live for the whole step on every rank.
struct PersistentMemory {
  int64_t master_params = 0;   // sharded master weights
  int64_t compute_params = 0;  // a persistent low-precision shard (ZeRO-3, Megatron-FSDP)
  // The sharded gradient accumulator (0 when freed each step:
  // BufferKind::kGradShards); DDP: its gradient buckets.
  int64_t gradients = 0;
  int64_t optimizer_states = 0;
  int64_t gathered_small_params = 0;  // ZeRO-3's persistent small parameters, unsharded
  // torch.distributed.pipelining's receive buffers: one per micro-batch for
  // each neighbour stage on another rank (scenarios::ONE_BUFFER_PER_MICRO_BATCH).
  int64_t pipeline_receive_buffers = 0;

  int64_t total() const {
    return master_params + compute_params + gradients + optimizer_states + gathered_small_params +
           pipeline_receive_buffers;
  }
};

struct Program {
  std::string strategy;
  int rank = 0;
  int64_t shard_ranks = 1;      // shard group size
  int64_t replicate_ranks = 1;  // HSDP replicas
  Mesh mesh;                    // where every group of the Program's collectives lies
  int stage = 0;                // the pipeline stage it runs (of `stages`)
  int stages = 1;
  int micro_batches = 1;
  // False: forward and backward only (training.optimizer_step false): no
  // optimizer ops, every unit's gradients in persistent memory.
  bool optimizer_steps = true;
  int64_t tokens_per_step = 0;  // this rank's tokens in one step
  double model_flops_per_step = 0;  // this rank's model FLOPs (docs/METRICS.md), for MFU
  PersistentMemory persistent;
  std::vector<Buffer> buffers;
  std::vector<Op> ops;

  size_t count(OpKind kind) const;
  // The bytes of every buffer of `kind`, summed.
  int64_t bytes_of(BufferKind kind) const;
  // The gathered buffer a copy-out reads: its all-gather's (InternalError
  // when the op does not depend on one).
  int gathered_buffer(const Op& copy_out) const;
};

}  // namespace ragged::planner
