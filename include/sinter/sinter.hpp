// Umbrella header for the Sinter library: graphs, the CPU reference, compiling to a Plan, and
// running it.
#pragma once

#include "sinter/communicator.hpp"
#include "sinter/compile.hpp"
#include "sinter/device.hpp"
#include "sinter/device_tensors.hpp"
#include "sinter/dtype.hpp"
#include "sinter/error.hpp"
#include "sinter/explain.hpp"
#include "sinter/graph.hpp"
#include "sinter/host_tensor.hpp"
#include "sinter/json.hpp"
#include "sinter/log.hpp"
#include "sinter/mega_trace.hpp"
#include "sinter/ops.hpp"
#include "sinter/plan.hpp"
#include "sinter/reference.hpp"
#include "sinter/runner.hpp"
#include "sinter/shard.hpp"
