// Streams, events and the caching allocator on a real GPU: allocations on two
// streams, reuse on the same stream, record_stream parking a block until the other
// stream's work has run, transfers on a non-default stream, pinned memory, the
// statistics and the out-of-memory error. The allocator's rules themselves are
// checked on the host (tests/cpu/test_caching_allocator.cpp). Own main (no
// Catch2): exits 77 (SKIP) only on a machine without a GPU (gpu_skip.h).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <mixt/mixt.h>

#include "gpu_skip.h"

using namespace mixt;

namespace {

const Device kGpu = Device::cuda(0);
int g_checks = 0, g_failures = 0;

// Counts a check; prints the failing expression and where.
#define EXPECT(cond)                                                          \
  do {                                                                        \
    ++g_checks;                                                               \
    if (!(cond)) {                                                            \
      ++g_failures;                                                           \
      std::printf("FAIL: %s (line %d)\n", #cond, __LINE__);                   \
    }                                                                         \
  } while (0)

// Runs the checks of `f` under `name`; an exception fails the group.
template <class F>
void run_group(const char* name, F&& f) {
  const int before = g_failures;
  try {
    f();
  } catch (const std::exception& e) {
    ++g_failures;
    std::printf("FAIL: %s: exception: %s\n", name, e.what());
  }
  std::printf("%-44s %s\n", name, g_failures == before ? "ok" : "FAILED");
}

TensorOptions on_gpu(ScalarType dtype = kFloat32) {
  TensorOptions o;
  o.dtype = dtype;
  o.device = kGpu;
  return o;
}

// The cudaMalloc address behind `t`'s storage.
const void* base_of(const Tensor& t) { return t.impl()->storage->data.ptr; }

void test_streams_and_events() {
  const cuda::Stream def = cuda::default_stream(kGpu);
  EXPECT(def.is_default());
  EXPECT(cuda::current_stream(kGpu) == def);
  const cuda::PriorityRange range = cuda::stream_priority_range(kGpu);
  EXPECT(range.greatest <= range.least);
  const cuda::Stream s1 = cuda::create_stream(kGpu);
  const cuda::Stream s2 = cuda::create_stream(kGpu, range.greatest - 100);  // clamped
  EXPECT(!s1.is_default() && s1 != s2);
  EXPECT(s2.priority() == range.greatest);
  {
    cuda::StreamGuard guard(s1);
    EXPECT(cuda::current_stream(kGpu) == s1);
    {
      cuda::StreamGuard inner(s2);
      EXPECT(cuda::current_stream(kGpu) == s2);
    }
    EXPECT(cuda::current_stream(kGpu) == s1);
  }
  EXPECT(cuda::current_stream(kGpu) == def);

  cuda::Event never;
  EXPECT(never.query() && !never.is_recorded());
  cuda::Event start(true), stop(true);
  {
    cuda::StreamGuard guard(s1);
    start.record(s1);
    Tensor big = full({int64_t{1} << 24}, 1.5, on_gpu());
    for (int i = 0; i < 4; ++i) big.add_(1.0);
    stop.record(s1);
  }
  // s2 waits for s1's work without the host waiting.
  stop.wait(s2);
  s2.synchronize();
  EXPECT(stop.query());
  EXPECT(start.elapsed_ms(stop) >= 0.0f);
  EXPECT(s1.query());
  cuda::Event moved = std::move(stop);
  EXPECT(moved.is_recorded() && !stop.is_recorded());
}

void test_two_streams() {
  cuda::synchronize();
  cuda::empty_cache();
  const cuda::Stream s1 = cuda::create_stream(kGpu), s2 = cuda::create_stream(kGpu);
  const int64_t n = int64_t{1} << 20;  // 4 MiB of float32
  const void* p = nullptr;
  const CachingPoolStats before = cuda::memory_stats(kGpu);
  {
    cuda::StreamGuard guard(s1);
    Tensor a = full({n}, 2.0, on_gpu());
    p = base_of(a);
  }
  CachingPoolStats s = cuda::memory_stats(kGpu);
  EXPECT(s.allocated_bytes == before.allocated_bytes);
  EXPECT(s.reserved_bytes >= before.reserved_bytes + 4 * (int64_t{1} << 20));
  {
    cuda::StreamGuard guard(s1);
    Tensor b = empty({n}, on_gpu());
    EXPECT(base_of(b) == p);  // same stream: the freed block at once
    EXPECT(cuda::memory_stats(kGpu).cache_hits == s.cache_hits + 1);
  }
  {
    cuda::StreamGuard guard(s2);
    Tensor c = empty({n}, on_gpu());
    EXPECT(base_of(c) != p);  // another stream: not s1's block
  }
  s = cuda::memory_stats(kGpu);
  EXPECT(s.allocated_bytes <= s.reserved_bytes);
  EXPECT(s.peak_allocated_bytes >= s.allocated_bytes + 4 * (int64_t{1} << 20));
  EXPECT(s.device_mallocs >= s.segments);
}

void test_record_stream() {
  const cuda::Stream s1 = cuda::create_stream(kGpu), s2 = cuda::create_stream(kGpu);
  const int64_t n = int64_t{1} << 22;
  const void* p = nullptr;
  {
    cuda::StreamGuard guard(s1);
    Tensor a = full({n}, 1.0, on_gpu());
    p = base_of(a);
    cuda::Event written;
    written.record(s1);
    written.wait(s2);
    {
      cuda::StreamGuard g2(s2);
      Tensor sum = a.add(a);  // reads a on s2
      cuda::record_stream(a, s2);
      cuda::record_stream(sum, s2);  // its own stream: nothing to wait for
    }
  }  // a freed: parked until s2's work has run
  EXPECT(cuda::memory_stats(kGpu).pending_free_bytes >= 4 * n);
  s2.synchronize();
  {
    cuda::StreamGuard guard(s1);
    Tensor b = empty({n}, on_gpu());  // the event completed: a's block is back on s1
    EXPECT(base_of(b) == p);
  }
  EXPECT(cuda::memory_stats(kGpu).pending_free_bytes == 0);
}

void test_transfers_on_a_stream() {
  const cuda::Stream s1 = cuda::create_stream(kGpu);
  std::vector<float> v(100003);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 977) * 0.25f;
  const Tensor x = from_vector(v);
  cuda::StreamGuard guard(s1);
  const Tensor d = x.to(kGpu);
  const Tensor y = d.add(d).cpu();  // download: complete on return
  const auto got = y.to_vector<float>();
  bool same = got.size() == v.size();
  for (size_t i = 0; same && i < v.size(); ++i) same = got[i] == v[i] * 2;
  EXPECT(same);
  // A download into a strided destination (staged in pinned memory), and a large
  // upload (passed to the driver, not staged).
  const Tensor m = x.slice(0, 0, 100000).reshape({1000, 100});
  Tensor dst = full({100, 1000}, 0.0);
  dst.t().copy_(m.to(kGpu));
  EXPECT(dst.t().contiguous().to_vector<float>() == m.to_vector<float>());
  const Tensor large = full({int64_t{12} << 20}, 3.0);  // 48 MiB
  EXPECT(large.to(kGpu).cpu().to_vector<float>() == large.to_vector<float>());
}

void test_pinned() {
  Tensor h = cuda::empty_pinned({4096}, kFloat32);
  EXPECT(h.is_cpu() && cuda::is_pinned(h));
  EXPECT(!cuda::is_pinned(full({4}, 1.0)));
  h.fill_(7.0);
  const Tensor d = h.to(kGpu);
  Tensor back = cuda::empty_pinned({4096}, kFloat32);
  back.copy_(d);
  EXPECT(back.to_vector<float>() == std::vector<float>(4096, 7.0f));
  EXPECT(cuda::pinned_memory_stats().allocated_bytes >= 2 * 4096 * 4);
}

void test_stats_and_empty_cache() {
  cuda::synchronize();
  cuda::empty_cache();
  CachingPoolStats s = cuda::memory_stats(kGpu);
  const int64_t base = s.allocated_bytes;
  cuda::reset_peak_memory_stats(kGpu);
  {
    Tensor a = empty({int64_t{3} << 20}, on_gpu());  // 12 MiB
    s = cuda::memory_stats(kGpu);
    EXPECT(s.allocated_bytes == base + (int64_t{12} << 20));
    EXPECT(s.peak_allocated_bytes == s.allocated_bytes);
  }
  s = cuda::memory_stats(kGpu);
  EXPECT(s.allocated_bytes == base);
  EXPECT(s.cached_bytes >= (int64_t{12} << 20));
  const int64_t frees = s.device_frees;
  cuda::synchronize();
  cuda::empty_cache();
  s = cuda::memory_stats(kGpu);
  EXPECT(s.device_frees > frees);
  EXPECT(s.largest_free_block < (int64_t{12} << 20));
}

void test_out_of_memory() {
  bool raised = false;
  try {
    Tensor huge = empty({int64_t{1} << 42}, on_gpu());  // 16 TiB
  } catch (const Error& e) {
    raised = true;
    const std::string what = e.what();
    std::printf("  (the error: %s)\n", what.c_str());
    EXPECT(what.find("out of memory on cuda:0") != std::string::npos);
    EXPECT(what.find("17592186044416 bytes") != std::string::npos);
    EXPECT(what.find("reserved") != std::string::npos && what.find("largest free block") != std::string::npos);
  }
  EXPECT(raised);
  // The failed cudaMalloc leaves CUDA usable.
  EXPECT(full({8}, 1.0, on_gpu()).cpu().to_vector<float>() == std::vector<float>(8, 1.0f));
}

}  // namespace

int main() {
  if (const int status = testing::cuda_unavailable_status("test_cuda_allocator"); status >= 0) return status;
  run_group("streams and events", test_streams_and_events);
  run_group("allocations on two streams", test_two_streams);
  run_group("record_stream", test_record_stream);
  run_group("transfers on a non-default stream", test_transfers_on_a_stream);
  run_group("pinned host memory", test_pinned);
  run_group("statistics and empty_cache", test_stats_and_empty_cache);
  run_group("out of memory", test_out_of_memory);
  cuda::synchronize();
  std::printf("test_cuda_allocator: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
