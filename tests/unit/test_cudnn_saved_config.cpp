// What a plan bundle stores for a cuDNN step: the engine index and knob choices as text, parsed
// back exactly; anything else is refused with the line that is wrong (no GPU, no cuDNN needed).
#include <gtest/gtest.h>

#include "engines/cudnn/engine_configs.hpp"

using namespace sinter::cudnn;

TEST(CudnnSavedConfig, TextRoundTrip) {
  SavedConfig c;
  c.engine = 8;
  c.knobs = {{24, 7}, {2, 0}, {13, -1}};
  const std::string text = to_text(c);
  std::string why;
  const auto back = parse_saved_config(text, &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->engine, 8);
  EXPECT_EQ(back->knobs, c.knobs);
  EXPECT_EQ(to_text(*back), text);
  SavedConfig bare;  // an engine without knobs
  bare.engine = 0;
  ASSERT_TRUE(parse_saved_config(to_text(bare), &why)) << why;
}

TEST(CudnnSavedConfig, DamageIsNamed) {
  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {"", "not a cuDNN engine config"},
      {"sinter.cudnn.engine_config 2\nengine 1\n", "not a cuDNN engine config"},
      {"sinter.cudnn.engine_config 1\n", "names no engine"},
      {"sinter.cudnn.engine_config 1\nengine 1\nengine 2\n", "line 3"},
      {"sinter.cudnn.engine_config 1\nengine 1\nknob 24\n", "line 3"},
      {"sinter.cudnn.engine_config 1\nengine 1\nknob 9999 1\n", "line 3"},
      {"sinter.cudnn.engine_config 1\nengine -4\n", "line 2"},
      {"sinter.cudnn.engine_config 1\nengine 1 2\n", "extra words"},
  };
  for (const Case& c : cases) {
    std::string why;
    EXPECT_FALSE(parse_saved_config(c.text, &why)) << c.text;
    EXPECT_NE(why.find(c.expect), std::string::npos) << "expected \"" << c.expect << "\" in: " << why;
  }
}
