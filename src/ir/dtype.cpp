// Exact rounding to the narrow float formats. Every format here is described by its exponent and
// mantissa widths, so one routine rounds a double to any of them with round-to-nearest-even and
// no intermediate float (no double rounding).
#include "sinter/dtype.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "sinter/error.hpp"

namespace sinter {
namespace {

struct FloatFormat {
  int exp_bits;
  int man_bits;
  int bias;
  bool has_inf;      // IEEE-style inf (all-ones exponent, zero mantissa)
  bool saturate;     // overflow and inf go to +-max finite instead of inf
  double max_finite;
};

// E4M3FN: no infinities; S.1111.111 is NaN, so the largest finite is 1.75 * 2^8 = 448.
constexpr FloatFormat kE4M3{4, 3, 7, false, true, 448.0};
constexpr FloatFormat kE5M2{5, 2, 15, true, true, 57344.0};
constexpr FloatFormat kF16{5, 10, 15, true, false, 65504.0};
constexpr FloatFormat kBF16{8, 7, 127, true, false, 3.38953138925153547590470800371487866880e38};

double round_to_format(double x, const FloatFormat& f) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) {
    if (f.saturate) return std::copysign(f.max_finite, x);
    return x;
  }
  if (x == 0) return x;
  const double ax = std::fabs(x);
  int e2;
  std::frexp(ax, &e2);  // ax = m * 2^e2, m in [0.5, 1): the unbiased exponent is e2 - 1
  int e = e2 - 1;
  const int min_normal_exp = 1 - f.bias;
  if (e < min_normal_exp) e = min_normal_exp;  // subnormals share the smallest quantum
  const double quantum = std::ldexp(1.0, e - f.man_bits);
  // ax / quantum is exact (a power-of-two scale); nearbyint in the default mode ties to even.
  double r = std::nearbyint(ax / quantum) * quantum;
  if (r > f.max_finite) {
    r = f.saturate ? f.max_finite : std::numeric_limits<double>::infinity();
  }
  return std::copysign(r, x);
}

// Bits of a value that is already exactly representable in the format.
uint32_t encode_format(double v, const FloatFormat& f) {
  const uint32_t sign = std::signbit(v) ? 1u : 0u;
  const uint32_t sign_bit = sign << (f.exp_bits + f.man_bits);
  const uint32_t exp_all = (1u << f.exp_bits) - 1u;
  if (std::isnan(v)) {
    // canonical quiet NaN: all-ones exponent and mantissa (e4m3's only NaN pattern)
    return sign_bit | (exp_all << f.man_bits) | ((1u << f.man_bits) - 1u);
  }
  if (std::isinf(v)) return sign_bit | (exp_all << f.man_bits);
  const double av = std::fabs(v);
  if (av == 0) return sign_bit;
  const int min_normal_exp = 1 - f.bias;
  int e2;
  std::frexp(av, &e2);
  const int e = e2 - 1;
  if (e < min_normal_exp) {
    const auto man = static_cast<uint32_t>(std::ldexp(av, f.bias - 1 + f.man_bits));
    return sign_bit | man;
  }
  const auto biased = static_cast<uint32_t>(e + f.bias);
  const auto man = static_cast<uint32_t>(std::ldexp(av, -e) * (1u << f.man_bits)) -
                   (1u << f.man_bits);
  return sign_bit | (biased << f.man_bits) | man;
}

double decode_format(uint32_t bits, const FloatFormat& f) {
  const uint32_t man_mask = (1u << f.man_bits) - 1u;
  const uint32_t exp_all = (1u << f.exp_bits) - 1u;
  const bool neg = (bits >> (f.exp_bits + f.man_bits)) & 1u;
  const uint32_t exp = (bits >> f.man_bits) & exp_all;
  const uint32_t man = bits & man_mask;
  double v;
  if (exp == exp_all && f.has_inf) {
    v = man == 0 ? std::numeric_limits<double>::infinity()
                 : std::numeric_limits<double>::quiet_NaN();
  } else if (exp == exp_all && !f.has_inf && man == man_mask) {
    v = std::numeric_limits<double>::quiet_NaN();  // e4m3fn: only S.1111.111 is NaN
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(man), 1 - f.bias - f.man_bits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(man), -f.man_bits),
                   static_cast<int>(exp) - f.bias);
  }
  return neg ? -v : v;
}

template <typename I>
double round_to_int(double x) {
  if (std::isnan(x)) return 0;
  const double t = std::trunc(x);
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
  // the largest I is not a double for i64; 2^63 is the first value out of range
  constexpr double hi_excl = -lo;
  if (t < lo) return lo;
  if (t >= hi_excl) return static_cast<double>(std::numeric_limits<I>::max());
  return t;
}

}  // namespace

std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::fp8_e4m3: return "fp8_e4m3";
    case DType::fp8_e5m2: return "fp8_e5m2";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : kAllDTypes) {
    if (to_string(t) == name) return t;
  }
  return std::nullopt;
}

int64_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::fp8_e4m3: return 1;
    case DType::fp8_e5m2: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::boolean: return 1;
  }
  return 1;
}

bool is_float(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || is_fp8(t);
}
bool is_fp8(DType t) { return t == DType::fp8_e4m3 || t == DType::fp8_e5m2; }
bool is_integer(DType t) { return t == DType::i32 || t == DType::i64; }

double dtype_max_finite(DType t) {
  switch (t) {
    case DType::f32: return std::numeric_limits<float>::max();
    case DType::f16: return kF16.max_finite;
    case DType::bf16: return kBF16.max_finite;
    case DType::fp8_e4m3: return kE4M3.max_finite;
    case DType::fp8_e5m2: return kE5M2.max_finite;
    case DType::i32: return std::numeric_limits<int32_t>::max();
    case DType::i64: return static_cast<double>(std::numeric_limits<int64_t>::max());
    case DType::boolean: return 1;
  }
  return 0;
}

double round_to_dtype(double x, DType t) {
  switch (t) {
    case DType::f32: return static_cast<double>(static_cast<float>(x));  // IEEE RNE cast
    case DType::f16: return round_to_format(x, kF16);
    case DType::bf16: return round_to_format(x, kBF16);
    case DType::fp8_e4m3: return round_to_format(x, kE4M3);
    case DType::fp8_e5m2: return round_to_format(x, kE5M2);
    case DType::i32: return round_to_int<int32_t>(x);
    case DType::i64: return round_to_int<int64_t>(x);
    case DType::boolean: return (x != 0 || std::isnan(x)) ? 1.0 : 0.0;
  }
  return x;
}

uint16_t to_bf16_bits(double x) {
  return static_cast<uint16_t>(encode_format(round_to_format(x, kBF16), kBF16));
}
uint16_t to_f16_bits(double x) {
  return static_cast<uint16_t>(encode_format(round_to_format(x, kF16), kF16));
}
uint8_t to_fp8_e4m3_bits(double x) {
  return static_cast<uint8_t>(encode_format(round_to_format(x, kE4M3), kE4M3));
}
uint8_t to_fp8_e5m2_bits(double x) {
  return static_cast<uint8_t>(encode_format(round_to_format(x, kE5M2), kE5M2));
}
double from_bf16_bits(uint16_t bits) { return decode_format(bits, kBF16); }
double from_f16_bits(uint16_t bits) { return decode_format(bits, kF16); }
double from_fp8_e4m3_bits(uint8_t bits) { return decode_format(bits, kE4M3); }
double from_fp8_e5m2_bits(uint8_t bits) { return decode_format(bits, kE5M2); }

void encode_value(double x, DType t, void* out) {
  switch (t) {
    case DType::f32: {
      const float v = static_cast<float>(x);
      std::memcpy(out, &v, 4);
      return;
    }
    case DType::f16: {
      const uint16_t v = to_f16_bits(x);
      std::memcpy(out, &v, 2);
      return;
    }
    case DType::bf16: {
      const uint16_t v = to_bf16_bits(x);
      std::memcpy(out, &v, 2);
      return;
    }
    case DType::fp8_e4m3: *static_cast<uint8_t*>(out) = to_fp8_e4m3_bits(x); return;
    case DType::fp8_e5m2: *static_cast<uint8_t*>(out) = to_fp8_e5m2_bits(x); return;
    case DType::i32: {
      const auto v = static_cast<int32_t>(round_to_int<int32_t>(x));
      std::memcpy(out, &v, 4);
      return;
    }
    case DType::i64: {
      const double r = round_to_int<int64_t>(x);
      const int64_t v = r >= 9.2233720368547758e18 ? std::numeric_limits<int64_t>::max()
                                                   : static_cast<int64_t>(r);
      std::memcpy(out, &v, 8);
      return;
    }
    case DType::boolean:
      *static_cast<uint8_t*>(out) = static_cast<uint8_t>(round_to_dtype(x, t));
      return;
  }
  throw Error(ErrorCode::internal, "encode_value: unknown dtype");
}

double decode_value(const void* in, DType t) {
  switch (t) {
    case DType::f32: {
      float v;
      std::memcpy(&v, in, 4);
      return v;
    }
    case DType::f16: {
      uint16_t v;
      std::memcpy(&v, in, 2);
      return from_f16_bits(v);
    }
    case DType::bf16: {
      uint16_t v;
      std::memcpy(&v, in, 2);
      return from_bf16_bits(v);
    }
    case DType::fp8_e4m3: return from_fp8_e4m3_bits(*static_cast<const uint8_t*>(in));
    case DType::fp8_e5m2: return from_fp8_e5m2_bits(*static_cast<const uint8_t*>(in));
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, in, 4);
      return v;
    }
    case DType::i64: {
      int64_t v;
      std::memcpy(&v, in, 8);
      return static_cast<double>(v);
    }
    case DType::boolean: return *static_cast<const uint8_t*>(in) != 0 ? 1.0 : 0.0;
  }
  throw Error(ErrorCode::internal, "decode_value: unknown dtype");
}

}  // namespace sinter
