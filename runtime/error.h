// mixt's one exception type. Every bad input raises it with the op's name, a
// message, and a description of the offending inputs (shapes, dtypes, devices).
// fmt-free so it can be included anywhere; runtime/check.h has the formatting macros.
#pragma once

#include <stdexcept>
#include <string>

namespace mixt {

class Error : public std::runtime_error {
 public:
  // `op`: the op or API that refused; `message`: what is wrong; `context`: the
  // inputs it was given (may be empty).
  Error(std::string op, std::string message, std::string context = {});

  const std::string& op() const { return op_; }
  const std::string& message() const { return message_; }
  const std::string& context() const { return context_; }

 private:
  std::string op_, message_, context_;
};

}  // namespace mixt
