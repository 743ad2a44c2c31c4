#pragma once
// A model as FSDP sees it: an ordered list of units (embedding, one per
// transformer block, final norm + head), each with its tensors, the compute it
// does per token forward and backward, and the activation bytes it keeps for
// backward under each checkpointing mode. Pure data: no framework types.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/arch_config.hpp"
#include "models/dtype.hpp"

namespace ragged::models {

enum class TensorRole { kEmbedding, kAttention, kNorm, kMlp, kRouter, kExpert, kSharedExpert, kHead };

std::string_view role_name(TensorRole role);

// How tensor parallelism cut a tensor of a rank's model (ModelSplit) out of
// the whole model's: kWhole, not cut (every tp rank holds all of it: norms,
// routers, a row-parallel layer's bias); kRows, along its first dimension
// (column-parallel weights, the vocabulary); kColumns, along its second
// (row-parallel weights).
enum class TensorCut { kWhole, kRows, kColumns };

struct TensorSpec {
  std::string name;            // Hugging Face name without the "model." prefix
  std::vector<int64_t> shape;  // PyTorch order: [out_features, in_features], [experts, ...]
  DType dtype = DType::kBF16;
  TensorRole role = TensorRole::kMlp;
  TensorCut tp_cut = TensorCut::kWhole;

  int64_t numel() const;
  // Rows of the tensor flattened to 2-D over its last dim: a [E, H, F] tensor
  // has E*H rows of F elements. A 1-D tensor is one row.
  int64_t rows() const;
  int64_t row_length() const;
  bool is_matrix() const { return shape.size() >= 2; }
  // Independent matrices stored in the tensor (E for fused experts, else 1).
  int64_t matrices() const;
};

enum class Checkpointing { kNone, kFull, kSelective };

std::string_view checkpointing_name(Checkpointing mode);

// The kernels of the training stack that change what a unit keeps and
// computes (docs/MODELS.md, "Kernels"); the defaults are TorchTitan's.
enum class AttentionKernel {
  kFlash2,  // FlashAttention-2 (PyTorch SDPA's flash backend): O(S) state, one fp32 log-sum-exp per row
  kFlash3,  // FlashAttention-3 (Hopper): the same state, faster
  kMath,    // SDPA's math backend: the B x heads x S x S scores and probabilities in HBM
  kTritonFlash,  // flash-attn's Triton FlashAttention (llm-foundry's attn_impl: triton): FA2's state, FA1's speed
  kMemoryEfficient,  // SDPA's efficient backend (xformers' CUTLASS kernel): FA2's state, FA1's speed; takes a mask
  kCudnn,            // SDPA's cuDNN backend (Transformer Engine's fused attention): FA2's state, cuDNN's measured speed
};
enum class LossKernel {
  kFp32Logits,  // cross_entropy(logits.float()): fp32 copy and log-softmax of the full logits (TorchTitan)
  kFused,       // one fused kernel over the compute-dtype logits (flash-attn's CrossEntropyLoss; llm-foundry)
  kChunked,     // fused linear + cross-entropy over token chunks (Liger): the logits never exist whole
  // Hugging Face transformers' causal-LM loss (LlamaForCausalLM before 4.46):
  // logits.float(), a contiguous copy of the shifted logits, CrossEntropyLoss.
  kShiftedFp32Logits,
  // torch's F.cross_entropy over the compute-dtype logits (no .float()):
  // log_softmax and nll_loss, eager, everything in the logits' dtype.
  kLogSoftmax,
  // cross_entropy(logits.float()) on vocabulary-sharded DTensor logits under
  // torch's loss_parallel() (torchtitan with tp), eager: its handlers
  // decompose log_softmax and the loss's backward into single torch ops.
  kLossParallel,
};
// The RMSNorms when not compiled: PyTorch's eager ops (planner/eager_kernels.hpp)
// or one fused kernel each way (Transformer Engine's RMSNorm).
enum class NormKernel { kEager, kFused };
// How the routed experts a rank holds run (scenario training.experts.kernel):
// each over its own tokens in one launch, each over its own tokens as a
// library call of its own (Transformer Engine's GroupedLinear), or every one
// padded to the busiest one's count.
enum class ExpertKernel { kGrouped, kPadded, kMultiStream };
// What follows the routed experts' GEMMs beyond one fused activation (scenario
// training.experts.epilogue): nothing of its own, or Megatron-Core's eager
// clamp of a clamped GLU and its down-projection bias added expert by expert.
enum class ExpertEpilogue { kFused, kEager };

// The tensors of a dense transformer block a named checkpointing policy can
// keep (scenario training.saved_activations; docs/MODELS.md, "Named
// checkpointing"), as bits of SavedNames::mask.
enum class BlockTensor : uint32_t {
  kNormOut = 1,         // both norms' outputs
  kQkv = 2,             // q, k and v (after rotary)
  kAttentionOut = 4,    // the attention's output and its softmax statistics
  kOutProj = 8,         // the output projection's
  kResidual = 16,       // the attention's residual sum (the MLP norm's input)
  kMlpIn = 32,          // gate and up
  kMlpProduct = 64,     // the down projection's input
  kMlpOut = 128,        // the down projection's
};

struct SavedNames {
  uint32_t mask = 0;
  bool has(BlockTensor t) const { return (mask & static_cast<uint32_t>(t)) != 0; }
  SavedNames& add(BlockTensor t) {
    mask |= static_cast<uint32_t>(t);
    return *this;
  }
  bool operator==(const SavedNames&) const = default;
};
struct KernelChoices {
  AttentionKernel attention = AttentionKernel::kFlash2;
  LossKernel loss = LossKernel::kFp32Logits;
  NormKernel norm = NormKernel::kEager;
  // The attention is given a dense attn_mask instead of is_causal: its
  // kernel computes every score of the square, the causal half included.
  bool dense_attention_mask = false;
  // Set: Checkpointing::kSelective keeps these tensors of each block (the
  // scenario's SAVED_NAMES) instead of TorchTitan's op list.
  std::optional<SavedNames> saved_names = std::nullopt;
  // The loss runs inside torch.compile (training.compile_scope WHOLE_MODEL).
  bool compiled_loss = false;
  // The blocks run eagerly (training.compiled false): autograd keeps what
  // each torch op saves, beyond the tensors a block is modelled with (an
  // RMSNorm in torch ops its fp32 upcast input, a SwiGLU its SiLU output;
  // docs/MODELS.md, "What eager autograd keeps"). False: what the fused
  // (compiled) block keeps, the default of a model built without a scenario.
  bool eager_blocks = false;
  // The busiest routed expert's tokens over the mean expert's (1: a balanced
  // router) and the kernel the experts run in (docs/MESH.md, "Expert load").
  double expert_load = 1.0;
  ExpertKernel expert_kernel = ExpertKernel::kGrouped;
  ExpertEpilogue expert_epilogue = ExpertEpilogue::kFused;
  // A grouped-query attention's keys and values are copied to every query
  // head before the kernel, which keeps the copies (docs/MODELS.md,
  // "Repeated keys and values"). False: the kernel reads the kv heads.
  bool repeated_kv = false;
  // The stack stores q/k/v as one projection and a gated MLP's gate and up
  // as one (Megatron-Core's linear_qkv and linear_fc1, nanotron's qkv_proj
  // and gate_up_proj; docs/MODELS.md, "Fused projections"): the blocks are
  // built from stored_arch's layout. False: the checkpoint's projections.
  bool fused_projections = false;
  bool operator==(const KernelChoices&) const = default;
};
std::string_view attention_kernel_name(AttentionKernel kernel);
std::string_view loss_kernel_name(LossKernel kernel);
// The loss the model holds memory and moves bytes for: a compiled
// cross_entropy(logits.float()) is lowered by Inductor to reductions over the
// compute-dtype logits (the fp32 copy, the fp32 log-softmax and the fp32
// gradients are never materialised), which is what the fused kernel holds
// and moves; every other choice as declared.
LossKernel effective_loss(const KernelChoices& kernels);

// One GEMM of a unit, per token: [M x K] @ [K x N] with M = tokens * token_fraction,
// repeated `count` times (the experts of a layer).
// Which part of a block an op runs in when the block is cut at its mesh
// collectives (planner::block_parts): the attention's input side (input
// norm, q/k/v projections, their norms, rotary: kAttentionInput), its core
// (the attention, the output projection, the residual: kAttentionCore) and
// the MLP (post-attention norm, MLP or router and shared experts, residual:
// kMlp) are what ops are tagged with; kAttention asks for both attention
// tags (a block cut at tp's collectives only); kWhole is an op of a unit never
// cut (embedding, head, experts) and asks for everything.
enum class UnitPart { kWhole, kAttention, kAttentionInput, kAttentionCore, kMlp };

struct GemmShape {
  std::string name;
  int64_t n = 0;                // output features
  int64_t k = 0;                // input features (the reduction dimension)
  double token_fraction = 1.0;  // share of the tokens each copy sees (top_k / experts for routed experts)
  int64_t count = 1;
  bool logits = false;          // the head's vocabulary projection (a chunked loss runs its backward in the forward)
  bool routed_experts = false;  // one projection of the routed experts (`count` of them, tokens dispatched to each)
  UnitPart part = UnitPart::kWhole;

  double forward_flops_per_token() const;  // 2*N*K*token_fraction*count
};

// Causal self-attention core (softmax(QK^T)V), FlashAttention-style: no S^2 tensor is kept.
struct AttentionShape {
  int64_t heads = 0;
  int64_t qk_head_dim = 0;
  int64_t v_head_dim = 0;
  int64_t window = 0;  // sliding window in tokens; 0 = full causal context

  // Average keys attended per query over a causal sequence of `seq_len`.
  double mean_context(int64_t seq_len) const;
  // Forward FLOPs of one query scoring one key: 2*heads*(qk+v).
  double flops_per_key() const;
  // Executed forward FLOPs per token: 2*heads*(qk+v)*mean_context.
  double forward_flops_per_token(int64_t seq_len) const;
};

// Memory-bound work (norms, activation functions, rotary, residual adds, loss):
// bytes read plus bytes written per token, forward pass, and in the backward
// (twice the forward's unless the op says: gradients read and written).
struct ElementwiseOp {
  std::string name;
  double bytes_per_token = 0;
  double backward_bytes_per_token = -1;  // < 0: 2 * bytes_per_token
  // The loss: its backward runs ahead of the head's GEMMs (ActivationBytes::logits_gradient).
  bool loss = false;
  UnitPart part = UnitPart::kWhole;
  // Kernels a forward launches when the op runs eagerly; 0: the count its name
  // implies (planner/eager_kernels.hpp). The backward launches twice as many.
  int64_t eager_kernels = 0;

  double backward_bytes() const { return backward_bytes_per_token < 0 ? 2.0 * bytes_per_token : backward_bytes_per_token; }
};

struct UnitCompute {
  std::vector<GemmShape> gemms;
  std::optional<AttentionShape> attention;
  std::vector<ElementwiseOp> elementwise;

  double gemm_forward_flops_per_token() const;
  double attention_forward_flops_per_token(int64_t seq_len) const;
  // Executed FLOPs: backward GEMMs do dX and dW (2x forward); FlashAttention's
  // backward does 5 matmuls to the forward's 2 (2.5x).
  double forward_flops_per_token(int64_t seq_len) const;
  double backward_flops_per_token(int64_t seq_len) const;
  double elementwise_bytes_per_token() const;
};

// Activation memory of a unit per token, in bytes, under the model's
// KernelChoices.
struct ActivationBytes {
  double saved_none = 0;       // kept from forward to backward without checkpointing
  // TorchTitan's op-level policy: every other GEMM's output and the
  // attention's kept; with KernelChoices::saved_names, the named tensors.
  double saved_selective = 0;
  // true: selective recomputes every other GEMM (TorchTitan's op-level policy,
  // dense blocks); false: the element-wise results only (mixture-of-experts).
  bool selective_recomputes_gemms = true;
  double saved_full = 0;       // only the unit's input is kept; everything else recomputed in backward
  // With KernelChoices::saved_names, the forward ops the block reruns before
  // its backward (one flag per GemmShape and per ElementwiseOp of the unit's
  // compute, and the attention); saved_selective is then what it keeps.
  struct RecomputedOps {
    std::vector<bool> gemms;
    std::vector<bool> elementwise;
    bool attention = false;
  };
  std::optional<RecomputedOps> named_recompute;
  double working = 0;          // transient peak of the unit's backward (MLP intermediates, the loss's gradients), freed after
  // The head: the logits' gradient in their dtype, the last of the loss's
  // backward (part of `working`), which the head's GEMM backward then reads
  // beside the weight gradient it writes, the loss's fp32 gradients freed by
  // then (autograd's order). 0: no loss backward of its own (chunked loss,
  // other units).
  double logits_gradient = 0;
  // The head's GEMM backward: the logits GEMM's input gradient (tokens x
  // width), which the final norm's backward reads.
  double head_input_gradient = 0;
  std::vector<double> working_pieces = {};  // the tensors `working` is made of, when it is several (they sum to it)
  std::vector<double> forward_pieces = {};  // tensors the forward makes and frees beyond what it keeps (the loss's logits copies)
  // The loss's fp32 logits: freed once the loss is computed, unless the model
  // returns them (scenario training.outputs.logits). 0: the loss makes none.
  double loss_logits = 0;
  // The logits the model returns when the loop asks for them (scenario
  // training.outputs.logits): the fp32 copy above, or the compute-dtype
  // logits a fused loss reads (kept by it to the head's backward). 0: the
  // loss never makes them whole.
  double returned_logits = 0;
  // A block's keys and values, which a model returning its cache keeps
  // (training.outputs.kv_cache: Hugging Face's past_key_values).
  double returned_kv = 0;
  // Math attention: bytes per token per key of one B x heads x S x S tensor
  // (heads x dtype); 0 with FlashAttention. Kept once (the probabilities)
  // without checkpointing; the pre-softmax scores are forward transients and
  // the backward holds two more (their gradients).
  double scores_per_key = 0;

  double saved(Checkpointing mode) const;  // without the scores
  // What the unit keeps from its forward to its backward, per token, for
  // sequences of `seq_len`: saved(mode) plus the kept probabilities.
  double kept(Checkpointing mode, int64_t seq_len) const;
};

// kExperts: the routed experts of the block before it, a unit of their own
// when expert parallelism shards them over a group of their own (ModelSplit).
enum class UnitKind { kEmbedding, kBlock, kExperts, kHead };

// Whether a unit is (part of) a transformer block: checkpointed, recomputed
// and compiled as one.
inline bool is_block_part(UnitKind kind) { return kind == UnitKind::kBlock || kind == UnitKind::kExperts; }

// How a device mesh cuts the model for one of its ranks (docs/MESH.md):
// tensor parallelism over tp ranks, Megatron's column/row split (q/k/v, gate
// and up by their output features, o and down by their input features, the
// vocabulary of the embedding and the head; norms and routers replicated;
// key/value heads replicated when tp exceeds them); expert parallelism over
// ep ranks, each holding experts/ep routed experts (tensor-parallel like the
// dense MLP) as a unit of their own; sequence parallelism spreading what the
// block keeps and streams at the hidden width over the tp ranks too.
struct ModelSplit {
  int64_t tp = 1;
  int64_t ep = 1;
  bool sequence_parallel = true;
  bool vocabulary_parallel = true;  // false: the embedding and the head whole on every tp rank
  // With vocabulary_parallel: the head's logits all-gathered over tp and the
  // loss computed whole on every rank; the embedding whole on every rank.
  bool gathered_logits = false;
  // Each routed expert whole on its rank (expert_tp 1, needs ep > 1 and
  // sequence parallelism): the experts see the rank's 1/tp of the tokens.
  bool whole_experts = false;
  bool trivial() const { return tp == 1 && ep == 1; }
  bool operator==(const ModelSplit&) const = default;
};

// Under an uneven router (KernelChoices::expert_load = the busiest expert's
// tokens over the mean, at most experts / top_k), what the rank holding the
// busiest expert receives over a balanced rank's share: its own expert at
// the load, its other `local` - 1 at the mean of what the busiest leaves to
// the other experts. 1 when the rank holds every expert (the tokens are the
// same, only their split moves), the load itself with one expert a rank.
double busiest_rank_tokens(const ArchConfig& arch, int64_t local, double load);
// The routed-expert work of that rank over a balanced rank's: its tokens
// (kGrouped, kMultiStream), or every local expert at the busiest one's count (kPadded).
double routed_work_factor(const ArchConfig& arch, int64_t local, const KernelChoices& kernels);
// The highest busiest-expert load a router can give: every token on the same
// top_k experts (experts / top_k); 1 for a dense model.
double max_expert_load(const ArchConfig& arch);

struct UnitSpec {
  std::string name;  // "embed", "layers.0", ..., "head"
  UnitKind kind = UnitKind::kBlock;
  std::vector<TensorSpec> tensors;
  UnitCompute compute;
  ActivationBytes activations;

  int64_t params() const;
  int64_t bytes() const;  // parameters in their dtype
  // The weight `gemm` multiplies by: the tensor named "<prefix>.<gemm>.weight"
  // (a block's tensors carry its layer prefix, its GEMMs not); null when the
  // unit has none of that name.
  const TensorSpec* weight_of(const GemmShape& gemm) const;
};

// The forward ops of `unit` its named checkpointing reruns
// (ActivationBytes::named_recompute), as a unit of their own whose compute
// holds only them.
UnitSpec named_recompute_ops(const UnitSpec& unit);

struct ModelSpec {
  std::string name;
  // The architecture the units are built from: under a non-trivial split the
  // tensor-parallel rank's (heads, widths and vocabulary over tp), with the
  // whole model's name and routed-expert count.
  ArchConfig arch;
  std::vector<UnitSpec> units;
  KernelChoices kernels = {};
  ModelSplit split = {};  // trivial: the whole model

  int64_t params() const;
  // Parameters one token passes through (MoE: routed experts counted top_k times out of E).
  double active_params() const;
  // Model FLOPs per token for MFU, the PaLM convention (docs/METRICS.md):
  // 6 * active non-embedding parameters + 12 * layers * heads * qk_head_dim * seq_len.
  double model_flops_per_token(int64_t seq_len) const;
  // Executed FLOPs per token of one training step without recomputation (causal attention halved).
  double executed_flops_per_token(int64_t seq_len) const;
  int64_t tensor_count() const;
};

// The layout the training stack stores `checkpoint` in: the checkpoint's, or
// with KernelChoices::fused_projections a grouped-query attention's q/k/v in
// one projection and a gated MLP's gate and up in one (multi-head latent
// attention keeps its own projections).
ArchConfig stored_arch(const ArchConfig& checkpoint, const KernelChoices& kernels);

// Builds the units, tensors, compute and activation bytes from an
// architecture, for the given kernels. Throws InputError if the architecture
// is invalid (see validate_arch).
ModelSpec build_model(const ArchConfig& arch, const KernelChoices& kernels = {});
// One rank's part of the model under `split`; the whole model when the split
// is trivial. Throws InputError when tp or ep does not divide what it splits
// (check_split says which).
ModelSpec build_model(const ArchConfig& arch, const KernelChoices& kernels, const ModelSplit& split);

// What `split` cannot cut in `arch`, with the fix (empty when it can): one
// line per problem, each naming the mesh field ("tp", "ep") it is about.
struct SplitProblem {
  std::string field;  // "tp" or "ep"
  std::string message;
};
std::vector<SplitProblem> check_split(const ArchConfig& arch, const ModelSplit& split);

// The architecture of one tensor-parallel rank: heads, key/value heads (one,
// replicated, when tp exceeds them), MLP and expert widths and the
// vocabulary (rounded up) over tp; hidden width, routed-expert count and
// everything else as they are.
ArchConfig tensor_parallel_arch(const ArchConfig& arch, int64_t tp, bool vocabulary_parallel = true);

}  // namespace ragged::models
