// Registration of the meta backend's kernels (done once, with the other backends).
#pragma once

namespace mixt {
// Binds the generic meta kernel (an op's meta rule) as the Meta key's fallback.
void register_meta_kernels();
}  // namespace mixt
