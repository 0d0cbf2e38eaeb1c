// Whole-graph validation: the checks that a file-loaded graph needs before anything else reads it.
// Builder-made graphs pass by construction except for the graph-level rules (outputs that are
// produced, inputs that are read, nothing computed in vain).
#include <cstdio>
#include <set>

#include "sinter/error.hpp"
#include "sinter/graph.hpp"

namespace sinter {
namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(ErrorCode::invalid_graph, msg); }

void check_input_tensor(const TensorInfo& t) {
  if (t.dims.size() > static_cast<size_t>(kMaxRank)) {
    fail("input '" + t.name + "' has rank " + std::to_string(t.dims.size()) + "; at most " +
         std::to_string(kMaxRank) + " is supported");
  }
  for (int64_t d : t.dims) {
    if (d < 1) {
      fail("input '" + t.name + "' has dims " + dims_to_string(t.dims) +
           "; every dimension must be >= 1");
    }
  }
  if (t.strides.size() != t.dims.size()) {
    fail("input '" + t.name + "' has strides " + dims_to_string(t.strides) + " of rank " +
         std::to_string(t.strides.size()) + " but dims " + dims_to_string(t.dims));
  }
  for (int64_t s : t.strides) {
    if (s < 0) fail("input '" + t.name + "' has a negative stride in " + dims_to_string(t.strides));
  }
}

// The first control character (a byte below 0x20, or 0x7f) of a name, or -1. Names reach
// terminals (sinter check, explain, inspect), file names (--save-outputs) and messages: a NUL cut
// "x\u0000y" to "x" there, and an escape sequence would drive the terminal.
int control_character_at(const std::string& name) {
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f) return static_cast<int>(i);
  }
  return -1;
}

std::string control_character_message(const std::string& what, const std::string& name, int at) {
  char code[8];
  std::snprintf(code, sizeof code, "0x%02x", static_cast<unsigned>(static_cast<unsigned char>(name[at])));
  return what + " name holds a control character (" + code + " at byte " + std::to_string(at) + ", after '" +
         name.substr(0, static_cast<size_t>(at)) + "')";
}

}  // namespace

void Graph::validate() {
  const auto ntensors = static_cast<TensorId>(tensors_.size());
  declared_.resize(tensors_.size());

  if (const int at = control_character_at(name_); at >= 0) fail(control_character_message("the graph's", name_, at));
  std::set<std::string> names;
  for (const TensorInfo& t : tensors_) {
    if (t.name.empty()) fail("a tensor has an empty name");
    if (const int at = control_character_at(t.name); at >= 0) fail(control_character_message("a tensor", t.name, at));
    if (!names.insert(t.name).second) fail("two tensors are named '" + t.name + "'");
  }
  std::set<std::string> node_names;
  for (const Node& n : nodes_) {
    if (n.name.empty()) fail("a node has an empty name");
    if (const int at = control_character_at(n.name); at >= 0) fail(control_character_message("a node", n.name, at));
    if (!node_names.insert(n.name).second) fail("two nodes are named '" + n.name + "'");
  }

  for (TensorId id : inputs_) check_input_tensor(tensors_[id]);

  for (size_t ni = 0; ni < nodes_.size(); ++ni) {
    const Node& n = nodes_[ni];
    for (TensorId t : n.inputs) {
      if (t < 0 || t >= ntensors) fail("node '" + n.name + "' reads an unknown tensor");
    }
    for (TensorId t : n.outputs) {
      if (t < 0 || t >= ntensors) fail("node '" + n.name + "' writes an unknown tensor");
      if (tensors_[t].producer != static_cast<NodeId>(ni)) {
        fail("tensor '" + tensors_[t].name + "' is written by node '" + n.name +
             "' but recorded as produced elsewhere");
      }
    }
  }
  for (const TensorInfo& t : tensors_) {
    if (!t.is_input && t.producer < 0) {
      fail("tensor '" + t.name + "' is neither a graph input nor written by any node");
    }
  }

  // Infer in dependency order (this also rejects cycles) and compare with what was declared.
  for (NodeId ni : topological_order()) {
    const Node& n = nodes_[ni];
    const std::vector<TensorType> types = infer_node(*this, n);
    if (types.size() != n.outputs.size()) {
      fail("node '" + n.name + "' (" + std::string(to_string(n.op)) + ") produces " +
           std::to_string(types.size()) + " output(s) but " + std::to_string(n.outputs.size()) +
           " are listed");
    }
    for (size_t i = 0; i < types.size(); ++i) {
      TensorInfo& t = tensors_[n.outputs[i]];
      const DeclaredType& d = declared_[n.outputs[i]];
      const std::string who = "node '" + n.name + "' (" + std::string(to_string(n.op)) + ")";
      if (d.dtype && *d.dtype != types[i].dtype) {
        fail("tensor '" + t.name + "' is declared as " + std::string(to_string(*d.dtype)) +
             " but " + who + " produces " + std::string(to_string(types[i].dtype)));
      }
      if (d.dims && *d.dims != types[i].dims) {
        fail("tensor '" + t.name + "' is declared with dims " + dims_to_string(*d.dims) +
             " but " + who + " produces " + dims_to_string(types[i].dims));
      }
      if (types[i].dims.size() > static_cast<size_t>(kMaxRank)) {
        fail("tensor '" + t.name + "' would have rank " + std::to_string(types[i].dims.size()) +
             "; at most " + std::to_string(kMaxRank) + " is supported");
      }
      t.dtype = types[i].dtype;
      t.dims = types[i].dims;
      t.strides = contiguous_strides(t.dims);
      t.known = true;
    }
  }

  if (outputs_.empty()) fail("graph '" + name_ + "' has no outputs");
  std::set<TensorId> seen_out;
  for (TensorId id : outputs_) {
    if (id < 0 || id >= ntensors) fail("a graph output refers to an unknown tensor");
    const TensorInfo& t = tensors_[id];
    if (!seen_out.insert(id).second) fail("graph output '" + t.name + "' is listed twice");
    if (t.producer < 0) {
      fail("graph output '" + t.name +
           "' is never produced: it is a graph input, and no node writes it");
    }
  }

  const auto cons = consumers();
  for (TensorId id : inputs_) {
    if (cons[id].empty()) {
      fail("graph input '" + tensors_[id].name + "' is not read by any node");
    }
  }
  for (size_t id = 0; id < tensors_.size(); ++id) {
    const TensorInfo& t = tensors_[id];
    if (t.producer >= 0 && cons[id].empty() && !seen_out.count(static_cast<TensorId>(id))) {
      fail("tensor '" + t.name + "' computed by node '" + nodes_[t.producer].name +
           "' is neither read by any node nor a graph output");
    }
  }
}

}  // namespace sinter
