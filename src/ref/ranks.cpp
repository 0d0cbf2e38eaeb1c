// run_reference_ranks: a multi-rank program on the CPU reference, in one thread. Every rank's
// GraphRun goes as far as its next collective; a group whose ranks all wait in a collective runs
// it (after checking that they agree) and lets them go on. When no group can run and some rank is
// still waiting, the program could never finish: that is an error naming who waits where, never a
// hang.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ref/graph_run.hpp"
#include "ref/ops.hpp"
#include "sinter/error.hpp"
#include "sinter/reference.hpp"

namespace sinter {
namespace {

[[noreturn]] void fail(const std::string& msg) {
  throw Error(ErrorCode::invalid_graph, "run_reference_ranks: " + msg);
}

bool is_ranked_collective(const Node& n) {
  return op_info(n.op).cls == OpClass::collective && std::get<CollectiveAttrs>(n.attrs).world > 1;
}

// "node 'ar' (all_reduce sum, world 4, bf16 [1, 1, 64])"
std::string describe(const Graph& g, const Node& n) {
  const auto& at = std::get<CollectiveAttrs>(n.attrs);
  const TensorInfo& x = g.tensor(n.inputs[0]);
  std::string s = "node '" + n.name + "' (" + std::string(to_string(n.op));
  if (n.op != OpKind::all_gather) s += " " + std::string(to_string(at.reduce));
  if (n.op != OpKind::all_reduce) s += " along axis " + std::to_string(at.axis);
  return s + ", world " + std::to_string(at.world) + ", " + std::string(to_string(x.dtype)) + " " +
         dims_to_string(x.dims) + ")";
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

// The ranks of each group: those whose graphs issue a collective of world > 1 on it, in rank order.
// Checks that there are `world` of them, naming a rank that lacks the group when one does.
std::map<std::string, std::vector<int>> group_members(const std::vector<Graph>& graphs) {
  std::map<std::string, std::vector<int>> members;
  std::map<std::string, std::pair<int, const Node*>> first;  // a collective that names the world
  for (size_t r = 0; r < graphs.size(); ++r) {
    for (NodeId nid : graphs[r].topological_order()) {
      const Node& n = graphs[r].node(nid);
      if (!is_ranked_collective(n)) continue;
      const std::string& group = std::get<CollectiveAttrs>(n.attrs).group;
      auto& m = members[group];
      if (m.empty() || m.back() != static_cast<int>(r)) m.push_back(static_cast<int>(r));
      const auto [at, inserted] = first.try_emplace(group, static_cast<int>(r), &n);
      const int64_t world = std::get<CollectiveAttrs>(n.attrs).world;
      const int64_t first_world = std::get<CollectiveAttrs>(at->second.second->attrs).world;
      if (!inserted && world != first_world) {
        fail("group '" + group + "': " + describe(graphs[r], n) + " of rank " + std::to_string(r) + " has world " +
             std::to_string(world) + ", but " + describe(graphs[at->second.first], *at->second.second) +
             " of rank " + std::to_string(at->second.first) + " has world " + std::to_string(first_world) +
             "; every collective of a group has the group's world");
      }
    }
  }
  for (const auto& [group, ranks] : members) {
    const auto& [r0, n0] = first.at(group);
    const int64_t world = std::get<CollectiveAttrs>(n0->attrs).world;
    if (static_cast<int64_t>(ranks.size()) == world) continue;
    std::string missing;
    if (static_cast<int64_t>(ranks.size()) < world && world == static_cast<int64_t>(graphs.size())) {
      for (size_t r = 0; r < graphs.size(); ++r) {
        if (std::find(ranks.begin(), ranks.end(), static_cast<int>(r)) == ranks.end()) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      missing = "; rank(s) " + missing + " never reach a collective on it";
    }
    fail("group '" + group + "' has world " + std::to_string(world) + " (" + describe(graphs[r0], *n0) +
         " of rank " + std::to_string(r0) + ") but " + std::to_string(ranks.size()) +
         " rank(s) issue collectives on it (rank(s) " + rank_list(ranks) + ")" + missing);
  }
  return members;
}

// Throws unless the collectives that the group's ranks wait in agree (the `seq`-th of the group).
void check_match(const std::vector<Graph>& graphs, const std::vector<int>& ranks,
                 const std::vector<std::optional<NodeId>>& waiting, const std::string& group, int64_t seq) {
  const int r0 = ranks[0];
  const Node& a = graphs[r0].node(*waiting[r0]);
  const auto& aa = std::get<CollectiveAttrs>(a.attrs);
  const TensorInfo& ax = graphs[r0].tensor(a.inputs[0]);
  for (size_t i = 1; i < ranks.size(); ++i) {
    const int r = ranks[i];
    const Node& b = graphs[r].node(*waiting[r]);
    const auto& ba = std::get<CollectiveAttrs>(b.attrs);
    const TensorInfo& bx = graphs[r].tensor(b.inputs[0]);
    const bool same = a.op == b.op && aa.world == ba.world && ax.dtype == bx.dtype && ax.dims == bx.dims &&
                      (a.op == OpKind::all_gather || aa.reduce == ba.reduce) &&
                      (a.op == OpKind::all_reduce || aa.axis == ba.axis);
    if (!same) {
      fail("collective #" + std::to_string(seq) + " on group '" + group + "' differs between ranks: rank " +
           std::to_string(r0) + " runs " + describe(graphs[r0], a) + " but rank " + std::to_string(r) + " runs " +
           describe(graphs[r], b));
    }
  }
}

// Why no group can run: a rank that finished while another waits for it, or a deadlock.
[[noreturn]] void fail_stuck(const std::vector<Graph>& graphs, const std::map<std::string, std::vector<int>>& members,
                             const std::vector<std::optional<NodeId>>& waiting, const std::vector<bool>& done,
                             const std::map<std::string, int64_t>& seq) {
  std::string waits;
  for (size_t r = 0; r < graphs.size(); ++r) {
    if (!waiting[r]) continue;
    const Node& n = graphs[r].node(*waiting[r]);
    const std::string& group = std::get<CollectiveAttrs>(n.attrs).group;
    for (int m : members.at(group)) {
      if (done[m]) {
        fail("rank " + std::to_string(r) + " waits in " + describe(graphs[r], n) + ", collective #" +
             std::to_string(seq.at(group)) + " on group '" + group + "', but rank " + std::to_string(m) +
             " finished its graph without reaching it");
      }
    }
    waits += (waits.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " in " +
             describe(graphs[r], n) + " on group '" + group + "'";
  }
  fail("deadlock: the ranks wait in collectives of different groups, which can never all be reached: " + waits);
}

}  // namespace

std::vector<TensorMap> run_reference_ranks(const std::vector<Graph>& graphs, const std::vector<TensorMap>& inputs,
                                           const ReferenceOptions& opts) {
  if (graphs.empty()) throw Error(ErrorCode::invalid_argument, "run_reference_ranks: no rank graphs");
  if (inputs.size() != graphs.size()) {
    throw Error(ErrorCode::invalid_argument, "run_reference_ranks: " + std::to_string(graphs.size()) +
                                                 " rank graphs but " + std::to_string(inputs.size()) +
                                                 " input maps; give one per rank");
  }
  const auto members = group_members(graphs);
  std::vector<ref::GraphRun> runs;
  runs.reserve(graphs.size());
  for (size_t r = 0; r < graphs.size(); ++r) runs.emplace_back(graphs[r], inputs[r], opts);

  const size_t world = graphs.size();
  std::vector<std::optional<NodeId>> waiting(world);
  std::vector<bool> done(world, false);
  std::map<std::string, int64_t> seq;  // collectives run so far, by group
  for (const auto& [group, ranks] : members) seq[group] = 0;
  for (;;) {
    for (size_t r = 0; r < world; ++r) {
      if (done[r] || waiting[r]) continue;
      waiting[r] = runs[r].run_to_collective();
      done[r] = !waiting[r];
    }
    if (std::find(done.begin(), done.end(), false) == done.end()) break;

    bool progress = false;
    for (const auto& [group, ranks] : members) {
      bool all_here = true;
      for (int r : ranks) {
        all_here = all_here && waiting[r] &&
                   std::get<CollectiveAttrs>(graphs[r].node(*waiting[r]).attrs).group == group;
      }
      if (!all_here) continue;
      check_match(graphs, ranks, waiting, group, seq[group]);
      const Node& n = graphs[ranks[0]].node(*waiting[ranks[0]]);
      std::vector<const ref::RefTensor*> xs;
      for (int r : ranks) xs.push_back(runs[r].inputs_of(*waiting[r])[0]);
      std::vector<ref::RefTensor> outs = ref::collective(n.op, std::get<CollectiveAttrs>(n.attrs), xs);
      for (size_t i = 0; i < ranks.size(); ++i) {
        const int r = ranks[i];
        runs[r].finish_collective(*waiting[r], {std::move(outs[i])});
        waiting[r].reset();
      }
      ++seq[group];
      progress = true;
    }
    if (!progress) fail_stuck(graphs, members, waiting, done, seq);
  }

  std::vector<TensorMap> results;
  for (const ref::GraphRun& run : runs) results.push_back(run.results());
  return results;
}

}  // namespace sinter
