// JSON graph files (format "sinter.graph", version 1; docs/graph-format.md). Loading validates the
// whole graph; any problem is a sinter::Error naming the place in the file (line:column for
// syntax, a JSON pointer such as /nodes/3/attrs/stride for content).
#pragma once

#include <string>
#include <string_view>

#include "sinter/graph.hpp"

namespace sinter {

inline constexpr int kGraphFormatVersion = 1;

Graph load_graph_json(std::string_view text, std::string_view source = "<string>");
Graph load_graph_file(const std::string& path);
// Deterministic: the same graph always gives the same text, and load(save(g)) saves to it again.
std::string save_graph_json(const Graph& g);
void save_graph_file(const Graph& g, const std::string& path);

}  // namespace sinter
