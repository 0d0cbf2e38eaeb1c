// Loading graph files (format "sinter.graph", docs/graph-format.md), in named steps:
//   1. parse the JSON (syntax errors carry line:column),
//   2. read the document against the schema (content errors carry a JSON pointer),
//   3. resolve names: duplicates, unknown references (with a suggestion), graph outputs,
//   4. order the nodes (a cycle is reported with the nodes on it),
//   5. infer every node in that order on a scratch graph, which finishes the attributes that need
//      input shapes (negative axes, reshape -1, python-style slices) and bounds every shape,
//   6. build the graph in file order through the loader API and let Graph::validate() have the
//      last word.
#include <algorithm>
#include <queue>
#include <unordered_map>

#include "ir/json_detail.hpp"
#include "sinter/json.hpp"

namespace sinter::json_detail {
namespace {

constexpr std::string_view kFormatName = "sinter.graph";
constexpr size_t kMaxNodeOutputs = 16;

struct InputSpec {
  std::string name;
  DType dtype;
  Dims dims, strides;
};

struct OutputSpec {
  std::string name;
  std::optional<DType> dtype;
  std::optional<Dims> dims;
  Cursor where;
};

struct NodeSpec {
  std::string name;
  OpKind op;
  std::vector<std::string> inputs;
  std::vector<Cursor> input_where;
  std::vector<OutputSpec> outputs;
  ParsedAttrs attrs;
  Cursor where;
  std::string who() const { return "node '" + name + "' (" + std::string(to_string(op)) + ")"; }
};

// Where a tensor name is defined: a graph input (node < 0) or an output of node `node`.
struct Definition {
  int node;
  std::string pointer;
};

std::vector<std::string_view> op_names() {
  std::vector<std::string_view> names;
  for (OpKind op : all_ops()) names.push_back(to_string(op));
  return names;
}

class Loader {
 public:
  Loader(std::string_view text, std::string source)
      : source_(std::move(source)), doc_(parse_json(text, source_)), root_(doc_, source_, "") {}

  Graph load() {
    read_document();
    resolve_names();
    infer_in(topological_order());
    return build();
  }

 private:
  [[noreturn]] void fail_graph(const std::string& msg) const {
    throw Error(ErrorCode::invalid_graph, source_ + ": " + msg);
  }

  // ---- step 2: the schema --------------------------------------------------------------------
  void read_document() {
    if (!doc_.is_object()) {
      root_.fail("expected a Sinter graph (a JSON object with \"format\": \"sinter.graph\"), found " +
                 describe(doc_));
    }
    // Format and version come before the key check, so a newer file says it is newer rather
    // than tripping over a key this build does not know.
    const auto format = root_.find("format");
    if (!format) {
      root_.fail("missing key \"format\"; a Sinter graph file has \"format\": \"sinter.graph\"");
    }
    if (format->as_string("the format name") != kFormatName) {
      format->fail("expected \"sinter.graph\", found " + describe(format->json()) +
                   "; this is not a Sinter graph file");
    }
    const auto version = root_.find("version");
    if (!version) {
      root_.fail("missing key \"version\"; this build reads version " +
                 std::to_string(kGraphFormatVersion));
    }
    const Json& v = version->json();
    if (!v.is_number_integer()) version->fail("expected an integer version, found " + describe(v));
    // nlohmann stores non-negative integers as unsigned: compare each kind in its own type.
    if (v.is_number_unsigned() ? v.get<uint64_t>() > kGraphFormatVersion
                               : v.get<int64_t>() > kGraphFormatVersion) {
      version->fail("version " + v.dump() + " is newer than this build reads (" +
                    std::to_string(kGraphFormatVersion) + "); update Sinter to load this file");
    }
    if (v.is_number_unsigned() ? v.get<uint64_t>() < 1 : v.get<int64_t>() < 1) {
      version->fail("version " + v.dump() + " is not a valid version (versions start at 1)");
    }
    root_.check_keys({"format", "version", "name", "inputs", "nodes", "outputs"}, "the graph");

    if (auto n = root_.find("name")) name_ = n->as_string("the graph name");
    for (const Cursor& c : root_.at("inputs").items("graph inputs", SIZE_MAX)) read_input(c);
    for (const Cursor& c : root_.at("nodes").items("nodes", SIZE_MAX)) read_node(c);
    for (const Cursor& c : root_.at("outputs").items("tensor names", SIZE_MAX)) {
      outputs_.emplace_back(c.as_name("a tensor name"), c);
    }
  }

  void read_input(const Cursor& c) {
    c.expect_object("a graph input");
    c.check_keys({"name", "dtype", "dims", "strides"}, "a graph input");
    InputSpec in{c.at("name").as_name("a tensor name"),
                 c.at("dtype").as_dtype(),
                 c.at("dims").as_dims(),
                 {}};
    if (auto s = c.find("strides")) {
      in.strides = s->as_ints(0, kMaxElements, kMaxRank);
      if (in.strides.size() != in.dims.size()) {
        s->fail("strides " + dims_to_string(in.strides) + " have rank " +
                std::to_string(in.strides.size()) + " but dims " + dims_to_string(in.dims) +
                " have rank " + std::to_string(in.dims.size()));
      }
      // The view's largest element offset must stay below kMaxElements, like a tensor's size.
      int64_t last = 0;
      for (size_t i = 0; i < in.dims.size(); ++i) {
        const int64_t steps = in.dims[i] - 1;
        if (steps > 0 && in.strides[i] > (kMaxElements - 1 - last) / steps) {
          s->fail("strides " + dims_to_string(in.strides) + " with dims " +
                  dims_to_string(in.dims) + " reach element offsets beyond " +
                  format_bound(kMaxElements));
        }
        last += steps * in.strides[i];
      }
      if (in.strides == contiguous_strides(in.dims)) in.strides.clear();
    }
    define(in.name, Definition{-1, c.pointer()}, c.at("name"), "");
    inputs_.push_back(std::move(in));
  }

  void read_node(const Cursor& c) {
    c.expect_object("a node");
    c.check_keys({"name", "op", "inputs", "outputs", "attrs"}, "a node");
    const std::string name = c.at("name").as_name("a node name");
    const Cursor op_at = c.at("op");
    const std::string op_name = op_at.as_string("an op name");
    const auto op = parse_op(op_name);
    if (!op) {
      op_at.fail("unknown op " + Json(op_name).dump() + did_you_mean(op_name, op_names()) +
                 "; docs/graph-format.md lists the ops");
    }
    NodeSpec n{name, *op, {}, {}, {}, parse_attrs(*op, c), c};
    if (auto ins = c.find("inputs")) {
      for (const Cursor& i : ins->items("tensor names", kMaxNodeInputs)) {
        n.inputs.push_back(i.as_name("a tensor name"));
        n.input_where.push_back(i);
      }
    }
    const auto outs = c.at("outputs").items("outputs", kMaxNodeOutputs);
    for (const Cursor& o : outs) {
      if (o.json().is_string()) {
        n.outputs.push_back(OutputSpec{o.as_name("a tensor name"), std::nullopt, std::nullopt, o});
        continue;
      }
      o.expect_object(
          "an output (a tensor name, or an object with \"name\" and optional \"dtype\" and "
          "\"dims\")");
      o.check_keys({"name", "dtype", "dims"}, "a node output");
      OutputSpec spec{o.at("name").as_name("a tensor name"), std::nullopt, std::nullopt, o};
      if (auto d = o.find("dtype")) spec.dtype = d->as_dtype();
      if (auto d = o.find("dims")) spec.dims = d->as_dims();
      n.outputs.push_back(std::move(spec));
    }
    if (auto [it, fresh] = node_index_.emplace(name, nodes_.size()); !fresh) {
      c.at("name").fail("two nodes are named '" + name + "' (" +
                            nodes_[it->second].where.pointer() + " and " + c.pointer() + ")",
                        ErrorCode::invalid_graph);
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      define(n.outputs[i].name,
             Definition{static_cast<int>(nodes_.size()), n.outputs[i].where.pointer()},
             n.outputs[i].where, name);
    }
    nodes_.push_back(std::move(n));
  }

  // `writer` names the node that writes the tensor; empty for a graph input.
  void define(const std::string& name, Definition def, const Cursor& where,
              const std::string& writer) {
    auto [it, fresh] = defs_.emplace(name, def);
    if (fresh) return;
    const Definition& old = it->second;
    if (old.node < 0) {
      where.fail("tensor '" + name + "' is already a graph input (" + old.pointer + ")" +
                     (writer.empty() ? "" : "; node '" + writer + "' cannot write it"),
                 ErrorCode::invalid_graph);
    }
    if (static_cast<size_t>(old.node) == nodes_.size()) {  // the node being read lists it twice
      where.fail("node '" + writer + "' lists output '" + name + "' twice (" + old.pointer + ")",
                 ErrorCode::invalid_graph);
    }
    where.fail("tensor '" + name + "' is produced twice: by node '" + nodes_[old.node].name +
                   "' (" + old.pointer + ") and by node '" + writer + "'",
               ErrorCode::invalid_graph);
  }

  // ---- step 3: names -------------------------------------------------------------------------
  std::vector<std::string_view> known_tensor_names() const {
    std::vector<std::string_view> names;
    for (const auto& [name, def] : defs_) names.push_back(name);
    std::sort(names.begin(), names.end());  // deterministic suggestions
    return names;
  }

  void resolve_names() {
    for (const NodeSpec& n : nodes_) {
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (defs_.count(n.inputs[i])) continue;
        n.input_where[i].fail(n.who() + " reads tensor '" + n.inputs[i] +
                                  "', which no graph input or node defines" +
                                  did_you_mean(n.inputs[i], known_tensor_names()),
                              ErrorCode::invalid_graph);
      }
    }
    std::unordered_map<std::string, size_t> seen;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const auto& [name, where] = outputs_[i];
      if (!defs_.count(name)) {
        where.fail("graph output '" + name + "' is not defined by any graph input or node" +
                       did_you_mean(name, known_tensor_names()),
                   ErrorCode::invalid_graph);
      }
      if (!seen.emplace(name, i).second) {
        where.fail("graph output '" + name + "' is listed twice", ErrorCode::invalid_graph);
      }
    }
  }

  // ---- step 4: order ---------------------------------------------------------------------------
  // Kahn's algorithm taking the lowest file index first, as Graph::topological_order() does.
  std::vector<size_t> topological_order() const {
    const size_t n = nodes_.size();
    std::vector<std::vector<size_t>> succ(n), pred(n);
    std::vector<size_t> pending(n, 0);
    for (size_t c = 0; c < n; ++c) {
      for (const std::string& in : nodes_[c].inputs) {
        const Definition& d = defs_.at(in);
        if (d.node < 0) continue;
        succ[d.node].push_back(c);
        pred[c].push_back(d.node);
        ++pending[c];
      }
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i) {
      if (pending[i] == 0) ready.push(i);
    }
    std::vector<size_t> order;
    while (!ready.empty()) {
      const size_t p = ready.top();
      ready.pop();
      order.push_back(p);
      for (size_t c : succ[p]) {
        if (--pending[c] == 0) ready.push(c);
      }
    }
    if (order.size() == n) return order;
    // Name only the nodes on (or between) cycles: peel off stuck nodes that feed no stuck node.
    std::vector<bool> stuck(n, true);
    for (size_t i : order) stuck[i] = false;
    std::vector<size_t> feeds(n, 0), peel;
    for (size_t i = 0; i < n; ++i) {
      if (!stuck[i]) continue;
      for (size_t c : succ[i]) feeds[i] += stuck[c];
      if (feeds[i] == 0) peel.push_back(i);
    }
    while (!peel.empty()) {
      const size_t i = peel.back();
      peel.pop_back();
      stuck[i] = false;
      for (size_t p : pred[i]) {
        if (stuck[p] && --feeds[p] == 0) peel.push_back(p);
      }
    }
    std::string names;
    size_t count = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!stuck[i]) continue;
      if (count++ < 8) names += (names.empty() ? "'" : ", '") + nodes_[i].name + "'";
    }
    if (count > 8) names += " and " + std::to_string(count - 8) + " more";
    fail_graph("graph '" + name_ + "' has a cycle: " +
               (count == 1 ? "node " + names + " reads its own output, so it cannot run"
                           : "nodes " + names + " depend on each other's outputs, so none of them can run first"));
  }

  // ---- step 5: inference -----------------------------------------------------------------------
  void infer_in(const std::vector<size_t>& order) {
    Graph scratch(name_);
    std::unordered_map<std::string, Tensor> handle;
    for (const InputSpec& in : inputs_) {
      handle[in.name] = scratch.input(in.name, in.dtype, in.dims, in.strides);
    }
    for (size_t ni : order) {
      NodeSpec& n = nodes_[ni];
      Node probe{n.name, n.op, {}, {}, {}};
      std::vector<Tensor> ins;
      for (const std::string& in : n.inputs) {
        ins.push_back(handle.at(in));
        probe.inputs.push_back(ins.back().id);
      }
      std::vector<const TensorInfo*> infos;
      for (Tensor t : ins) infos.push_back(&scratch.tensor(t));
      resolve_attrs(n.op, n.attrs, infos, n.who());
      probe.attrs = n.attrs.attrs;
      std::vector<TensorType> types;
      try {
        types = infer_node(scratch, probe);
      } catch (const Error& e) {
        n.where.fail(e.message(), e.code());
      }
      check_outputs(n, types);
      // The file's names (unique, checked in step 3) spare add_node its search for fresh ones.
      std::vector<std::string> out_names;
      for (const OutputSpec& o : n.outputs) out_names.push_back(o.name);
      std::vector<Tensor> outs;
      try {
        outs = scratch.add_node(n.op, ins, n.attrs.attrs, n.name, out_names);
      } catch (const Error& e) {
        n.where.fail(e.message(), e.code());
      }
      for (size_t i = 0; i < outs.size(); ++i) handle[n.outputs[i].name] = outs[i];
    }
  }

  void check_outputs(const NodeSpec& n, const std::vector<TensorType>& types) const {
    if (types.size() != n.outputs.size()) {
      const bool stats = n.op == OpKind::sdpa && n.outputs.size() == 2;
      n.where.at("outputs").fail(
          n.who() + " produces " + std::to_string(types.size()) + " output(s) but " +
              std::to_string(n.outputs.size()) + " are listed" +
              (stats ? " (the stats output needs \"emit_stats\": true)" : ""),
          ErrorCode::invalid_graph);
    }
    for (size_t i = 0; i < types.size(); ++i) {
      const OutputSpec& o = n.outputs[i];
      if (!bounded_elements(types[i].dims)) {
        o.where.fail(n.who() + ": output '" + o.name + "' would have dims " +
                         dims_to_string(types[i].dims) + "; a tensor may have at most " +
                         std::to_string(kMaxRank) + " dimensions of at most " +
                         format_bound(kMaxDim) + " and " + format_bound(kMaxElements) + " elements",
                     ErrorCode::invalid_graph);
      }
      // The same check Graph::validate() makes, here with the place in the file.
      if (o.dtype && *o.dtype != types[i].dtype) {
        o.where.fail("tensor '" + o.name + "' is declared as " + std::string(to_string(*o.dtype)) +
                         " but " + n.who() + " produces " + std::string(to_string(types[i].dtype)),
                     ErrorCode::invalid_graph);
      }
      if (o.dims && *o.dims != types[i].dims) {
        o.where.fail("tensor '" + o.name + "' is declared with dims " + dims_to_string(*o.dims) +
                         " but " + n.who() + " produces " + dims_to_string(types[i].dims),
                     ErrorCode::invalid_graph);
      }
    }
  }

  // ---- step 6: the graph -----------------------------------------------------------------------
  Graph build() const {
    try {
      Graph g(name_);
      std::unordered_map<std::string, TensorId> ids;
      for (const InputSpec& in : inputs_) {
        ids[in.name] = g.input(in.name, in.dtype, in.dims, in.strides).id;
      }
      for (const NodeSpec& n : nodes_) {
        for (const OutputSpec& o : n.outputs) {
          ids[o.name] = g.declare_tensor(o.name, o.dtype, o.dims).id;
        }
      }
      for (const NodeSpec& n : nodes_) {
        std::vector<TensorId> ins, outs;
        for (const std::string& in : n.inputs) ins.push_back(ids.at(in));
        for (const OutputSpec& o : n.outputs) outs.push_back(ids.at(o.name));
        g.add_node_declared(n.op, n.name, ins, outs, n.attrs.attrs);
      }
      for (const auto& [name, where] : outputs_) g.output(Tensor{ids.at(name)});
      g.validate();
      return g;
    } catch (const Error& e) {
      throw Error(e.code(), source_ + ": " + e.message());
    }
  }

  std::string source_;
  Json doc_;
  Cursor root_;
  std::string name_ = "graph";
  std::vector<InputSpec> inputs_;
  std::vector<NodeSpec> nodes_;
  std::vector<std::pair<std::string, Cursor>> outputs_;
  std::unordered_map<std::string, Definition> defs_;
  std::unordered_map<std::string, size_t> node_index_;
};

}  // namespace

Graph load_graph_document(std::string_view text, const std::string& source) {
  return Loader(text, source).load();
}

}  // namespace sinter::json_detail
