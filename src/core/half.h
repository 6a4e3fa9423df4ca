// Host-side fp16 / bf16 <-> fp32 conversions (IEEE 754 binary16 and bfloat16, round to
// nearest even) and fp8 -> fp32 decoding, used by the CPU backend and tests. Device code uses cuda_fp16/cuda_bf16.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/tensor.h"

namespace flashkit {

inline float bf16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu)) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  }
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400u) == 0);
      man &= 0x3ffu;
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (man << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_half(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // subnormal or zero in half
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // below half of min subnormal
    uint32_t man = (abs & 0x7fffffu) | 0x800000u;
    // value = man * 2^(e - 150) and the half subnormal unit is 2^-24, so the half mantissa is
    // man * 2^(e - 126) = man >> (126 - e), rounded to nearest even.
    int s = 126 - static_cast<int>(abs >> 23);
    uint32_t q = man >> s;
    uint32_t rem = man & ((1u << s) - 1u);
    uint32_t halfway = 1u << (s - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t e = (abs >> 23) - 127 + 15;
  uint32_t man = abs & 0x7fffffu;
  uint32_t h = (e << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into exponent: fine
  return static_cast<uint16_t>(sign | h);
}

// OCP 8-bit floats (OCP "8-bit Floating Point Specification (OFP8)" rev. 1.0, 2023) to fp32,
// exactly (every fp8 value is an fp32 value).
//   e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; S.1111.111 is NaN;
//           largest finite 448.
//   e5m2:   1 sign, 5 exponent (bias 15), 2 mantissa bits; IEEE-like (infinities, NaNs);
//           largest finite 57344. It is the upper byte of an fp16 value.
inline float fp8_e4m3_to_float(uint8_t v) {
  const int exp = (v >> 3) & 0xF, man = v & 0x7;
  if (exp == 0xF && man == 0x7) return std::numeric_limits<float>::quiet_NaN();
  // Normal: (1 + man/8) * 2^(exp-7); subnormal (exp 0): (man/8) * 2^-6.
  const float mag = exp == 0 ? std::ldexp(static_cast<float>(man), -9)
                             : std::ldexp(static_cast<float>(8 + man), exp - 10);
  return (v & 0x80u) ? -mag : mag;
}
inline float fp8_e5m2_to_float(uint8_t v) { return half_to_float(static_cast<uint16_t>(v << 8)); }

// Loads element `i` (element offset) of a float-typed buffer as fp32.
inline float load_as_float(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::F32: return static_cast<const float*>(base)[i];
    case DType::F16: return half_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::BF16: return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::F8E4M3: return fp8_e4m3_to_float(static_cast<const uint8_t*>(base)[i]);
    case DType::F8E5M2: return fp8_e5m2_to_float(static_cast<const uint8_t*>(base)[i]);
    default: return 0.0f;
  }
}

// Stores fp32 `v` as element `i` of a float-typed buffer, rounding to nearest even.
inline void store_from_float(void* base, DType t, int64_t i, float v) {
  switch (t) {
    case DType::F32: static_cast<float*>(base)[i] = v; break;
    case DType::F16: static_cast<uint16_t*>(base)[i] = float_to_half(v); break;
    case DType::BF16: static_cast<uint16_t*>(base)[i] = float_to_bf16(v); break;
    default: break;
  }
}

}  // namespace flashkit
