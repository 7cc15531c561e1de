// mixt-bench's option parser (bench_cli.h).
//
// Note [Bench command lines]
// Every subcommand declares its options; this file alone reads argv. A command
// line that does not fit (an unknown option, a missing or malformed value, a
// stray word, an option given twice) is refused with the command's usage on
// stderr and exit status 2 before any work starts, so a typo never runs an
// hour-long benchmark with a default in its place. `--device cuda` on a command
// that runs work there needs a usable GPU: without one the command fails with
// mixt's "CUDA is not available: <reason>" (exit 1) instead of measuring the CPU.
#include "bench_cli.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <utility>

#include <fmt/format.h>

#include <mixt/runtime/check.h>
#include <mixt/runtime/cuda.h>

namespace mixt::bench::cli {
namespace {

constexpr const char* kProgram = "mixt-bench";

const Option* find_option(const Command& command, std::string_view name) {
  for (const Option& o : command.options)
    if (o.name == name) return &o;
  return nullptr;
}

int64_t parse_integer(const Option& o, const std::string& word) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  const bool whole = !word.empty() && end == word.data() + word.size();
  if (!whole || (ec != std::errc() && ec != std::errc::result_out_of_range))
    throw UsageError(fmt::format("{} expects an integer {}, got '{}'", o.name, o.metavar, word));
  if (ec == std::errc::result_out_of_range)
    throw UsageError(fmt::format("{} {}: out of the range of a 64-bit integer", o.name, word));
  if (v < o.min || v > o.max)
    throw UsageError(o.max == std::numeric_limits<int64_t>::max()
                         ? fmt::format("{} must be at least {}, got {}", o.name, o.min, word)
                         : fmt::format("{} must be between {} and {}, got {}", o.name, o.min, o.max, word));
  return v;
}

std::vector<std::string> split_list(const std::string& word) {
  std::vector<std::string> items;
  size_t begin = 0;
  for (;;) {
    const size_t comma = word.find(',', begin);
    items.push_back(word.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (comma == std::string::npos) return items;
    begin = comma + 1;
  }
}

void check_list(const Option& o, const std::string& word) {
  for (const std::string& item : split_list(word))
    if (std::find(o.choices.begin(), o.choices.end(), item) == o.choices.end())
      throw UsageError(fmt::format("{}: unknown item '{}' in '{}' (items: {})", o.name, item, word,
                                   fmt::join(o.choices, ", ")));
}

// "4K,1M,3" -> {4096, 1048576, 3}: byte counts with an optional binary suffix, each in [o.min, o.max].
std::vector<int64_t> parse_sizes(const Option& o, const std::string& word) {
  std::vector<int64_t> sizes;
  for (const std::string& item : split_list(word)) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    const std::string_view suffix(end, static_cast<size_t>(item.data() + item.size() - end));
    const int shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : -1;
    if (item.empty() || end == item.data() || ec != std::errc() || shift < 0)
      throw UsageError(fmt::format("{}: '{}' in '{}' is not a byte count (N, or N with K, M or G)", o.name, item,
                                   word));
    if (v > (o.max >> shift) || (v << shift) < o.min)
      throw UsageError(fmt::format("{}: {} is outside [{}, {}] bytes", o.name, item, o.min, o.max));
    sizes.push_back(v << shift);
  }
  return sizes;
}

Device parse_device(const Option& o, const std::string& word) {
  std::optional<Device> d;
  try {
    d = Device(word);
  } catch (const Error&) {
  }
  if (!d || !(d->is_cpu() || d->is_cuda()))
    throw UsageError(fmt::format("{} expects cpu or cuda[:N], got '{}'", o.name, word));
  return *d;
}

// "--iters N", "--rehearse", "[cpu|cuda]" for a positional.
std::string synopsis_of(const Option& o) { return o.kind == Kind::Flag ? o.name : o.name + " " + o.metavar; }

}  // namespace

Option device_option(std::string help, bool needs_usable) {
  return {.name = "--device", .kind = Kind::Device, .metavar = "cpu|cuda", .help = std::move(help),
          .default_value = "cpu", .needs_usable_device = needs_usable};
}

Option json_option(std::string help) {
  return {.name = "--json", .kind = Kind::Text, .metavar = "FILE", .help = std::move(help)};
}

const Args::Value& Args::at(std::string_view name, Kind kind) const {
  const auto it = values_.find(name);
  if (it == values_.end() || it->second.kind != kind)
    throw std::logic_error(fmt::format("mixt-bench: the command declares no option {} of this kind", name));
  return it->second;
}

int64_t Args::integer(std::string_view name) const { return at(name, Kind::Int).integer; }
const std::string& Args::text(std::string_view name) const { return at(name, Kind::Text).text; }
bool Args::flag(std::string_view name) const { return at(name, Kind::Flag).given; }
std::vector<std::string> Args::list(std::string_view name) const { return split_list(at(name, Kind::List).text); }
Device Args::device(std::string_view name) const { return at(name, Kind::Device).device; }
std::vector<int64_t> Args::sizes(std::string_view name) const { return at(name, Kind::Sizes).sizes; }
bool Args::given(std::string_view name) const {
  const auto it = values_.find(name);
  return it != values_.end() && it->second.given;
}

Args parse(const Command& command, std::span<const std::string> words) {
  Args args;
  for (const Option& o : command.options) args.values_[o.name].kind = o.kind;
  // Stores `word` as the value of `o`, converted and checked.
  auto assign = [&](const Option& o, const std::string& word, bool given) {
    Args::Value& v = args.values_[o.name];
    if (given && v.given) throw UsageError(fmt::format("{} given twice", o.name));
    v.given = given;
    v.text = word;
    if (o.kind == Kind::Int) v.integer = parse_integer(o, word);
    if (o.kind == Kind::List) check_list(o, word);
    if (o.kind == Kind::Device) v.device = parse_device(o, word);
    if (o.kind == Kind::Sizes) v.sizes = parse_sizes(o, word);
  };
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--help" || w == "-h") throw HelpRequested{};
    if (w.size() < 2 || w[0] != '-') {
      const Option* p = command.positional.empty() ? nullptr : find_option(command, command.positional);
      if (p == nullptr) throw UsageError(fmt::format("unexpected argument '{}'", w));
      assign(*p, w, true);
      continue;
    }
    const size_t eq = w.find('=');
    const std::string name = w.substr(0, eq);
    const Option* o = find_option(command, name);
    if (o == nullptr) throw UsageError(fmt::format("unknown option '{}'", name));
    if (o->kind == Kind::Flag) {
      if (eq != std::string::npos) throw UsageError(fmt::format("{} takes no value", name));
      if (args.values_[name].given) throw UsageError(fmt::format("{} given twice", name));
      args.values_[name].given = true;
      continue;
    }
    if (eq != std::string::npos) {
      assign(*o, w.substr(eq + 1), true);
      continue;
    }
    if (i + 1 == words.size() || words[i + 1].starts_with("--"))
      throw UsageError(fmt::format("{} needs a value {}", name, o->metavar));
    assign(*o, words[++i], true);
  }
  for (const Option& o : command.options)
    if (!args.values_[o.name].given && !o.default_value.empty()) assign(o, o.default_value, false);
  for (const Option& o : command.options)
    if (o.kind == Kind::Device && o.needs_usable_device) require_usable(args.values_[o.name].device);
  return args;
}

namespace {

// How the command is typed: "mixt-bench dispatch", or a standalone program's name.
std::string invocation(const Command& command) {
  return command.standalone ? command.name : fmt::format("{} {}", kProgram, command.name);
}

// Parses `words` for `command` and runs it: help (0), usage errors (2), failures (1).
int run_command(const Command& command, const std::vector<std::string>& words) {
  const std::string who = invocation(command);
  try {
    const Args args = parse(command, words);
    return command.run(args);
  } catch (const HelpRequested&) {
    std::fputs(usage(command).c_str(), stdout);
    return 0;
  } catch (const UsageError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n%s", who.c_str(), e.what(), usage(command).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", who.c_str(), e.what());
    return 1;
  }
}

}  // namespace

std::string usage(const Command& command) {
  std::string out = "usage: " + invocation(command);
  for (const Option& o : command.options) out += " [" + synopsis_of(o) + "]";
  if (const Option* p = find_option(command, command.positional)) out += " [" + p->metavar + "]";
  out += "\n" + command.summary + "\n\noptions:\n";
  size_t width = 10;  // "-h, --help"
  for (const Option& o : command.options) width = std::max(width, synopsis_of(o).size());
  for (const Option& o : command.options) {
    out += fmt::format("  {:<{}}  {}", synopsis_of(o), width, o.help);
    if (!o.default_value.empty()) out += fmt::format(" (default: {})", o.default_value);
    out += "\n";
  }
  if (const Option* p = find_option(command, command.positional))
    out += fmt::format("  {:<{}}  the same as {} {}\n", p->metavar, width, p->name, p->metavar);
  out += fmt::format("  {:<{}}  print this help and exit\n", "-h, --help", width);
  return out;
}

std::string overview(std::span<const Command> commands) {
  std::string out = fmt::format("usage: {} <subcommand> [options]\n\nsubcommands:\n", kProgram);
  size_t width = 0;
  for (const Command& c : commands) width = std::max(width, c.name.size());
  for (const Command& c : commands) out += fmt::format("  {:<{}}  {}\n", c.name, width, c.summary);
  out += fmt::format("\n'{} <subcommand> --help' lists a subcommand's options.\n", kProgram);
  return out;
}

void require_usable(Device device) {
  MIXT_CHECK(!device.is_cuda() || cuda::is_available(), fmt::format("--device {}", device),
             "CUDA is not available: {}", cuda::unavailable_reason());
  if (device.is_cuda() && cuda::is_emulated())
    std::printf("NOTE: %s is the emulated CUDA device (%s): its figures are the CPU's, not a GPU's\n",
                device.str().c_str(), cuda::device_name(device.index()).c_str());
}

int run_main(std::span<const Command> commands, int argc, const char* const* argv) {
  const std::string first = argc > 1 ? argv[1] : "";
  if (first == "--help" || first == "-h") {
    std::fputs(overview(commands).c_str(), stdout);
    return 0;
  }
  const auto command = std::find_if(commands.begin(), commands.end(), [&](const Command& c) { return c.name == first; });
  if (command == commands.end()) {
    if (argc > 1) std::fprintf(stderr, "%s: unknown subcommand '%s'\n", kProgram, first.c_str());
    std::fputs(overview(commands).c_str(), stderr);
    return 2;
  }
  return run_command(*command, std::vector<std::string>(argv + 2, argv + argc));
}

int run_program(const Command& command, int argc, const char* const* argv) {
  return run_command(command, std::vector<std::string>(argv + 1, argv + argc));
}

}  // namespace mixt::bench::cli
