// The MPI backend: collectives on CPU tensors over Open MPI (non-blocking MPI
// calls polled against the group's timeout; MPI errors returned, never fatal).
// Processes are launched with mpirun (or Slurm's srun); a process started alone
// is a world of size 1. See docs/distributed.md.
#pragma once

#include <mixt/distributed/process_group.h>

namespace mixt::dist {

// A group over every process of the MPI job (its own duplicate of
// MPI_COMM_WORLD). Initialises MPI on first use (thread level SERIALIZED: mixt
// serialises its own MPI calls).
ProcessGroupPtr make_mpi_group(GroupOptions options = {});

// True once make_mpi_group() (or the application) initialised MPI.
bool mpi_initialized();
// Finalizes MPI if mixt initialised it and it is still running. Groups must be
// destroyed first (finalize_distributed() does both).
void mpi_finalize();

}  // namespace mixt::dist
