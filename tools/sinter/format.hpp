// Small printing (and file writing) helpers shared by the subcommands.
#pragma once

#include <string>

#include "sinter/graph.hpp"
#include "sinter/host_tensor.hpp"

namespace sinter::cli {

std::string human_flops(double flops);   // "1.07 GFLOP"
std::string human_bytes(double bytes);   // "9.44 MB"
std::string human_ms(double ms);         // "12.3 ms" / "850 us"
std::string type_string(const TensorInfo& t);  // "bf16 [128, 1024]"
std::string stats_string(const HostTensor& t);  // "min -1.2 max 3.4 mean 0.01 l2 55.1"
// Writes `text` to the file `path` (replacing it). Error(io) naming the file when that fails.
void write_file(const std::string& path, const std::string& text);
// The graph summary that `sinter check` prints.
void print_graph_summary(const Graph& g, bool detailed);

}  // namespace sinter::cli
