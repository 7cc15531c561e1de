// mixt-bench's one option parser: each subcommand declares its options, and the
// parser gives it `--help`, refuses bad command lines with its usage (exit 2),
// and hands it the parsed values. Nothing here depends on main(): tests drive
// run_main() with their own commands. See Note [Bench command lines].
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <mixt/runtime/device.h>

namespace mixt::bench::cli {

enum class Kind {
  Flag,    // present or not: `--rehearse`
  Int,     // an integer in [min, max]: `--iters 1000`
  Text,    // any word: `--dir /tmp`
  List,    // comma-separated items, each one of `choices`: `--only large,small`
  Device,  // `cpu` or `cuda[:N]`, parsed with mixt::Device
  Sizes,   // comma-separated byte counts, each in [min, max], with an optional binary
           // suffix K, M or G (KiB, MiB, GiB): `--sizes 4K,1M,256M`
};

struct Option {
  std::string name = {};  // "--iters"
  Kind kind = Kind::Flag;
  std::string metavar = {};        // "N" in the usage; unused for flags
  std::string help = {};           // one line
  std::string default_value = {};  // as it would be typed; "" for none
  int64_t min = 1, max = std::numeric_limits<int64_t>::max();  // Int, Sizes
  std::vector<std::string> choices = {};                       // List
  // Device: the command runs work there, so `cuda` must be usable (else mixt::Error).
  bool needs_usable_device = false;
};

class Args;

struct Command {
  std::string name = {};     // "dispatch"
  std::string summary = {};  // one line for `mixt-bench --help`
  std::vector<Option> options = {};
  // A bare word on the command line sets this option (policy's `cuda`); "" for none.
  std::string positional = {};
  std::function<int(const Args&)> run = {};
  // A program of its own (`mixt-bench-allreduce`), run by run_program(): `name` is
  // the program's name, and its usage has no subcommand.
  bool standalone = false;
};

// The values of one parsed command line, defaults filled in.
class Args {
 public:
  // The value of integer option `name`.
  int64_t integer(std::string_view name) const;
  // The value of text option `name` ("" when it has no default and was not given).
  const std::string& text(std::string_view name) const;
  // Whether flag `name` was given.
  bool flag(std::string_view name) const;
  // The items of list option `name`.
  std::vector<std::string> list(std::string_view name) const;
  // The value of device option `name`.
  Device device(std::string_view name = "--device") const;
  // The byte counts of sizes option `name`, in the order given.
  std::vector<int64_t> sizes(std::string_view name) const;
  // Whether `name` was on the command line (not just its default).
  bool given(std::string_view name) const;

 private:
  friend Args parse(const Command& command, std::span<const std::string> words);
  struct Value {
    Kind kind = Kind::Flag;
    std::string text;
    int64_t integer = 0;
    Device device;
    std::vector<int64_t> sizes;
    bool given = false;
  };
  const Value& at(std::string_view name, Kind kind) const;
  std::map<std::string, Value, std::less<>> values_;
};

// The common `--device cpu|cuda[:N]` option (default cpu); `needs_usable`: the command
// runs work on the device, so `cuda` without a usable GPU fails (exit 1).
Option device_option(std::string help, bool needs_usable);
// The common `--json FILE` option: the command's figures as JSON in FILE.
Option json_option(std::string help = "also write the figures as JSON to FILE (replaced atomically)");

// A command line that does not fit the command's options: exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// `--help` or `-h` was given: print the usage, exit status 0.
struct HelpRequested {};

// Parses the words after the subcommand's name. Raises UsageError (unknown option,
// missing or malformed value, stray word, an option given twice), HelpRequested,
// or mixt::Error when a device that must be usable is not.
Args parse(const Command& command, std::span<const std::string> words);
// The usage text of one command: synopsis, summary, each option with its default.
std::string usage(const Command& command);
// The usage text of the program: the subcommands and their summaries.
std::string overview(std::span<const Command> commands);
// Raises mixt::Error "CUDA is not available: <reason>" when `device` is CUDA without a usable GPU.
void require_usable(Device device);
// Runs the command line `argv` (argv[0] the program) against `commands`: prints
// help to stdout (0), usage errors with the usage to stderr (2), a failed
// command's error to stderr (1); otherwise returns the command's status.
int run_main(std::span<const Command> commands, int argc, const char* const* argv);
// The same for a program that is one command (`command.standalone`): argv[1...]
// are its options.
int run_program(const Command& command, int argc, const char* const* argv);

}  // namespace mixt::bench::cli
