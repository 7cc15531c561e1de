// Crash-safe file replacement: the bytes go to a temporary file in the target's
// directory, which is flushed to disk and renamed over the target. Readers see
// either the old file or the complete new one, never a torn write.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include <sys/types.h>

namespace mixt::io {

// Replaces `path` with `bytes`: write a temporary file beside it, fsync it, rename
// it over `path`, fsync the directory. On failure before the rename raises
// mixt::Error naming the path and the failed step, leaving the old file intact and
// no temporary behind; if only the directory sync fails, the error says the new
// file is in place. A symbolic link is written through: its final target is
// replaced and the link stays. Temporaries that interrupted writes of the same
// target left behind are removed first. See Note [Atomic file replacement].
void write_file_atomic(const std::string& path, std::string_view bytes);
// The same, writing the concatenation of `pieces` (no joined copy is made).
void write_file_atomic(const std::string& path, std::span<const std::string_view> pieces);

// The system calls write_file_atomic makes, replaceable by tests to inject
// failures (not thread-safe: set them only while no write is running).
struct AtomicFileHooks {
  ssize_t (*write)(int fd, const void* buf, size_t count);
  int (*fsync)(int fd);
  int (*rename)(const char* from, const char* to);
};
// The hooks in use (initially the real system calls).
AtomicFileHooks& atomic_file_hooks();
// Restores the real system calls.
void reset_atomic_file_hooks();

}  // namespace mixt::io
