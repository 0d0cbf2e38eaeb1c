// libFuzzer target for the JSON graph loader. Any input must either load or fail with a
// sinter::Error; anything else escaping (an nlohmann exception, std::out_of_range, ...) is a bug,
// and so is a crash, a leak or undefined behaviour, which the sanitizers catch. A graph that
// loads must save, reload and save again to the same text with the same structural hash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "sinter/error.hpp"
#include "sinter/graph.hpp"
#include "sinter/json.hpp"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_graph_json: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<sinter::Graph> g;
  try {
    g = sinter::load_graph_json(text, "fuzz");
  } catch (const sinter::Error&) {
    return 0;  // the expected way to reject an input
  } catch (const std::exception& e) {
    die("an exception other than sinter::Error escaped load_graph_json", e.what());
  } catch (...) {
    die("a non-standard exception escaped load_graph_json", "");
  }
  try {
    const std::string first = sinter::save_graph_json(*g);
    const sinter::Graph back = sinter::load_graph_json(first, "resaved");
    const std::string second = sinter::save_graph_json(back);
    if (first != second)
      die("save(load(save(g))) differs from save(g)", first + "\n---- vs ----\n" + second);
    if (sinter::structural_hash(*g, true) != sinter::structural_hash(back, true)) {
      die("the reloaded graph has another structural hash", first);
    }
  } catch (const std::exception& e) {
    die("a graph that loaded failed to save and reload", e.what());
  }
  return 0;
}
