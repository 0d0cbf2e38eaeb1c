// Umbrella header for the Sinter library.
#pragma once

#include "sinter/dtype.hpp"
#include "sinter/error.hpp"
#include "sinter/graph.hpp"
#include "sinter/host_tensor.hpp"
#include "sinter/json.hpp"
#include "sinter/ops.hpp"
#include "sinter/reference.hpp"
