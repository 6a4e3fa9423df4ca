// The lagging running max of the attention kernels' online softmax
// (src/cuda/attention/common/logits.h, next_row_max, used by the sm80-class kernel and by the
// Hopper kernel above head_dim 128), checked on the host: its special values, the slack
// boundary, the fp32 tie at |m| in [2^27, 2^28) found in review (row_max + 8 rounding to
// row_max + 16 kept m with P = 2^16, past fp16's largest value), and a float model of the
// kernels' key-tile loop against float64. The GPU suite runs the kernels themselves over
// softmax scales that keep and move the max ("[rescale]").
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "cuda/attention/common/logits.h"

namespace {

using flashkit::cuda::attn::kMaxSlackLog2;
using flashkit::cuda::attn::next_row_max;

const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

// How far a tile max t may stand above the max the loop keeps: 8, plus the rounding of the
// fp32 difference t - m (half an ulp of 8) when m and t are not within a factor of two.
constexpr double kBound = 8.0 + 1e-6;

}  // namespace

TEST_CASE("online softmax: next_row_max on special values and at the slack", "[attention][online_max]") {
  CHECK(next_row_max(-kInf, 3.0f) == 3.0f);   // the first key moves -inf
  CHECK(next_row_max(-kInf, -1e30f) == -1e30f);
  CHECK(next_row_max(-kInf, -kInf) == -kInf);  // a fully masked tile of a row with no key yet
  CHECK(next_row_max(-kInf, kInf) == kInf);
  CHECK(next_row_max(5.0f, kInf) == kInf);     // +inf moves m, as fmaxf did
  CHECK(next_row_max(kInf, kInf) == kInf);
  CHECK(next_row_max(kInf, 5.0f) == kInf);
  CHECK(next_row_max(5.0f, kNan) == 5.0f);     // a NaN tile max leaves m, as fmaxf did
  CHECK(next_row_max(5.0f, -kInf) == 5.0f);    // a fully masked tile
  CHECK(next_row_max(5.0f, 4.0f) == 5.0f);
  CHECK(next_row_max(5.0f, 5.0f + kMaxSlackLog2) == 5.0f);  // exactly 8 above: kept
  const float above = std::nextafter(5.0f + kMaxSlackLog2, 100.0f);
  CHECK(next_row_max(5.0f, above) == above);
  CHECK(next_row_max(-20.0f, -12.5f) == -20.0f);
  CHECK(next_row_max(-20.0f, -11.5f) == -11.5f);
}

TEST_CASE("online softmax: next_row_max at |m| in [2^27, 2^28), where floats are 16 apart",
          "[attention][online_max]") {
  // m = 2^27 + 16 (odd last mantissa bit): m + 8 is a tie that rounds to m + 16 in fp32, so a
  // test of t > m + 8 kept m for t = m + 16.
  for (float sign : {1.0f, -1.0f}) {
    const float m = sign * (134217728.0f + 16.0f);
    const float t = m + 16.0f;
    INFO("m " << m << " t " << t);
    REQUIRE(double(t) - double(m) == 16.0);
    CHECK(next_row_max(m, t) == t);
  }
}

TEST_CASE("online softmax: no tile max stands more than 2^8 above the kept max, any magnitude",
          "[attention][online_max]") {
  std::mt19937_64 rng(20261204);
  std::uniform_int_distribution<int> exp_dist(-30, 100);
  std::uniform_real_distribution<double> unit(1.0, 2.0);
  std::uniform_int_distribution<int> step_dist(-3, 40);
  int moved = 0, kept = 0;
  for (int n = 0; n < 200000; ++n) {
    const double sign = (n & 1) ? -1.0 : 1.0;
    const float m = static_cast<float>(sign * std::ldexp(unit(rng), exp_dist(rng)));
    // Tile maxima around m + 8: m + 8 itself when representable, and floats a few ulps of m or
    // of 8 on either side, and well above.
    const double ulp = std::max(double(std::nextafter(std::fabs(m), kInf)) - std::fabs(m), 1e-6);
    const double delta = 8.0 + step_dist(rng) * (n % 3 == 0 ? ulp : n % 3 == 1 ? 1e-6 : 0.5);
    const float t = static_cast<float>(double(m) + delta);
    const float r = next_row_max(m, t);
    INFO("m " << m << " t " << t);
    REQUIRE((r == m || r == t));
    CHECK(double(t) - double(r) <= kBound);
    if (r == m) {
      ++kept;
    } else {
      ++moved;
      CHECK(double(t) > double(m));
    }
  }
  CHECK(kept > 1000);
  CHECK(moved > 1000);
}

TEST_CASE("online softmax: the lagging max over key tiles, a float model against float64",
          "[attention][online_max]") {
  // The kernels' loop for one row, in float: per tile of 64 logits, m = next_row_max(m, tile max),
  // corr = exp2(m_old - m), l = l * corr + sum exp2(x - m), o = o * corr + sum exp2(x - m) v.
  // Logit scales from 0.5 to 1e6 (base 2) and tiles whose max rises, falls or jumps; every P
  // must stay at most 2^8 (fp16 holds it) and o / l, m + log2 l match float64.
  std::mt19937_64 rng(7);
  std::normal_distribution<double> nd(0.0, 1.0);
  for (double scale : {0.5, 2.0, 7.0, 40.0, 1e3, 1e6}) {
    for (int trend : {-1, 0, 1}) {
      const int tiles = 24, per = 64;
      std::vector<float> x(size_t(tiles * per)), v(x.size());
      for (int j = 0; j < tiles * per; ++j) {
        x[size_t(j)] = static_cast<float>(scale * (nd(rng) + 0.05 * trend * (j / per)));
        v[size_t(j)] = static_cast<float>(nd(rng));
      }
      float m = -kInf, l = 0.0f, o = 0.0f, p_max = 0.0f;
      for (int tile = tiles - 1; tile >= 0; --tile) {  // the kernels walk keys last to first
        float mx = -kInf;
        for (int e = 0; e < per; ++e) mx = std::fmax(mx, x[size_t(tile * per + e)]);
        const float m_new = next_row_max(m, mx);
        const float offset = m_new == -kInf ? 0.0f : m_new;
        const float corr = std::exp2(m - offset);
        m = m_new;
        l *= corr;
        o *= corr;
        for (int e = 0; e < per; ++e) {
          const float p = std::exp2(x[size_t(tile * per + e)] - offset);
          p_max = std::fmax(p_max, p);
          l += p;
          o += p * v[size_t(tile * per + e)];
        }
      }
      double ref_m = -INFINITY, ref_l = 0, ref_o = 0;
      for (float xi : x) ref_m = std::fmax(ref_m, double(xi));
      for (size_t j = 0; j < x.size(); ++j) {
        const double p = std::exp2(double(x[j]) - ref_m);
        ref_l += p;
        ref_o += p * double(v[j]);
      }
      INFO("scale " << scale << " trend " << trend);
      CHECK(p_max <= 256.0f * (1.0f + 1e-6f));
      CHECK(std::fabs(double(o) / double(l) - ref_o / ref_l) <= 1e-4 * (1.0 + std::fabs(ref_o / ref_l)));
      CHECK(std::fabs((double(m) + std::log2(double(l))) - (ref_m + std::log2(ref_l))) <=
            2e-5 + 1e-6 * std::fabs(ref_m));
    }
  }
}
