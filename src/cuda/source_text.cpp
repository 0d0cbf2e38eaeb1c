#include "cuda/source_text.hpp"

namespace sinter::cuda {

std::string without_line_comments(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  char quote = 0;  // the open literal's quote character, or 0
  for (size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if (quote) {
      out += c;
      if (c == '\\' && i + 1 < source.size()) {
        out += source[++i];
      } else if (c == quote || c == '\n') {
        quote = 0;
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      out += c;
      continue;
    }
    if (c == '/' && i + 1 < source.size() && source[i + 1] == '/') {
      while (i < source.size() && source[i] != '\n') ++i;
      // drop the spaces before the comment too
      while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
      if (i < source.size()) out += '\n';
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace sinter::cuda
