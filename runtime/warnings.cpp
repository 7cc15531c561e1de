// The process's warning handler (runtime/warnings.h).
#include <mixt/runtime/warnings.h>

#include <cstdio>
#include <mutex>
#include <set>
#include <utility>

#include <mixt/runtime/error.h>

namespace mixt {
namespace {

std::mutex g_mutex;
WarningHandler g_handler;  // empty: the default

// Prints each distinct (op, message) once per process.
void print_once(const Warning& w) {
  static std::mutex seen_mutex;
  static std::set<std::pair<std::string, std::string>> seen;
  {
    std::lock_guard lock(seen_mutex);
    if (!seen.emplace(w.op, w.message).second) return;
  }
  std::fprintf(stderr, "mixt: warning: %s: %s\n", w.op.c_str(), w.message.c_str());
}

}  // namespace

WarningHandler set_warning_handler(WarningHandler handler) {
  std::lock_guard lock(g_mutex);
  std::swap(g_handler, handler);
  return handler;
}

WarningHandler warnings_as_errors() {
  return [](const Warning& w) { throw Error(w.op, w.message); };
}

void warn(std::string op, std::string message) {
  WarningHandler handler;
  {
    std::lock_guard lock(g_mutex);
    handler = g_handler;  // called outside the lock: it may warn, or install another
  }
  const Warning w{std::move(op), std::move(message)};
  if (handler) handler(w);
  else print_once(w);
}

}  // namespace mixt
