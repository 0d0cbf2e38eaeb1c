// Generated CUDA source as a key: the text without its // comments (they name a region's graph,
// tensors and nodes), lines kept, so that kernels of the same structure in different regions (a
// model's layers) are one kernel-cache entry and one megakernel task function.
#pragma once

#include <string>
#include <string_view>

namespace sinter::cuda {

// `source` with every // comment removed up to its line end (outside string and character
// literals); newlines stay, so line numbers do not move.
std::string without_line_comments(std::string_view source);

}  // namespace sinter::cuda
