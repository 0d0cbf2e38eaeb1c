// Reading JSON for the graph format: a SAX parser that builds the document while rejecting
// repeated keys and turning byte offsets into line:column, and the Cursor accessors that check
// types and bounds and say where in the file a value was wrong.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/json_detail.hpp"

namespace sinter::json_detail {

std::string format_bound(int64_t v) {
  if (v >= (int64_t{1} << 20) && (v & (v - 1)) == 0) {
    int k = 0;
    while ((int64_t{1} << k) != v) ++k;
    return "2^" + std::to_string(k);
  }
  return std::to_string(v);
}

std::string format_double(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  // nlohmann prints the shortest decimal that reads back as the same double (Grisu2), with a
  // ".0" on integral values so they stay floating-point on the way back in.
  return Json(v).dump();
}

std::string quote(std::string_view s) {
  try {
    return Json(std::string(s)).dump();
  } catch (const Json::exception&) {
    throw Error(ErrorCode::invalid_argument,
                "cannot save the name " +
                    Json(std::string(s)).dump(-1, ' ', true, Json::error_handler_t::replace) +
                    ": it is not valid UTF-8");
  }
}

std::string describe(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return j.get<bool>() ? "true" : "false";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return j.dump();
    case Json::value_t::number_float: return format_double(j.get<double>());
    case Json::value_t::string: {
      // Long strings are cut; the replace handler copes with a cut inside a UTF-8 sequence.
      std::string s = j.get<std::string>();
      const bool cut = s.size() > 40;
      if (cut) s.resize(40);
      return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace) + (cut ? "..." : "");
    }
    case Json::value_t::array: {
      // Never dump containers: a deeply nested value would recurse without bound.
      const size_t n = j.size();
      if (n == 0) return "an empty array";
      return "an array of " + std::to_string(n) + (n == 1 ? " element" : " elements");
    }
    case Json::value_t::object: return j.empty() ? "an empty object" : "an object";
    default: return "a value of type " + std::string(j.type_name());
  }
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string did_you_mean(std::string_view name, const std::vector<std::string_view>& known) {
  if (name.size() > 64) return "";  // keeps the quadratic distance cheap on hostile input
  // A typo changes a few characters; allow more edits for longer names, never most of the name.
  const size_t allowed = name.size() <= 3 ? 1 : name.size() <= 8 ? 2 : 3;
  std::string_view best;
  size_t best_d = allowed + 1;
  for (std::string_view k : known) {
    // Cheap filters first: a graph may have many tensor names.
    if (k.size() > 64 ||
        std::max(k.size(), name.size()) - std::min(k.size(), name.size()) > allowed) {
      continue;
    }
    const size_t d = edit_distance(name, k);
    if (d < best_d && d < std::max(name.size(), k.size())) {
      best = k;
      best_d = d;
    }
  }
  if (best_d > allowed) return "";
  return " (did you mean '" + std::string(best) + "'?)";
}

std::optional<int64_t> bounded_elements(const Dims& dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank)) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 1 || d > kMaxDim || n > kMaxElements / d) return std::nullopt;
    n *= d;
  }
  return n;
}

// ---- parsing ----------------------------------------------------------------------------------

namespace {

std::string escape_token(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// Messages quote what nlohmann last read, which may be any bytes; keep them printable ASCII.
std::string printable(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// Builds the document like nlohmann's own DOM parser, but knows the JSON pointer of the value it
// is filling, so a repeated key can be reported with its place.
class DomBuilder : public nlohmann::json_sax<Json> {
 public:
  explicit DomBuilder(Json& root) : root_(root) {}

  bool null() override { return add(Json(nullptr)); }
  bool boolean(bool v) override { return add(Json(v)); }
  bool number_integer(number_integer_t v) override { return add(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return add(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return add(Json(v)); }
  bool string(string_t& v) override { return add(Json(std::move(v))); }
  bool binary(binary_t& v) override { return add(Json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Frame& top = stack_.back();
    if (top.value->contains(k)) {
      duplicate_key_ = k;
      duplicate_at_ = pointer();
      return false;
    }
    top.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    error_position_ = position;
    error_token_ = last_token;
    error_what_ = ex.what();
    error_is_syntax_ = ex.id >= 100 && ex.id < 200;
    return false;
  }

  std::optional<std::string> duplicate_key_, duplicate_at_;
  std::optional<size_t> error_position_;
  std::string error_token_, error_what_;
  bool error_is_syntax_ = true;

 private:
  struct Frame {
    Json* value;
    std::string key;  // objects: the key whose value comes next
  };

  bool add(Json v) {
    put(std::move(v));
    return true;
  }
  Json* put(Json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& top = stack_.back();
    if (top.value->is_array()) {
      top.value->push_back(std::move(v));
      return &top.value->back();
    }
    Json& slot = (*top.value)[top.key];
    slot = std::move(v);
    return &slot;
  }
  bool open(Json empty) {
    Json* j = put(std::move(empty));
    stack_.push_back(Frame{j, {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  // The pointer of the object on top of the stack.
  std::string pointer() const {
    std::string p;
    for (size_t i = 0; i + 1 < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      p += "/" + (f.value->is_array() ? std::to_string(f.value->size() - 1) : escape_token(f.key));
    }
    return p;
  }

  Json& root_;
  std::vector<Frame> stack_;
};

}  // namespace

Json parse_json(std::string_view text, const std::string& source) {
  Json root;
  DomBuilder b(root);
  bool ok = false;
  try {
    ok = Json::sax_parse(text.data(), text.data() + text.size(), &b);
  } catch (const Json::exception& e) {
    // sax_parse reports through parse_error(); this is a safety net with no position.
    throw Error(ErrorCode::parse, source + ": " + printable(e.what()));
  }
  if (ok) return root;
  if (b.duplicate_key_) {
    throw Error(ErrorCode::parse, source + ": " + *b.duplicate_at_ + "/" +
                                      escape_token(*b.duplicate_key_) + ": the key " +
                                      Json(*b.duplicate_key_).dump() +
                                      " appears twice in one object (JSON keeps only one of them)");
  }
  // nlohmann counts bytes read; for a syntax error the last one is the offending character, for
  // a number out of range point at the start of the number instead.
  size_t pos = b.error_position_.value_or(1);
  if (!b.error_is_syntax_ && pos > b.error_token_.size()) pos -= b.error_token_.size() - 1;
  const size_t at = std::min(pos == 0 ? 0 : pos - 1, text.size());
  size_t line = 1, col = 1;
  for (size_t i = 0; i < at; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      col = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++col;  // count UTF-8 characters, not continuation bytes, as editors do
    }
  }
  // Keep nlohmann's description, not its own "[json.exception...] ... at line L, column C" frame.
  std::string what = b.error_what_;
  if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
  if (what.rfind("parse error", 0) == 0) {
    if (auto p = what.find(": "); p != std::string::npos) what = what.substr(p + 2);
  }
  throw Error(ErrorCode::parse, source + ":" + std::to_string(line) + ":" + std::to_string(col) +
                                    ": invalid JSON: " + printable(what));
}

// ---- Cursor -----------------------------------------------------------------------------------

void Cursor::fail(const std::string& msg, ErrorCode code) const {
  throw Error(code, *source_ + ": " + (pointer_.empty() ? "" : pointer_ + ": ") + msg);
}

Cursor Cursor::child(std::string_view token, const Json& j) const {
  return Cursor(j, *source_, pointer_ + "/" + escape_token(token));
}

void Cursor::expect_object(std::string_view what) const {
  if (!j_->is_object()) {
    fail("expected " + std::string(what) + " (an object), found " + describe(*j_));
  }
}

void Cursor::check_keys(const std::vector<std::string_view>& known, std::string_view what) const {
  for (const auto& [key, value] : j_->items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    child(key, value)
        .fail("unknown key " + Json(key).dump() + " in " + std::string(what) +
              did_you_mean(key, known) + "; known keys: " + (list.empty() ? "none" : list));
  }
}

std::optional<Cursor> Cursor::find(std::string_view key) const {
  auto it = j_->find(key);
  if (it == j_->end()) return std::nullopt;
  return child(key, *it);
}

Cursor Cursor::at(std::string_view key) const {
  auto c = find(key);
  if (!c) fail("missing key " + Json(std::string(key)).dump());
  return *c;
}

std::vector<Cursor> Cursor::items(std::string_view what, size_t max_size) const {
  if (!j_->is_array())
    fail("expected an array of " + std::string(what) + ", found " + describe(*j_));
  if (j_->size() > max_size) {
    fail("expected at most " + std::to_string(max_size) + " " + std::string(what) + ", found " +
         std::to_string(j_->size()));
  }
  std::vector<Cursor> out;
  out.reserve(j_->size());
  for (size_t i = 0; i < j_->size(); ++i) out.push_back(child(std::to_string(i), (*j_)[i]));
  return out;
}

std::string Cursor::as_string(std::string_view what) const {
  if (!j_->is_string())
    fail("expected " + std::string(what) + " (a string), found " + describe(*j_));
  return j_->get<std::string>();
}

std::string Cursor::as_name(std::string_view what) const {
  std::string s = as_string(what);
  if (s.empty()) fail(std::string(what) + " must not be empty");
  return s;
}

bool Cursor::as_bool() const {
  if (!j_->is_boolean()) fail("expected true or false, found " + describe(*j_));
  return j_->get<bool>();
}

int64_t Cursor::as_int(int64_t lo, int64_t hi) const {
  const std::string range = "an integer in [" + format_bound(lo) + ", " + format_bound(hi) + "]";
  if (j_->is_number_unsigned()) {
    const auto v = j_->get<uint64_t>();
    if (v > static_cast<uint64_t>(hi) || static_cast<int64_t>(v) < lo)
      fail("expected " + range + ", found " + describe(*j_));
    return static_cast<int64_t>(v);
  }
  if (!j_->is_number_integer()) fail("expected " + range + ", found " + describe(*j_));
  const auto v = j_->get<int64_t>();
  if (v < lo || v > hi) fail("expected " + range + ", found " + describe(*j_));
  return v;
}

double Cursor::as_double() const {
  if (j_->is_number()) return j_->get<double>();
  if (j_->is_string()) {
    const auto& s = j_->get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  fail("expected a number (or one of the strings \"nan\", \"inf\", \"-inf\"), found " +
       describe(*j_));
}

DType Cursor::as_dtype() const {
  const std::string s = as_string("a dtype name");
  if (auto t = parse_dtype(s)) return *t;
  std::vector<std::string_view> names;
  for (DType t : kAllDTypes) names.push_back(to_string(t));
  std::string list;
  for (std::string_view n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  fail("unknown dtype " + Json(s).dump() + did_you_mean(s, names) + "; known dtypes: " + list);
}

std::vector<int64_t> Cursor::as_ints(int64_t lo, int64_t hi, size_t max_size) const {
  if (!j_->is_array() || j_->size() > max_size) {
    fail("expected an array of at most " + std::to_string(max_size) + " integers, found " +
         describe(*j_));
  }
  std::vector<int64_t> out;
  for (const Cursor& c : items("integers", max_size)) out.push_back(c.as_int(lo, hi));
  return out;
}

std::array<int64_t, 2> Cursor::as_int_pair(int64_t lo, int64_t hi) const {
  if (!j_->is_array() || j_->size() != 2) {
    fail("expected an array of 2 integers, found " + describe(*j_));
  }
  return {child("0", (*j_)[0]).as_int(lo, hi), child("1", (*j_)[1]).as_int(lo, hi)};
}

Dims Cursor::as_dims() const {
  if (!j_->is_array()) fail("expected an array of dimensions, found " + describe(*j_));
  if (j_->size() > static_cast<size_t>(kMaxRank)) {
    fail("rank " + std::to_string(j_->size()) + " is too large; at most " +
         std::to_string(kMaxRank) + " dimensions are supported");
  }
  Dims d = as_ints(1, kMaxDim, kMaxRank);
  if (!bounded_elements(d)) {
    fail("dims " + dims_to_string(d) + " have more than " + format_bound(kMaxElements) +
         " elements");
  }
  return d;
}

}  // namespace sinter::json_detail
