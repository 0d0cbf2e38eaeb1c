// Saving graph files and the file-level entry points (docs/graph-format.md). Saving writes a fixed
// layout so that save(load(save(g))) == save(g) byte for byte; files are replaced atomically.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "ir/json_detail.hpp"
#include "sinter/json.hpp"

namespace sinter {
namespace {

using namespace json_detail;

constexpr int64_t kMaxFileBytes = int64_t{1} << 28;

// ---- saving -------------------------------------------------------------------------------------

// A top-level array, one element per line.
template <typename T, typename F>
std::string block(const std::vector<T>& items, F&& item) {
  if (items.empty()) return "[]";
  std::string s = "[\n";
  for (size_t i = 0; i < items.size(); ++i) {
    s += "    " + item(items[i]) + (i + 1 < items.size() ? ",\n" : "\n");
  }
  return s + "  ]";
}

std::string name_list(const Graph& g, const std::vector<TensorId>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + quote(g.tensor(ids[i]).name);
  return s + "]";
}

std::string tensor_object(const TensorInfo& t, bool with_strides) {
  ObjectWriter w;
  w.name("name", t.name);
  if (!t.known) return w.str();  // a loader-declared tensor that validate() has not typed
  w.name("dtype", to_string(t.dtype)).ints("dims", t.dims);
  if (with_strides && t.strides != contiguous_strides(t.dims)) w.ints("strides", t.strides);
  return w.str();
}

// A node with one key per line; its outputs and attributes as one-line objects.
std::string node_object(const Graph& g, const Node& n) {
  std::string outs = "[";
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    outs += (i ? ", " : "") + tensor_object(g.tensor(n.outputs[i]), false);
  }
  std::string s = "{\n";
  s += "      \"name\": " + quote(n.name) + ",\n";
  s += "      \"op\": " + quote(to_string(n.op)) + ",\n";
  s += "      \"inputs\": " + name_list(g, n.inputs) + ",\n";
  s += "      \"outputs\": " + outs + "]";
  const std::string attrs = write_attrs(n);
  if (!attrs.empty()) s += ",\n      \"attrs\": " + attrs;
  return s + "\n    }";
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

Graph load_graph_json(std::string_view text, std::string_view source) {
  return load_graph_document(text, std::string(source));
}

Graph load_graph_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::io, "cannot open graph file '" + path + "': " + errno_text());
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const std::string why = errno_text();
      ::close(fd);
      throw Error(ErrorCode::io, "cannot read graph file '" + path + "': " + why);
    }
    if (got == 0) break;
    text.append(buf, static_cast<size_t>(got));
    if (static_cast<int64_t>(text.size()) > kMaxFileBytes) {
      ::close(fd);
      throw Error(ErrorCode::io, "graph file '" + path + "' is larger than " +
                                     std::to_string(kMaxFileBytes >> 20) + " MiB");
    }
  }
  ::close(fd);
  return load_graph_json(text, path);
}

std::string save_graph_json(const Graph& g) {
  const auto input = [&](TensorId id) { return tensor_object(g.tensor(id), true); };
  const auto node = [&](const Node& n) { return node_object(g, n); };
  std::string s = "{\n";
  s += "  \"format\": \"sinter.graph\",\n";
  s += "  \"version\": " + std::to_string(kGraphFormatVersion) + ",\n";
  s += "  \"name\": " + quote(g.name()) + ",\n";
  s += "  \"inputs\": " + block(g.inputs(), input) + ",\n";
  s += "  \"nodes\": " + block(g.nodes(), node) + ",\n";
  s += "  \"outputs\": " + name_list(g, g.outputs()) + "\n";
  return s + "}\n";
}

void save_graph_file(const Graph& g, const std::string& path) {
  const std::string text = save_graph_json(g);  // before touching the disk: it may throw
  // Write a sibling temporary file and rename it over the target, so a reader never sees a
  // half-written graph and a failed save leaves the old file in place.
  static std::atomic<unsigned> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(ErrorCode::io, "cannot write graph file '" + path + "': " + errno_text());
  auto fail = [&](const std::string& what) {
    const std::string why = errno_text();
    ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(ErrorCode::io, "cannot " + what + " graph file '" + path + "': " + why);
  };
  for (size_t done = 0; done < text.size();) {
    const ssize_t put = ::write(fd, text.data() + done, text.size() - done);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) fail("write");
    done += static_cast<size_t>(put);
  }
  if (::fsync(fd) != 0) fail("flush");
  if (::close(fd) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error(ErrorCode::io, "cannot write graph file '" + path + "': " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error(ErrorCode::io, "cannot write graph file '" + path + "': " + why);
  }
}

}  // namespace sinter
