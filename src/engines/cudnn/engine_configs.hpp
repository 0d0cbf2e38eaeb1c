// The engine configs cuDNN's heuristics offer for a finalized operation graph (modes A, then B,
// then fallback; duplicates dropped), each finalized into an execution plan so that only configs
// that really build become candidates, and described with their knobs and cuDNN's numerical and
// behaviour notes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engines/cudnn/backend_descriptor.hpp"

namespace sinter::cudnn {

struct PlannedConfig {
  DescriptorPtr config;  // the engine config
  DescriptorPtr plan;    // its finalized execution plan
  int64_t workspace = 0;
  std::string description;  // "eng 8 [heur A] knobs {..} ws 0 KiB notes: tensor_core ..."
  // Descriptors the config refers to, kept alive with it (a saved config's engine and knobs).
  std::vector<DescriptorPtr> keep;
};

struct ConfigList {
  std::vector<PlannedConfig> configs;
  // Why configs were dropped ("heur B: 3 configs did not build: CUDNN_STATUS_NOT_SUPPORTED ..."),
  // for the reason shown when no config remains.
  std::string dropped;
  // Each heuristic mode asked and what it answered ("A: 0 configs; B: 0 configs; fallback:
  // CUDNN_STATUS_NOT_SUPPORTED"), then cuDNN's last error message if it left one.
  std::string tried;
};

// Why a graph cuDNN accepted got no engine config, for the refusal message: the configs dropped
// or "the heuristics returned no engine config", the loaded version and `what` was lowered, each
// heuristic mode asked with its answer, the operation graph (`recipe`, one line per operation;
// may be empty), and how to get cuDNN's own log.
std::string no_config_reason(const std::string& what, const std::vector<std::string>& recipe,
                             const ConfigList& list);

// Up to `limit` planned configs, in heuristic order.
ConfigList plan_configs(const Descriptor& op_graph, cudnnHandle_t handle, int limit);

// An engine config as a plan bundle stores it: cuDNN's global engine index and the knob choices
// (knob type, value), plus, where cuDNN serializes the finalized execution plan (its runtime-
// compiled engines, which take 30-50 ms to finalize on the H200), that serialized plan. Rebuilt
// at load against the region's operation graph, with no heuristic query: the engine, its knobs
// and the engine config are built directly, and the execution plan is deserialized (no kernel
// compilation) or, where there is none or this cuDNN refuses it, finalized from the config.
struct SavedConfig {
  int64_t engine = -1;
  std::vector<std::pair<int64_t, int64_t>> knobs;
  std::string plan_json;  // CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION; empty: none
  // With plan_json: the SHA-256 (hex) of the signature of the lowering the plan was finalized
  // for. A serialized plan carries its own operation graph, so without this check a plan saved
  // for one region would run on another's buffers.
  std::string graph_digest;
};
SavedConfig saved_config_of(const Descriptor& engine_config);
// The serialized form of a finalized execution plan, or "" where cuDNN offers none.
std::string plan_json_of(const Descriptor& plan);
// "sinter.cudnn.engine_config 3\nengine 8\nknob 24 7\n...[graph DIGEST\nplan_json N\n<N bytes>]"
// and back (versions 1 and 2 still parse: a version 2 plan_json, without a digest, is never
// deserialized); parse returns nullopt with `why` set when the text is not one.
std::string to_text(const SavedConfig& c);
std::optional<SavedConfig> parse_saved_config(std::string_view text, std::string* why);
// The execution plan of a saved config on `op_graph`; throws Error(unsupported) naming the
// engine, the knobs and cuDNN's status when this cuDNN cannot build it. The description says
// whether the plan was deserialized ("[saved plan]") or finalized again ("[saved config]", with
// the reason a serialized plan was not used).
// `graph_digest`: the digest of the lowering `op_graph` was built from; a serialized plan whose
// digest differs is not used (the config is finalized instead, and the description says why).
PlannedConfig plan_saved_config(const Descriptor& op_graph, cudnnHandle_t handle, const SavedConfig& c,
                                const std::string& graph_digest);

// The process-wide handle (created on first use on the current device).
cudnnHandle_t handle();

}  // namespace sinter::cudnn
