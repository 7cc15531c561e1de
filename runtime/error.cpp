#include <mixt/runtime/error.h>

namespace mixt {
namespace {
std::string compose(const std::string& op, const std::string& message, const std::string& context) {
  std::string s = "mixt: ";
  s += op;
  s += ": ";
  s += message;
  if (!context.empty()) {
    s += " [inputs: ";
    s += context;
    s += "]";
  }
  return s;
}
}  // namespace

Error::Error(std::string op, std::string message, std::string context)
    : std::runtime_error(compose(op, message, context)),
      op_(std::move(op)),
      message_(std::move(message)),
      context_(std::move(context)) {}

}  // namespace mixt
