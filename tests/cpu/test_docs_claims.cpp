// The strong claims of the documentation name the tests that back them: every
// paragraph of README.md, docs/*.md or docs/notes/*.md that says "bit-identical", "bit
// for bit", "the same bits", "never allocates", "exact to 2^53" or the like carries
// `(test: <file>, "<test name>")`, and the named test exists (a Catch2 TEST_CASE, or a
// group(...) of the CUDA programs, which have their own main). See Note [Tested claims]
// in docs/notes/state.md.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = MIXT_SOURCE_ROOT;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One unit of prose: a paragraph, a list item or a table row, with its lines joined.
struct Unit {
  std::string file;
  int line;  // first line
  std::string text;
};

// Splits markdown into units, leaving out fenced code blocks.
std::vector<Unit> units_of(const std::string& file, const std::string& text) {
  std::vector<Unit> out;
  std::istringstream in(text);
  std::string line;
  bool fenced = false;
  int n = 0;
  Unit current{file, 0, ""};
  auto flush = [&] {
    if (!current.text.empty()) out.push_back(current);
    current = Unit{file, n, ""};
  };
  while (std::getline(in, line)) {
    ++n;
    const size_t first = line.find_first_not_of(' ');
    const std::string body = first == std::string::npos ? "" : line.substr(first);
    if (body.rfind("```", 0) == 0) {
      flush();
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    const bool starts_unit = body.empty() || body.rfind("- ", 0) == 0 || body.rfind("* ", 0) == 0 ||
                             body.rfind("|", 0) == 0 || body.rfind("#", 0) == 0;
    if (starts_unit) flush();
    if (body.empty()) continue;
    if (current.text.empty()) current.line = n;
    current.text += (current.text.empty() ? "" : " ") + body;
    if (body.rfind("|", 0) == 0 || body.rfind("#", 0) == 0) flush();  // one row, one heading
  }
  flush();
  return out;
}

// The text with inline code spans removed: a phrase or a reference in backticks is
// quoted (as in the note that describes this test), not claimed or named.
std::string prose(const std::string& text) { return std::regex_replace(text, std::regex("`[^`]*`"), "``"); }

// The claims this test holds to a named test.
const std::regex kClaim(
    "bit[- ]identical|bit[- ]for[- ]bit|same bits|bit[- ]exact|never allocat|allocates nothing|no allocation|"
    "free of allocation|touch(es)? the heap|does not allocate|2\\^53",
    std::regex::icase);
// A reference: (test: tests/cpu/test_x.cpp, "name"); several may share the parentheses,
// separated by ';'.
const std::regex kReference("test: ([A-Za-z0-9_./-]+), \"([^\"]+)\"");

struct Reference {
  std::string file, name;
};

std::vector<Reference> references_in(const std::string& text) {
  std::vector<Reference> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kReference); it != std::sregex_iterator(); ++it)
    out.push_back({(*it)[1].str(), (*it)[2].str()});
  return out;
}

std::vector<Unit> doc_units() {
  std::vector<fs::path> files = {kRoot / "README.md"};
  for (const fs::path& dir : {kRoot / "docs", kRoot / "docs" / "notes"})
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".md") files.push_back(e.path());
  std::vector<Unit> all;
  for (const fs::path& f : files) {
    const auto u = units_of(fs::relative(f, kRoot).string(), read(f));
    all.insert(all.end(), u.begin(), u.end());
  }
  return all;
}

// "" when `r` names an existing test, else why not.
std::string check_reference(const Reference& r) {
  const fs::path p = kRoot / r.file;
  if (r.file.rfind("tests/", 0) != 0 || !fs::is_regular_file(p)) return r.file + " is not a test file";
  const std::string src = read(p);
  for (const char* form : {"TEST_CASE(\"", "group(\""})
    if (src.find(form + r.name + "\"") != std::string::npos) return "";
  return r.file + " has no test named \"" + r.name + "\"";
}

}  // namespace

TEST_CASE("every strong claim in the docs names the test that backs it", "[docs][claims]") {
  std::vector<std::string> problems;
  int claims = 0;
  for (const Unit& u : doc_units()) {
    if (!std::regex_search(prose(u.text), kClaim)) continue;
    ++claims;
    if (references_in(prose(u.text)).empty())
      problems.push_back(u.file + ":" + std::to_string(u.line) + ": a claim without (test: <file>, \"<name>\"): " +
                         u.text.substr(0, 160));
  }
  std::string all;
  for (const auto& p : problems) all += "\n  " + p;
  INFO(claims << " claims; problems:" << all);
  CHECK(problems.empty());
  CHECK(claims >= 10);  // the docs make these claims today: a scan that finds none is broken
}

TEST_CASE("every test the docs name exists", "[docs][claims]") {
  std::vector<std::string> problems;
  int references = 0;
  for (const Unit& u : doc_units())
    for (const Reference& r : references_in(prose(u.text))) {
      ++references;
      const std::string why = check_reference(r);
      if (!why.empty()) problems.push_back(u.file + ":" + std::to_string(u.line) + ": " + why);
    }
  std::string all;
  for (const auto& p : problems) all += "\n  " + p;
  INFO(references << " references; problems:" << all);
  CHECK(problems.empty());
  CHECK(references >= 10);
}

TEST_CASE("the claim scanner finds claims and references where they are written", "[docs][claims]") {
  const auto u = units_of("x.md", "Intro line.\n\nA resume is bit-identical\n(test: tests/cpu/a.cpp, \"name one\").\n"
                                  "- a list item that is bit\nfor bit the same\n```\nbit-identical in code\n```\n"
                                  "| table | never allocates |\n`bit-identical` only in code `(test: x, \"y\")`\n");
  REQUIRE(u.size() == 5);
  CHECK(u[1].line == 3);
  CHECK(std::regex_search(prose(u[1].text), kClaim));
  REQUIRE(references_in(u[1].text).size() == 1);
  CHECK(references_in(u[1].text)[0].file == "tests/cpu/a.cpp");
  CHECK(references_in(u[1].text)[0].name == "name one");
  CHECK(std::regex_search(prose(u[2].text), kClaim));  // joined across the line break
  CHECK(std::regex_search(prose(u[3].text), kClaim));  // the table row; the fenced block is skipped
  CHECK_FALSE(std::regex_search(prose(u[4].text), kClaim));
  CHECK(references_in(prose(u[4].text)).empty());
  CHECK(check_reference({"tests/cpu/test_docs_claims.cpp", "every test the docs name exists"}).empty());
  CHECK_FALSE(check_reference({"tests/cpu/test_docs_claims.cpp", "no such test"}).empty());
  CHECK_FALSE(check_reference({"docs/index.md", "every test the docs name exists"}).empty());
}
