// A small, valid Plan built on the CPU (no GPU, no compiler): a matmul run by cuBLASLt (a
// 64-byte algo config and a workspace) followed by an unfused chain of pointwise ops run by jit
// kernels whose "cubins" are tiny ELF-tagged byte strings. The loader checks structure, not
// machine code, so this exercises every part of the bundle format; the GPU tests use real plans.
#pragma once

#include <string>

#include "fuse/region.hpp"
#include "plan/bundle.hpp"
#include "plan/memory_plan.hpp"
#include "plan/plan.hpp"

namespace sinter::test {

inline Graph plan_fixture_graph(int chain = 3, const std::string& name = "plan_fixture", DType dtype = DType::f32) {
  Graph g(name);
  Tensor x = g.input("x", dtype, {64, 32});
  Tensor w = g.input("w", dtype, {32, 16});
  Tensor h = g.matmul(x, w);
  for (int i = 0; i < chain; ++i) h = (i % 2 == 0) ? g.relu(h) : g.exp(h);
  g.output(h, "y");
  g.validate();
  return g;
}

inline fuse::FusionOptions plan_fixture_fusion() {
  fuse::FusionOptions f;
  f.fuse_epilogues = false;  // the matmul stays alone, so cuBLASLt can take it without epilogue
  f.fuse_pointwise = false;  // one step per pointwise op
  return f;
}

inline plan::Plan make_fixture_plan(int chain = 3, const std::string& name = "plan_fixture",
                                    DType dtype = DType::f32) {
  plan::Plan p;
  p.producer = "sinter unit test";
  p.graph = plan_fixture_graph(chain, name, dtype);
  p.fusion = plan_fixture_fusion();
  p.target = {"sm_90a", "NVIDIA H200", 132};
  const fuse::Partition part = plan::plan_partition(p);
  p.memory = plan::plan_memory(p.graph, part, std::vector<TensorId>(p.graph.tensors().size(), -1));
  uint64_t workspace = 0;
  for (const fuse::Region& r : part.regions) {
    plan::Step s;
    s.region = r.id;
    s.kind = r.kind;
    if (r.kind == fuse::RegionKind::matmul) {
      s.engine = "cublaslt";
      s.config = "algo 6 tile 20 stages 8 splitK 1 ws 1 KiB";
      s.description = "cublaslt [none] algo 6";
      std::string algo(64, '\0');
      for (int i = 0; i < 64; ++i) algo[i] = static_cast<char>(i * 7 + 1);
      s.saved.config_blob = plan::add_blob(p, BlobKind::vendor_config, algo);
      s.saved.config_description = "algo 6 tile 20 stages 8 splitK 1 ws 1 KiB";
      s.workspace_offset = workspace;
      s.workspace_bytes = 1024;
      workspace += 1024;
    } else {
      s.engine = "jit";
      s.config = "pointwise unroll=4 stream=0 pipelined=0 flat=1";
      s.description = "pointwise vec4";
      KernelRecord k;
      k.entry = "sinter_region";
      k.description = "pointwise vec4 block256";
      k.grid = {4, 1, 1};
      k.block = {256, 1, 1};
      k.args.assign(24, 0);
      k.args[16] = 0x00;  // element count 1024 at offset 16 (little-endian)
      k.args[17] = 0x04;
      k.pointers.push_back({PointerSource::input, 0, 0, 0, 16, 0});
      k.pointers.push_back({PointerSource::output, 0, 0, 8, 16, 0});
      // Two distinct "cubins" shared by alternate steps: content addressing stores each once.
      const std::string cubin = std::string("\x7f" "ELF fake cubin ") + std::string(to_string(p.graph.node(r.nodes().front()).op));
      k.cubin = plan::add_blob(p, BlobKind::cubin, cubin);
      k.cache_key = std::string(64, 'c');
      s.saved.kernels.push_back(std::move(k));
    }
    p.steps.push_back(std::move(s));
  }
  p.workspace.offset = (p.memory.arena_bytes + plan::kArenaAlignment - 1) / plan::kArenaAlignment * plan::kArenaAlignment;
  p.workspace.bytes = workspace;
  return p;
}

}  // namespace sinter::test
