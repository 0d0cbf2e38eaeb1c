// Small helpers shared by the reference executor tests (test_ref_*.cpp): building host tensors
// from literal values, running a graph and reading one output, comparing value lists with NaN and
// infinity handled exactly, and checking the text of a sinter::Error.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "sinter/error.hpp"
#include "sinter/graph.hpp"
#include "sinter/host_tensor.hpp"
#include "sinter/reference.hpp"

namespace ref_test {

using namespace sinter;

inline const double kInf = std::numeric_limits<double>::infinity();
inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

inline HostTensor tensor(DType t, Dims dims, const std::vector<double>& values) {
  return HostTensor::from_values(t, std::move(dims), values);
}

// Runs g and returns the values of output `name` (checking that it has the graph's dims).
inline std::vector<double> run_values(const Graph& g, const TensorMap& inputs,
                                      const std::string& name) {
  const TensorMap out = run_reference(g, inputs);
  auto it = out.find(name);
  if (it == out.end()) {
    ADD_FAILURE() << "output '" << name << "' missing";
    return {};
  }
  EXPECT_EQ(it->second.dims(), g.tensor(*g.find_tensor(name)).dims);
  EXPECT_TRUE(it->second.is_contiguous());
  return it->second.values();
}

// Element-wise comparison: NaN matches NaN, an infinity matches the same infinity, and finite
// values match within abs_tol + rel_tol * |want| (both 0: bit-exact equality).
inline void expect_values(const std::vector<double>& got, const std::vector<double>& want,
                          double rel_tol = 0, double abs_tol = 0) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": got " << got[i] << ", want NaN";
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], abs_tol + rel_tol * std::fabs(want[i])) << "at " << i;
    }
  }
}

// The values of `want` rounded to `t`, as the executor rounds at a tensor boundary.
inline std::vector<double> rounded(std::vector<double> want, DType t) {
  for (double& v : want) v = round_to_dtype(v, t);
  return want;
}

// Runs f; returns the sinter::Error it throws (code and message), or fails the test.
template <typename F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a sinter::Error";
  return Error(ErrorCode::internal, "(nothing thrown)");
}

inline void expect_contains(const std::string& text, const std::vector<std::string>& parts) {
  for (const auto& p : parts) {
    EXPECT_NE(text.find(p), std::string::npos) << "'" << p << "' not in: " << text;
  }
}

}  // namespace ref_test
