// Private to the JSON graph format (src/ir/json_*.cpp, docs/graph-format.md). A Cursor is a value
// of the parsed document together with its JSON pointer, so that every content error names its
// place in the file; the typed accessors bound every number the IR will do arithmetic with.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sinter/error.hpp"
#include "sinter/graph.hpp"

namespace sinter::json_detail {

using Json = nlohmann::json;

// Limits on what a file may ask for. They keep every product, sum and offset that the IR (and the
// executors) compute from file-supplied numbers far inside int64.
inline constexpr int64_t kMaxDim = int64_t{1} << 40;       // one dimension
inline constexpr int64_t kMaxElements = int64_t{1} << 50;  // elements of a tensor, extent of a view
inline constexpr int64_t kMaxConvAttr = int64_t{1} << 31;  // conv stride, padding, dilation, groups
inline constexpr size_t kMaxNodeInputs = 4096;             // so concat sums cannot overflow

// "2^40" for the powers of two above, the decimal number otherwise.
std::string format_bound(int64_t v);
// The shortest text that parses back to exactly `v` as JSON; "nan", "inf", "-inf" (as JSON
// strings, quotes included) for non-finite values, which JSON numbers cannot express.
std::string format_double(double v);
// A JSON string literal (quotes, escapes). Throws Error(invalid_argument) on invalid UTF-8.
std::string quote(std::string_view s);
// A short description of a value for "found ..." in messages: "\"abc\"", "12", "an object".
std::string describe(const Json& j);
// " (did you mean 'x'?)" when one of `known` is a plausible typo of `name`; empty otherwise.
std::string did_you_mean(std::string_view name, const std::vector<std::string_view>& known);
// Element count of dims within the limits above, or nullopt (rank, a dimension or the count).
std::optional<int64_t> bounded_elements(const Dims& dims);

// Parses JSON text. A syntax error is Error(parse) "SOURCE:LINE:COLUMN: ..."; a key repeated in
// one object is an error too (nlohmann would silently keep the last one, hiding a typo).
Json parse_json(std::string_view text, const std::string& source);

// Writes a one-line JSON object, keys in the order they are added: {"a": 1, "b": [2, 3]}.
class ObjectWriter {
 public:
  ObjectWriter& raw(std::string_view key, const std::string& value) {
    out_ += (out_.empty() ? "{" : ", ") + quote(key) + ": " + value;
    return *this;
  }
  ObjectWriter& integer(std::string_view key, int64_t v) { return raw(key, std::to_string(v)); }
  ObjectWriter& boolean(std::string_view key, bool v) { return raw(key, v ? "true" : "false"); }
  ObjectWriter& number(std::string_view key, double v) { return raw(key, format_double(v)); }
  ObjectWriter& name(std::string_view key, std::string_view v) { return raw(key, quote(v)); }
  ObjectWriter& dtype(std::string_view key, std::optional<DType> t) {
    return t ? name(key, to_string(*t)) : *this;
  }
  template <typename C>
  ObjectWriter& ints(std::string_view key, const C& values) {
    std::string s = "[";
    for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
    return raw(key, s + "]");
  }
  std::string str() const { return out_.empty() ? "{}" : out_ + "}"; }

 private:
  std::string out_;
};

class Cursor {
 public:
  Cursor(const Json& j, const std::string& source, std::string pointer)
      : j_(&j), source_(&source), pointer_(std::move(pointer)) {}

  const Json& json() const { return *j_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& source() const { return *source_; }
  // Throws Error(code) "SOURCE: POINTER: msg".
  [[noreturn]] void fail(const std::string& msg, ErrorCode code = ErrorCode::parse) const;

  // Objects. `what` names the value in messages ("a node", "the attributes of conv2d").
  void expect_object(std::string_view what) const;
  // Every key must be one of `known`; the first unknown key is an error naming the closest one.
  void check_keys(const std::vector<std::string_view>& known, std::string_view what) const;
  std::optional<Cursor> find(std::string_view key) const;
  Cursor at(std::string_view key) const;  // the key must be present

  // Arrays: the elements, at most max_size of them.
  std::vector<Cursor> items(std::string_view what, size_t max_size) const;

  // Scalars.
  std::string as_string(std::string_view what) const;
  std::string as_name(std::string_view what) const;  // a non-empty string
  bool as_bool() const;
  int64_t as_int(int64_t lo, int64_t hi) const;
  double as_double() const;  // a number, or one of the strings "nan", "inf", "-inf"
  DType as_dtype() const;
  std::vector<int64_t> as_ints(int64_t lo, int64_t hi, size_t max_size) const;
  std::array<int64_t, 2> as_int_pair(int64_t lo, int64_t hi) const;
  // A shape: at most kMaxRank dimensions in [1, kMaxDim], at most kMaxElements elements.
  Dims as_dims() const;

 private:
  Cursor child(std::string_view token, const Json& j) const;

  const Json* j_;
  const std::string* source_;
  std::string pointer_;
};

// The loader (json_load.cpp): the whole of load_graph_json.
Graph load_graph_document(std::string_view text, const std::string& source);

// ---- per-op attributes (json_attrs.cpp) ------------------------------------------------------

// Attributes as read from a file. Some need the input shapes to become the normalized form the
// IR stores (negative axes, a -1 in reshape dims, python-style slice bounds); resolve_attrs()
// finishes them once those shapes are known.
struct ParsedAttrs {
  Attrs attrs;
  std::optional<Cursor> where;                     // the "attrs" object, for messages
  std::optional<std::vector<int64_t>> slice_axes;  // the python-style slice form was used
};

// Reads the "attrs" of the node object `node`.
ParsedAttrs parse_attrs(OpKind op, const Cursor& node);
// `inputs` are the node's input tensors with known types; `who` is "node 'n' (op)". Throws
// Error(invalid_graph) naming the attribute when it does not fit the inputs.
void resolve_attrs(OpKind op, ParsedAttrs& p, const std::vector<const TensorInfo*>& inputs,
                   const std::string& who);
// The attributes as a one-line JSON object in the documented key order, every attribute
// written; empty for ops that have none.
std::string write_attrs(const Node& n);

}  // namespace sinter::json_detail
