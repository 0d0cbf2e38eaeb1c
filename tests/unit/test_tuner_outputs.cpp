// The tuner's guard against fast but wrong candidates: outputs must agree with the first
// candidate's within twice their error bound (tune::output_disagreement).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sinter/graph.hpp"
#include "sinter/host_tensor.hpp"
#include "tune/tuner.hpp"

using namespace sinter;

namespace {

struct Fixture {
  Graph g{"outs"};
  std::vector<TensorId> outs;
  Fixture() {
    auto x = g.input("x", DType::bf16, {4, 64});
    auto y = g.gelu(x);
    g.output(y, "y");
    g.output(g.amax(y), "amax");
    g.validate();
    outs = g.outputs();
  }
  std::vector<HostTensor> values(uint64_t seed) const {
    std::vector<HostTensor> v;
    for (TensorId t : outs) {
      HostTensor h(g.tensor(t).dtype, g.tensor(t).dims);
      fill_random(h, seed);
      v.push_back(std::move(h));
    }
    return v;
  }
};

}  // namespace

TEST(TunerOutputs, IdenticalAndSlightlyDifferentOutputsAgree) {
  const Fixture f;
  const auto want = f.values(1);
  EXPECT_EQ(tune::output_disagreement(f.g, f.outs, want, want, "jit[0]"), "");
  auto got = want;
  got[0].set(3, got[0].get(3) * 1.004);  // one bf16 ulp or so: far inside 2 x 1e-2
  EXPECT_EQ(tune::output_disagreement(f.g, f.outs, got, want, "jit[0]"), "");
}

TEST(TunerOutputs, AWrongOutputIsNamedWithItsError) {
  const Fixture f;
  const auto want = f.values(1);
  const auto other = f.values(2);  // unrelated values: rel L2 around 1
  auto got = want;
  got[0] = other[0];
  const std::string why = tune::output_disagreement(f.g, f.outs, got, want, "jit[0]");
  EXPECT_NE(why.find("'y'"), std::string::npos) << why;
  EXPECT_NE(why.find("jit[0]"), std::string::npos) << why;
  EXPECT_NE(why.find("> 0.02"), std::string::npos) << why;
}

TEST(TunerOutputs, NanWhereTheOtherHasAValueDisagrees) {
  const Fixture f;
  const auto want = f.values(1);
  auto got = want;
  got[1].set(0, std::numeric_limits<double>::quiet_NaN());
  EXPECT_NE(tune::output_disagreement(f.g, f.outs, got, want, "cublaslt[0]"), "");
}
