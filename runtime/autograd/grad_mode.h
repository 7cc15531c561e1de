// Grad mode: whether ops record autograd nodes on this thread.
#pragma once

namespace mixt::autograd {

namespace detail {
inline thread_local bool t_grad_enabled = true;
}

// True when ops on this thread record the graph (the default).
inline bool is_grad_enabled() { return detail::t_grad_enabled; }
inline void set_grad_enabled(bool enabled) { detail::t_grad_enabled = enabled; }

// Turns recording off for its lifetime (evaluation, optimizer updates).
class NoGradGuard {
 public:
  NoGradGuard() : saved_(detail::t_grad_enabled) { detail::t_grad_enabled = false; }
  ~NoGradGuard() { detail::t_grad_enabled = saved_; }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool saved_;
};

// Turns recording on for its lifetime (inside a NoGradGuard).
class EnableGradGuard {
 public:
  EnableGradGuard() : saved_(detail::t_grad_enabled) { detail::t_grad_enabled = true; }
  ~EnableGradGuard() { detail::t_grad_enabled = saved_; }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool saved_;
};

}  // namespace mixt::autograd
