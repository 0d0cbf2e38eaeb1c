// Writes examples/*.json from the C++ builders in example_graphs.cpp.
//   sinter_make_examples [OUTPUT_DIR]          the small examples (all_examples()) and, in
//                                              OUTPUT_DIR/tensor_parallel/, the tensor-parallel
//                                              ones (tensor_parallel_examples())
//   sinter_make_examples --models OUTPUT_DIR   the whole-model graphs (model_examples()) instead:
//                                              graph JSON only, no weights
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>

#include "example_graphs.hpp"
#include "sinter/json.hpp"

int main(int argc, char** argv) {
  const bool models = argc > 1 && std::strcmp(argv[1], "--models") == 0;
  // any other option (--help among them) is not an output folder
  const bool bad_option = argc > 1 && !models && argv[1][0] == '-';
  if ((models && argc != 3) || bad_option || (!models && argc > 2)) {
    std::fprintf(stderr, "usage: sinter_make_examples [OUTPUT_DIR] | --models OUTPUT_DIR\n");
    return bad_option && std::strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  const std::string dir = models ? argv[2] : argc > 1 ? argv[1] : SINTER_EXAMPLES_DIR;
  try {
    std::vector<sinter::examples::Example> list = models ? sinter::examples::model_examples() : sinter::examples::all_examples();
    if (!models) {
      for (auto& ex : sinter::examples::tensor_parallel_examples()) list.push_back(ex);
    }
    for (const auto& ex : list) {
      sinter::Graph g = ex.build();
      g.validate();
      std::filesystem::create_directories(std::filesystem::path(dir + "/" + ex.file).parent_path());
      sinter::save_graph_file(g, dir + "/" + ex.file);
      std::printf("wrote %s/%s\n", dir.c_str(), ex.file.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sinter_make_examples: %s\n", e.what());
    return 1;
  }
  return 0;
}
