// Exchanging tensors without copies through DLPack (what PyTorch, JAX and CuPy speak).
#include <cstdio>

#include <mixt/mixt.h>

#include "example_support.h"  // MIXT_EXAMPLE_DEVICE: the GPU check runs this example on CUDA

using namespace mixt;

int main() {
  Tensor t = arange(6, {.dtype = kFloat32}).view({2, 3});
  DLManagedTensor* exported = io::to_dlpack(t);  // hand this to another framework
  Tensor back = io::from_dlpack(exported);        // ... or import one from it
  back.select(0, 1).fill_(-1.0);                  // same memory: t sees the write
  std::printf("%s\n", t.str().c_str());
  return t.to_vector<float>()[3] == -1.0f && back.data_ptr() == t.data_ptr() ? 0 : 1;  // no copy was made
}
