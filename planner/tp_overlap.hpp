#pragma once
// Overlapped tensor parallelism (scenario.proto TpOverlap; docs/SIMULATOR.md
// section 11, "Overlapped tensor parallelism"): a dense block part's
// sequence-parallel all-gather cut into steps that the GEMMs reading the
// gathered tensor consume as they arrive, and the GEMMs whose partial sums
// are reduce-scattered cut into chunks sent as they are produced.
//  - forward (and full recompute): the gathered hidden states feed the
//    column-parallel projections; the row-parallel projection produces the
//    sums to scatter;
//  - backward: the gathered output gradient feeds the row-parallel
//    projection's input gradient (its weight gradient reads it transposed,
//    which neither runtime fuses: it runs whole after); the column-parallel
//    projections' input gradients produce the sums to scatter, and their
//    weight gradients run beside that scatter (Transformer Engine's bulk
//    overlap; PyTorch's autograd orders them the same way).
// PyTorch's micro-pipelined TP (torch/distributed/_symmetric_memory,
// _pipelined_all_gather_and_consume and _pipelined_produce_and_all2all):
// tp steps each side, every peer's chunk copied by the copy engines, the
// scattered partial sums reduced locally after the last copy. Transformer
// Engine's userbuffers (transformer_engine/pytorch/module/base.py,
// initialize_ub): the gather a ring exchange of tp steps on 1 SM, the
// reduce-scatter in 4 chunks by communication kernels on 16 SMs.

#include <cstdint>

#include "models/model_spec.hpp"
#include "planner/compute_work.hpp"
#include "planner/mesh.hpp"
#include "planner/program.hpp"

namespace ragged::planner {

// How one overlap runtime cuts and moves its chunks.
struct TpOverlapShape {
  int gather_steps = 1;       // chunks of the gathered tensor, the local one first
  int scatter_chunks = 1;     // chunks of the partial sums
  // The last chunk is this rank's own, sent nowhere (PyTorch); else every
  // chunk is reduce-scattered as it is produced (Transformer Engine).
  bool scatter_local_last = false;
  int gather_ctas = 0;        // SMs a gather step's transfer holds (0: copy engines)
  int scatter_ctas = 0;       // SMs a scatter chunk's transfer holds
  bool local_reduction = false;  // the partial sums summed by a kernel after the last transfer
};

TpOverlapShape tp_overlap_shape(const Mesh& mesh);

// Bytes (nccl-tests' S) of the part's tp all-gathers before it and tp
// reduce-scatters after it that the overlap takes over; 0 on a side that
// runs whole (no overlap configured, selective recompute, a part with
// other mesh collectives, a mixture-of-experts block, or no GEMM to overlap).
struct TpOverlapSides {
  int64_t gathered = 0;
  int64_t scattered = 0;
  bool any() const { return gathered > 0 || scattered > 0; }
};

TpOverlapSides tp_overlap_sides(const models::UnitSpec& unit, const models::ModelSpec& model, const Mesh& mesh,
                                const MicroBatch& batch, int64_t element_bytes, Pass pass, models::UnitPart part);

// A part's compute cut for the overlap; the four sum to the whole.
struct TpOverlapWork {
  ComputeWork gather_consumers;  // the GEMMs reading the gathered tensor
  ComputeWork rest;              // everything else, between the two sides
  ComputeWork scatter_producers;  // the GEMMs producing the partial sums
  ComputeWork beside_scatter;     // backward: the column-parallel weight gradients
};

// Splits `whole` (the part's work for `pass`) by the role of its GEMMs; a
// side whose bytes in `sides` are 0 leaves its GEMMs in `rest`.
TpOverlapWork split_tp_overlap_work(const models::UnitSpec& unit, const models::ModelSpec& model,
                                    const MicroBatch& batch, Pass pass, models::UnitPart part,
                                    const TpOverlapSides& sides, ComputeWork whole);

// One of `chunks` equal pieces of `gemms`' GEMMs, cut along the tokens (a
// GEMM's rows; a weight gradient's reduction dimension).
ComputeWork tp_chunk(const ComputeWork& gemms, int chunks);

// The local sum of the tp partial-sum chunks PyTorch's reduce-scatter
// leaves after its last copy: the tp chunks of S / tp read, one written.
ComputeWork tp_local_reduction(int64_t scattered, int64_t tp);

}  // namespace ragged::planner
