// Self-tests of the test helpers that other tests trust: the fast fp8 encoder used to fill fp8
// inputs and to round references (tests/common/test_util.hpp) against its definition, a scan of
// all 256 codes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "test_util.hpp"

TEST_CASE("test helpers: fp8_encode matches the 256-code scan", "[helpers][fp8]") {
  for (bool e4m3 : {true, false}) {
    INFO((e4m3 ? "e4m3" : "e5m2"));
    std::vector<double> xs = {0.0, -0.0, 1e-300, -1e-300, 1e300, -1e300};
    // Every finite code's value, the midpoints between neighbouring values (ties), and points
    // just beside them.
    std::vector<double> vals;
    for (int c = 0; c < 256; ++c) {
      const double v = fktest::fp8_value(uint8_t(c), e4m3);
      if (std::isfinite(v)) vals.push_back(v);
    }
    std::sort(vals.begin(), vals.end());
    for (size_t i = 0; i < vals.size(); ++i) {
      xs.push_back(vals[i]);
      if (i + 1 < vals.size()) {
        const double mid = 0.5 * (vals[i] + vals[i + 1]);
        xs.push_back(mid);
        xs.push_back(std::nextafter(mid, -INFINITY));
        xs.push_back(std::nextafter(mid, INFINITY));
      }
    }
    xs.push_back(2 * vals.back());
    xs.push_back(2 * vals.front());
    std::mt19937_64 rng(20261201);
    std::normal_distribution<double> nd(0.0, 1.0);
    for (int i = 0; i < 20000; ++i) xs.push_back(nd(rng) * std::ldexp(1.0, int(rng() % 40) - 20));
    int64_t bad = 0;
    double first_bad = 0;
    for (double x : xs) {
      if (fktest::fp8_encode(x, e4m3) != fktest::fp8_encode_scan(x, e4m3) && bad++ == 0) first_bad = x;
    }
    INFO("first mismatch at " << first_bad);
    CHECK(bad == 0);
    CHECK(xs.size() > 20000);
    // Codes the definition fixes: signed zeros (also for values too small to be anything
    // else), saturation with the sign (infinities and far-out values included), ties to even.
    const uint8_t top = e4m3 ? 0x7E : 0x7B;
    // Below half the least subnormal (2^-9 e4m3, 2^-16 e5m2): rounds to a zero.
    const double tiny = e4m3 ? std::ldexp(1.0, -12) : std::ldexp(1.0, -20);
    const double halfway = e4m3 ? 1.0 + 0.0625 : 1.0 + 0.125;  // between 1 and its successor
    const uint8_t one = e4m3 ? 0x38 : 0x3C;
    for (auto enc : {fktest::fp8_encode, fktest::fp8_encode_scan}) {
      CHECK(enc(0.0, e4m3) == 0x00);
      CHECK(enc(-0.0, e4m3) == 0x80);
      CHECK(enc(tiny, e4m3) == 0x00);
      CHECK(enc(-tiny, e4m3) == 0x80);
      CHECK(enc(INFINITY, e4m3) == top);
      CHECK(enc(-INFINITY, e4m3) == (top | 0x80));
      CHECK(enc(1e300, e4m3) == top);
      CHECK(enc(-1e300, e4m3) == (top | 0x80));
      CHECK(enc(1e6, e4m3) == top);
      CHECK(enc(1.0, e4m3) == one);
      CHECK(enc(-1.0, e4m3) == (one | 0x80));
      CHECK(enc(halfway, e4m3) == one);  // a tie: 1 has the even code
    }
  }
}
