#include <mixt/runtime/io/atomic_file.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <random>
#include <system_error>
#include <vector>

#include <mixt/runtime/check.h>

namespace mixt::io {
namespace {

// Note [Atomic file replacement]: a write goes to ".<name>.<16 hex digits>.mixt-tmp"
// beside the target <name>, is fsynced and renamed over the target, and the
// directory is fsynced. Until the rename the old file is untouched, so a failure
// (or a crash) leaves it intact; after the rename the new file is in place even
// if the directory sync then fails, and the error says so. A process killed
// mid-write leaves its temporary behind; the next write of the same target
// removes every entry of exactly that form (the target's name, 16 lower-case hex
// digits, the suffix) that is a regular file, opened without following links,
// whose flock it can take. Each writer holds that lock from just after creating
// its temporary (checking it is still linked once locked, in case a cleaner came
// first) until after its rename, so a write in progress in another process keeps
// its temporary, and no file of another form or of another target is touched.
// Where the file system has no locks nothing is removed. A symbolic link is
// written through: links are followed (40 deep at most, relative ones against the
// link's folder), the temporary goes beside the final target, which is replaced,
// and the link stays a link.

constexpr const char* kOp = "write_file_atomic";
constexpr size_t kMaxChunk = size_t{1} << 30;
constexpr std::string_view kTempSuffix = ".mixt-tmp";
constexpr size_t kTempIdDigits = 16;
constexpr int kMaxLinkHops = 40;  // as the kernel's limit on nested links

AtomicFileHooks real_hooks() { return {::write, ::fsync, ::rename}; }
AtomicFileHooks g_hooks = real_hooks();

// Raises the error of a failed step, with the errno text.
[[noreturn]] void fail(const std::string& path, std::string_view step, int err) {
  MIXT_FAIL(kOp, "'{}': {} failed: {}", path, step, std::generic_category().message(err));
}

// Raises the error of a step that failed after the new file took the target's name.
[[noreturn]] void fail_in_place(const std::string& path, std::string_view step, int err) {
  MIXT_FAIL(kOp, "'{}': the new file is in place, but {} failed: {} (the replacement may not survive a crash)", path,
            step, std::generic_category().message(err));
}

// The file a write to `path` replaces: `path` itself, or the final target of the
// symbolic link(s) it names (a relative link is relative to the link's folder).
std::filesystem::path final_target(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p = path;
  for (int hops = 0;; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
    if (hops == kMaxLinkHops) fail(path, "following symbolic links", ELOOP);
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) fail(path, fmt::format("reading the symbolic link '{}'", p.string()), ec.value());
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
}

// The name of temporary `id` of the target file called `base`.
std::string temp_name(std::string_view base, uint64_t id) {
  return fmt::format(".{}.{:0{}x}{}", base, id, kTempIdDigits, kTempSuffix);
}

// Whether `name` has exactly the form temp_name gives for `base`.
bool is_temp_of(std::string_view name, std::string_view base) {
  if (name.size() != base.size() + 2 + kTempIdDigits + kTempSuffix.size()) return false;
  if (name[0] != '.' || name.substr(1, base.size()) != base || name[base.size() + 1] != '.') return false;
  if (!name.ends_with(kTempSuffix)) return false;
  const std::string_view id = name.substr(base.size() + 2, kTempIdDigits);
  return std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A fresh temporary id: a per-process random start, mixed with a counter.
uint64_t next_id() {
  static const uint64_t seed = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}() ^
                               static_cast<uint64_t>(::getpid());
  static std::atomic<uint64_t> counter{0};
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * ++counter;  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Removes the temporaries of target `base` in `dir` that no write holds (Note
// [Atomic file replacement]). Best effort: what cannot be checked stays.
void remove_stale_temps(const std::string& dir, std::string_view base) {
  std::vector<std::string> candidates;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (is_temp_of(e->d_name, base)) candidates.emplace_back(e->d_name);
    ::closedir(d);
  }
  for (const std::string& name : candidates) {
    const std::string p = dir + "/" + name;
    const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat held, now;
    if (::fstat(fd, &held) == 0 && S_ISREG(held.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        ::lstat(p.c_str(), &now) == 0 && now.st_dev == held.st_dev && now.st_ino == held.st_ino)
      ::unlink(p.c_str());
    ::close(fd);
  }
}

// A uniquely named temporary file beside the target, locked while it is written,
// removed unless committed.
class TempFile {
 public:
  TempFile(const std::string& path, const std::filesystem::path& target) {
    const std::string dir = target.parent_path().empty() ? "." : target.parent_path().string();
    const std::string base = target.filename().string();
    remove_stale_temps(dir, base);
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
      name_ = dir + "/" + temp_name(base, next_id());
      fd_ = ::open(name_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
      if (fd_ < 0 && errno != EEXIST) break;
      if (fd_ >= 0 && !lock()) {  // a cleaner removed it before the lock: take another name
        ::close(fd_);
        fd_ = -1;
      }
    }
    if (fd_ < 0) fail(path, fmt::format("creating a temporary file in '{}'", dir), errno);
    struct stat st;  // keep the permissions of the file being replaced
    if (::stat(target.c_str(), &st) == 0) (void)::fchmod(fd_, st.st_mode & 07777);
  }
  ~TempFile() {
    if (!committed_) ::unlink(name_.c_str());
    if (fd_ >= 0) ::close(fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  // Closes the descriptor (the lock stays, on a duplicate), returning close()'s result.
  int close() {
    lock_fd_ = ::dup(fd_);
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  // The file now lives under the target's name: keep it.
  void commit() { committed_ = true; }

 private:
  // Takes the writer's lock; false when the file was unlinked before it was taken.
  bool lock() {
    if (::flock(fd_, LOCK_EX) != 0) return true;  // no locks here: cleaners cannot lock either
    struct stat st;
    return ::fstat(fd_, &st) != 0 || st.st_nlink > 0;
  }

  std::string name_;
  int fd_ = -1, lock_fd_ = -1;
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

// Writes pieces to `fd` in order, gathering small ones into one buffer so that
// many small pieces cost few system calls.
class PieceWriter {
 public:
  PieceWriter(const std::string& path, int fd) : path_(path), fd_(fd) {}
  void add(std::string_view piece) {
    const bool direct = piece.size() >= kBuffer / 4;
    if (direct || buffer_.size() + piece.size() > kBuffer) flush();  // keeps the order
    if (direct)
      write_all(path_, fd_, piece);
    else
      buffer_.append(piece);
  }
  void flush() {
    write_all(path_, fd_, buffer_);
    buffer_.clear();
  }

 private:
  static constexpr size_t kBuffer = size_t{1} << 20;
  const std::string& path_;
  int fd_;
  std::string buffer_;
};

// Flushes the directory entry of the renamed file to disk.
void sync_dir(const std::string& path, const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_in_place(path, fmt::format("opening directory '{}' to sync it", dir), errno);
  const int rc = g_hooks.fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) fail_in_place(path, fmt::format("fsync of directory '{}'", dir), err);
}

}  // namespace

void write_file_atomic(const std::string& path, std::span<const std::string_view> pieces) {
  MIXT_CHECK(!path.empty(), kOp, "empty path");
  const std::filesystem::path target = final_target(path);
  TempFile tmp(path, target);
  PieceWriter writer(path, tmp.fd());
  for (std::string_view piece : pieces) writer.add(piece);
  writer.flush();
  if (g_hooks.fsync(tmp.fd()) != 0) fail(path, "fsync", errno);
  if (tmp.close() != 0) fail(path, "close", errno);
  if (g_hooks.rename(tmp.name().c_str(), target.c_str()) != 0) fail(path, "rename", errno);
  tmp.commit();
  sync_dir(path, target.parent_path().empty() ? "." : target.parent_path().string());
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, std::span<const std::string_view>(&bytes, 1));
}

AtomicFileHooks& atomic_file_hooks() { return g_hooks; }

void reset_atomic_file_hooks() { g_hooks = real_hooks(); }

}  // namespace mixt::io
