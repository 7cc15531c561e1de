#include <mixt/runtime/io/atomic_file.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <mixt/runtime/check.h>

namespace mixt::io {
namespace {

constexpr const char* kOp = "write_file_atomic";
constexpr size_t kMaxChunk = size_t{1} << 30;

AtomicFileHooks real_hooks() { return {::write, ::fsync, ::rename}; }
AtomicFileHooks g_hooks = real_hooks();

// Raises the error of a failed step, with the errno text.
[[noreturn]] void fail(const std::string& path, std::string_view step, int err) {
  MIXT_FAIL(kOp, "'{}': {} failed: {}", path, step, std::generic_category().message(err));
}

// The folder holding `path` ("." for a bare file name).
std::string parent_dir(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// A uniquely named temporary file beside the target, removed unless committed.
class TempFile {
 public:
  TempFile(const std::string& target, const std::string& dir) {
    static std::atomic<uint64_t> counter{0};
    const std::string base = std::filesystem::path(target).filename().string();
    for (int attempt = 0; attempt < 100; ++attempt) {
      const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
      name_ = fmt::format("{}/.{}.tmp.{}.{}.{:x}", dir, base, ::getpid(), counter++, ticks & 0xffffff);
      fd_ = ::open(name_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
      if (fd_ >= 0 || errno != EEXIST) break;
    }
    if (fd_ < 0) fail(target, fmt::format("creating a temporary file in '{}'", dir), errno);
    struct stat st;  // keep the permissions of the file being replaced
    if (::stat(target.c_str(), &st) == 0) (void)::fchmod(fd_, st.st_mode & 07777);
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(name_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  // Closes the descriptor, returning close()'s result.
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  // The file now lives under the target's name: keep it.
  void commit() { committed_ = true; }

 private:
  std::string name_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes all of `bytes` to `fd`, retrying short writes and interrupts.
void write_all(const std::string& path, int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = g_hooks.write(fd, bytes.data() + done, std::min(bytes.size() - done, kMaxChunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, "write", errno);
    if (n == 0) fail(path, "write", ENOSPC);  // no progress: treat as a full disk
    done += static_cast<size_t>(n);
  }
}

// Flushes the directory entry of the renamed file to disk.
void sync_dir(const std::string& path, const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(path, fmt::format("opening directory '{}'", dir), errno);
  const int rc = g_hooks.fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) fail(path, fmt::format("fsync of directory '{}'", dir), err);
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  MIXT_CHECK(!path.empty(), kOp, "empty path");
  const std::string dir = parent_dir(path);
  TempFile tmp(path, dir);
  write_all(path, tmp.fd(), bytes);
  if (g_hooks.fsync(tmp.fd()) != 0) fail(path, "fsync", errno);
  if (tmp.close() != 0) fail(path, "close", errno);
  if (g_hooks.rename(tmp.name().c_str(), path.c_str()) != 0) fail(path, "rename", errno);
  tmp.commit();
  sync_dir(path, dir);
}

AtomicFileHooks& atomic_file_hooks() { return g_hooks; }

void reset_atomic_file_hooks() { g_hooks = real_hooks(); }

}  // namespace mixt::io
