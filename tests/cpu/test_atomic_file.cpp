// write_file_atomic: temporaries that interrupted writes leave behind are removed
// by the next write of the same target (and nothing else is), a directory sync
// failing after the rename says the new file is in place, and writes through a
// symbolic link replace its target and keep the link.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <mixt/runtime/error.h>
#include <mixt/runtime/io/atomic_file.h>

#include "temp_dir.h"
#include "test_util.h"

using namespace mixt;
using namespace mixt::io;
using Catch::Contains;
using mixt::testing::error_of;
using mixt::testing::read_file;
using mixt::testing::TempDir;
namespace fs = std::filesystem;

namespace {

// Restores the real system calls when a test ends.
struct HookReset {
  ~HookReset() { reset_atomic_file_hooks(); }
};

// Write hooks for a child process: write part of the data, then die as a killed
// process would (no destructor runs, the temporary stays), or tell the parent
// through fd 'g_ready' and wait to be killed.
int g_ready = -1;
ssize_t write_then_die(int fd, const void* buf, size_t n) {
  (void)::write(fd, buf, n / 2);
  ::_exit(0);
}
ssize_t write_then_wait(int fd, const void* buf, size_t n) {
  (void)::write(fd, buf, n / 2);
  (void)::write(g_ready, "r", 1);
  for (;;) ::pause();
}

// Runs write_file_atomic(path, bytes) in a child process whose writes go through `hook`.
pid_t start_child_write(const std::string& path, ssize_t (*hook)(int, const void*, size_t)) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    atomic_file_hooks().write = hook;
    try {
      write_file_atomic(path, std::string(4096, 'n'));
    } catch (...) {
    }
    ::_exit(1);  // the hook should have ended the process
  }
  return pid;
}

// A write of `path` interrupted half-way by the death of its process.
void interrupted_write(const std::string& path) {
  const pid_t pid = start_child_write(path, write_then_die);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

// The entries of `dir` other than `keep`.
std::vector<std::string> others(const TempDir& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> out;
  for (const std::string& name : dir.entries())
    if (std::find(keep.begin(), keep.end(), name) == keep.end()) out.push_back(name);
  return out;
}

int g_fsync_calls = 0;
// Syncs the temporary file for real and fails on the directory.
int fsync_file_only(int fd) {
  if (g_fsync_calls++ == 0) return ::fsync(fd);
  errno = EIO;
  return -1;
}

}  // namespace

TEST_CASE("the next write of a target removes the temporaries of interrupted writes", "[atomic]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  write_file_atomic(path, "old");
  // Each interrupted write removes the temporary of the one before it.
  for (int i = 0; i < 3; ++i) interrupted_write(path);
  const std::vector<std::string> leftovers = others(dir, {"model.safetensors"});
  REQUIRE(leftovers.size() == 1);
  CHECK(fs::file_size(dir.path / leftovers[0]) == 2048);
  CHECK(read_file(path) == "old");

  // Other targets' temporaries stay; so does the new write's own, until its rename.
  const std::string other = dir.file("other.bin");
  interrupted_write(other);
  write_file_atomic(path, "new");
  CHECK(read_file(path) == "new");
  const std::vector<std::string> left = others(dir, {"model.safetensors"});
  REQUIRE(left.size() == 1);
  CHECK_THAT(left[0], Contains("other.bin"));
  write_file_atomic(other, "x");
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors", "other.bin"});
}

TEST_CASE("removing temporaries never touches other files or a write in progress", "[atomic]") {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  // Names close to a temporary's, and a link and a folder with exactly that form.
  const std::vector<std::string> lookalikes = {
      ".data.bin.tmp",
      ".data.bin.0123456789abcde.mixt-tmp",            // 15 digits
      ".data.bin.0123456789ABCDEF.mixt-tmp",           // upper case
      ".data.bin.0123456789abcdef.mixt-tmp.bak",
      "data.bin.0123456789abcdef.mixt-tmp",            // no leading dot
      ".data.bin.0123456789abcdeg.mixt-tmp",           // not hex
      ".xdata.bin.0123456789abcdef.mixt-tmp",
      ".data.bin.tmp.1234.0.abcdef",
      "data.bin.bak",
  };
  for (const std::string& name : lookalikes) std::ofstream(dir.file(name)) << "keep";
  fs::create_directory(dir.file(".data.bin.00000000000000aa.mixt-tmp"));
  fs::create_symlink("data.bin.bak", dir.file(".data.bin.00000000000000bb.mixt-tmp"));

  // A write in progress in another process holds its temporary.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  g_ready = ready[1];
  const pid_t writer = start_child_write(path, write_then_wait);
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  const std::vector<std::string> before = dir.entries();
  write_file_atomic(path, "mine");
  CHECK(dir.entries() == [&] {
    std::vector<std::string> want = before;
    want.insert(std::lower_bound(want.begin(), want.end(), "data.bin"), "data.bin");
    return want;
  }());
  CHECK(read_file(path) == "mine");

  // Once the writer is dead, its temporary goes at the next write; nothing else does.
  ::kill(writer, SIGKILL);
  REQUIRE(::waitpid(writer, nullptr, 0) == writer);
  ::close(ready[0]);
  ::close(ready[1]);
  write_file_atomic(path, "again");
  std::vector<std::string> want = lookalikes;
  want.push_back(".data.bin.00000000000000aa.mixt-tmp");
  want.push_back(".data.bin.00000000000000bb.mixt-tmp");
  want.push_back("data.bin");
  std::sort(want.begin(), want.end());
  CHECK(dir.entries() == want);
  for (const std::string& name : lookalikes) CHECK(read_file(dir.file(name)) == "keep");
  CHECK(fs::is_symlink(dir.file(".data.bin.00000000000000bb.mixt-tmp")));
  CHECK(fs::is_directory(dir.file(".data.bin.00000000000000aa.mixt-tmp")));
}

TEST_CASE("a directory sync failing after the rename says the new file is in place", "[atomic]") {
  TempDir dir;
  const std::string path = dir.file("ckpt.bin");
  write_file_atomic(path, "old");
  HookReset reset;
  g_fsync_calls = 0;
  atomic_file_hooks().fsync = fsync_file_only;
  const std::string message = error_of([&] { write_file_atomic(path, "new"); });
  CHECK_THAT(message, Contains("write_file_atomic") && Contains(path) && Contains("the new file is in place") &&
                          Contains("fsync of directory") && Contains(std::strerror(EIO)));
  CHECK(g_fsync_calls == 2);
  CHECK(read_file(path) == "new");
  CHECK(dir.entries() == std::vector<std::string>{"ckpt.bin"});
}

TEST_CASE("writing through a symbolic link replaces its target and keeps the link", "[atomic]") {
  TempDir dir;
  fs::create_directory(dir.file("store"));
  const std::string target = dir.file("store/weights.bin");
  write_file_atomic(target, "v1");
  ::chmod(target.c_str(), 0640);
  fs::create_symlink("store/weights.bin", dir.file("latest"));  // relative to the link's folder
  fs::create_symlink(dir.file("latest"), dir.file("chain"));     // absolute, to another link

  write_file_atomic(dir.file("latest"), "v2");
  CHECK(fs::is_symlink(dir.file("latest")));
  CHECK(fs::read_symlink(dir.file("latest")) == "store/weights.bin");
  CHECK(read_file(target) == "v2");
  write_file_atomic(dir.file("chain"), "v3");
  CHECK(fs::is_symlink(dir.file("chain")));
  CHECK(fs::is_symlink(dir.file("latest")));
  CHECK(read_file(target) == "v3");
  struct stat st;
  REQUIRE(::stat(target.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  CHECK(dir.entries() == std::vector<std::string>{"chain", "latest", "store"});
  CHECK(fs::is_empty(dir.file("store")) == false);
  CHECK(std::distance(fs::directory_iterator(dir.file("store")), fs::directory_iterator()) == 1);

  // A dangling link gets its target created; a loop of links is refused.
  fs::create_symlink("store/new.bin", dir.file("dangling"));
  write_file_atomic(dir.file("dangling"), "fresh");
  CHECK(fs::is_symlink(dir.file("dangling")));
  CHECK(read_file(dir.file("store/new.bin")) == "fresh");
  fs::create_symlink("loop_b", dir.file("loop_a"));
  fs::create_symlink("loop_a", dir.file("loop_b"));
  CHECK_THAT(error_of([&] { write_file_atomic(dir.file("loop_a"), "x"); }),
             Contains("write_file_atomic") && Contains("loop_a") && Contains("symbolic links"));
  CHECK(fs::is_symlink(dir.file("loop_a")));
}

TEST_CASE("write_file_atomic writes its pieces in order, whatever their sizes", "[atomic]") {
  TempDir dir;
  const std::string path = dir.file("pieces.bin");
  // Sizes around the writer's thresholds: small pieces are gathered, large ones
  // written directly, and neither may overtake the other.
  const std::vector<size_t> sizes = {8,       100,     300 << 10, 5, (1 << 20) - 3, 7, 1 << 20, 0, 2 << 20, 1,
                                     255 << 10, 257 << 10, 3,     (1 << 20) + 1, 64};
  std::vector<std::string> pieces;
  std::string all;
  for (size_t i = 0; i < sizes.size(); ++i) {
    pieces.emplace_back(sizes[i], static_cast<char>('a' + i));
    all += pieces.back();
  }
  const std::vector<std::string_view> views(pieces.begin(), pieces.end());
  write_file_atomic(path, views);
  CHECK(read_file(path) == all);
}
