// Warnings: a loss whose input and target shapes differ broadcasts them and warns; an
// application decides what a warning does by installing its handler. It checks what it
// shows and exits with 1 otherwise.
#include <iostream>
#include <string>
#include <vector>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;
namespace F = nn::functional;

int main() {
  const Tensor pred = from_vector<float>({1, 2, 3}, {3, 1});  // a model's [N, 1] output
  const Tensor target = from_vector<float>({1, 2, 3});        // [N] labels

  // Collect warnings (the default handler prints each distinct one to stderr once).
  std::vector<Warning> seen;
  {
    WarningHandlerGuard guard([&](const Warning& w) { seen.push_back(w); });
    const Tensor loss = F::mse_loss(pred, target);  // [3, 1] against [3]: 9 pairs, not 3
    std::cout << "mse_loss = " << loss.item<float>() << "\n";
    example::require(loss.item<float>() > 1.3f, "the broadcast loss averages all 9 pairs");
  }
  example::require(seen.size() == 1 && seen[0].op == "mse_loss", "mse_loss warned once");
  std::cout << "warning from " << seen[0].op << ": " << seen[0].message << "\n";

  // Or make every warning an error, here for one scope (set_warning_handler for the process).
  WarningHandlerGuard strict(warnings_as_errors());
  bool raised = false;
  try {
    (void)F::mse_loss(pred, target);
  } catch (const Error& e) {
    raised = true;
    std::cout << "error: " << e.what() << "\n";
  }
  example::require(raised, "warnings_as_errors raises");
  // Same shapes: the loss the model meant.
  const Tensor loss = F::mse_loss(pred.squeeze(1), target);
  example::require(loss.item<float>() == 0.0f, "matching shapes give 0");
  std::cout << "mse_loss with matching shapes = " << loss.item<float>() << "\n";
  return 0;
}
