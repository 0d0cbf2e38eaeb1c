// The invalid-input suite: every tests/errors/NAME.json must fail to load with the error code and
// every substring listed in NAME.expected:
//   code: parse            <- the ErrorCode (parse, invalid_graph, io, ...)
//   /nodes/0/attrs/stride  <- each further non-empty line must occur in the message
// Plus the file-level and C++-API errors that a file cannot express.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sinter/error.hpp"
#include "sinter/graph.hpp"
#include "sinter/json.hpp"

using namespace sinter;
namespace fs = std::filesystem;

namespace {

const fs::path kErrorsDir = fs::path(SINTER_TESTS_DIR) / "errors";

std::vector<std::string> error_cases() {
  std::vector<std::string> names;
  if (!fs::is_directory(kErrorsDir)) return names;
  for (const auto& e : fs::directory_iterator(kErrorsDir)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

ErrorCode parse_code(const std::string& s) {
  const std::pair<const char*, ErrorCode> codes[] = {
      {"parse", ErrorCode::parse},
      {"invalid_graph", ErrorCode::invalid_graph},
      {"invalid_argument", ErrorCode::invalid_argument},
      {"io", ErrorCode::io},
  };
  for (const auto& [name, code] : codes) {
    if (s == name) return code;
  }
  throw std::runtime_error("unknown error code '" + s + "' in an .expected file");
}

struct Expectation {
  ErrorCode code = ErrorCode::internal;
  std::vector<std::string> substrings;
};

Expectation read_expected(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing " + path.string());
  Expectation e;
  bool have_code = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line.rfind("code: ", 0) == 0) {
      e.code = parse_code(line.substr(6));
      have_code = true;
    } else {
      e.substrings.push_back(line);
    }
  }
  if (!have_code) throw std::runtime_error(path.string() + " has no 'code:' line");
  return e;
}

class ErrorFile : public testing::TestWithParam<std::string> {};

TEST_P(ErrorFile, FailsWithTheExpectedMessage) {
  const fs::path json = kErrorsDir / (GetParam() + ".json");
  const Expectation want = read_expected(kErrorsDir / (GetParam() + ".expected"));
  ASSERT_FALSE(want.substrings.empty()) << "an .expected file must name what the message says";
  try {
    load_graph_file(json.string());
    FAIL() << json << " loaded without an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), want.code) << e.what();
    EXPECT_EQ(e.message().rfind(json.string(), 0), 0u)
        << "the message must start with the path: " << e.message();
    for (const std::string& s : want.substrings) {
      EXPECT_NE(e.message().find(s), std::string::npos)
          << "missing \"" << s << "\" in: " << e.message();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Errors, ErrorFile, testing::ValuesIn(error_cases()),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace

TEST(Errors, SuiteIsLargeAndComplete) {
  const auto cases = error_cases();
  EXPECT_GE(cases.size(), 35u);
  for (const auto& e : fs::directory_iterator(kErrorsDir)) {
    const fs::path& p = e.path();
    if (p.extension() == ".expected") {
      EXPECT_TRUE(fs::exists(fs::path(p).replace_extension(".json"))) << p << " has no .json";
    } else {
      EXPECT_EQ(p.extension(), ".json") << p << " is neither .json nor .expected";
    }
  }
}

TEST(Errors, UnreadableFilesAreIoErrorsNamingThePath) {
  for (const fs::path& p : {kErrorsDir / "no_such_file.json", kErrorsDir}) {
    try {
      load_graph_file(p.string());
      ADD_FAILURE() << p << " loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::io) << e.what();
      EXPECT_NE(e.message().find(p.string()), std::string::npos) << e.message();
    }
  }
}

TEST(Errors, SyntaxErrorsCountLinesAndCharacters) {
  // line 2, and the column counts the two-byte 'é' as one character
  try {
    load_graph_json("{\n  \"é\": tru }", "mem");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::parse);
    EXPECT_EQ(e.message().rfind("mem:2:11: invalid JSON", 0), 0u) << e.message();
  }
  try {
    load_graph_json("", "empty");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message().rfind("empty:1:1: ", 0), 0u) << e.message();
  }
}

// Builder calls check at once; these are the C++ faces of some of the file errors above.
TEST(Errors, BuilderCallsThrow) {
  Graph g("api");
  auto x = g.input("x", DType::f32, {4, 8});
  auto w = g.input("w", DType::f32, {6, 3});
  auto expect = [](auto&& call, ErrorCode code, const std::string& text) {
    try {
      call();
      ADD_FAILURE() << "no error; expected: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(e.message().find(text), std::string::npos) << e.message();
    }
  };
  expect([&] { g.input("x", DType::f32, {1}); }, ErrorCode::invalid_argument,
         "already has a tensor named 'x'");
  expect(
      [&] {
        g.input("big", DType::f32, {1, 2, 3, 4, 5, 6, 7, 8, 9});
      },
      ErrorCode::invalid_graph, "rank 9");
  expect([&] { g.matmul(x, w); }, ErrorCode::invalid_graph, "contraction sizes differ");
  expect([&] { g.reshape(x, {5, -1}); }, ErrorCode::invalid_graph, "reshape");
  expect([&] { g.permute(x, {0, 0}); }, ErrorCode::invalid_graph, "not a permutation");
  expect([&] { g.concat({x, w}, 0); }, ErrorCode::invalid_graph, "must match");
  expect([&] { g.gather(x, w, 0); }, ErrorCode::invalid_graph, "must be i32 or i64");
  expect([&] { g.gather(x, g.input("gather_ids", DType::i64, {3}), 5); }, ErrorCode::invalid_graph, "out of range");
  expect([&] { g.sum(x, {2}); }, ErrorCode::invalid_graph, "out of range");
  expect([&] { g.unary(OpKind::add, x); }, ErrorCode::invalid_argument, "not a unary op");
}
