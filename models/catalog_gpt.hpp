#pragma once
// Internal to models/: the catalog's GPT-2 style architectures (LayerNorm
// blocks with a two-matrix MLP), as their config.json files describe them.

#include "models/arch_config.hpp"

namespace ragged::models::detail {

ArchConfig gpt2_xl();
ArchConfig gpt_neox_20b();
ArchConfig opt_30b();
ArchConfig mpt_30b();
ArchConfig bloom_176b();

}  // namespace ragged::models::detail
