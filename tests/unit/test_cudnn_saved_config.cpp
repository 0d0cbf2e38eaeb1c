// What a plan bundle stores for a cuDNN step: the engine index and knob choices as text, then
// maybe cuDNN's serialized plan, parsed back exactly; anything else is refused with the line that
// is wrong (no GPU, no cuDNN needed).
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
  // a serialized plan (any bytes, newlines included) ends the text and comes back byte for byte
  c.plan_json = "{\"engine\": 8,\n \"blob\": \"knob 1 2\\nengine 3\"}\n";
  const auto with_plan = parse_saved_config(to_text(c), &why);
  ASSERT_TRUE(with_plan) << why;
  EXPECT_EQ(with_plan->plan_json, c.plan_json);
  EXPECT_EQ(with_plan->knobs, c.knobs);
  // the digest of the graph the plan was made for comes back too
  c.graph_digest = std::string(63, 'a') + "0";
  const auto with_digest = parse_saved_config(to_text(c), &why);
  ASSERT_TRUE(with_digest) << why;
  EXPECT_EQ(with_digest->graph_digest, c.graph_digest);
  EXPECT_EQ(with_digest->plan_json, c.plan_json);
  // version 2 texts (a plan, no digest) still parse; the loader will not use such a plan
  const auto v2 = parse_saved_config("sinter.cudnn.engine_config 2\nengine 8\nplan_json 2\n{}", &why);
  ASSERT_TRUE(v2) << why;
  EXPECT_EQ(v2->plan_json, "{}");
  EXPECT_TRUE(v2->graph_digest.empty());
  // version 1 texts (no plan) still parse
  const auto v1 = parse_saved_config("sinter.cudnn.engine_config 1\nengine 8\nknob 24 7\n", &why);
  ASSERT_TRUE(v1) << why;
  EXPECT_EQ(v1->engine, 8);
  EXPECT_TRUE(v1->plan_json.empty());
}

TEST(CudnnSavedConfig, DamageIsNamed) {
  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {"", "not a cuDNN engine config"},
      {"sinter.cudnn.engine_config 4\nengine 1\n", "not a cuDNN engine config"},
      {"sinter.cudnn.engine_config 3\nengine 1\ngraph abc\n", "not 64 hex digits"},
      {"sinter.cudnn.engine_config 2\nengine 1\ngraph " + std::string(64, 'a') + "\n", "line 3"},  // version 2 has none
      {"sinter.cudnn.engine_config 1\nengine 1\nplan_json 2\n{}", "line 3"},  // version 1 has none
      {"sinter.cudnn.engine_config 2\nengine 1\nplan_json 3\n{}", "should be 3 bytes"},
      {"sinter.cudnn.engine_config 2\nengine 1\nplan_json 1\n{}", "should be 1 bytes"},
      {"sinter.cudnn.engine_config 2\nengine 1\nplan_json 0\n", "line 3"},
      {"sinter.cudnn.engine_config 2\nengine 1\nplan_json 2 x\n{}", "extra words"},
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
