// Host side of the Hopper attention kernel's paired causal numbering (AttnArgs::pairs,
// tile_scheduler.cuh): the members a call that takes the pairs sets (attention_sm90.cpp decides
// when; tests/sm90host checks the numbering these produce on the host).
#pragma once

#include <cstdint>

#include "cuda/attention/sm90/launch.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

// Query tile i of each (batch, head) with tile num_m_blocks - 1 - i: ceil(num_m_blocks / 2)
// pairs a head (the middle tile of an odd count paired with a hole), `sms` CTAs each taking
// both tiles of a pair one wave apart, so total_tiles counts 2 ceil(num_pairs / grid) grid
// positions. No head sections. Call before set_index_divisors.
inline void set_pairs(AttnArgs& a, int64_t sms) {
  const int64_t bh = int64_t(a.batch) * a.nheads;
  const int64_t per_bh = (int64_t(a.num_m_blocks) + 1) / 2;
  a.pairs = 1;
  a.section_heads = 0;
  a.pairs_per_bh = int32_t(per_bh);
  a.num_pairs = bh * per_bh;
  a.grid = int32_t(sms);
  a.total_tiles = 2 * ((a.num_pairs + a.grid - 1) / a.grid) * a.grid;
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
