// The jit engine's typed configs: the text form names every field, reads back to the same
// config, and a malformed text is an error naming the word that is wrong.
#include <gtest/gtest.h>

#include "engines/jit/kernel_config.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

TEST(KernelConfig, TextRoundTrips) {
  const std::vector<KernelConfig> configs = {
      PointwiseConfig{8, true, false, true},
      RowwiseConfig{RowStage::bulk, 256, 3, true, false, 2, false},
      MatmulConfig{MatmulTile::sm90_direct, {256, 128, 4, false, 2}},
      MatmulConfig{MatmulTile::decode_tma_rows, {}},
      SdpaConfig{SdpaKernel::decode},
      ReductionConfig{},
      LayoutConfig{},
      ConvConfig{}};
  for (const KernelConfig& c : configs) {
    const std::string text = config_text(c);
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_kernel_config(text), c);
    EXPECT_EQ(config_text(parse_kernel_config(text)), text);
  }
  EXPECT_EQ(config_text(MatmulConfig{MatmulTile::sm90_direct, {128, 256, 4, false, 2}}),
            "matmul tile=sm90_direct bm=128 bn=256 stages=4 ping_pong=0 cluster=2");
  // fields of another tile are not part of a config's text
  EXPECT_EQ(config_text(MatmulConfig{MatmulTile::generic, {64, 64, 2, true, 1}}), "matmul tile=generic");
  EXPECT_EQ(config_text(ReductionConfig{}), "reduction");
}

TEST(KernelConfig, LeftOutFieldsKeepTheirDefaults) {
  EXPECT_EQ(parse_kernel_config("rowwise stage=off"), KernelConfig(RowwiseConfig{RowStage::off}));
  EXPECT_EQ(parse_kernel_config("  pointwise   unroll=2 "), KernelConfig(PointwiseConfig{2}));
}

TEST(KernelConfig, MalformedTextIsAClearError) {
  auto message = [](const std::string& text) {
    try {
      parse_kernel_config(text);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::parse);
      return e.message();
    }
    ADD_FAILURE() << "no error for '" << text << "'";
    return std::string();
  };
  EXPECT_NE(message("").find("empty"), std::string::npos);
  EXPECT_NE(message("gemm tile=generic").find("unknown kind 'gemm'"), std::string::npos);
  EXPECT_NE(message("rowwise colour=red").find("no field 'colour' in a rowwise config"), std::string::npos);
  EXPECT_NE(message("rowwise stage=sideways").find("bad value 'sideways' for 'stage'"), std::string::npos);
  EXPECT_NE(message("pointwise unroll=-1").find("bad value '-1'"), std::string::npos);
  EXPECT_NE(message("pointwise unroll=4x").find("bad value '4x'"), std::string::npos);
  EXPECT_NE(message("pointwise flat=2").find("bad value '2' for 'flat'"), std::string::npos);
  EXPECT_NE(message("pointwise unroll=4 unroll=8").find("given twice"), std::string::npos);
  EXPECT_NE(message("pointwise unroll").find("is not name=value"), std::string::npos);
  // the direct tile's fields exist only once the tile says so
  EXPECT_NE(message("matmul bm=128").find("no field 'bm'"), std::string::npos);
}

}  // namespace
}  // namespace sinter::jit
