// mixt: the umbrella header an embedding application includes as <mixt/mixt.h>. It sits
// at the root of the tree, not in runtime/, because it spans every layer.
#pragma once

#include <mixt/amp/grad_scaler.h>
#include <mixt/amp/precision_state.h>
#include <mixt/autocast/autocast.h>
#include <mixt/autocast/decision.h>
#include <mixt/autocast/explain.h>
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op.h>
#include <mixt/dispatcher/op_call.h>
#include <mixt/dispatcher/tls.h>
#include <mixt/runtime/cuda.h>
#include <mixt/runtime/cuda_memory.h>
#include <mixt/runtime/cuda_stream.h>
#include <mixt/runtime/determinism.h>
#include <mixt/runtime/gemm_settings.h>
#include <mixt/runtime/device.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/error.h>
#include <mixt/runtime/generator.h>
#include <mixt/runtime/op_definition.h>
#include <mixt/runtime/scalar.h>
#include <mixt/runtime/tensor.h>
#include <mixt/runtime/autograd/autograd.h>
#include <mixt/runtime/nn/module.h>
#include <mixt/runtime/nn/modules.h>
#include <mixt/runtime/ops/amp.h>
#include <mixt/runtime/ops/nn.h>
#include <mixt/runtime/ops/ops.h>
#include <mixt/runtime/ops/optim.h>
#include <mixt/runtime/optim/optimizer.h>
#include <mixt/runtime/optim/schedule.h>
#include <mixt/runtime/io/checkpoint.h>
#include <mixt/runtime/io/dlpack.h>
#include <mixt/runtime/io/safetensors.h>
