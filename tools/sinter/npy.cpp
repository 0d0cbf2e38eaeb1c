#include "npy.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "sinter/error.hpp"

namespace sinter::cli {

void write_npy(const HostTensor& t, const std::string& path) {
  std::string descr;
  int64_t width;
  switch (t.dtype()) {
    case DType::f16: descr = "<f2"; width = 2; break;
    case DType::i32: descr = "<i4"; width = 4; break;
    case DType::i64: descr = "<i8"; width = 8; break;
    case DType::boolean: descr = "|b1"; width = 1; break;
    default: descr = "<f4"; width = 4; break;  // f32, and bf16/fp8 widened exactly
  }
  std::string shape = "(";
  for (int64_t d : t.dims()) shape += std::to_string(d) + ",";
  if (t.dims().size() > 1) shape.pop_back();
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // magic (6) + version (2) + header length (2) + header + padding + '\n' is a multiple of 64
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(ErrorCode::io, "cannot write '" + path + "'");
  out.write("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  const std::vector<double> values = t.values();
  std::vector<char> buf(values.size() * width);
  for (size_t i = 0; i < values.size(); ++i) {
    char* p = buf.data() + i * width;
    if (t.dtype() == DType::f16 || is_integer(t.dtype()) || t.dtype() == DType::boolean) {
      encode_value(values[i], t.dtype(), p);
    } else {
      const auto f = static_cast<float>(values[i]);
      std::memcpy(p, &f, 4);
    }
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  if (!out) throw Error(ErrorCode::io, "writing '" + path + "' failed");
}

namespace {

[[noreturn]] void bad_npy(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::parse, "'" + path + "' is not a .npy file this reads: " + what);
}

// The value of key `key` in the header's dict literal, e.g. "'<f4'", "False", "(3, 4)".
std::string header_value(const std::string& header, const std::string& key, const std::string& path) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) bad_npy(path, "its header has no '" + key + "'");
  size_t v = header.find(':', k);
  if (v == std::string::npos) bad_npy(path, "its header is malformed");
  ++v;
  while (v < header.size() && header[v] == ' ') ++v;
  size_t end = v;
  if (end < header.size() && header[end] == '(') {
    end = header.find(')', end);
    if (end == std::string::npos) bad_npy(path, "its shape is not closed");
    ++end;
  } else {
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  }
  return header.substr(v, end - v);
}

}  // namespace

HostTensor read_npy(const std::string& path, DType dtype) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::io, "cannot read '" + path + "'");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) bad_npy(path, "it does not start with \\x93NUMPY");
  const int major = static_cast<unsigned char>(magic[6]);
  if (major < 1 || major > 3) bad_npy(path, "format version " + std::to_string(major));
  uint32_t header_len = 0;
  unsigned char len_bytes[4] = {};
  if (!in.read(reinterpret_cast<char*>(len_bytes), major == 1 ? 2 : 4)) bad_npy(path, "truncated header");
  header_len = len_bytes[0] | (len_bytes[1] << 8) | (major == 1 ? 0u : (uint32_t(len_bytes[2]) << 16 | uint32_t(len_bytes[3]) << 24));
  if (header_len > (1u << 20)) bad_npy(path, "a header of " + std::to_string(header_len) + " bytes");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) bad_npy(path, "truncated header");
  std::string descr = header_value(header, "descr", path);
  if (descr.size() < 3 || (descr.front() != '\'' && descr.front() != '"')) bad_npy(path, "descr " + descr);
  descr = descr.substr(1, descr.size() - 2);
  if (header_value(header, "fortran_order", path) != "False") bad_npy(path, "Fortran order");
  const std::string shape_text = header_value(header, "shape", path);
  Dims dims;
  for (size_t i = 1; i + 1 < shape_text.size();) {
    while (i + 1 < shape_text.size() && (shape_text[i] == ' ' || shape_text[i] == ',')) ++i;
    if (i + 1 >= shape_text.size()) break;
    size_t j = i;
    while (j + 1 < shape_text.size() && std::isdigit(static_cast<unsigned char>(shape_text[j]))) ++j;
    if (j == i) bad_npy(path, "shape " + shape_text);
    dims.push_back(std::stoll(shape_text.substr(i, j - i)));
    i = j;
  }
  const char order = descr[0];
  if (order == '>') bad_npy(path, "big-endian data (" + descr + ")");
  const char kind = descr[1];
  const int width = std::atoi(descr.c_str() + 2);
  const bool known = (kind == 'f' && (width == 2 || width == 4 || width == 8)) ||
                     (kind == 'i' && (width == 1 || width == 2 || width == 4 || width == 8)) ||
                     (kind == 'u' && width == 1) || (kind == 'b' && width == 1);
  if (!known) bad_npy(path, "dtype " + descr);
  HostTensor t(dtype, dims);
  std::vector<char> data(static_cast<size_t>(t.numel()) * width);
  if (!in.read(data.data(), static_cast<std::streamsize>(data.size()))) {
    bad_npy(path, "it holds fewer than the " + std::to_string(t.numel()) + " values its shape says");
  }
  for (int64_t e = 0; e < t.numel(); ++e) {
    const char* p = data.data() + e * width;
    double v = 0;
    if (kind == 'f' && width == 2) {
      v = decode_value(p, DType::f16);
    } else if (kind == 'f' && width == 4) {
      float f;
      std::memcpy(&f, p, 4);
      v = f;
    } else if (kind == 'f') {
      std::memcpy(&v, p, 8);
    } else if (kind == 'u' || kind == 'b') {
      v = static_cast<unsigned char>(*p);
    } else {
      int64_t i = 0;
      std::memcpy(&i, p, width);
      if (width < 8 && (p[width - 1] & 0x80)) i |= ~((int64_t{1} << (8 * width)) - 1);  // sign-extend
      v = static_cast<double>(i);
    }
    t.set(e, v);
  }
  return t;
}

std::string npy_file_name(const std::string& name) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    const bool plain = std::isalnum(c) || c == '_' || c == '-' || (c == '.' && i > 0);
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + ".npy";
}

}  // namespace sinter::cli
