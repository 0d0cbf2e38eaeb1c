// Shape and dtype inference of the collectives (all_reduce, all_gather, reduce_scatter): the
// output keeps the input's dtype; all_gather multiplies the gathered axis by the group's world and
// reduce_scatter divides the scattered one by it.
#include "ir/node_checker.hpp"

namespace sinter {
namespace {

// Every tensor stays within this many elements (the graph file's bound), so a gathered axis
// cannot overflow the arithmetic of later passes.
constexpr int64_t kMaxGatheredElements = int64_t{1} << 50;

void check_group(const NodeChecker& c, const CollectiveAttrs& at) {
  if (at.group.empty()) c.fail("the group name is empty; name the communicator group (e.g. \"tp\")");
  for (size_t i = 0; i < at.group.size(); ++i) {
    const auto ch = static_cast<unsigned char>(at.group[i]);
    if (ch < 0x20 || ch == 0x7f) {
      c.fail("the group name holds a control character at byte " + std::to_string(i) + " (after '" +
             at.group.substr(0, i) + "')");
    }
  }
  if (at.world < 1 || at.world > kMaxWorld) {
    c.fail("world " + std::to_string(at.world) + " of group '" + at.group + "' must be in [1, " +
           std::to_string(kMaxWorld) + "]");
  }
}

// The axis of all_gather and reduce_scatter, checked against input 0.
size_t check_axis(const NodeChecker& c, const CollectiveAttrs& at) {
  const auto rank = static_cast<int64_t>(c.in(0).dims.size());
  if (rank == 0) c.fail(c.in_name(0) + " is a scalar; it has no axis to gather or scatter along");
  if (at.axis < 0 || at.axis >= rank) {
    c.fail("axis " + std::to_string(at.axis) + " is out of range for " + c.in_name(0) + " of rank " +
           std::to_string(rank));
  }
  return static_cast<size_t>(at.axis);
}

}  // namespace

std::vector<TensorType> infer_collective(const NodeChecker& c, OpKind op) {
  const auto& at = c.attrs<CollectiveAttrs>();
  check_group(c, at);
  const TensorInfo& x = c.in(0);
  if (op != OpKind::all_gather && x.dtype == DType::boolean) {
    c.fail(c.in_name(0) + " is bool; a " + std::string(to_string(at.reduce)) +
           " reduction needs numbers (insert a cast)");
  }
  Dims out = x.dims;
  if (op == OpKind::all_gather) {
    const size_t a = check_axis(c, at);
    const int64_t elements = num_elements(x.dims);
    if (elements > kMaxGatheredElements / at.world) {
      c.fail("gathering " + c.in_name(0) + " with dims " + dims_to_string(x.dims) + " from " +
             std::to_string(at.world) + " ranks would make more than 2^50 elements");
    }
    out[a] *= at.world;
  } else if (op == OpKind::reduce_scatter) {
    const size_t a = check_axis(c, at);
    if (x.dims[a] % at.world != 0) {
      c.fail("cannot scatter axis " + std::to_string(a) + " of " + c.in_name(0) + " with dims " +
             dims_to_string(x.dims) + " among world=" + std::to_string(at.world) + " ranks of group '" +
             at.group + "': " + std::to_string(x.dims[a]) + " is not divisible by " +
             std::to_string(at.world));
    }
    out[a] /= at.world;
  }
  return {{x.dtype, out}};
}

}  // namespace sinter
