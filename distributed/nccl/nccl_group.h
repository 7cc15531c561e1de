// The NCCL backend: collectives on CUDA tensors, one GPU per rank, over a
// non-blocking NCCL communicator. Operations run on the group's own CUDA stream,
// after the work already queued on the current stream of the group's device
// (cuda::current_stream: where mixt's kernels run, also under a StreamGuard);
// every wait polls against GroupOptions::timeout and, when it passes or NCCL
// reports an error, aborts the communicator, marks the group failed and raises
// mixt::Error. Work::wait_on_current_stream() orders later work on the current
// stream after the operation without a host wait. The group makes only its own
// device current (a rank never touches cuda:0 unless it uses it). This header
// does not need nccl.h. See docs/distributed.md.
//
// Beside the ProcessGroup contract:
// - float16, bfloat16 and float8 are reduced natively by NCCL (rounded at each
//   step of its algorithm, not once as the MPI backend does); float8 needs NCCL
//   2.24 or later and a GPU that NCCL reduces it on (Hopper).
// - with GroupOptions::check_collectives each collective waits in the call for
//   every rank's signature (a small all-gather on a second communicator), and
//   send/recv wait for the peer's header; the collective itself stays asynchronous.
// - send/recv take tag 0 only: NCCL matches them in the order they are issued.
//   They run in stream order, so two ranks that both send before they receive
//   wait for each other until the timeout.
#pragma once

#include <array>
#include <cstdint>

#include <mixt/distributed/process_group.h>

namespace mixt::dist {

// The bytes of an ncclUniqueId: one rank creates it, every rank of the group
// passes the same bytes to make_nccl_group.
using NcclUniqueId = std::array<uint8_t, 128>;

// A new unique id (ncclGetUniqueId). Raises mixt::Error when NCCL cannot make one.
NcclUniqueId nccl_unique_id();

// A group of bootstrap.size() ranks on CUDA device `cuda_device` of each rank:
// rank 0 of `bootstrap` (a CPU group, e.g. the MPI world) creates the unique id
// and broadcasts it through `bootstrap`. Every rank of `bootstrap` must call it.
ProcessGroupPtr make_nccl_group(ProcessGroup& bootstrap, int cuda_device, GroupOptions options = {});

// A group from an id shared by other means: rank `rank` of `size`, all ranks
// passing the same `id`. Blocks until every rank joined (at most options.timeout).
ProcessGroupPtr make_nccl_group(const NcclUniqueId& id, int rank, int size, int cuda_device,
                                GroupOptions options = {});

}  // namespace mixt::dist
