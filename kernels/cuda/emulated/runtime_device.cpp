// The emulated CUDA runtime, part one: settings, errors (per-thread last error,
// sticky faults), devices and their properties. Streams and events are in
// runtime_streams.cpp, memory and copies in runtime_memory.cpp. Each API function has
// the toolkit header's signature (cuda_runtime_api.h) and the documented behaviour of
// the real runtime for what mixt calls; docs/emulated-cuda.md lists the subset.
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <mixt/kernels/cuda/emulated/emulator.h>
#include <mixt/kernels/cuda/emulated/executor.h>
#include <mixt/kernels/cuda/emulated/runtime_state.h>

namespace mixt::cuda::emulated {
namespace {

// "8G", "512M", "4096" (bytes) -> bytes; 0 when malformed.
size_t parse_bytes(const char* text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text) return 0;
  switch (*end) {
    case 'G': case 'g': return static_cast<size_t>(v) << 30;
    case 'M': case 'm': return static_cast<size_t>(v) << 20;
    case 'K': case 'k': return static_cast<size_t>(v) << 10;
    case '\0': return static_cast<size_t>(v);
    default: return 0;
  }
}

// Records the first malformed setting; the device count drops to 0 (Settings::error).
void bad_setting(Settings& s, const char* name, const char* value, const char* expected) {
  if (s.error.empty())
    s.error = std::string(name) + "=" + value + " is not valid (expected " + expected + ")";
  s.device_count = 0;
}

// A whole decimal number in [lo, hi], or false.
bool parse_integer(const char* text, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < lo || v > hi) return false;
  *out = v;
  return true;
}

Settings read_settings() {
  Settings s;
  long long n = 0;
  if (const char* v = std::getenv("MIXT_EMULATED_DEVICES")) {
    if (parse_integer(v, 0, 16, &n)) s.device_count = static_cast<int>(n);
    else bad_setting(s, "MIXT_EMULATED_DEVICES", v, "0 to 16");
  }
  if (const char* v = std::getenv("MIXT_EMULATED_MEMORY")) {
    s.memory_bytes = parse_bytes(v);
    if (s.memory_bytes == 0) bad_setting(s, "MIXT_EMULATED_MEMORY", v, "a size such as 512M or 8G");
  }
  if (const char* v = std::getenv("MIXT_EMULATED_ORDER")) {
    if (std::strcmp(v, "natural") == 0) s.order = BlockOrder::Natural;
    else if (std::strcmp(v, "reverse") == 0) s.order = BlockOrder::Reverse;
    else if (std::strcmp(v, "shuffle") == 0) s.order = BlockOrder::Shuffle;
    else bad_setting(s, "MIXT_EMULATED_ORDER", v, "natural, reverse or shuffle");
  }
  if (const char* v = std::getenv("MIXT_EMULATED_SEED")) {
    char* end = nullptr;
    errno = 0;
    s.seed = std::strtoull(v, &end, 10);
    if (end == v || *end != '\0' || errno == ERANGE || *v == '-')
      bad_setting(s, "MIXT_EMULATED_SEED", v, "an unsigned 64-bit integer");
  }
  if (const char* v = std::getenv("MIXT_EMULATED_ASYNC")) {
    if (std::strcmp(v, "eager") == 0) s.async = AsyncMode::Eager;
    else if (std::strcmp(v, "deferred") == 0) s.async = AsyncMode::Deferred;
    else bad_setting(s, "MIXT_EMULATED_ASYNC", v, "eager or deferred");
  }
  if (const char* v = std::getenv("MIXT_EMULATED_WORKERS")) {
    if (parse_integer(v, 0, 1024, &n)) s.workers = static_cast<int>(n);
    else bad_setting(s, "MIXT_EMULATED_WORKERS", v, "0 to 1024 (0: one per CPU thread)");
  }
  if (const char* v = std::getenv("MIXT_EMULATED_MAX_BLOCKS")) {
    if (parse_integer(v, 0, 1 << 30, &n)) s.max_blocks = n;
    else bad_setting(s, "MIXT_EMULATED_MAX_BLOCKS", v, "0 (no cap) or a number of blocks");
  }
  if (const char* v = std::getenv("MIXT_EMULATED_CHECKS")) {
    const std::string list = v;
    s.memcheck = s.initcheck = s.racecheck = false;
    bool ok = true;
    size_t at = 0;
    while (ok && list != "none") {
      const size_t comma = list.find(',', at);
      const std::string item = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      if (item == "all") s.memcheck = s.initcheck = s.racecheck = true;
      else if (item == "memcheck") s.memcheck = true;
      else if (item == "initcheck") s.initcheck = true;
      else if (item == "racecheck") s.racecheck = true;
      else ok = false;
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    if (!ok) bad_setting(s, "MIXT_EMULATED_CHECKS", v, "all, none, or a comma list of memcheck, initcheck, racecheck");
  }
  if (!s.error.empty()) std::fprintf(stderr, "mixt emulated CUDA device: %s\n", s.error.c_str());
  return s;
}

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_device = 0;

std::mutex g_fault_mutex;
std::atomic<int> g_sticky{cudaSuccess};
std::string g_fault_message;
std::atomic<uint32_t> g_contexts{0};

}  // namespace

const Settings& settings() {
  static const Settings s = read_settings();
  return s;
}

cudaError_t set_last_error(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

cudaError_t sticky_error() { return static_cast<cudaError_t>(g_sticky.load(std::memory_order_acquire)); }

void record_fault(cudaError_t code, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_fault_mutex);
  if (g_sticky.load() != cudaSuccess) return;  // the first fault poisons the context
  g_fault_message = message;
  g_sticky.store(code, std::memory_order_release);
  std::fprintf(stderr, "mixt emulated CUDA device: fault: %s\n", message.c_str());
}

std::string last_fault() {
  std::lock_guard<std::mutex> lock(g_fault_mutex);
  return g_fault_message;
}

void reset_faults() {
  std::lock_guard<std::mutex> lock(g_fault_mutex);
  g_fault_message.clear();
  g_sticky.store(cudaSuccess);
  t_last_error = cudaSuccess;
}

int current_device() { return t_device; }

void touch_context(int device) {
  if (device >= 0 && device < 32) g_contexts.fetch_or(1u << device);
}

bool context_created(int device) { return device >= 0 && device < 32 && (g_contexts.load() >> device & 1u) != 0; }

void forget_contexts() { g_contexts.store(0); }

}  // namespace mixt::cuda::emulated

using namespace mixt::cuda::emulated;

namespace {

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
};

const ErrorText* find_error(cudaError_t e) {
  for (const ErrorText& t : kErrors)
    if (t.code == e) return &t;
  return nullptr;
}

// Checks a device ordinal.
bool valid_device(int d) { return d >= 0 && d < settings().device_count; }

}  // namespace

extern "C" {

cudaError_t cudaGetLastError(void) {
  const cudaError_t sticky = sticky_error();
  if (sticky != cudaSuccess) return sticky;
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  const cudaError_t sticky = sticky_error();
  return sticky != cudaSuccess ? sticky : t_last_error;
}

const char* cudaGetErrorName(cudaError_t e) {
  const ErrorText* t = find_error(e);
  return t ? t->name : "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  if (e != cudaSuccess && e == sticky_error()) {
    // The fault's own report: which kernel, block and threads (kept until reset_faults).
    static thread_local std::string text;
    text = std::string(find_error(e) ? find_error(e)->text : "unknown error") + " (emulated CUDA device: " +
           last_fault() + ")";
    return text.c_str();
  }
  if (e == cudaErrorInitializationError && !settings().error.empty()) {
    static const std::string text = "initialization error (emulated CUDA device: " + settings().error + ")";
    return text.c_str();
  }
  const ErrorText* t = find_error(e);
  return t ? t->text : "unrecognized error code";
}

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return set_last_error(cudaErrorInvalidValue);
  if (!settings().error.empty()) return set_last_error(cudaErrorInitializationError);
  if (settings().device_count == 0) return set_last_error(cudaErrorNoDevice);  // the count is left unset, as CUDA does
  *count = settings().device_count;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return set_last_error(cudaErrorInvalidValue);
  if (settings().device_count == 0) return set_last_error(cudaErrorNoDevice);
  *device = current_device();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (!valid_device(device)) return set_last_error(settings().device_count == 0 ? cudaErrorNoDevice : cudaErrorInvalidDevice);
  t_device = device;
  touch_context(device);  // CUDA 12 and later create the primary context here
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* p, int device) {
  if (p == nullptr) return set_last_error(cudaErrorInvalidValue);
  if (!valid_device(device)) return set_last_error(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "%s", kDeviceName);
  p->totalGlobalMem = settings().memory_bytes;
  p->sharedMemPerBlock = limits::kSharedPerBlock;
  p->sharedMemPerBlockOptin = limits::kSharedPerBlockOptin;
  p->sharedMemPerMultiprocessor = limits::kSharedPerMultiprocessor;
  p->regsPerBlock = limits::kRegistersPerBlock;
  p->regsPerMultiprocessor = limits::kRegistersPerBlock;
  p->warpSize = limits::kWarpSize;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = limits::kMaxThreadsPerBlock;
  for (int i = 0; i < 3; ++i) {
    p->maxThreadsDim[i] = limits::kMaxBlockDim[i];
    p->maxGridSize[i] = limits::kMaxGridDim[i];
  }
  p->totalConstMem = limits::kConstantBytes;
  p->major = 9;
  p->minor = 0;
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->multiProcessorCount = limits::kMultiprocessors;
  p->integrated = 0;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 3;
  p->unifiedAddressing = 1;
  p->l2CacheSize = 50 * 1024 * 1024;
  p->maxThreadsPerMultiProcessor = limits::kMaxThreadsPerMultiprocessor;
  p->streamPrioritiesSupported = 1;
  p->memoryBusWidth = 6144;
  p->pciDeviceID = device;
  p->managedMemory = 1;
  p->isMultiGpuBoard = 0;
  p->maxBlocksPerMultiProcessor = 32;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (value == nullptr) return set_last_error(cudaErrorInvalidValue);
  if (!valid_device(device)) return set_last_error(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = limits::kMaxThreadsPerBlock; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = limits::kSharedPerBlock; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = limits::kSharedPerBlockOptin; return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *value = limits::kMultiprocessors; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; return cudaSuccess;
    case cudaDevAttrWarpSize: *value = limits::kWarpSize; return cudaSuccess;
    case cudaDevAttrMaxGridDimX: *value = limits::kMaxGridDim[0]; return cudaSuccess;
    case cudaDevAttrMaxGridDimY: *value = limits::kMaxGridDim[1]; return cudaSuccess;
    case cudaDevAttrMaxGridDimZ: *value = limits::kMaxGridDim[2]; return cudaSuccess;
    case cudaDevAttrUnifiedAddressing: *value = 1; return cudaSuccess;
    default: return set_last_error(cudaErrorInvalidValue);
  }
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return set_last_error(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return set_last_error(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

}  // extern "C"
