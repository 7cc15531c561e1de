// mixt: the umbrella header an embedding application includes.
#pragma once

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op.h>
#include <mixt/dispatcher/op_call.h>
#include <mixt/dispatcher/tls.h>
#include <mixt/runtime/cuda.h>
#include <mixt/runtime/device.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/error.h>
#include <mixt/runtime/generator.h>
#include <mixt/runtime/ops.h>
#include <mixt/runtime/scalar.h>
#include <mixt/runtime/tensor.h>
