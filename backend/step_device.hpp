#pragma once
// What one rank's device does for the shared Program walk
// (program_walk.hpp): the few things the host and the GPU do differently.
// The walk owns everything else — buffer lifetimes, where a unit's
// parameters and gradients are, ZeRO-3's fetch groups, the op switch, the
// step loop, finite checks and the measured memory — so the GPU path runs
// the lines the host path proves in CI every day.
//
// Every call that moves data names the Program stream it belongs to: the
// host runs it at once (it has one stream), the GPU enqueues it on that
// stream. Pointers are the device's memory, as bytes; element sizes come
// from element_bytes(). Master shards are fp32 on every device.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "backend/finite_check.hpp"
#include "backend/measured_step.hpp"
#include "backend/workload.hpp"
#include "planner/program.hpp"

namespace ragged::backend {

// The element types a step moves: gathered parameters (and activations),
// unsharded gradients, and the reduce-scatter's input and result.
enum class Elements { kParams, kGrads, kReduce };

using DeviceParams = std::vector<const std::byte*>;
using DeviceGrads = std::vector<std::byte*>;

class StepDevice {
 public:
  virtual ~StepDevice() = default;

  virtual int64_t element_bytes(Elements kind) const = 0;

  // --- Framing and timing.
  // Before the step's first op (the GPU orders its streams after the start).
  virtual void begin_step() = 0;
  // Around each op: the GPU waits for the op's dependencies on other
  // streams (`waits`: the op's and the arena's) and records events, the
  // host reads its clock.
  virtual void begin_op(const planner::Op& op, const std::vector<int64_t>& waits) = 0;
  virtual void end_op(const planner::Op& op, int64_t step) = 0;
  // After the last op: waits for the device; when each op ran, seconds from
  // the step's start, indexed by op id.
  virtual std::vector<OpTime> finish_step(int64_t step) = 0;

  // --- Memory.
  // A buffer the Program just allocated (its arena memory `data`, `bytes`
  // of it, possibly none): the device zeroes what its workload or the
  // reductions need zeroed. Returns the bytes it took beside the arena for
  // it (the host's gradient shard accumulator), 0 otherwise.
  virtual int64_t allocated(const planner::Buffer& buffer, planner::Stream stream, std::byte* data, int64_t bytes) = 0;
  // The same buffer freed; returns the bytes beside the arena it gave back.
  virtual int64_t released(const planner::Buffer& buffer) = 0;
  // What the device holds for the whole run, measured: master shards, the
  // gradient shards it keeps between steps and the optimizer's state as
  // allocated (read after the step: state made at the first update counts).
  virtual int64_t persistent_bytes() const = 0;
  // Bytes the device holds for the run beside the arena and the persistent
  // state (the GPU workload's private buffers; the host's largest set of
  // gradient shards).
  virtual int64_t held_beside_arena() const = 0;
  // Where ZeRO-3's small parameters of `unit` stay gathered: each persistent
  // tensor's [ranks][chunk] in slot order, four bytes an element.
  virtual std::byte* persistent_params(int unit) = 0;

  // --- Copies on `stream`.
  // `n` elements of the unit's fp32 master shard from `offset`, cast to the
  // parameter type, into `dst`.
  virtual void cast_master(planner::Stream stream, int unit, int64_t offset, int64_t n, std::byte* dst) = 0;
  virtual void convert(planner::Stream stream, std::byte* dst, Elements dst_kind, const std::byte* src,
                       Elements src_kind, int64_t n) = 0;
  virtual void copy(planner::Stream stream, std::byte* dst, const std::byte* src, int64_t bytes) = 0;
  // `rows` rows of `width` bytes, `src_pitch` apart in the source and
  // `dst_pitch` apart in the destination.
  virtual void copy_rows(planner::Stream stream, std::byte* dst, int64_t dst_pitch, const std::byte* src,
                         int64_t src_pitch, int64_t width, int64_t rows) = 0;
  // Rank-major layouts (UnitShard::copy_out, ::pack): the gathered [m][S]
  // parameters into per-tensor storage; per-tensor gradients into the
  // [m][S] reduce-scatter input.
  virtual void copy_out(planner::Stream stream, int unit, std::byte* per_tensor, const std::byte* gathered) = 0;
  virtual void pack(planner::Stream stream, int unit, std::byte* gathered, const std::byte* per_tensor) = 0;
  // The Program's pre- and post-divides, run at factor 1 (the mean is taken
  // where the reduced shard is accumulated).
  virtual void scale_by_one(planner::Stream stream, std::byte* data, Elements kind, int64_t n) = 0;

  // --- Collectives, in place, on the group the stream serves (all-gather
  // and reduce-scatter: the unit's FSDP group, `group`: the shard group or,
  // for routed experts under expert parallelism, the expert shard group;
  // all-reduce: the replicas).
  virtual void all_gather(planner::Stream stream, std::byte* buffer, int64_t shard_elements, Elements kind,
                          planner::Group group) = 0;
  virtual void reduce_scatter(planner::Stream stream, std::byte* buffer, int64_t shard_elements, Elements kind,
                              planner::Group group) = 0;
  virtual void all_reduce(planner::Stream stream, std::byte* data, int64_t elements, Elements kind) = 0;

  // --- The gradient shard and the optimizer.
  // grad_shard(unit) += reduced * scale (reduced: shard_size elements of the reduce type).
  virtual void accumulate(planner::Stream stream, int unit, const std::byte* reduced, float scale) = 0;
  // The first NaN or infinity in the unit's final gradient shard, looked for
  // off the step's clock; none where the device checks elsewhere.
  virtual std::optional<NonFinite> gradient_non_finite(int unit) = 0;
  // An optimizer op (any phase) or an owner-based optimizer's all-to-all;
  // the update leaves the unit's gradient shard zeroed.
  virtual void optimizer(const planner::Op& op, int64_t step) = 0;

  // --- The workload, on the compute stream. A pipeline stage holds several
  // micro-batches in flight (its schedule's), so each call names its own.
  virtual void set_batch(int micro_batch, const Batch& batch) = 0;
  virtual void forward(int unit, int micro_batch, const DeviceParams& params, std::byte* saved, int64_t capacity) = 0;
  virtual void recompute(int unit, int micro_batch, const DeviceParams& params, std::byte* workspace,
                         int64_t capacity) = 0;
  virtual void loss_backward(int unit, int micro_batch, std::byte* gradient, int64_t capacity) = 0;
  virtual void backward(int unit, int micro_batch, const DeviceParams& params, const DeviceGrads& grads,
                        std::byte* workspace, int64_t capacity) = 0;

  // --- Tensor parallelism (a mesh's tp group; docs/MESH.md). A block
  // computes as its parts (Op::part) between the group's exchanges of the
  // hidden states (tensor_parallel: Op::group kTensor, no buffer); the
  // all-reduce of the uncut weights' gradients goes through all_reduce on
  // the tensor-parallel stream. The host runs them; a device that does not
  // is refused a mesh before it starts (run_support's checks).
  virtual void forward_part(int unit, int micro_batch, models::UnitPart part, const DeviceParams& params);
  virtual void backward_part(int unit, int micro_batch, models::UnitPart part, const DeviceParams& params,
                             const DeviceGrads& grads);
  virtual void tensor_parallel(const planner::Op& op);
  // Expert parallelism: an experts unit's token all-to-all (Op::group
  // kExpert) between its block and its experts' ranks.
  virtual void expert_parallel(const planner::Op& op);

  // --- Pipeline stages: a micro-batch's activations sent on to the next
  // stage or its gradient back (Op::peer, Op::message, planner::
  // carries_gradient), and their receipt, which the stage's next compute
  // of that micro-batch reads.
  virtual void pipeline_send(const planner::Op& op) = 0;
  virtual void pipeline_recv(const planner::Op& op) = 0;
  // Mean loss over the step's micro-batches on this rank.
  virtual double mean_loss() = 0;
};

}  // namespace ragged::backend
