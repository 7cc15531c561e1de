// The world group of a process: init() once (after mpirun, srun or alone), use
// world() anywhere, finalize() before exit (init registers it with atexit too).
#pragma once

#include <mixt/distributed/process_group.h>

namespace mixt::dist {

enum class Backend : uint8_t {
  Auto,   // mpi when the process was launched by mpirun/srun and mixt has MPI, else local
  Local,  // one process (world size 1), no MPI needed
  Mpi,    // raises when mixt was built without MPI
};

struct InitOptions {
  Backend backend = Backend::Auto;
  GroupOptions group;
};

// Creates the world group; a second call returns the same group (raises if it
// asks for another backend).
ProcessGroupPtr init(const InitOptions& options = {});
// The world group (raises before init()).
ProcessGroupPtr world();
// Destroys the world group and finalizes MPI if init() started it. Idempotent.
void finalize();

// True when mixt was built with the MPI backend.
bool has_mpi();
// True when mixt was built with the NCCL backend (<mixt/distributed/nccl/nccl_group.h>).
bool has_nccl();
// True when the environment shows a launcher (Open MPI's mpirun, PMIx, Slurm's srun).
bool launched_by_launcher();

}  // namespace mixt::dist
