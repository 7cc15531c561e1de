// Warnings: what mixt reports without raising, because the call may be what the
// application meant (a loss whose input and target shapes differ and broadcast, a
// checkpoint resumed under another precision policy). Every warning goes to the
// process's warning handler. The default handler prints "mixt: warning: <op>: <message>"
// to stderr, each distinct warning once per process; an application installs its own to
// log, count, or raise (warnings_as_errors()). See docs/tensors.md, "Warnings".
#pragma once

#include <functional>
#include <string>

namespace mixt {

struct Warning {
  std::string op;       // the op or API that warns ("mse_loss", "load_training_checkpoint")
  std::string message;  // what it noticed, and what to do about it
};

// Called for every warning (not only the first of a kind), on the thread that warns.
// A handler may throw: the exception leaves the call that warned, before it computes.
using WarningHandler = std::function<void(const Warning&)>;

// Installs `handler` for the whole process and returns the one it replaces; an empty
// function restores the default handler. Safe while other threads warn.
WarningHandler set_warning_handler(WarningHandler handler);

// A handler that raises every warning as mixt::Error(op, message).
WarningHandler warnings_as_errors();

// Reports a warning to the current handler.
void warn(std::string op, std::string message);

// Installs a handler for its lifetime (tests, or a scope of an application), then
// restores the previous one.
class WarningHandlerGuard {
 public:
  explicit WarningHandlerGuard(WarningHandler handler) : saved_(set_warning_handler(std::move(handler))) {}
  ~WarningHandlerGuard() { set_warning_handler(std::move(saved_)); }
  WarningHandlerGuard(const WarningHandlerGuard&) = delete;
  WarningHandlerGuard& operator=(const WarningHandlerGuard&) = delete;

 private:
  WarningHandler saved_;
};

}  // namespace mixt
