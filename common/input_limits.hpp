#pragma once
// The largest numbers Ragged accepts from a scenario, a config.json or the
// command line (docs/RELIABILITY.md, "Input limits", gives the table and the
// reasons). Each is far above any published model or cluster, and low enough
// that every count, FLOP and byte number derived from them stays at or below
// 2^53 (kMaxExactCount): exact in a double and far from int64_t overflow.

#include <cstdint>

namespace ragged::limits {

// Model architecture (a scenario's inline_spec, a config.json, the catalog).
inline constexpr int64_t kMaxHidden = int64_t{1} << 20;        // widest published: 25,600
inline constexpr int64_t kMaxLayers = 4096;                     // deepest published: 126
inline constexpr int64_t kMaxVocab = int64_t{1} << 24;         // largest published: 256,000
inline constexpr int64_t kMaxIntermediate = int64_t{1} << 22;  // widest published MLP: 53,248
inline constexpr int64_t kMaxHeads = 65536;                     // also head_dim and the MLA head dims
inline constexpr int64_t kMaxHeadWidth = int64_t{1} << 22;     // heads x head_dim: q's width
inline constexpr int64_t kMaxLoraRank = int64_t{1} << 20;
inline constexpr int64_t kMaxExperts = 4096;                    // most published: 512
inline constexpr int64_t kMaxPositions = int64_t{1} << 24;     // learned position rows; sliding window
inline constexpr int64_t kMaxExpertTensors = int64_t{1} << 18; // layers x experts stored one by one
inline constexpr double kMaxParams = 140e12;                    // about 2^47: 70x the largest published model

// Cluster.
inline constexpr int64_t kMaxGpusPerNode = 1024;
inline constexpr int64_t kMaxGpus = int64_t{1} << 20;          // largest published job: about 100,000
inline constexpr int64_t kMaxNicsPerNode = 1024;
inline constexpr double kMinTflops = 1e-3;                      // 1 GFLOP/s: slower rates make steps of years
inline constexpr double kMaxTflops = 1e5;                       // per GPU; B200: 2,250 dense bf16
inline constexpr double kMinHbmGib = 1.0 / 1024;                // 1 MiB
inline constexpr double kMaxHbmGib = 1 << 20;                   // 1 PiB per GPU: 2^50 bytes
inline constexpr double kMinGbytesPerS = 1e-3;                  // 1 MB/s (1e-300 overflowed SimGrid's clock)
inline constexpr double kMaxGbytesPerS = 1e6;                   // HBM and NVLink, per GPU; B200 HBM: 8,000
inline constexpr double kMinGbitsPerS = 1e-3;                   // 1 Mbit/s
inline constexpr double kMaxGbitsPerS = 1e7;                    // per NIC; today 400 to 800
inline constexpr double kMaxWatts = 1e5;
inline constexpr double kMinPowerFraction = 0.25;               // power limit / TDP (the clock model's floor is 0.2)
inline constexpr double kMaxLatencyUs = 1e6;                    // one second per hop
inline constexpr double kMaxOversubscription = 1024;
inline constexpr int64_t kMaxSwitchRadix = 65536;
// What-ifs: a slow GPU or NIC keeps at least a thousandth of its rate (a
// step stays within 1,000 x the healthy one's).
inline constexpr double kMinSlowFraction = 1e-3;

// Training.
inline constexpr int64_t kMaxMicroBatch = 65536;
inline constexpr int64_t kMaxSequence = int64_t{1} << 24;
// Full-vocabulary metric passes per micro-batch: more than any training loop
// found runs (Composer with llm-foundry's MPT: 2); a bound on typos.
inline constexpr int kMaxMetricCrossEntropies = 16;
inline constexpr int64_t kMaxMicroBatchTokens = int64_t{1} << 26;  // micro_batch_size x sequence_length
inline constexpr int64_t kMaxAccumulation = 4096;
// A step's tokens: every GPU's largest micro-batch, accumulated as far as allowed (2^58).
inline constexpr double kMaxGlobalBatchTokens =
    static_cast<double>(kMaxGpus) * static_cast<double>(kMaxMicroBatchTokens) * static_cast<double>(kMaxAccumulation);
inline constexpr int64_t kMaxUnitPasses = int64_t{1} << 17;        // accumulation x FSDP units: the Program's size
inline constexpr int64_t kMaxPrefetch = 16;
inline constexpr int64_t kMaxOptimizerBlock = 65536;               // 8-bit Adam tiles, Shampoo blocks
inline constexpr int64_t kMaxNewtonSchulzSteps = 100;
inline constexpr int64_t kMaxRunSteps = 1000000;
inline constexpr double kMaxModelScale = 1 << 20;

// Goodput (scenario.goodput, ragged simulate --goodput).
inline constexpr double kMaxRestartMinutes = 7 * 24 * 60;              // a week
inline constexpr double kMaxCheckpointIntervalMinutes = 365 * 24 * 60;  // a year
inline constexpr double kMaxTrainTokens = 1e18;                         // largest published run: 36T (Qwen3)

}  // namespace ragged::limits
