#include <mixt/dispatcher/op.h>
#include <mixt/kernels/common/register.h>
#include <mixt/kernels/composite/register.h>

namespace mixt {

void register_common_kernels() {
  register_view_kernels();
  register_movement_kernels();
  register_composite_kernels();
  register_nn_composite_kernels();
  register_spatial_composite_kernels();
  register_rnn_composite_kernels();
  register_index_composite_kernels();
  register_loss_composite_kernels();
  register_distance_composite_kernels();
  register_linalg_composite_kernels();
}

}  // namespace mixt
