#pragma once
// Internal to models/: the config.json readers of the GPT-2 / GPT-NeoX / MPT /
// OPT / Falcon / BLOOM families. Each reads its family's own field names (and
// transformers' defaults for absent ones) into `arch`, after hf_config.cpp has
// set the family and dtype; a value the model cannot represent is an
// InputError naming the field and what to write instead.

#include "models/arch_config.hpp"
#include "models/hf_fields.hpp"

namespace ragged::models::detail {

void read_gpt2(const HfFields& f, ArchConfig& arch);
void read_gpt_neox(const HfFields& f, ArchConfig& arch);
void read_mpt(const HfFields& f, ArchConfig& arch);
void read_opt(const HfFields& f, ArchConfig& arch);
void read_falcon(const HfFields& f, ArchConfig& arch);
void read_bloom(const HfFields& f, ArchConfig& arch);

}  // namespace ragged::models::detail
