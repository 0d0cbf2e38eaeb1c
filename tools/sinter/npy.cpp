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
