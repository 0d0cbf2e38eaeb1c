// The checks that shape inference (infer*.cpp) makes of one node, each failing with a message
// that names the node, the input tensor, what was expected and what was found.
#pragma once

#include <string>

#include "sinter/error.hpp"
#include "sinter/graph.hpp"

namespace sinter {

class NodeChecker {
 public:
  NodeChecker(const Graph& g, const Node& n) : g_(g), n_(n) {}

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(ErrorCode::invalid_graph, "node '" + n_.name + "' (" +
                                              std::string(to_string(n_.op)) + "): " + msg);
  }
  const TensorInfo& in(size_t i) const { return g_.tensor(n_.inputs[i]); }
  std::string in_name(size_t i) const { return "input " + std::to_string(i) + " '" + in(i).name + "'"; }

  void expect_rank(size_t i, int64_t rank, const char* layout) const {
    if (static_cast<int64_t>(in(i).dims.size()) != rank) {
      fail(in_name(i) + " must have rank " + std::to_string(rank) + " (" + layout +
           "); found dims " + dims_to_string(in(i).dims));
    }
  }
  void expect_min_rank(size_t i, int64_t rank) const {
    if (static_cast<int64_t>(in(i).dims.size()) < rank) {
      fail(in_name(i) + " must have rank >= " + std::to_string(rank) + "; found dims " +
           dims_to_string(in(i).dims));
    }
  }
  void expect_float(size_t i) const {
    if (!is_float(in(i).dtype)) {
      fail(in_name(i) + " must have a float dtype (f32, f16, bf16, fp8_e4m3, fp8_e5m2); found " +
           std::string(to_string(in(i).dtype)));
    }
  }
  void expect_same_dtype(size_t i, size_t j) const {
    if (in(i).dtype != in(j).dtype) {
      fail(in_name(j) + " has dtype " + std::string(to_string(in(j).dtype)) + " but " +
           in_name(i) + " has " + std::string(to_string(in(i).dtype)) +
           "; they must match (insert a cast)");
    }
  }
  Dims broadcast(size_t i, const Dims& other, const std::string& other_desc) const {
    auto r = broadcast_dims(in(i).dims, other);
    if (!r) {
      fail("cannot broadcast " + in_name(i) + " with dims " + dims_to_string(in(i).dims) +
           " against " + other_desc + " " + dims_to_string(other) +
           " (trailing dimensions must be equal or 1)");
    }
    return *r;
  }
  template <typename A>
  const A& attrs() const {
    const A* a = std::get_if<A>(&n_.attrs);
    if (!a) fail("has attributes of the wrong kind for this op");
    return *a;
  }
  size_t arity() const { return n_.inputs.size(); }

 private:
  const Graph& g_;
  const Node& n_;
};

// infer_collective.cpp: all_reduce, all_gather, reduce_scatter.
std::vector<TensorType> infer_collective(const NodeChecker& c, OpKind op);

}  // namespace sinter
