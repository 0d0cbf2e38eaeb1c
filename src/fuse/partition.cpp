// The fusion partitioner: one greedy pass over the nodes in topological order. Each node either
// joins the region of one of its inputs (when docs/fusion.md's legality rules allow it) or starts
// a region of its own; every refusal is recorded as the reason for a region boundary.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "fuse/layout_view.hpp"
#include "fuse/region.hpp"
#include "sinter/error.hpp"

namespace sinter::fuse {
namespace {

bool is_rowwise(OpKind op) {
  const OpClass c = op_info(op).cls;
  return c == OpClass::softmax || c == OpClass::norm || c == OpClass::rope;
}

bool takes_epilogue(RegionKind k) {
  return k == RegionKind::pointwise || k == RegionKind::rowwise || k == RegionKind::matmul ||
         k == RegionKind::conv || k == RegionKind::sdpa;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

// A permute that only moves size-1 axes keeps every element at its row-major position: on a
// contiguous input it is a reshape (decode's [1, 1, H, D] -> [1, H, 1, D] head split).
bool permute_moves_only_unit_axes(const Graph& g, const Node& n) {
  const auto& perm = std::get<PermuteAttrs>(n.attrs).perm;
  const Dims& in = g.tensor(n.inputs[0]).dims;
  int64_t last = -1;
  for (int64_t p : perm) {
    if (in[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

class Partitioner {
 public:
  Partitioner(const Graph& g, const FusionOptions& o) : g_(g), opt_(o), cons_(g.consumers()) {
    p_.region_of_node.assign(g.nodes().size(), -1);
    stage_.assign(g.tensors().size(), Stage::none);
  }

  Partition run() {
    for (NodeId n : g_.topological_order()) place(n);
    finish();
    return std::move(p_);
  }

 private:
  // Where a tensor computed inside a region is available to later nodes of that region.
  enum class Stage {
    none,      // not computed in a region (graph input, or not yet placed)
    prologue,  // before a row-wise anchor: not available to its epilogue
    value,     // the anchor output or an epilogue value: available to the epilogue
    exit,      // an exit reduction: complete only when the region ends
  };

  const TensorInfo& t(TensorId id) const { return g_.tensor(id); }
  const Node& node(NodeId n) const { return g_.node(n); }
  bool is_constant(TensorId id) const {
    const NodeId p = t(id).producer;
    return p >= 0 && node(p).op == OpKind::constant && !materialized_.count(p);
  }
  int region_of_tensor(TensorId id) const {
    const NodeId p = t(id).producer;
    return p < 0 ? -1 : p_.region_of_node[p];
  }

  // Does region `a` (transitively) read anything region `b` computes?
  bool depends_on(int a, int b) const {
    if (a == b) return true;
    std::vector<bool> seen(p_.regions.size(), false);
    std::vector<int> stack{a};
    while (!stack.empty()) {
      const int r = stack.back();
      stack.pop_back();
      if (r == b) return true;
      if (seen[r]) continue;
      seen[r] = true;
      for (int d : deps_[r]) stack.push_back(d);
    }
    return false;
  }

  // Why `n` may not read `input` if it joins region `r` ("" when it may).
  std::string external_input_problem(int r, TensorId input) const {
    if (is_constant(input)) return "";
    const int q = region_of_tensor(input);
    if (q < 0) return "";
    if (q == r) {
      if (stage_[input] == Stage::value) return "";
      if (stage_[input] == Stage::exit) {
        return quote(t(input).name) + " is an exit reduction of that region, complete only when "
               "the region ends";
      }
      return quote(t(input).name) + " is a prologue value of that row-wise region, gone once "
             "the anchor has run";
    }
    if (depends_on(q, r)) {
      return "joining would make the region read " + quote(t(input).name) +
             ", which is computed from the region's own output (a cycle)";
    }
    return "";
  }

  int new_region(RegionKind kind, NodeId anchor, Dims shape) {
    Region r;
    r.id = static_cast<int>(p_.regions.size());
    r.kind = kind;
    r.anchor = anchor;
    r.iteration_shape = std::move(shape);
    p_.regions.push_back(std::move(r));
    deps_.emplace_back();
    return p_.regions.back().id;
  }

  void assign(NodeId n, int r, Stage stage) {
    p_.region_of_node[n] = r;
    for (TensorId out : node(n).outputs) stage_[out] = stage;
    for (TensorId in : node(n).inputs) {
      if (is_constant(in)) continue;
      const int q = region_of_tensor(in);
      if (q >= 0 && q != r) deps_[r].insert(q);
    }
  }

  void refuse(NodeId consumer, TensorId input, std::string reason) {
    reasons_.emplace(std::make_pair(input, consumer), std::move(reason));
  }

  // Why pointwise node `n` cannot join region `r` through its input `via` ("" when it can).
  std::string epilogue_problem(NodeId n, int r, TensorId via) const {
    const Region& reg = p_.regions[r];
    if (!takes_epilogue(reg.kind)) {
      return "a " + std::string(to_string(reg.kind)) + " region takes no epilogue";
    }
    if (reg.kind == RegionKind::pointwise ? !opt_.fuse_pointwise : !opt_.fuse_epilogues) {
      return "this fusion is turned off";
    }
    const Dims& out = t(node(n).outputs[0]).dims;
    if (out != reg.iteration_shape) {
      return quote(node(n).name) + " computes " + dims_to_string(out) +
             " but the region iterates over " + dims_to_string(reg.iteration_shape) +
             " (a region has one iteration shape)";
    }
    for (TensorId in : node(n).inputs) {
      std::string problem = external_input_problem(r, in);
      if (!problem.empty()) return problem;
    }
    (void)via;
    return "";
  }

  void place_pointwise(NodeId n) {
    const Node& nd = node(n);
    std::optional<int> chosen;
    std::map<TensorId, std::string> problems;
    for (TensorId in : nd.inputs) {
      if (is_constant(in)) continue;
      const int q = region_of_tensor(in);
      if (q < 0) continue;
      if (chosen && *chosen == q) continue;
      std::string problem = epilogue_problem(n, q, in);
      if (problem.empty() && !chosen) {
        chosen = q;
      } else if (problem.empty()) {
        problems[in] = quote(nd.name) + " joined the region of an earlier input";
      } else {
        problems[in] = problem;
      }
    }
    const int r = chosen ? *chosen : new_region(RegionKind::pointwise, -1, t(nd.outputs[0]).dims);
    Region& reg = p_.regions[r];
    reg.epilogue.push_back(n);
    assign(n, r, Stage::value);
    for (auto& [in, why] : problems) {
      if (region_of_tensor(in) != r) refuse(n, in, why);
    }
  }

  void place_rowwise(NodeId n) {
    const Node& nd = node(n);
    const TensorId x = nd.inputs[0];
    const int q = region_of_tensor(x);
    std::string why;
    if (q >= 0) {
      const Region& src = p_.regions[q];
      if (!opt_.fuse_prologues) {
        why = "prologue fusion is turned off";
      } else if (src.kind != RegionKind::pointwise) {
        why = "a region holds one anchor, and " + quote(t(x).name) + " comes from a " +
              std::string(to_string(src.kind)) + " region";
      } else if (src.iteration_shape != t(x).dims) {
        why = "the producing pointwise region iterates over " +
              dims_to_string(src.iteration_shape) + ", not the row-wise input's " +
              dims_to_string(t(x).dims);
      } else if (!src.reductions.empty()) {
        why = "the producing region has exit reductions, which a prologue cannot carry";
      } else {
        for (size_t i = 1; i < nd.inputs.size() && why.empty(); ++i) {
          const int qi = region_of_tensor(nd.inputs[i]);
          if (qi >= 0 && qi != q && depends_on(qi, q)) {
            why = "the parameter " + quote(t(nd.inputs[i]).name) +
                  " is computed from the producing region's output (a cycle)";
          } else if (qi == q) {
            why = "the parameter " + quote(t(nd.inputs[i]).name) +
                  " comes from the same pointwise region";
          }
        }
      }
      if (why.empty()) {
        // The pointwise region becomes this anchor's prologue.
        Region& reg = p_.regions[q];
        reg.kind = RegionKind::rowwise;
        reg.anchor = n;
        reg.prologue = std::move(reg.epilogue);
        reg.epilogue.clear();
        for (NodeId pn : reg.prologue) {
          for (TensorId out : node(pn).outputs) stage_[out] = Stage::prologue;
        }
        assign(n, q, Stage::value);
        param_boundaries(n, q);
        return;
      }
    }
    const int r = new_region(RegionKind::rowwise, n, t(nd.outputs[0]).dims);
    assign(n, r, Stage::value);
    if (q >= 0) refuse(n, x, why);
    param_boundaries(n, r);
  }

  void param_boundaries(NodeId n, int r) {
    const Node& nd = node(n);
    for (size_t i = 1; i < nd.inputs.size(); ++i) {
      const int qi = region_of_tensor(nd.inputs[i]);
      if (qi >= 0 && qi != r) {
        refuse(n, nd.inputs[i], "parameters of a " + std::string(to_string(nd.op)) +
                                    " are read from memory");
      }
    }
  }

  std::optional<ExitReduction> reduction_pattern(const Node& nd, const Dims& shape) const {
    const auto& at = std::get<ReduceAttrs>(nd.attrs);
    const auto rank = static_cast<int64_t>(shape.size());
    if (at.axes.empty() || static_cast<int64_t>(at.axes.size()) == rank) {
      return ExitReduction::global;
    }
    if (at.axes.size() == 1 && at.axes[0] == rank - 1) return ExitReduction::rows;
    if (static_cast<int64_t>(at.axes.size()) == rank - 1 && at.axes.back() == rank - 2) {
      return ExitReduction::columns;  // axes are sorted and unique: exactly 0 .. rank-2
    }
    return std::nullopt;
  }

  void place_reduction(NodeId n) {
    const Node& nd = node(n);
    const TensorId x = nd.inputs[0];
    const int q = is_constant(x) ? -1 : region_of_tensor(x);
    std::string why;
    if (q >= 0) {
      const Region& src = p_.regions[q];
      const auto pattern = reduction_pattern(nd, t(x).dims);
      if (!opt_.fuse_reductions) {
        why = "reduction fusion is turned off";
      } else if (src.kind == RegionKind::sdpa || !takes_epilogue(src.kind)) {
        why = "a " + std::string(to_string(src.kind)) + " region takes no exit reductions";
      } else if (t(x).dims != src.iteration_shape) {
        why = "the reduced tensor " + dims_to_string(t(x).dims) +
              " does not have the region's iteration shape " + dims_to_string(src.iteration_shape);
      } else if (stage_[x] != Stage::value) {
        why = quote(t(x).name) + " is not an epilogue value of that region";
      } else if (!pattern) {
        why = "it reduces axes " + dims_to_string(std::get<ReduceAttrs>(nd.attrs).axes) + " of " +
              dims_to_string(t(x).dims) +
              "; only global, last-axis and all-but-last reductions fold into an epilogue";
      } else if (!is_float(t(nd.outputs[0]).dtype)) {
        // (the jit engine refuses such an exit, and no other engine takes the region's epilogue)
        why = "its output is " + std::string(to_string(t(nd.outputs[0]).dtype)) +
              ": exit reductions accumulate in f32 and give a float result";
      } else if (*pattern == ExitReduction::columns && src.kind != RegionKind::matmul &&
                 src.kind != RegionKind::conv) {
        // Row-parallel kernels would need one atomic per element for a column sum.
        why = "column reductions fold only into matmul and conv epilogues, whose tiles span "
              "many rows";
      } else {
        Region& reg = p_.regions[q];
        reg.reductions.push_back({n, *pattern});
        assign(n, q, Stage::exit);
        return;
      }
    }
    const int r = new_region(RegionKind::reduction, n, t(x).dims);
    assign(n, r, Stage::value);
    if (q >= 0) refuse(n, x, why);
  }

  void place_anchor(NodeId n, RegionKind kind, const std::string& why) {
    const Node& nd = node(n);
    const int r = new_region(kind, n, t(nd.outputs[0]).dims);
    assign(n, r, Stage::value);
    // Only the main output is an epilogue value; sdpa's statistics are stored as they are.
    for (size_t i = 1; i < nd.outputs.size(); ++i) stage_[nd.outputs[i]] = Stage::exit;
    for (TensorId in : nd.inputs) {
      if (region_of_tensor(in) >= 0 && !is_constant(in)) refuse(n, in, why);
    }
  }

  // Layout chains: slices, reshapes and permutes that feed only the next one of the chain move no
  // data until the chain's last copy, which reads the chain's first input through one composed
  // strided view (layout_view.hpp). Called for the first op of a would-be chain: finds the longest
  // single-consumer run from `n` that ends in a copy (a slice, or a permute that moves more than
  // size-1 axes) and composes into a view; its ops before that copy are deferred and join the
  // copy's region as its prologue. True when `n` was deferred.
  static bool is_chain_op(OpKind k) { return k == OpKind::slice || k == OpKind::reshape || k == OpKind::permute; }
  bool plan_layout_chain(NodeId n) {
    if (!opt_.fuse_layout_chains || !is_chain_op(node(n).op)) return false;
    const std::set<TensorId> graph_outputs(g_.outputs().begin(), g_.outputs().end());
    std::vector<NodeId> chain{n};
    size_t best = 0;
    for (NodeId cur = n;;) {
      const TensorId out = node(cur).outputs[0];
      if (graph_outputs.count(out) || cons_[out].size() != 1) break;
      const NodeId c = cons_[out][0];
      if (!is_chain_op(node(c).op)) break;
      chain.push_back(c);
      cur = c;
      const bool copy = node(c).op == OpKind::slice ||
                        (node(c).op == OpKind::permute && !permute_moves_only_unit_axes(g_, node(c)));
      if (copy && compose_layout_chain(g_, chain)) best = chain.size();
    }
    if (best < 2) return false;
    const NodeId end = chain[best - 1];
    chain.resize(best - 1);
    for (NodeId m : chain) folded_.insert(m);
    chain_of_[end] = std::move(chain);
    return true;
  }
  void place_layout_chain(NodeId end, const std::vector<NodeId>& chain) {
    const Node& nd = node(end);
    place_anchor(end, RegionKind::layout,
                 "a " + std::string(to_string(nd.op)) + " runs as a strided copy, so its input is stored");
    const int r = p_.region_of_node[end];
    for (NodeId m : chain) {
      p_.regions[r].prologue.push_back(m);
      assign(m, r, Stage::prologue);
    }
    const TensorId in = node(chain.front()).inputs[0];
    if (region_of_tensor(in) >= 0 && region_of_tensor(in) != r && !is_constant(in)) {
      refuse(chain.front(), in, "a layout chain (" + std::to_string(chain.size() + 1) +
                                    " ops) runs as one strided copy, so its input is stored");
    }
  }

  void place(NodeId n) {
    const Node& nd = node(n);
    const std::string op(to_string(nd.op));
    if (nd.op == OpKind::constant) {
      // Inlined where it is read, unless it must exist in memory.
      bool needs_memory = std::find(g_.outputs().begin(), g_.outputs().end(), nd.outputs[0]) !=
                          g_.outputs().end();
      for (NodeId c : cons_[nd.outputs[0]]) {
        if (!is_pointwise(node(c).op)) needs_memory = true;
      }
      if (!needs_memory) return;
      materialized_.insert(n);
      const int r = new_region(RegionKind::pointwise, -1, {});
      p_.regions[r].epilogue.push_back(n);
      assign(n, r, Stage::value);
      return;
    }
    if (is_pointwise(nd.op)) return place_pointwise(n);
    if (is_rowwise(nd.op)) return place_rowwise(n);
    switch (op_info(nd.op).cls) {
      case OpClass::reduce: return place_reduction(n);
      case OpClass::arg_reduce:
        // (value, index) pairs fold into no epilogue: always a standalone reduction region
        return place_anchor(n, RegionKind::reduction,
                            "an " + op + " is a reduction region of its own and reads its input "
                            "from memory");
      case OpClass::collective:
        // Its input goes to the other ranks and its output comes from them: nothing fuses across
        // that exchange, in either direction (takes_epilogue is false for it).
        return place_anchor(n, RegionKind::collective,
                            "a collective (" + op + ") is a region of its own: it exchanges its "
                            "input with the other ranks of its group");
      case OpClass::gather:
        return place_anchor(n, RegionKind::gather,
                            "a gather is a region of its own: it reads the slices its indices pick, so "
                            "its inputs are stored");
      case OpClass::matmul:
        return place_anchor(n, RegionKind::matmul,
                            "a matmul starts its own region and loads its operands from memory "
                            "(no prologue on tensor-core operands)");
      case OpClass::conv:
        return place_anchor(n, RegionKind::conv,
                            "a conv2d starts its own region and loads its operands from memory");
      case OpClass::sdpa:
        return place_anchor(n, RegionKind::sdpa,
                            "an sdpa starts its own region and loads q, k, v from memory");
      case OpClass::layout:
        if (folded_.count(n)) return;  // placed with the copy it feeds (plan_layout_chain)
        if (auto it = chain_of_.find(n); it != chain_of_.end()) return place_layout_chain(n, it->second);
        if (plan_layout_chain(n)) return;
        if (nd.op == OpKind::reshape) {
          return place_anchor(n, RegionKind::alias,
                              "a reshape aliases its input's memory, so the input is stored");
        }
        if (nd.op == OpKind::permute && permute_moves_only_unit_axes(g_, nd)) {
          return place_anchor(n, RegionKind::alias,
                              "a permute that moves only size-1 axes is a reshape: it aliases its "
                              "input's memory, so the input is stored");
        }
        return place_anchor(n, RegionKind::layout,
                            "a " + op + " runs as a strided copy, so its input is stored");
      default: break;
    }
    throw Error(ErrorCode::internal, "partition: no rule places node '" + nd.name + "' (" + op + ")");
  }

  // Why the rmsnorm anchoring region `r` cannot fold into the matmuls that read it ("" when it
  // can): docs/fusion.md, "Norms folded into decode matmuls". The rule admits exactly what the
  // decode GEMV tile computes as an A prologue (engines/jit/codegen_decode_gemv.cpp).
  std::string norm_fold_problem(const Region& r) const {
    const Node& nm = node(r.anchor);
    const TensorId y = nm.outputs[0];
    if (std::find(g_.outputs().begin(), g_.outputs().end(), y) != g_.outputs().end()) {
      return quote(t(y).name) + " is a graph output";
    }
    const DType dt = t(y).dtype;
    for (NodeId c : cons_[y]) {
      const Node& mm = node(c);
      if (mm.op != OpKind::matmul || mm.inputs[0] != y || mm.inputs[1] == y) {
        return quote(mm.name) + " reads " + quote(t(y).name) + " and is not a matmul reading it as A";
      }
      if (t(mm.inputs[1]).dtype != dt) return quote(mm.name) + "'s B is not " + std::string(to_string(dt));
    }
    if (!r.prologue.empty() || !r.epilogue.empty() || !r.reductions.empty()) {
      return "the norm's region has a fused prologue, epilogue or reduction";
    }
    if (dt != DType::bf16 && dt != DType::f16) return quote(t(y).name) + " is not bf16 or f16";
    for (TensorId in : nm.inputs) {
      if (t(in).dtype != dt) return quote(t(in).name) + " is " + std::string(to_string(t(in).dtype)) + ", not " + std::string(to_string(dt));
    }
    const Dims& dims = t(y).dims;
    if (dims.size() < 2 || dims[dims.size() - 2] > 16) {
      return "the matmuls read more than 16 rows of " + quote(t(y).name) + " (the fold is for decode)";
    }
    if (num_elements(dims) != dims[dims.size() - 2] * dims.back()) {
      // the decode tile would stream the weight once per batch entry; unfolded, a vendor GEMM may
      // take the rows together
      return quote(t(y).name) + " " + dims_to_string(dims) + " has batch dims (the fold takes one [M, K] matrix)";
    }
    return "";
  }

  // Norms folded into decode matmuls (FusionOptions::fold_norms_into_matmuls): each matmul that
  // reads the norm's output as A computes the norm again while it loads A (the node goes into its
  // prologue, region_of_node -1, like an inlined constant), reading the norm's own inputs; the
  // norm's region is gone. Where the fold is refused, the boundary says why.
  void fold_norms() {
    for (Region& r : p_.regions) {
      if (r.kind != RegionKind::rowwise || node(r.anchor).op != OpKind::rmsnorm) continue;
      const TensorId y = node(r.anchor).outputs[0];
      if (cons_[y].empty()) continue;
      std::string problem = opt_.fold_norms_into_matmuls ? norm_fold_problem(r) : "this fusion is turned off";
      if (!problem.empty()) {
        for (NodeId c : cons_[y]) {
          if (node(c).op == OpKind::matmul) reasons_[{y, c}] = "the rmsnorm does not fold into the matmul's A loads: " + problem;
        }
        continue;
      }
      for (NodeId c : cons_[y]) {
        const int q = p_.region_of_node[c];
        p_.regions[q].prologue = {r.anchor};
        deps_[q].erase(r.id);
        deps_[q].insert(deps_[r.id].begin(), deps_[r.id].end());
      }
      p_.region_of_node[r.anchor] = -1;
      folded_norm_of_[y] = r.anchor;
      dead_.insert(r.id);
    }
  }

  // A node's inputs as its region reads them: a folded norm's output stands for the norm's inputs.
  std::vector<std::pair<TensorId, NodeId>> region_reads(NodeId n) const {
    std::vector<std::pair<TensorId, NodeId>> out;
    for (TensorId in : node(n).inputs) {
      auto it = folded_norm_of_.find(in);
      if (it == folded_norm_of_.end()) {
        out.push_back({in, n});
      } else {
        for (TensorId x : node(it->second).inputs) out.push_back({x, it->second});
      }
    }
    return out;
  }

  // Inputs, outputs, constants and boundaries, once every node is placed.
  void finish() {
    fold_norms();
    std::set<TensorId> graph_outputs(g_.outputs().begin(), g_.outputs().end());
    for (NodeId n : g_.topological_order()) {
      const int r = p_.region_of_node[n];
      if (r < 0) continue;
      Region& reg = p_.regions[r];
      for (const auto& [in, reader] : region_reads(n)) {
        if (is_constant(in)) {
          const NodeId c = t(in).producer;
          if (std::find(reg.constants.begin(), reg.constants.end(), c) == reg.constants.end()) {
            reg.constants.push_back(c);
          }
          continue;
        }
        if (region_of_tensor(in) == r) continue;
        if (std::find(reg.inputs.begin(), reg.inputs.end(), in) == reg.inputs.end()) {
          reg.inputs.push_back(in);
        }
      }
      for (TensorId out : node(n).outputs) {
        bool stored = graph_outputs.count(out) > 0;
        for (NodeId c : cons_[out]) stored = stored || p_.region_of_node[c] != r;
        if (stored) reg.outputs.push_back(out);
      }
    }
    std::set<std::pair<TensorId, int>> seen;
    for (NodeId n : g_.topological_order()) {
      const int r = p_.region_of_node[n];
      if (r < 0) continue;
      for (const auto& [in, reader] : region_reads(n)) {
        const int q = region_of_tensor(in);
        if (is_constant(in) || q < 0 || q == r || !seen.insert({in, r}).second) continue;
        auto it = reasons_.find({in, reader});
        p_.boundaries.push_back({in, q, r,
                                 it != reasons_.end() ? it->second
                                                      : quote(node(reader).name) +
                                                            " started a new region"});
      }
    }
    order_regions();
  }

  // Regions are created in node order, but a prologue merge can make an earlier region read a
  // later one; renumber them in dependency order so executors can run them front to back.
  void order_regions() {
    const size_t nr = p_.regions.size();
    std::vector<int> new_id(nr, -1);
    std::vector<int> order;
    std::function<void(int)> visit = [&](int r) {
      if (new_id[r] >= 0) return;
      new_id[r] = -2;  // in progress
      for (int d : deps_[r]) {
        if (new_id[d] == -2) throw Error(ErrorCode::internal, "partition: region cycle");
        visit(d);
      }
      new_id[r] = static_cast<int>(order.size());
      order.push_back(r);
    };
    for (size_t r = 0; r < nr; ++r) {
      if (!dead_.count(static_cast<int>(r))) visit(static_cast<int>(r));
    }
    std::vector<Region> regions(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      regions[i] = std::move(p_.regions[order[i]]);
      regions[i].id = static_cast<int>(i);
    }
    p_.regions = std::move(regions);
    for (int& r : p_.region_of_node) {
      if (r >= 0) r = new_id[r];
    }
    for (Boundary& b : p_.boundaries) {
      b.producer_region = new_id[b.producer_region];
      b.consumer_region = new_id[b.consumer_region];
    }
  }

  const Graph& g_;
  FusionOptions opt_;
  std::vector<std::vector<NodeId>> cons_;
  Partition p_;
  std::vector<std::set<int>> deps_;  // region -> regions it reads from
  std::vector<Stage> stage_;         // by tensor
  std::set<NodeId> materialized_;    // constants that live in memory
  std::set<NodeId> folded_;          // layout ops deferred into the copy at the end of their chain
  std::map<NodeId, std::vector<NodeId>> chain_of_;  // that copy -> the ops before it, in order
  std::map<std::pair<TensorId, NodeId>, std::string> reasons_;
  std::map<TensorId, NodeId> folded_norm_of_;  // a folded norm's output -> the norm
  std::set<int> dead_;                         // the regions of folded norms
};

}  // namespace

Partition partition_graph(const Graph& g, const FusionOptions& options) {
  return Partitioner(g, options).run();
}

}  // namespace sinter::fuse
