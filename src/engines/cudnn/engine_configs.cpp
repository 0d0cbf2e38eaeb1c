#include "engines/cudnn/engine_configs.hpp"

#include <mutex>
#include <set>
#include <sstream>

#include "sinter/error.hpp"

namespace sinter::cudnn {
namespace {

std::string numerical_note(cudnnBackendNumericalNote_t n) {
  switch (n) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE: return "tensor_core";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: return "down_convert_inputs";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: return "reduced_precision_reduction";
    case CUDNN_NUMERICAL_NOTE_FFT: return "fft";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: return "nondeterministic";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD: return "winograd";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4: return "winograd_4x4";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6: return "winograd_6x6";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13: return "winograd_13x13";
    case CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP: return "strict_nan_prop";
    default: return "numerical_note_" + std::to_string(static_cast<int>(n));
  }
}

std::string behavior_note(cudnnBackendBehaviorNote_t n) {
  switch (n) {
    case CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION: return "runtime_compilation";
    case CUDNN_BEHAVIOR_NOTE_REQUIRES_FILTER_INT8x32_REORDER: return "filter_int8x32_reorder";
    case CUDNN_BEHAVIOR_NOTE_REQUIRES_BIAS_INT8x32_REORDER: return "bias_int8x32_reorder";
    case CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API: return "cuda_graph_native";
    default: return "behavior_note_" + std::to_string(static_cast<int>(n));
  }
}

// Reads `count` descriptors of `type` from an array attribute (the descriptors must exist
// before cuDNN fills them).
std::vector<DescriptorPtr> get_descriptors(const Descriptor& from, cudnnBackendAttributeName_t name,
                                           cudnnBackendDescriptorType_t type, int64_t max) {
  std::vector<DescriptorPtr> out;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < max; ++i) {
    out.push_back(std::make_unique<Descriptor>(type));
    raw.push_back(out.back()->get());
  }
  int64_t count = 0;
  SINTER_CUDNN_CHECK(library().BackendGetAttribute(from.get(), name, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                                   max, &count, raw.data()));
  out.resize(static_cast<size_t>(std::min(count, max)));
  return out;
}

// The engine descriptor a config refers to (cuDNN fills the one we pass).
DescriptorPtr engine_of(const Descriptor& cfg) {
  auto engine = std::make_unique<Descriptor>(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine->get();
  int64_t n = 0;
  SINTER_CUDNN_CHECK(library().BackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw));
  return engine;
}

// "eng 8 knobs {24=7 2=0}": how candidates and saved configs are named.
std::string config_name(const SavedConfig& c) {
  std::string knobs;
  for (const auto& [type, value] : c.knobs) {
    knobs += (knobs.empty() ? "" : " ") + std::to_string(type) + "=" + std::to_string(value);
  }
  return "eng " + std::to_string(c.engine) + " knobs {" + knobs + "}";
}

// A finalized execution plan of one engine config, or cuDNN's status when it does not build.
struct FinalizedPlan {
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  DescriptorPtr plan;
  int64_t workspace = 0;
};
FinalizedPlan finalize_plan(const Descriptor& cfg, cudnnHandle_t h) {
  FinalizedPlan out;
  out.plan = std::make_unique<Descriptor>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  out.plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, h);
#pragma GCC diagnostic pop
  out.plan->set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg);
  out.status = out.plan->try_finalize();
  if (out.status != CUDNN_STATUS_SUCCESS) return out;
  int64_t n = 0;
  SINTER_CUDNN_CHECK(library().BackendGetAttribute(out.plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                   CUDNN_TYPE_INT64, 1, &n, &out.workspace));
  return out;
}

// An execution plan from its serialized form (plan_json_of), or cuDNN's status when it refuses.
FinalizedPlan deserialize_plan(const std::string& json, cudnnHandle_t h) {
  const Library& lib = library();
  FinalizedPlan out;
  out.plan = std::make_unique<Descriptor>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  out.plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, h);
#pragma GCC diagnostic pop
  out.status = lib.BackendSetAttribute(out.plan->get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                                       static_cast<int64_t>(json.size()), json.data());
  if (out.status != CUDNN_STATUS_SUCCESS) return out;
  out.status = out.plan->try_finalize();
  if (out.status != CUDNN_STATUS_SUCCESS) return out;
  int64_t n = 0;
  out.status = lib.BackendGetAttribute(out.plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                       &n, &out.workspace);
  return out;
}

// "eng 8 knobs {0=1 2=4} notes: tensor_core, runtime_compilation", and a key for dedup.
std::pair<std::string, std::string> describe(const Descriptor& cfg) {
  const Library& lib = library();
  std::string desc = config_name(saved_config_of(cfg));
  const std::string key = desc;
  const DescriptorPtr engine = engine_of(cfg);
  const cudnnBackendDescriptor_t raw = engine->get();
  int64_t n = 0;
  std::string notes;
  cudnnBackendNumericalNote_t num[CUDNN_NUMERICAL_NOTE_TYPE_COUNT + 8];
  if (lib.BackendGetAttribute(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                              CUDNN_NUMERICAL_NOTE_TYPE_COUNT + 8, &n, num) == CUDNN_STATUS_SUCCESS) {
    for (int64_t i = 0; i < n; ++i) notes += (notes.empty() ? "" : ", ") + numerical_note(num[i]);
  }
  cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT + 8];
  if (lib.BackendGetAttribute(raw, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                              CUDNN_BEHAVIOR_NOTE_TYPE_COUNT + 8, &n, beh) == CUDNN_STATUS_SUCCESS) {
    for (int64_t i = 0; i < n; ++i) notes += (notes.empty() ? "" : ", ") + behavior_note(beh[i]);
  }
  if (!notes.empty()) desc += " notes: " + notes;
  return {desc, key};
}

}  // namespace

cudnnHandle_t handle() {
  static std::once_flag once;
  static cudnnHandle_t h = nullptr;
  std::call_once(once, [] { SINTER_CUDNN_CHECK(require_library().Create(&h)); });
  return h;
}

std::string no_config_reason(const std::string& what, const std::vector<std::string>& recipe,
                             const ConfigList& list) {
  std::string why = list.dropped.empty() ? "the heuristics returned no engine config" : list.dropped;
  why += " [cuDNN " + version_string() + ", " + what + "; heuristic modes tried: " +
         (list.tried.empty() ? "none" : list.tried) + "]";
  if (!recipe.empty()) {
    why += "\n  the operation graph given to cuDNN:";
    for (size_t i = 0; i < recipe.size(); ++i) why += "\n    " + std::to_string(i) + ". " + recipe[i];
  }
  return why + "\n  " + kCudnnLogHint;
}

ConfigList plan_configs(const Descriptor& op_graph, cudnnHandle_t h, int limit) {
  ConfigList out;
  std::set<std::string> seen;
  auto note_tried = [&out](const std::string& text) {
    out.tried += (out.tried.empty() ? "" : "; ") + text;
  };
  const std::pair<cudnnBackendHeurMode_t, const char*> modes[] = {
      {CUDNN_HEUR_MODE_A, "A"}, {CUDNN_HEUR_MODE_B, "B"}, {CUDNN_HEUR_MODE_FALLBACK, "fallback"}};
  for (const auto& [mode, mode_name] : modes) {
    if (static_cast<int>(out.configs.size()) >= limit) break;
    Descriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, op_graph)
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, mode);
    // Reading cuDNN's last error clears it (seen with 9.19): drop any stale message, so that a
    // message read after this query is this query's.
    (void)last_error();
    if (const cudnnStatus_t s = heur.try_finalize(); s != CUDNN_STATUS_SUCCESS) {
      const std::string why = status_message(s);
      out.dropped += std::string(out.dropped.empty() ? "" : "; ") + "heur " + mode_name + ": " + why;
      note_tried(std::string(mode_name) + ": " + why);
      continue;
    }
    int64_t count = 0;
    SINTER_CUDNN_CHECK(library().BackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    std::string answer = std::string(mode_name) + ": " + std::to_string(count) + " config(s)";
    // An empty answer is a success status; cuDNN may still have written down why.
    if (count == 0) {
      if (const std::string last = last_error(); !last.empty()) answer += " (cuDNN: " + last + ")";
    }
    note_tried(answer);
    int failed = 0;
    std::string last_failure;
    for (auto& cfg : get_descriptors(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, count)) {
      if (static_cast<int>(out.configs.size()) >= limit) break;
      auto [desc, key] = describe(*cfg);
      if (!seen.insert(key).second) continue;
      FinalizedPlan fp = finalize_plan(*cfg, h);
      if (fp.status != CUDNN_STATUS_SUCCESS) {
        ++failed;
        last_failure = desc + ": " + status_message(fp.status);
        continue;
      }
      const int64_t ws = fp.workspace;
      desc += std::string(" [heur ") + mode_name + "] ws " + std::to_string(ws >> 10) + " KiB";
      out.configs.push_back({std::move(cfg), std::move(fp.plan), ws, std::move(desc)});
    }
    if (failed) {
      out.dropped += std::string(out.dropped.empty() ? "" : "; ") + "heur " + mode_name + ": " +
                     std::to_string(failed) + " config(s) did not build, last " + last_failure;
    }
  }
  return out;
}

SavedConfig saved_config_of(const Descriptor& cfg) {
  const Library& lib = library();
  SavedConfig out;
  int64_t n = 0;
  SINTER_CUDNN_CHECK(lib.BackendGetAttribute(engine_of(cfg)->get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64,
                                             1, &n, &out.engine));
  for (const auto& kc : get_descriptors(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
                                        CUDNN_KNOB_TYPE_COUNTS)) {
    cudnnBackendKnobType_t type{};
    int64_t value = 0;
    SINTER_CUDNN_CHECK(lib.BackendGetAttribute(kc->get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                                               &n, &type));
    SINTER_CUDNN_CHECK(lib.BackendGetAttribute(kc->get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n,
                                               &value));
    out.knobs.emplace_back(static_cast<int64_t>(type), value);
  }
  return out;
}

std::string plan_json_of(const Descriptor& plan) {
  const Library& lib = library();
  int64_t n = 0;
  if (lib.BackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 0, &n,
                              nullptr) != CUDNN_STATUS_SUCCESS ||
      n <= 0) {
    return "";
  }
  std::string json(static_cast<size_t>(n), '\0');
  if (lib.BackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, n, &n,
                              json.data()) != CUDNN_STATUS_SUCCESS) {
    return "";
  }
  json.resize(static_cast<size_t>(std::max<int64_t>(n, 0)));
  while (!json.empty() && json.back() == '\0') json.pop_back();
  return json;
}

namespace {
constexpr std::string_view kSavedConfigHeader = "sinter.cudnn.engine_config 3";
constexpr std::string_view kSavedConfigHeaderV2 = "sinter.cudnn.engine_config 2";  // no graph digest
constexpr std::string_view kSavedConfigHeaderV1 = "sinter.cudnn.engine_config 1";  // no plan_json
}  // namespace

std::string to_text(const SavedConfig& c) {
  std::string s = std::string(kSavedConfigHeader) + "\nengine " + std::to_string(c.engine) + "\n";
  for (const auto& [type, value] : c.knobs) s += "knob " + std::to_string(type) + " " + std::to_string(value) + "\n";
  // last: its bytes run to the end and may hold anything, newlines included
  if (!c.graph_digest.empty()) s += "graph " + c.graph_digest + "\n";
  if (!c.plan_json.empty()) s += "plan_json " + std::to_string(c.plan_json.size()) + "\n" + c.plan_json;
  return s;
}

std::optional<SavedConfig> parse_saved_config(std::string_view text, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<SavedConfig> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  // Lines are cut from the view as they are read: the serialized plan that may end the text is
  // tens of KB, and is copied once, not streamed through (this runs at every plan load).
  size_t pos = 0;
  auto next_line = [&](std::string& out) {
    if (pos >= text.size()) return false;
    const size_t end = std::min(text.find('\n', pos), text.size());
    out.assign(text.substr(pos, end - pos));
    pos = end + 1;
    return true;
  };
  std::string line;
  if (!next_line(line) ||
      (line != kSavedConfigHeader && line != kSavedConfigHeaderV2 && line != kSavedConfigHeaderV1)) {
    return fail("not a cuDNN engine config (the first line is not \"" + std::string(kSavedConfigHeader) + "\")");
  }
  const bool v1 = line == kSavedConfigHeaderV1;
  const bool v3 = line == kSavedConfigHeader;
  SavedConfig c;
  int lineno = 1;
  while (next_line(line)) {
    ++lineno;
    std::istringstream fields(line);
    std::string word;
    fields >> word;
    int64_t a = 0, b = 0;
    if (word == "engine" && (fields >> a) && a >= 0 && c.engine < 0) {
      c.engine = a;
    } else if (word == "knob" && (fields >> a >> b) && a >= 0 && a < CUDNN_KNOB_TYPE_COUNTS) {
      c.knobs.emplace_back(a, b);
    } else if (v3 && word == "graph" && c.graph_digest.empty() && (fields >> c.graph_digest)) {
      if (c.graph_digest.size() != 64 || c.graph_digest.find_first_not_of("0123456789abcdef") != std::string::npos) {
        return fail("line " + std::to_string(lineno) + " of the cuDNN engine config: the graph digest is not 64 hex digits");
      }
    } else if (!v1 && word == "plan_json" && (fields >> a) && a > 0) {
      std::string rest;
      if (fields >> rest) return fail("line " + std::to_string(lineno) + " of the cuDNN engine config has extra words");
      const size_t at = std::min(pos, text.size());
      if (static_cast<uint64_t>(a) != text.size() - at) {
        return fail("the cuDNN engine config's serialized plan should be " + std::to_string(a) + " bytes and end the "
                    "config; " + std::to_string(text.size() - at) + " bytes follow");
      }
      c.plan_json.assign(text.substr(at));
      break;
    } else {
      return fail("line " + std::to_string(lineno) + " of the cuDNN engine config is not \"engine N\" or "
                  "\"knob TYPE VALUE\": \"" + line.substr(0, 60) + "\"");
    }
    std::string rest;
    if (fields >> rest) return fail("line " + std::to_string(lineno) + " of the cuDNN engine config has extra words");
  }
  if (c.engine < 0) return fail("the cuDNN engine config names no engine");
  return c;
}

PlannedConfig plan_saved_config(const Descriptor& op_graph, cudnnHandle_t h, const SavedConfig& c,
                                const std::string& graph_digest) {
  const std::string what = config_name(c);
  auto refuse = [&](const char* step, cudnnStatus_t s) {
    throw Error(ErrorCode::unsupported, "cuDNN " + version_string() + " cannot rebuild the saved engine config (" +
                                            what + "): " + step + ": " + status_message(s) +
                                            "; build the plan again with this cuDNN");
  };
  auto engine_ptr = std::make_unique<Descriptor>(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  Descriptor& engine = *engine_ptr;
  engine.set_desc(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, op_graph).set(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, c.engine);
  if (const cudnnStatus_t s = engine.try_finalize(); s != CUDNN_STATUS_SUCCESS) refuse("the engine", s);
  std::vector<DescriptorPtr> knobs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const auto& [type, value] : c.knobs) {
    knobs.push_back(std::make_unique<Descriptor>(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
    knobs.back()->set(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, static_cast<cudnnBackendKnobType_t>(type))
        .set(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, value);
    if (const cudnnStatus_t s = knobs.back()->try_finalize(); s != CUDNN_STATUS_SUCCESS) refuse("a knob choice", s);
    raw.push_back(knobs.back()->get());
  }
  auto cfg = std::make_unique<Descriptor>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  cfg->set_desc(CUDNN_ATTR_ENGINECFG_ENGINE, engine);
  if (!raw.empty()) cfg->set_array(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, raw);
  if (const cudnnStatus_t s = cfg->try_finalize(); s != CUDNN_STATUS_SUCCESS) refuse("the engine config", s);
  // The serialized plan first: it carries the compiled kernels. A refusal (another cuDNN,
  // another GPU) is not an error: the config below rebuilds the same plan, only slower.
  FinalizedPlan fp;
  std::string how = "[saved config]";
  if (!c.plan_json.empty() && c.graph_digest != graph_digest) {
    how = c.graph_digest.empty() ? "[saved config; the serialized plan has no graph digest (an older bundle)]"
                                 : "[saved config; the serialized plan was made for another operation graph]";
  } else if (!c.plan_json.empty()) {
    fp = deserialize_plan(c.plan_json, h);
    how = fp.status == CUDNN_STATUS_SUCCESS ? "[saved plan]"
                                            : "[saved config; serialized plan refused: " + status_message(fp.status) + "]";
  }
  if (!fp.plan || fp.status != CUDNN_STATUS_SUCCESS) fp = finalize_plan(*cfg, h);
  if (fp.status != CUDNN_STATUS_SUCCESS) refuse("the execution plan", fp.status);
  const int64_t ws = fp.workspace;
  PlannedConfig out{std::move(cfg), std::move(fp.plan), ws, what + " " + how + " ws " + std::to_string(ws >> 10) + " KiB", {}};
  out.keep.push_back(std::move(engine_ptr));
  for (DescriptorPtr& k : knobs) out.keep.push_back(std::move(k));
  return out;
}

}  // namespace sinter::cudnn
