#include <mixt/distributed/world.h>

#include <cstdlib>
#include <mutex>

#include <mixt/runtime/check.h>
#if MIXT_HAS_MPI
#include <mixt/distributed/mpi/mpi_group.h>
#endif

namespace mixt::dist {

namespace {

std::mutex g_mutex;
ProcessGroupPtr g_world;
Backend g_backend = Backend::Auto;

Backend resolve(Backend b) {
  if (b != Backend::Auto) return b;
  return has_mpi() && launched_by_launcher() ? Backend::Mpi : Backend::Local;
}

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Local: return "local";
    case Backend::Mpi: return "mpi";
  }
  return "?";
}

}  // namespace

bool has_mpi() { return MIXT_HAS_MPI != 0; }
bool has_nccl() { return MIXT_HAS_NCCL != 0; }

bool launched_by_launcher() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

ProcessGroupPtr init(const InitOptions& options) {
  std::lock_guard lock(g_mutex);
  const Backend want = resolve(options.backend);
  if (g_world) {
    MIXT_CHECK(want == g_backend, "dist::init", "the world group exists with the {} backend; asked for {}",
               backend_name(g_backend), backend_name(want));
    return g_world;
  }
  if (want == Backend::Mpi) {
#if MIXT_HAS_MPI
    g_world = make_mpi_group(options.group);
#else
    MIXT_FAIL("dist::init", "mixt was built without MPI (meson option -Dmpi=enabled and libopenmpi-dev)");
#endif
  } else {
    g_world = make_local_group(DeviceType::CPU, options.group);
  }
  g_backend = want;
  static bool registered = false;
  if (!registered) {
    std::atexit([] { finalize(); });
    registered = true;
  }
  return g_world;
}

ProcessGroupPtr world() {
  std::lock_guard lock(g_mutex);
  MIXT_CHECK(g_world != nullptr, "dist::world", "call dist::init() first");
  return g_world;
}

void finalize() {
  std::lock_guard lock(g_mutex);
  if (g_world) g_world->destroy();
  g_world.reset();
#if MIXT_HAS_MPI
  mpi_finalize();
#endif
}

}  // namespace mixt::dist
