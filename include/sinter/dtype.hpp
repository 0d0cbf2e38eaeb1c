// Element types and the exact rounding rules that the CPU reference (and every GPU kernel) uses
// when a value crosses a tensor boundary.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace sinter {

enum class DType : uint8_t { f32, f16, bf16, fp8_e4m3, fp8_e5m2, i32, i64, boolean };

inline constexpr DType kAllDTypes[] = {DType::f32,      DType::f16,      DType::bf16, DType::fp8_e4m3,
                                       DType::fp8_e5m2, DType::i32,      DType::i64,  DType::boolean};

// "f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2", "i32", "i64", "bool".
std::string_view to_string(DType t);
std::optional<DType> parse_dtype(std::string_view name);

int64_t dtype_size(DType t);  // bytes per element
bool is_float(DType t);       // f32, f16, bf16, fp8_*
bool is_fp8(DType t);
bool is_integer(DType t);     // i32, i64

// Rounds a value to the nearest value representable in `t`:
// - f32, f16, bf16: round to nearest, ties to even; overflow becomes +-inf (IEEE).
// - fp8_e4m3 (OCP E4M3FN) and fp8_e5m2: round to nearest even, then saturate: finite values and
//   infinities beyond the largest finite magnitude become +-max finite (448 and 57344), as the
//   satfinite conversions of the OCP spec and of PTX cvt.satfinite do. NaN stays NaN.
// - i32, i64: truncate toward zero, saturate at the type's range; NaN becomes 0.
// - bool: nonzero (and NaN) becomes 1.
// The result is the exact value as a double. Rounding is done from the double directly (never
// through float first), so there is no double rounding.
double round_to_dtype(double x, DType t);

// Bit-exact encoding of a value into the storage of `t` (the value is rounded first) and back.
// `out` must have dtype_size(t) bytes.
void encode_value(double x, DType t, void* out);
double decode_value(const void* in, DType t);

// Bit patterns of the narrow float formats (the value is rounded first).
uint16_t to_bf16_bits(double x);
uint16_t to_f16_bits(double x);
uint8_t to_fp8_e4m3_bits(double x);
uint8_t to_fp8_e5m2_bits(double x);
double from_bf16_bits(uint16_t bits);
double from_f16_bits(uint16_t bits);
double from_fp8_e4m3_bits(uint8_t bits);
double from_fp8_e5m2_bits(uint8_t bits);

// Largest finite value of a float dtype (448 for e4m3, 57344 for e5m2, 65504 for f16, ...).
double dtype_max_finite(DType t);

}  // namespace sinter
