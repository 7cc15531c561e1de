#include "op_support_summary.h"

#include <map>
#include <set>
#include <sstream>

#include <mixt/kernels/meta/rules.h>
#include <mixt/runtime/check.h>

#include "op_cases.h"
#include "pytorch_autocast_lists.h"

namespace mixt::testing {

namespace {

const std::vector<OpFamily> kFamilies = {
    {"creation", "empty"},
    {"views", "view"},
    {"copies and movement", "clone"},
    {"indexing", "index_select"},
    {"selection and sorting", "index_add"},
    {"unary math, activations, predicates", "neg"},
    {"binary and ternary", "add"},
    {"reductions", "sum"},
    {"distances", "dist"},
    {"matmul", "mm"},
    {"linear algebra", "addmv"},
    {"softmax, norms, dropout", "softmax"},
    {"losses", "cross_entropy"},
    {"similarity, bilinear, attention, conv1d/2d", "cosine_similarity"},
    {"spatial", "conv3d"},
    {"recurrent cells", "lstm_cell"},
    {"grad scaler and optimizer steps", "amp_unscale_check_"},
};

// An op runs on meta tensors through its meta rule, its one kernel or its composite, unless
// the size of its result is in the input's values.
bool runs_on_meta(const OpEntry& e) {
  if (e.schema.meta == &meta::data_dependent) return false;
  return meta::is_rule(e.schema.meta) || e.mask.has(DispatchKey::Meta) || e.composite != nullptr;
}

// The names as one code span, `x` and its in-place form `x_` folded into `x(_)`.
std::string compact_names(const std::vector<std::string>& names) {
  const std::set<std::string> in(names.begin(), names.end());
  std::string s;
  for (const std::string& n : names) {
    if (n.back() == '_' && in.count(n.substr(0, n.size() - 1))) continue;
    s += (s.empty() ? "" : " ") + n + (in.count(n + "_") ? "(_)" : "");
  }
  return "`" + s + "`";
}

std::string code_list(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "`" : ", `") + n + "`";
  return s;
}

void families_markdown(std::ostringstream& md) {
  std::vector<uint32_t> cuda(kNumBuiltinOps, 0);
  for (const OpCase& c : op_cases()) cuda[static_cast<int>(c.op)] |= c.cuda_dtypes;
  const std::vector<int> family = family_of_each_op();
  struct Counts {
    int ops = 0, cpu = 0, meta = 0, cuda = 0;
    std::vector<std::string> names;
  };
  std::vector<Counts> per(kFamilies.size());
  Counts total;
  std::vector<std::string> not_on_meta, not_on_cuda;
  for (int i = 0; i < kNumBuiltinOps; ++i) {
    const OpEntry& e = op_entry(static_cast<OpId>(i));
    const std::string name(e.schema.name);
    const bool on_cpu = e.mask.has(DispatchKey::CPU), on_meta = runs_on_meta(e), on_cuda = cuda[i] != 0;
    for (Counts* c : {&per[static_cast<size_t>(family[i])], &total}) {
      ++c->ops;
      c->cpu += on_cpu;
      c->meta += on_meta;
      c->cuda += on_cuda;
      c->names.push_back(name);
    }
    if (!on_meta) not_on_meta.push_back(name);
    if (!on_cuda) not_on_cuda.push_back(name);
  }
  md << "### Ops by family\n\n"
     << total.ops << " ops in " << kFamilies.size()
     << " families: the sections of `dispatcher/op_table.def`, each from its first op to the next one's.\n"
        "*CPU*: ops with a CPU kernel; *meta*: ops that run on meta tensors; *CUDA*: ops with CUDA dtypes in the\n"
        "table below. `x(_)` is `x` and its in-place form `x_`.\n\n"
        "| family | ops | CPU | meta | CUDA | names |\n|---|---|---|---|---|---|\n";
  for (size_t f = 0; f < kFamilies.size(); ++f) {
    const Counts& c = per[f];
    md << "| " << kFamilies[f].name << " | " << c.ops << " | " << c.cpu << " | " << c.meta << " | " << c.cuda << " | "
       << compact_names(c.names) << " |\n";
  }
  md << "| **all** | " << total.ops << " | " << total.cpu << " | " << total.meta << " | " << total.cuda << " | |\n\n"
     << "Not on meta tensors (the size of the result is in the input's values): " << code_list(not_on_meta)
     << ".\n";
  if (not_on_cuda.empty()) md << "Every op runs on CUDA ([cuda.md](cuda.md#status)).\n\n";
  else md << "No CUDA kernel yet ([cuda.md](cuda.md#status)): " << code_list(not_on_cuda) << ".\n\n";
}

// "CUDA and CPU: fp32", "CUDA: promote; CPU: fp32", "CPU: fp32".
std::string lists_label(const std::vector<std::pair<DeviceType, AtenPolicy>>& on) {
  if (on.size() == 2 && on[0].second == on[1].second)
    return "CUDA and CPU: " + std::string(aten_policy_name(on[0].second));
  std::string s;
  for (const auto& [device, policy] : on)
    s += (s.empty() ? "" : "; ") + std::string(device == DeviceType::CUDA ? "CUDA" : "CPU") + ": " +
         std::string(aten_policy_name(policy));
  return s;
}

void autocast_markdown(std::ostringstream& md) {
  // The absent ops, in the lists' order, with the lists they are on and why mixt has none.
  struct Absent {
    std::vector<std::pair<DeviceType, AtenPolicy>> on;
    std::vector<std::string> reasons;
  };
  std::vector<std::string> order;
  std::map<std::string, Absent> absent;
  for (DeviceType device : {DeviceType::CUDA, DeviceType::CPU})
    for (const ListedOp& e : pytorch_autocast_list(device)) {
      if (e.mixt_op != nullptr) continue;
      if (!absent.count(e.aten)) order.push_back(e.aten);
      Absent& a = absent[e.aten];
      a.on.emplace_back(device, e.policy);
      if (a.reasons.empty() || a.reasons.back() != e.reason) a.reasons.push_back(e.reason);
    }
  // One row per reason and lists, in order of first appearance.
  std::vector<std::pair<std::string, std::string>> rows;  // (lists, reason)
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> ops_of_row;
  for (const std::string& aten : order) {
    const Absent& a = absent[aten];
    std::string reason;
    for (const std::string& r : a.reasons) reason += (reason.empty() ? "" : " / ") + r;
    const std::pair<std::string, std::string> row{lists_label(a.on), reason};
    if (!ops_of_row.count(row)) rows.push_back(row);
    ops_of_row[row].push_back(aten);
  }
  const AutocastCoverage c = autocast_list_coverage();
  md << "### PyTorch's autocast lists\n\n"
     << "**" << c.all.present << " of " << c.all.listed << " listed ops present** (CUDA list: " << c.cuda.present
     << " of " << c.cuda.listed << ", CPU list: " << c.cpu.present << " of " << c.cpu.listed
     << "). The lists are PyTorch 2.11's\n"
        "(`aten/src/ATen/autocast_mode.h`), by op name (overloads count as their op);\n"
        "`tests/support/pytorch_autocast_lists.cpp` maps each to the mixt op that implements it, and\n"
        "`tests/cpu/test_autocast_policy.cpp` checks that the mixt op takes the listed policy\n"
        "([autocast_tables.md](autocast_tables.md)). The listed ops mixt has not:\n\n"
        "| lists | PyTorch ops | why mixt has none |\n|---|---|---|\n";
  for (const auto& row : rows) md << "| " << row.first << " | " << code_list(ops_of_row[row]) << " | " << row.second << " |\n";
  md << "\n";
}

}  // namespace

const std::vector<OpFamily>& op_families() { return kFamilies; }

std::vector<int> family_of_each_op(const std::vector<OpFamily>& families) {
  std::vector<int> family(kNumBuiltinOps, -1);
  int start = -1;
  for (size_t f = 0; f < families.size(); ++f) {
    const int first = static_cast<int>(find_op(families[f].first_op));
    MIXT_CHECK(f == 0 ? first == 0 : first > start, "op_families",
               "family '{}' starts at op {} ({}); the first family must start at op 0 and each next one after "
               "the previous one's first op", families[f].name, first, families[f].first_op);
    start = first;
    for (int i = first; i < kNumBuiltinOps; ++i) family[i] = static_cast<int>(f);
  }
  return family;
}

AutocastCoverage autocast_list_coverage() {
  AutocastCoverage c;
  std::map<std::string, bool> present;  // every listed name: does a mixt op implement it?
  for (auto [device, counts] : {std::pair{DeviceType::CUDA, &c.cuda}, {DeviceType::CPU, &c.cpu}})
    for (const ListedOp& e : pytorch_autocast_list(device)) {
      ++counts->listed;
      counts->present += e.mixt_op != nullptr;
      present[e.aten] = present[e.aten] || e.mixt_op != nullptr;
    }
  for (const auto& [name, has] : present) {
    ++c.all.listed;
    c.all.present += has;
  }
  return c;
}

std::string op_support_summary_markdown() {
  std::ostringstream md;
  md << "## Summary\n\n";
  families_markdown(md);
  autocast_markdown(md);
  return md.str();
}

}  // namespace mixt::testing
