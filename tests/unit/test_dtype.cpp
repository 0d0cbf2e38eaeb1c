// Rounding to bf16, fp16 and fp8 against known bit patterns (IEEE 754, the OCP FP8 spec).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sinter/dtype.hpp"

using namespace sinter;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

TEST(DType, NamesRoundTrip) {
  for (DType t : kAllDTypes) EXPECT_EQ(parse_dtype(to_string(t)), t);
  EXPECT_FALSE(parse_dtype("float32").has_value());
  EXPECT_EQ(dtype_size(DType::bf16), 2);
  EXPECT_EQ(dtype_size(DType::fp8_e4m3), 1);
  EXPECT_EQ(dtype_size(DType::i64), 8);
}

TEST(DType, Bf16KnownBits) {
  EXPECT_EQ(to_bf16_bits(1.0), 0x3F80);
  EXPECT_EQ(to_bf16_bits(-2.0), 0xC000);
  EXPECT_EQ(to_bf16_bits(0.0), 0x0000);
  EXPECT_EQ(to_bf16_bits(-0.0), 0x8000);
  EXPECT_EQ(to_bf16_bits(3.140625), 0x4049);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0)
  EXPECT_EQ(to_bf16_bits(1.0 + std::ldexp(1, -8)), 0x3F80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even)
  EXPECT_EQ(to_bf16_bits(1.0 + 3 * std::ldexp(1, -8)), 0x3F82);
  // just above the tie rounds up
  EXPECT_EQ(to_bf16_bits(1.0 + std::ldexp(1, -8) + std::ldexp(1, -30)), 0x3F81);
  EXPECT_EQ(to_bf16_bits(kInf), 0x7F80);
  EXPECT_EQ(to_bf16_bits(1e39), 0x7F80);  // overflow to inf
  EXPECT_EQ(to_bf16_bits(std::ldexp(1.0, -133)), 0x0001);  // smallest subnormal
  EXPECT_TRUE(std::isnan(from_bf16_bits(to_bf16_bits(kNaN))));
  EXPECT_EQ(from_bf16_bits(0x3F80), 1.0);
  EXPECT_EQ(from_bf16_bits(0x7F7F), dtype_max_finite(DType::bf16));
}

TEST(DType, F16KnownBits) {
  EXPECT_EQ(to_f16_bits(1.0), 0x3C00);
  EXPECT_EQ(to_f16_bits(-2.5), 0xC100);
  EXPECT_EQ(to_f16_bits(65504.0), 0x7BFF);
  EXPECT_EQ(to_f16_bits(65519.0), 0x7BFF);  // below the halfway point to 65536
  EXPECT_EQ(to_f16_bits(65520.0), 0x7C00);  // ties to even = 65536 = overflow -> inf
  EXPECT_EQ(to_f16_bits(std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(to_f16_bits(std::ldexp(1.0, -25)), 0x0000);  // tie with zero -> even (zero)
  EXPECT_EQ(to_f16_bits(std::ldexp(1.5, -25)), 0x0001);
  EXPECT_EQ(to_f16_bits(std::ldexp(1.0, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(to_f16_bits(0.1), 0x2E66);
  EXPECT_EQ(from_f16_bits(0x3555), 0.333251953125);
  EXPECT_EQ(from_f16_bits(0xFC00), -kInf);
}

TEST(DType, Fp8E4M3KnownBits) {
  EXPECT_EQ(to_fp8_e4m3_bits(1.0), 0x38);
  EXPECT_EQ(to_fp8_e4m3_bits(448.0), 0x7E);
  EXPECT_EQ(to_fp8_e4m3_bits(-448.0), 0xFE);
  EXPECT_EQ(to_fp8_e4m3_bits(500.0), 0x7E);   // saturates
  EXPECT_EQ(to_fp8_e4m3_bits(1e9), 0x7E);
  EXPECT_EQ(to_fp8_e4m3_bits(kInf), 0x7E);    // satfinite: inf -> max
  EXPECT_EQ(to_fp8_e4m3_bits(-kInf), 0xFE);
  EXPECT_EQ(to_fp8_e4m3_bits(kNaN) & 0x7F, 0x7F);
  EXPECT_EQ(to_fp8_e4m3_bits(std::ldexp(1.0, -9)), 0x01);  // smallest subnormal
  EXPECT_EQ(to_fp8_e4m3_bits(std::ldexp(1.0, -6)), 0x08);  // smallest normal
  EXPECT_EQ(to_fp8_e4m3_bits(0.3), 0x2A);  // 0.3 -> 0.3125 = 1.25 * 2^-2
  // 1.0625 is halfway between 1.0 (even mantissa 000) and 1.125 (001)
  EXPECT_EQ(to_fp8_e4m3_bits(1.0625), 0x38);
  EXPECT_EQ(to_fp8_e4m3_bits(1.1875), 0x3A);  // halfway 1.125/1.25 -> 1.25 (even)
  EXPECT_EQ(from_fp8_e4m3_bits(0x7E), 448.0);
  EXPECT_EQ(from_fp8_e4m3_bits(0x77), 240.0);
  EXPECT_EQ(from_fp8_e4m3_bits(0x78), 256.0);  // exponent 1111 is finite in E4M3FN
  EXPECT_TRUE(std::isnan(from_fp8_e4m3_bits(0x7F)));
  EXPECT_TRUE(std::isnan(from_fp8_e4m3_bits(0xFF)));
}

TEST(DType, Fp8E5M2KnownBits) {
  EXPECT_EQ(to_fp8_e5m2_bits(1.0), 0x3C);
  EXPECT_EQ(to_fp8_e5m2_bits(57344.0), 0x7B);
  EXPECT_EQ(to_fp8_e5m2_bits(70000.0), 0x7B);  // saturates
  EXPECT_EQ(to_fp8_e5m2_bits(kInf), 0x7B);
  EXPECT_EQ(to_fp8_e5m2_bits(-kInf), 0xFB);
  EXPECT_EQ(to_fp8_e5m2_bits(std::ldexp(1.0, -16)), 0x01);  // smallest subnormal
  EXPECT_EQ(to_fp8_e5m2_bits(1.125), 0x3C);  // tie -> even (1.0)
  EXPECT_EQ(to_fp8_e5m2_bits(1.375), 0x3E);  // tie between 1.25 and 1.5 -> 1.5 (even)
  EXPECT_EQ(from_fp8_e5m2_bits(0x7C), kInf);
  EXPECT_TRUE(std::isnan(from_fp8_e5m2_bits(0x7D)));
}

TEST(DType, EveryPatternDecodesAndReEncodes) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const double v = from_bf16_bits(static_cast<uint16_t>(b));
    if (!std::isnan(v)) {
      EXPECT_EQ(to_bf16_bits(v), b);
    }
    const double h = from_f16_bits(static_cast<uint16_t>(b));
    if (!std::isnan(h)) {
      EXPECT_EQ(to_f16_bits(h), b);
    }
  }
  for (uint32_t b = 0; b < 0x100; ++b) {
    const double e4 = from_fp8_e4m3_bits(static_cast<uint8_t>(b));
    if (!std::isnan(e4)) {
      EXPECT_EQ(to_fp8_e4m3_bits(e4), b);
    }
    const double e5 = from_fp8_e5m2_bits(static_cast<uint8_t>(b));
    if (!std::isnan(e5) && !std::isinf(e5)) {
      EXPECT_EQ(to_fp8_e5m2_bits(e5), b);
    }
  }
}

TEST(DType, IntegerAndBoolRounding) {
  EXPECT_EQ(round_to_dtype(2.7, DType::i32), 2);
  EXPECT_EQ(round_to_dtype(-2.7, DType::i32), -2);
  EXPECT_EQ(round_to_dtype(1e12, DType::i32), 2147483647);
  EXPECT_EQ(round_to_dtype(-1e12, DType::i32), -2147483648.0);
  EXPECT_EQ(round_to_dtype(kNaN, DType::i64), 0);
  EXPECT_EQ(round_to_dtype(0.5, DType::boolean), 1);
  EXPECT_EQ(round_to_dtype(0.0, DType::boolean), 0);
  EXPECT_EQ(round_to_dtype(1.0 + 1e-12, DType::f32), 1.0);  // below f32 resolution
}
