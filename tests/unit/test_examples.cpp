// examples/*.json are generated from examples/example_graphs.cpp; they must not drift apart.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "example_graphs.hpp"
#include "sinter/json.hpp"

using namespace sinter;

TEST(Examples, CheckedInJsonMatchesTheBuilders) {
  for (const auto& ex : examples::all_examples()) {
    Graph g = ex.build();
    g.validate();
    std::ifstream in(std::string(SINTER_EXAMPLES_DIR) + "/" + ex.file);
    ASSERT_TRUE(in) << ex.file << " is missing: run build/sinter_make_examples";
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), save_graph_json(g))
        << ex.file << " is stale: run build/sinter_make_examples";
  }
}
