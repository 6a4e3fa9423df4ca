// core/backend.h's workspace_for(): the arithmetic behind every fk_*_workspace_size() answer,
// checked against a model of cuda/common/scratch.h's ScratchArena carving buffers out of a
// caller workspace (start aligned up to 256 bytes, each buffer rounded up to 256 bytes). The
// GPU suite checks the same end to end (tests/gpu/test_graph_capture.cpp, allocation nodes).
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "core/backend.h"
#include "test_util.hpp"

namespace {

// True when buffers of these sizes all fit a workspace of `bytes` starting at address `start`,
// carved as ScratchArena does.
bool arena_fits(uint64_t start, uint64_t bytes, const std::vector<uint64_t>& buffers) {
  const uint64_t a = flashkit::kScratchAlign;
  const uint64_t pad = (a - start % a) % a;
  if (bytes <= pad) return buffers.empty();
  uint64_t left = bytes - pad;
  for (uint64_t b : buffers) {
    const uint64_t need = (b + a - 1) / a * a;
    if (need > left) return false;
    left -= need;
  }
  return true;
}

}  // namespace

TEST_CASE("workspace_for: enough at any start address, and tight", "[workspace][unit]") {
  CHECK(flashkit::workspace_for({}) == 0);
  CHECK(flashkit::workspace_for({0, 0}) == 0);  // absent buffers
  CHECK(flashkit::workspace_for({1}) == 256 + 255);
  CHECK(flashkit::workspace_for({256, 257}) == 256 + 512 + 255);
  std::mt19937_64 rng(fktest::test_seed());
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint64_t> bufs;
    const int n = 1 + int(rng() % 3);
    for (int i = 0; i < n; ++i) bufs.push_back(1 + rng() % 100000);
    uint64_t total = 0;
    if (n == 1) total = flashkit::workspace_for({bufs[0]});
    if (n == 2) total = flashkit::workspace_for({bufs[0], bufs[1]});
    if (n == 3) total = flashkit::workspace_for({bufs[0], bufs[1], bufs[2]});
    INFO("buffers " << n << ", reported " << total);
    // Every start offset within a 256-byte unit fits in the reported size...
    for (uint64_t off = 0; off < flashkit::kScratchAlign; ++off) CHECK(arena_fits(off, total, bufs));
    // ... the worst one (1 byte past a boundary) needs all of it, an aligned start all but 255.
    CHECK_FALSE(arena_fits(1, total - 1, bufs));
    CHECK(arena_fits(0, total - 255, bufs));
    CHECK_FALSE(arena_fits(0, total - 256, bufs));
  }
}
