#include "engines/jit/kernel_config.hpp"

#include <array>
#include <charconv>
#include <set>
#include <utility>
#include <vector>

#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

template <class E>
struct EnumNames;
template <>
struct EnumNames<RowStage> {
  static constexpr std::array<std::pair<RowStage, std::string_view>, 4> names{
      {{RowStage::heuristic, "heuristic"}, {RowStage::off, "off"}, {RowStage::on, "on"}, {RowStage::bulk, "bulk"}}};
};
template <>
struct EnumNames<MatmulTile> {
  static constexpr std::array<std::pair<MatmulTile, std::string_view>, 7> names{{{MatmulTile::decode_tma_rows, "decode_tma_rows"},
                                                                                 {MatmulTile::decode_tma, "decode_tma"},
                                                                                 {MatmulTile::decode_ffma, "decode_ffma"},
                                                                                 {MatmulTile::decode_gemv, "decode_gemv"},
                                                                                 {MatmulTile::sm90_ctile, "sm90_ctile"},
                                                                                 {MatmulTile::sm90_direct, "sm90_direct"},
                                                                                 {MatmulTile::generic, "generic"}}};
};
template <>
struct EnumNames<SdpaKernel> {
  static constexpr std::array<std::pair<SdpaKernel, std::string_view>, 2> names{
      {{SdpaKernel::decode, "decode"}, {SdpaKernel::simple, "simple"}}};
};

template <class E>
std::string_view enum_name(E e) {
  for (const auto& [v, n] : EnumNames<E>::names) {
    if (v == e) return n;
  }
  return "?";
}

constexpr std::array<std::string_view, std::variant_size_v<KernelConfig>> kKinds{
    "pointwise", "rowwise", "reduction", "layout", "matmul", "conv", "sdpa"};

// Fields are formatted and parsed by their C++ type.
void append_value(std::string& out, int v) { out += std::to_string(v); }
void append_value(std::string& out, bool v) { out += v ? "1" : "0"; }
template <class E>
  requires std::is_enum_v<E>
void append_value(std::string& out, E v) {
  out += enum_name(v);
}

bool read_value(std::string_view text, int& v) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() && v >= 0 && v <= (1 << 20);
}
bool read_value(std::string_view text, bool& v) {
  if (text != "0" && text != "1") return false;
  v = text == "1";
  return true;
}
template <class E>
  requires std::is_enum_v<E>
bool read_value(std::string_view text, E& v) {
  for (const auto& [e, n] : EnumNames<E>::names) {
    if (n == text) {
      v = e;
      return true;
    }
  }
  return false;
}

std::vector<std::string_view> words_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

[[noreturn]] void fail(std::string_view text, const std::string& what) {
  throw Error(ErrorCode::parse, "jit config '" + std::string(text) + "': " + what);
}

template <size_t I = 0>
KernelConfig default_of_kind(std::string_view kind, std::string_view text) {
  if constexpr (I == std::variant_size_v<KernelConfig>) {
    std::string kinds;
    for (std::string_view k : kKinds) kinds += (kinds.empty() ? "" : ", ") + std::string(k);
    fail(text, "unknown kind '" + std::string(kind) + "' (kinds: " + kinds + ")");
  } else {
    if (kKinds[I] == kind) return KernelConfig(std::in_place_index<I>);
    return default_of_kind<I + 1>(kind, text);
  }
}

}  // namespace

std::string_view to_string(RowStage s) { return enum_name(s); }
std::string_view to_string(MatmulTile t) { return enum_name(t); }
std::string_view to_string(SdpaKernel k) { return enum_name(k); }

std::string_view config_kind(const KernelConfig& c) { return kKinds.at(c.index()); }

std::string config_text(const KernelConfig& c) {
  std::string out(config_kind(c));
  std::visit(
      [&](const auto& cfg) {
        fields(cfg, [&](std::string_view name, const auto& value) {
          out += ' ';
          out += name;
          out += '=';
          append_value(out, value);
        });
      },
      c);
  return out;
}

KernelConfig parse_kernel_config(std::string_view text) {
  const std::vector<std::string_view> words = words_of(text);
  if (words.empty()) fail(text, "empty");
  KernelConfig config = default_of_kind(words[0], text);
  std::set<std::string_view> seen;
  for (size_t w = 1; w < words.size(); ++w) {
    const size_t eq = words[w].find('=');
    if (eq == std::string_view::npos) fail(text, "'" + std::string(words[w]) + "' is not name=value");
    const std::string_view name = words[w].substr(0, eq), value = words[w].substr(eq + 1);
    if (!seen.insert(name).second) fail(text, "field '" + std::string(name) + "' given twice");
    bool known = false, ok = false;
    std::visit(
        [&](auto& cfg) {
          fields(cfg, [&](std::string_view field, auto& slot) {
            if (field != name) return;
            known = true;
            ok = read_value(value, slot);
          });
        },
        config);
    if (!known) {
      fail(text, "no field '" + std::string(name) + "' in a " + std::string(config_kind(config)) + " config");
    }
    if (!ok) fail(text, "bad value '" + std::string(value) + "' for '" + std::string(name) + "'");
  }
  return config;
}

}  // namespace sinter::jit
