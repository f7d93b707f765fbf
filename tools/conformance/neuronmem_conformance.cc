// neuronmem-conformance: runs StableHLO test files (the reference interpreter's own suites) on the
// software NeuronCore's interpreter and prints one line per file, then a summary.
//
//   neuronmem-conformance [--expected-failures FILE] [--skip-missing] [--verbose] [--timing [--repeat N]]
//                         [--via-bytecode] PATH...
//
// PATH is a .mlir file or a folder (searched recursively). Each file may hold several modules split by
// `// -----`; a module with @main runs @main, otherwise every public function without parameters runs (the
// interpret/ suites' convention). A file passes when every run finishes without a failed check. The first RUN
// line that passes `--args="[dense<...> : tensor<...>, ...]"` (stablehlo-translate --interpret's option) gives
// @main its arguments; a malformed list fails the file. A shape-polymorphic @main (`?` dims, as jax.export writes
// them) is compiled with its shapes refined from those arguments.
// Exit status: 0 if every file passed, or with --expected-failures, if exactly the listed files failed;
// 77 (skip) with --skip-missing when a folder is absent; 1 otherwise.
// --via-bytecode: each module is written as a StableHLO portable artifact (stablehlo::WriteBytecode, the newest
// target) and read back before it runs; a module the writer refuses makes the file UNSUPPORTED with the reason.
// --timing: each file runs N times (--repeat, default 5) in this process; prints per file the median CPU time
// (every thread of the process) and wall time of read + parse + compile + run (checks included), and the wall
// time of parse, compile and run, slowest first, then the sums and the median over files.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/file.h"
#include "interpreter/interpreter.h"
#include "interpreter/specialize.h"
#include "stablehlo/bytecode.h"
#include "stablehlo/parser.h"

namespace fs = std::filesystem;
using neuronmem::Status;
namespace interp = neuronmem::interp;
namespace shlo = neuronmem::stablehlo;

namespace {

bool g_via_bytecode = false;  // --via-bytecode

enum class Outcome { kPass, kFail, kUnsupported };

struct FileResult {
  Outcome outcome = Outcome::kPass;
  std::string message;
  int tests = 0;
  double parse_ms = 0, compile_ms = 0, run_ms = 0;  // wall time of each phase (--timing)
};

double NowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of the process (every thread) in ms.
double CpuMs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// The value of `--args=` on the first `// RUN:` line without `not` that passes it (quoted or not); empty if none.
std::string RunArgs(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t run = line.find("// RUN:");
    if (run == std::string_view::npos) continue;
    const std::string_view cmd = line.substr(run + 7);
    const size_t a = cmd.find("--args=");
    const size_t first = cmd.find_first_not_of(" \t");
    if (a == std::string_view::npos || cmd.compare(first, 4, "not ") == 0) continue;
    std::string_view v = cmd.substr(a + 7);
    if (!v.empty() && (v[0] == '"' || v[0] == '\'')) {  // a shell-quoted word: \" is a quote inside "..."
      std::string out;
      for (size_t i = 1; i < v.size() && v[i] != v[0]; ++i) {
        if (v[0] == '"' && v[i] == '\\' && i + 1 < v.size()) ++i;
        out += v[i];
      }
      return out;
    }
    return std::string(v.substr(0, v.find_first_of(" \t")));
  }
  return "";
}

// Splits "[a, b, ...]" at its top-level commas (inside <>, [], () and strings commas belong to an element).
bool SplitList(std::string_view list, std::vector<std::string>* out) {
  const size_t b = list.find_first_not_of(" \t"), e = list.find_last_not_of(" \t");
  if (b == std::string_view::npos || list[b] != '[' || list[e] != ']') return false;
  const std::string_view body = list.substr(b + 1, e - b - 1);
  int depth = 0;
  bool quoted = false;
  std::string cur;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (quoted) {
      if (c == '\\' && i + 1 < body.size())
        cur += body[i++];
      else if (c == '"')
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '<' || c == '[' || c == '(') {
      ++depth;
    } else if ((c == '>' && (i == 0 || body[i - 1] != '-')) || c == ']' || c == ')') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out->push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (cur.find_first_not_of(" \t") != std::string::npos) out->push_back(cur);
  return true;
}

// The arguments of --args: each element `dense<...> : tensor<...>` becomes a constant of a generated function,
// which the interpreter runs once; its results are the arguments (valid as long as the Args).
struct Args {
  std::vector<shlo::Module> modules;
  std::string text;
  std::unique_ptr<interp::Program> program;
  interp::HostResultAllocator alloc;
  std::vector<interp::TensorView> views;
};

Status ParseArgs(const std::string& list, Args* out) {
  std::vector<std::string> items;
  if (!SplitList(list, &items))
    return neuronmem::InvalidArgument("--args=%s: expected an array, i.e. --args=\"[dense<1> : tensor<2xi32>, ...]\"",
                                      list.c_str());
  std::string types, body;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string& item = items[i];
    const size_t b = item.find_first_not_of(" \t");
    const size_t colon = item.rfind(" : ");
    if (b == std::string::npos || item.compare(b, 6, "dense<") != 0 || colon == std::string::npos)
      return neuronmem::InvalidArgument(
          "--args element %zu (%s): expected a dense elements attribute, i.e. dense<1> : tensor<2xi32>", i,
          item.c_str());
    const std::string type = item.substr(colon + 3, item.find_last_not_of(" \t") - colon - 2);
    types += (i ? ", " : "") + type;
    body += "  %a" + std::to_string(i) + " = stablehlo.constant " + item.substr(b, colon - b) + " : " + type + "\n";
  }
  std::string ret;
  for (size_t i = 0; i < items.size(); ++i) ret += (i ? ", %a" : "%a") + std::to_string(i);
  out->text = "func.func @args() -> (" + types + ") {\n" + body + "  func.return " + ret +
              (items.empty() ? "" : " : " + types) + "\n}\n";
  if (Status s = shlo::ParseModules(out->text, "--args", &out->modules)) return s;
  interp::CompileOptions opts;
  opts.entry = "args";
  opts.filename = "--args";
  if (Status s = interp::Compile(out->modules[0], opts, &out->program)) return s;
  return out->program->Run(nullptr, 0, &out->alloc, &out->views);
}

// Runs one function of a module; returns its failure, if any.
FileResult RunFunction(const shlo::Module& m, const std::string& name, const std::string& display,
                       const std::vector<interp::TensorView>* args = nullptr) {
  FileResult r;
  interp::CompileOptions opts;
  opts.entry = name;
  opts.filename = display;
  opts.reference_test_ops = true;  // interpreter.run_parallel, interpreter.probe, check.expect_serialized_eq
  // A shape-polymorphic entry (jax.export's `?` dims) takes its shapes from the arguments (refine-shapes).
  if (args && interp::Specializations::IsPolymorphic(m, name))
    for (const interp::TensorView& v : *args) opts.param_dims.emplace_back(v.dims, v.dims + v.rank);
  std::unique_ptr<interp::Program> prog;
  const double c0 = NowMs();
  Status s = interp::Compile(m, opts, &prog);
  r.compile_ms = NowMs() - c0;
  if (s) {
    r.outcome = s->code == NEURONMEM_STATUS_UNIMPLEMENTED ? Outcome::kUnsupported : Outcome::kFail;
    r.message = s->message;
    return r;
  }
  interp::HostResultAllocator alloc;
  std::vector<interp::TensorView> results;
  const double r0 = NowMs();
  s = args ? prog->Run(args->data(), args->size(), &alloc, &results) : prog->Run(nullptr, 0, &alloc, &results);
  r.run_ms = NowMs() - r0;
  if (s) {
    r.outcome = s->code == NEURONMEM_STATUS_UNIMPLEMENTED ? Outcome::kUnsupported : Outcome::kFail;
    r.message = s->message;
  }
  return r;
}

FileResult RunFile(const fs::path& path, const std::string& display) {
  FileResult result;
  std::string text;  // one read of the file's size (a stream copy through a stringstream cost 5% of a small file)
  if (Status rs = neuronmem::ReadRegularFile(path.c_str(), neuronmem::kMaxTextFileBytes, &text)) {
    result.outcome = Outcome::kFail;
    result.message = "cannot read the file: " + rs->message;
    return result;
  }
  std::vector<shlo::Module> modules;
  const double p0 = NowMs();
  Status s = shlo::ParseModules(text, display, &modules);
  result.parse_ms = NowMs() - p0;
  if (s) {
    result.outcome = Outcome::kFail;
    result.message = "parse error: " + s->message;
    return result;
  }
  if (g_via_bytecode) {
    for (shlo::Module& m : modules) {
      std::string bytes;
      if (Status ws = shlo::WriteBytecode(m, shlo::BytecodeWriteOptions(), &bytes)) {
        result.outcome = Outcome::kUnsupported;
        result.message = "not written as an artifact: " + ws->message;
        return result;
      }
      shlo::Module back;
      if (Status rs = shlo::ParseBytecode(bytes, display + " (written as an artifact)", &back)) {
        result.outcome = Outcome::kFail;
        result.message = "the written artifact does not read back: " + rs->message;
        return result;
      }
      m = std::move(back);
    }
  }
  Args args;
  const std::string arg_list = RunArgs(text);
  if (!arg_list.empty()) {
    if (Status as = ParseArgs(arg_list, &args)) {
      result.outcome = Outcome::kFail;
      result.message = as->message;
      return result;
    }
  }
  for (const shlo::Module& m : modules) {
    std::vector<std::string> entries;
    if (m.FindFunction("main")) {
      entries.push_back("main");
    } else {
      for (const shlo::Function& f : m.functions)
        if (f.visibility != "private" && f.args.empty()) entries.emplace_back(f.name);
    }
    for (const std::string& e : entries) {
      FileResult r = RunFunction(m, e, display, e == "main" && !arg_list.empty() ? &args.views : nullptr);
      ++result.tests;
      result.compile_ms += r.compile_ms;
      result.run_ms += r.run_ms;
      if (r.outcome != Outcome::kPass && result.outcome == Outcome::kPass) {
        result.outcome = r.outcome;
        result.message = "@" + e + ": " + r.message;
      } else if (r.outcome == Outcome::kUnsupported && result.outcome == Outcome::kFail) {
        // Keep the first failure; an unsupported op elsewhere does not hide it.
      }
    }
  }
  return result;
}

// A StableHLO portable artifact: "name.mlir.bc" (read like text: ParseModules knows the bytecode magic).
bool IsArtifactName(const fs::path& p) {
  const std::string n = p.filename().string();
  return n.size() > 8 && n.compare(n.size() - 8, 8, ".mlir.bc") == 0;
}

void Collect(const fs::path& root, std::vector<std::pair<fs::path, std::string>>* files) {
  if (fs::is_directory(root)) {
    std::vector<fs::path> found;
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.is_regular_file() && (e.path().extension() == ".mlir" || IsArtifactName(e.path()))) {
        found.push_back(e.path());
      }
    std::sort(found.begin(), found.end());
    for (const auto& p : found) files->emplace_back(p, fs::relative(p, root).generic_string());
  } else {
    files->emplace_back(root, root.filename().generic_string());
  }
}

// Expected-failures file: one "path reason..." per line; '#' starts a comment line.
bool ReadExpected(const std::string& file, std::map<std::string, std::string>* out) {
  std::ifstream in(file);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    const size_t e = line.find_first_of(" \t", b);
    const std::string name = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
    std::string reason = e == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", e));
    (*out)[name] = reason;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string expected_file;
  bool skip_missing = false, verbose = false, timing = false;
  int repeat = 5;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--expected-failures" && i + 1 < argc) {
      expected_file = argv[++i];
    } else if (a == "--skip-missing") {
      skip_missing = true;
    } else if (a == "--verbose") {
      verbose = true;
    } else if (a == "--via-bytecode") {
      g_via_bytecode = true;
    } else if (a == "--timing") {
      timing = true;
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: neuronmem-conformance [--expected-failures FILE] [--skip-missing] [--verbose] [--timing [--repeat "
          "N]] [--via-bytecode] PATH...\n");
      return 0;
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "neuronmem-conformance: no PATH given\n");
    return 2;
  }
  std::vector<std::pair<fs::path, std::string>> files;
  for (const std::string& p : paths) {
    if (!fs::exists(p)) {
      if (skip_missing) {
        std::printf("SKIP: the folder %s is absent\n", p.c_str());
        return 77;
      }
      std::fprintf(stderr, "neuronmem-conformance: %s does not exist\n", p.c_str());
      return 2;
    }
    Collect(p, &files);
  }
  std::map<std::string, std::string> expected;
  if (!expected_file.empty() && !ReadExpected(expected_file, &expected)) {
    std::fprintf(stderr, "neuronmem-conformance: cannot read %s\n", expected_file.c_str());
    return 2;
  }
  int passed = 0, failed = 0, unsupported = 0, tests = 0;
  std::vector<std::string> unexpected_failures, unexpected_passes;
  // --timing, per file: the medians over the repeats of wall time, CPU time (every thread), parse, compile, run.
  struct Timing {
    double wall, cpu, parse, compile, run;
    std::string name;
  };
  std::vector<Timing> times;
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [path, name] : files) {
    FileResult r;
    std::vector<double> wall, cpu, parse, compile, run;
    for (int k = 0; k < (timing ? repeat : 1); ++k) {
      const double w0 = NowMs(), c0 = CpuMs();
      try {
        r = RunFile(path, name);
      } catch (const std::exception& e) {
        r.outcome = Outcome::kFail;
        r.message = std::string("exception: ") + e.what();
      }
      wall.push_back(NowMs() - w0);
      cpu.push_back(CpuMs() - c0);
      parse.push_back(r.parse_ms);
      compile.push_back(r.compile_ms);
      run.push_back(r.run_ms);
    }
    const double ms = median(wall);
    if (timing) times.push_back({ms, median(cpu), median(parse), median(compile), median(run), name});
    tests += r.tests;
    const bool listed = expected.count(name) > 0;
    switch (r.outcome) {
      case Outcome::kPass:
        ++passed;
        if (listed) unexpected_passes.push_back(name);
        if (verbose || listed)
          std::printf("pass %s (%.2f ms)%s\n", name.c_str(), ms, listed ? " [listed as failing]" : "");
        break;
      case Outcome::kFail:
        ++failed;
        if (!listed && !expected_file.empty()) unexpected_failures.push_back(name);
        std::printf("FAIL %s: %s%s\n", name.c_str(), r.message.c_str(), listed ? " [expected]" : "");
        break;
      case Outcome::kUnsupported:
        ++unsupported;
        if (!listed && !expected_file.empty()) unexpected_failures.push_back(name);
        std::printf("UNSUPPORTED %s: %s%s\n", name.c_str(), r.message.c_str(), listed ? " [expected]" : "");
        break;
    }
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (timing && !times.empty()) {
    std::sort(times.begin(), times.end(), [](const Timing& a, const Timing& b) { return a.cpu > b.cpu; });
    double wall = 0, cpu = 0;
    std::printf("time %10s %10s %10s %10s %10s  (ms: median of %d runs; cpu = every thread of the process)\n", "cpu",
                "wall", "parse", "compile", "run", repeat);
    for (const Timing& t : times) {
      std::printf("time %10.3f %10.3f %10.3f %10.3f %10.3f  %s\n", t.cpu, t.wall, t.parse, t.compile, t.run,
                  t.name.c_str());
      wall += t.wall;
      cpu += t.cpu;
    }
    std::printf("timing: %zu files: cpu sum %.1f ms (median per file %.3f ms), wall sum %.1f ms\n", times.size(), cpu,
                times[times.size() / 2].cpu, wall);
  }
  std::printf("%zu files (%d tests): %d passed, %d failed, %d unsupported in %.3f s\n", files.size(), tests, passed,
              failed, unsupported, total);
  if (expected_file.empty()) return (failed || unsupported) ? 1 : 0;
  for (const auto& n : unexpected_failures)
    std::printf("unexpected failure: %s (not in %s)\n", n.c_str(), expected_file.c_str());
  for (const auto& n : unexpected_passes)
    std::printf("unexpected pass: %s (remove it from %s)\n", n.c_str(), expected_file.c_str());
  // A listed name that matches no file is a stale entry (a renamed or removed test): the list must name files.
  std::set<std::string> seen;
  for (const auto& f : files) seen.insert(f.second);
  std::vector<std::string> stale;
  for (const auto& [name, reason] : expected)
    if (!seen.count(name)) stale.push_back(name);
  for (const auto& n : stale)
    std::printf("listed but not found: %s (remove it from %s)\n", n.c_str(), expected_file.c_str());
  // Every listed line gives its reason.
  std::vector<std::string> no_reason;
  for (const auto& [name, reason] : expected)
    if (reason.empty()) no_reason.push_back(name);
  for (const auto& n : no_reason) std::printf("listed without a reason: %s\n", n.c_str());
  return (unexpected_failures.empty() && unexpected_passes.empty() && stale.empty() && no_reason.empty()) ? 0 : 1;
}
