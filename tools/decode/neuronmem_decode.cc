// neuronmem-decode: an LLM decode loop on the software NeuronCore through the public C API only.
//
// Loads the decode step (StableHLO text generated for the size flags, or --model FILE), prints its manifest,
// compiles it, allocates the metadata (block table, sequence lengths, positions, slot mapping) in the
// pinned-host arena and wraps it zero-copy once; then each step the host updates the entries that change in
// place, executes (the KV caches are donated and come back updated), and reads back the next tokens. Ends with
// a summary (step latency p50/p99, time in metadata handling, bytes per memory-kind pair, implicit copies,
// which must be 0) and checks every token against the plain C++ reference of the same model.
#include <neuronmem/neuronmem.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "decode_model.h"
#include "decode_runner.h"
#include "paged_attention.h"

namespace {

using Clock = std::chrono::steady_clock;
using neuronmem_decode::ArgSpec;
using neuronmem_decode::Config;

const char* const kTool = "neuronmem-decode";

struct Options {
  Config config;
  bool num_blocks_given = false;
  int steps = 32;
  std::string model_path;          // empty: generate the text for `config`
  std::string weights_path;        // empty: weights from the seed
  std::string write_weights_path;  // non-empty: write the seed's weights there and exit
  uint64_t seed = 42;
  bool json = false;
  bool check = true;
  bool quiet_manifest = false;
  // Tensor parallelism over processes: --processes N (config.tp); joining a job's store (--store DIR,
  // --process-index I) or, without --store, spawning the N processes with a fresh directory store.
  std::string store_dir;
  int process_index = -1;
  std::string interface;  // the address this process's endpoint binds to ("" = loopback)
};

void Usage(FILE* out) {
  Config defaults;
  std::fprintf(out,
               "usage: %s [options]\n"
               "Runs an LLM decode loop on the software NeuronCore: metadata in pinned_host, updated in place\n"
               "(zero-copy), KV caches donated and updated in place; checks the tokens against a C++ reference.\n\n"
               "Model sizes (the StableHLO text is generated for them, data/decode/README.md):\n%s\n"
               "Run:\n"
               "  --steps N          decode steps (default 32; at most max-blocks * block-size)\n"
               "  --attention KIND   paged attention: gather (plain StableHLO gather, the default) or kernel (a\n"
               "                     registered NKI kernel, AwsNeuronCustomNativeKernel 'paged_attention', that\n"
               "                     reads the block table, lengths and positions in place in pinned_host)\n"
               "  --model FILE       run this StableHLO file instead (its shapes must match the size flags; a file\n"
               "                     that calls the kernel runs the kernel variant)\n"
               "  --seed N           weight seed (default 42)\n"
               "  --weights FILE     load the weights from FILE into device memory through neuronmem_buffer_load_file\n"
               "                     (io_uring; raw f32 tensors in argument order, data/decode/README.md)\n"
               "  --write-weights FILE  write the weights of --seed for the size flags to FILE and exit\n"
               "  --no-check         skip the C++ reference check\n"
               "  --no-manifest      do not print the manifest\n"
               "  --json             print the summary as JSON on stdout (no progress, no manifest)\n"
               "  --processes N      run the step tensor-parallel over N processes (heads and MLP columns split,\n"
               "                     all_reduce after the attention output and the MLP); without --store, spawns\n"
               "                     them with a directory store in a fresh temporary folder; process 0 prints\n"
               "  --store DIR        join the job whose directory store is DIR (with --process-index)\n"
               "  --process-index I  this process's index in the job (0..N-1)\n"
               "  --interface ADDR   the address this process's endpoint binds to (default loopback; another\n"
               "                     host's processes reach it there)\n"
               "  -h, --help         this text\n"
               "Exit status: 0 when every step ran and the tokens match the reference; 1 otherwise; 2 for bad\n"
               "arguments.\n",
               kTool, neuronmem_decode::ConfigFlagsHelp(defaults, "batch * max-blocks").c_str());
}

// Parses the command line; returns 0 to run, 1 to exit 0 (help), 2 for a bad argument (reported).
int ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    std::string error;
    if (flag == "-h" || flag == "--help") {
      Usage(stdout);
      return 1;
    } else if (flag == "--json") {
      o->json = true;
    } else if (flag == "--no-check") {
      o->check = false;
    } else if (flag == "--no-manifest") {
      o->quiet_manifest = true;
    } else if (neuronmem_decode::ParseConfigFlag(flag, value, &o->config, &error)) {
      ++i;
      if (flag == "--num-blocks") o->num_blocks_given = true;
    } else if (flag == "--processes" || flag == "--process-index") {
      char* end = nullptr;
      const long v = value ? std::strtol(value, &end, 10) : -1;
      const long low = flag == "--processes" ? 1 : 0;
      if (!value || *value == '\0' || *end != '\0' || v < low || v > 64) {
        error = flag + " needs an integer in " + std::to_string(low) + "..64 (got '" + (value ? value : "") + "')";
      } else if (flag == "--processes") {
        o->config.tp = static_cast<int>(v);
      } else {
        o->process_index = static_cast<int>(v);
      }
      ++i;
    } else if (flag == "--store" || flag == "--interface") {
      if (!value) {
        error = flag + " needs a value";
      } else {
        (flag == "--store" ? o->store_dir : o->interface) = value;
      }
      ++i;
    } else if (flag == "--steps" || flag == "--seed") {
      char* end = nullptr;
      const long long v = value ? std::strtoll(value, &end, 10) : -1;
      if (!value || *value == '\0' || *end != '\0' || v < (flag == "--steps" ? 1 : 0) || v > (1ll << 30)) {
        error = flag + " needs a " + (flag == "--steps" ? "positive " : "") + "integer (got '" + (value ? value : "") +
                "')";
      } else if (flag == "--steps") {
        o->steps = static_cast<int>(v);
      } else {
        o->seed = static_cast<uint64_t>(v);
      }
      ++i;
    } else if (flag == "--attention" || flag == "--model" || flag == "--weights" || flag == "--write-weights") {
      if (!value) {
        error = flag + " needs a value";
      } else if (flag == "--model") {
        o->model_path = value;
      } else if (flag == "--weights") {
        o->weights_path = value;
      } else if (flag == "--write-weights") {
        o->write_weights_path = value;
      } else if (!neuronmem_decode::ParseAttention(value, &o->config.attention)) {
        error = "--attention " + std::string(value) + ": unknown variant (gather or kernel)";
      }
      ++i;
    } else {
      error = "unknown argument '" + flag + "' (--help lists the options)";
    }
    if (!error.empty()) {
      std::fprintf(stderr, "%s: %s\n", kTool, error.c_str());
      return 2;
    }
  }
  Config& c = o->config;
  if (!o->num_blocks_given) c.num_blocks = c.batch * c.max_blocks;
  if (o->store_dir.empty() != (o->process_index < 0) || (!o->store_dir.empty() && c.tp < 2)) {
    std::fprintf(stderr, "%s: --store and --process-index go together, with --processes N (N >= 2)\n", kTool);
    return 2;
  }
  if (c.tp > 1 && (!o->model_path.empty() || !o->weights_path.empty())) {
    std::fprintf(stderr, "%s: --processes generates its step and weights: no --model or --weights with it\n", kTool);
    return 2;
  }
  if (o->process_index >= c.tp) {
    std::fprintf(stderr, "%s: --process-index %d is out of range for --processes %d\n", kTool, o->process_index, c.tp);
    return 2;
  }
  c.rank = std::max(0, o->process_index);
  const std::string problem = neuronmem_decode::ValidateConfig(c);
  if (!problem.empty()) {
    std::fprintf(stderr, "%s: %s\n", kTool, problem.c_str());
    return 2;
  }
  if (o->steps > c.max_tokens()) {
    std::fprintf(stderr,
                 "%s: --steps %d makes sequences of %d tokens, longer than max-blocks %d * block-size %d = %d the "
                 "block table can hold\n",
                 kTool, o->steps, o->steps, c.max_blocks, c.block_size, c.max_tokens());
    return 2;
  }
  return 0;
}

std::string Str(neuronmem_string_t s) { return std::string(s.data ? s.data : "", s.size); }

using neuronmem_decode::KindName;

struct Client {
  neuronmem_client_t* c = nullptr;
  ~Client() { neuronmem_status_free(neuronmem_client_destroy(c)); }
};
struct Manifest {
  neuronmem_manifest_t* m = nullptr;
  ~Manifest() { neuronmem_manifest_destroy(m); }
};

std::string DimsText(const int64_t* dims, size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Checks the manifest's arguments against the model the size flags describe; returns the problem or "".
// A batch larger than the block table is the first thing named.
std::string MatchModel(const neuronmem_manifest_t* m, const Options& o) {
  const std::vector<ArgSpec> specs = neuronmem_decode::Arguments(o.config);
  neuronmem_manifest_counts_t counts{};
  counts.struct_size = sizeof counts;
  if (neuronmem_status_t* s = neuronmem_manifest_counts(m, &counts)) {
    neuronmem_status_free(s);
    return "cannot read the manifest's counts";
  }
  if (counts.num_arguments != specs.size())
    return "the model has " + std::to_string(counts.num_arguments) + " arguments; the size flags (--layers " +
           std::to_string(o.config.layers) + ") describe " + std::to_string(specs.size());
  // The block table first: a batch larger than it is the likeliest mistake.
  std::vector<size_t> order = {neuronmem_decode::kBlockTable};
  for (size_t i = 0; i < specs.size(); ++i)
    if (i != neuronmem_decode::kBlockTable) order.push_back(i);
  for (size_t i : order) {
    neuronmem_manifest_value_t v{};
    v.struct_size = sizeof v;
    if (neuronmem_status_t* s = neuronmem_manifest_argument(m, i, &v)) {
      neuronmem_status_free(s);
      return "cannot read argument " + std::to_string(i);
    }
    std::vector<int64_t> got(v.dims, v.dims + v.num_dims);
    if (i == neuronmem_decode::kBlockTable && got.size() == 2 && got[0] < o.config.batch)
      return "--batch " + std::to_string(o.config.batch) + " is larger than the block table's " +
             std::to_string(got[0]) + " rows in the model";
    // A KV cache of another size is allowed: the per-step metadata check names any block id past it.
    if ((i == neuronmem_decode::kKCache || i == neuronmem_decode::kVCache) && got.size() == 4)
      got[1] = specs[i].dims[1];
    if (got != specs[i].dims)
      return "argument " + std::to_string(i) + " (" + specs[i].name + ") is " + DimsText(got.data(), got.size()) +
             " in the model; the size flags make it " + DimsText(specs[i].dims.data(), specs[i].dims.size());
    const neuronmem_memory_kind_t want =
        specs[i].pinned_host ? NEURONMEM_MEMORY_KIND_PINNED_HOST : NEURONMEM_MEMORY_KIND_DEVICE;
    if (v.memory_kind != want)
      return "argument " + std::to_string(i) + " (" + specs[i].name + ") is in " + KindName(v.memory_kind) +
             "; the decode loop expects " + KindName(want);
  }
  return "";
}

void PrintManifest(const neuronmem_manifest_t* m, const std::vector<ArgSpec>& specs, size_t text_bytes) {
  neuronmem_string_t module{}, entry{};
  neuronmem_manifest_entry(m, &module, &entry);
  neuronmem_manifest_counts_t counts{};
  counts.struct_size = sizeof counts;
  neuronmem_manifest_counts(m, &counts);
  std::printf("== manifest of @%s in module %s (%zu bytes of StableHLO)\n", Str(entry).c_str(), Str(module).c_str(),
              text_bytes);
  std::printf("  %-4s %-14s %-22s %-12s %s\n", "arg", "name", "type", "kind", "donated");
  for (size_t i = 0; i < counts.num_arguments; ++i) {
    neuronmem_manifest_value_t v{};
    v.struct_size = sizeof v;
    if (neuronmem_status_t* s = neuronmem_manifest_argument(m, i, &v)) {
      neuronmem_status_free(s);
      continue;
    }
    const std::string type = DimsText(v.dims, v.num_dims) + " " + Str(v.element_type);
    const std::string donated = v.aliasing_output >= 0 ? "-> result " + std::to_string(v.aliasing_output) : "";
    std::printf("  %-4zu %-14s %-22s %-12s %s\n", i, i < specs.size() ? specs[i].name.c_str() : "?", type.c_str(),
                KindName(v.memory_kind), donated.c_str());
  }
  for (size_t i = 0; i < counts.num_results; ++i) {
    neuronmem_manifest_value_t v{};
    v.struct_size = sizeof v;
    if (neuronmem_status_t* s = neuronmem_manifest_result(m, i, &v)) {
      neuronmem_status_free(s);
      continue;
    }
    const std::string type = DimsText(v.dims, v.num_dims) + " " + Str(v.element_type);
    std::printf("  res%-1zu %-14s %-22s %s\n", i, Str(v.name).c_str(), type.c_str(), KindName(v.memory_kind));
  }
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

std::string HumanBytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  } else if (b >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", b);
  }
  return buf;
}

struct Totals {
  std::vector<double> step_ms, meta_us, exec_ms;
  double check_s = 0;                 // the C++ reference check, left out of the throughput
  neuronmem_decode::StepStats moved;  // implicit copies must stay 0
  uint64_t meta_bytes_written = 0;
  int checked = 0, exact = 0, near_ties = 0, mismatches = 0;
  std::string first_mismatch;
};

int Run(const Options& o) {
  Config c = o.config;
  const std::vector<ArgSpec> specs = neuronmem_decode::Arguments(c);
  std::string text;
  if (o.model_path.empty()) {
    text = neuronmem_decode::GenerateModule(c);
  } else {
    // A --model that cannot be read is a bad argument (exit 2), named with the reason.
    struct stat st {};
    if (stat(o.model_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      std::fprintf(stderr, "%s: --model %s is a directory; give a StableHLO file (e.g. data/decode/decode_step.mlir)\n",
                   kTool, o.model_path.c_str());
      return 2;
    }
    std::ifstream f(o.model_path, std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "%s: cannot read --model %s: %s\n", kTool, o.model_path.c_str(), std::strerror(errno));
      return 2;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
    // The file decides the variant: one that launches the NKI kernel needs it registered. In an artifact
    // (vhlo bytecode, magic ML\xefR) the call target is an entry of the string table, without its '@'.
    const bool artifact = text.compare(0, 4, "ML\xefR") == 0;
    c.attention =
        text.find(artifact ? "AwsNeuronCustomNativeKernel" : "@AwsNeuronCustomNativeKernel") != std::string::npos
            ? neuronmem_decode::Attention::kKernel
            : neuronmem_decode::Attention::kGather;
  }
  const bool kernel = c.attention == neuronmem_decode::Attention::kKernel;
  const char* attention = neuronmem_decode::AttentionName(c.attention);
  uint64_t arg_bytes = 0;
  for (const ArgSpec& a : specs) arg_bytes += a.bytes();
  neuronmem_client_options_t co{};
  co.struct_size = sizeof co;
  co.num_cores = 1;
  // Weights, two generations of the KV caches (donation hands the memory over), the step's intermediates.
  co.device_bytes_per_core = std::max<uint64_t>(256ull << 20, 3 * arg_bytes + (128ull << 20));
  co.pinned_host_bytes = 64ull << 20;
  if (c.tp > 1) {
    // Rank c.rank of a job of c.tp processes, bootstrapped through the directory store.
    co.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
    co.process_index = static_cast<uint32_t>(c.rank);
    co.num_processes = static_cast<uint32_t>(c.tp);
    co.kv_get = neuronmem_directory_store_get;
    co.kv_put = neuronmem_directory_store_put;
    co.kv_user_data = const_cast<char*>(o.store_dir.c_str());
    if (!o.interface.empty()) co.fabric_interface = o.interface.c_str();
  }
  neuronmem_decode::PagedAttentionStats kernel_stats;  // the kernel's user data: outlives the client
  Client client;
  std::string e = neuronmem_decode::StatusText(neuronmem_client_create(&co, &client.c));
  if (e.empty() && kernel)
    e = neuronmem_decode::StatusText(neuronmem_decode::RegisterPagedAttention(client.c, &kernel_stats));
  if (!e.empty()) {
    std::fprintf(stderr, "%s: client: %s\n", kTool, e.c_str());
    return 1;
  }
  neuronmem_manifest_options_t mo{};
  mo.struct_size = sizeof mo;
  const std::string filename = o.model_path.empty() ? "decode_step.mlir" : o.model_path;
  mo.filename = filename.c_str();
  Manifest manifest;
  e = neuronmem_decode::StatusText(neuronmem_manifest_load_text(text.data(), text.size(), &mo, &manifest.m));
  if (e.empty()) e = MatchModel(manifest.m, o);
  if (!e.empty()) {
    std::fprintf(stderr, "%s: %s\n", kTool, e.c_str());
    return 1;
  }
  // The model's own KV cache size bounds the block ids the metadata may name.
  Config model = c;
  {
    neuronmem_manifest_value_t v{};
    v.struct_size = sizeof v;
    if (neuronmem_decode::StatusText(neuronmem_manifest_argument(manifest.m, neuronmem_decode::kKCache, &v)).empty() &&
        v.num_dims == 4)
      model.num_blocks = static_cast<int>(v.dims[1]);
  }
  if (!o.json && !o.quiet_manifest) PrintManifest(manifest.m, specs, text.size());
  // Declared after the client, so destroyed before it. Its caches have the model's size; the scheduler hands
  // out blocks of the size flags' cache, and CheckMetadata stops a block id past the model's.
  neuronmem_decode::Runner runner;
  e = runner.Init(client.c, model, text, filename, o.seed, o.weights_path);
  if (!e.empty()) {
    std::fprintf(stderr, "%s: %s\n", kTool, e.c_str());
    return 1;
  }
  const double compile_ms = runner.compile_ms();
  int32_t* meta[4] = {runner.metadata(0), runner.metadata(1), runner.metadata(2), runner.metadata(3)};
  const std::vector<int32_t> first_tokens = neuronmem_decode::FirstTokens(c);
  // The reference runs the whole model (a tensor-parallel rank holds its shares of the weights only).
  Config whole = c;
  whole.tp = 1;
  whole.rank = 0;
  const std::vector<std::vector<float>> whole_weights =
      c.tp > 1 ? neuronmem_decode::MakeWeights(whole, o.seed) : std::vector<std::vector<float>>();
  const std::vector<std::vector<float>>& weights = c.tp > 1 ? whole_weights : runner.weights();

  neuronmem_decode::Scheduler sched(c);
  neuronmem_decode::Reference ref(whole, weights);
  neuronmem_decode::Metadata md;
  std::vector<int32_t> tokens = first_tokens, next(static_cast<size_t>(c.batch)), ref_next;
  std::vector<float> logits;
  Totals t;
  const bool tty = !o.json && isatty(STDOUT_FILENO);
  const int plain_every = std::max(1, o.steps / 8);
  if (!o.json) {
    std::printf("== decode: batch %d, %d layers, %d steps, attention %s, compiled in %.1f ms\n", c.batch, c.layers,
                o.steps, attention, compile_ms);
    if (c.tp > 1)
      std::printf("  tensor-parallel: process %d of %d, %d of %d heads, %d of %d MLP columns\n", c.rank, c.tp,
                  c.heads / c.tp, c.heads, c.local_ffn(), c.ffn);
    if (o.weights_path.empty()) {
      std::printf("  weights: generated from seed %" PRIu64 ", one batched upload\n", o.seed);
    } else {
      std::printf(
          "  weights: %s loaded from %s into device memory by neuronmem_buffer_load_file (io_uring) in "
          "%.1f ms\n",
          HumanBytes(runner.file_bytes_loaded()).c_str(), o.weights_path.c_str(), runner.load_ms());
    }
    std::fflush(stdout);  // on a pipe too: the header before the loop's first step
  }
  const auto loop_start = Clock::now();
  for (int step = 0; step < o.steps; ++step) {
    const auto t0 = Clock::now();
    std::string error;
    const int64_t written = sched.Advance(step, meta[0], meta[1], meta[2], meta[3], &error);
    if (written < 0) {
      std::fprintf(stderr, "%s: step %d: %s\n", kTool, step, error.c_str());
      return 1;
    }
    error = neuronmem_decode::CheckMetadata(model, meta[0], meta[1], meta[2], meta[3]);
    if (!error.empty()) {
      std::fprintf(stderr, "%s: step %d: bad metadata, not executed: %s\n", kTool, step, error.c_str());
      return 1;
    }
    t.meta_bytes_written += static_cast<uint64_t>(written);
    const auto t1 = Clock::now();
    e = runner.Step(nullptr, &next, &t.moved);
    if (!e.empty()) {
      std::fprintf(stderr, "%s: %s\n", kTool, e.c_str());
      return 1;
    }
    const auto t2 = Clock::now();
    t.meta_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    t.exec_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    t.step_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());

    if (o.check) {
      const auto check_start = Clock::now();
      md.block_table.assign(meta[0], meta[0] + specs[neuronmem_decode::kBlockTable].bytes() / 4);
      md.seq_lens.assign(meta[1], meta[1] + c.batch);
      md.positions.assign(meta[2], meta[2] + c.batch);
      md.slot_mapping.assign(meta[3], meta[3] + c.batch);
      ref.Step(tokens.data(), md, &ref_next, &logits);
      for (int b = 0; b < c.batch; ++b) {
        ++t.checked;
        if (next[b] == ref_next[b]) {
          ++t.exact;
        } else if (neuronmem_decode::AcceptableToken(&logits[static_cast<size_t>(b) * c.vocab], c.vocab, next[b])) {
          ++t.near_ties;
        } else if (t.mismatches++ == 0) {
          t.first_mismatch = "step " + std::to_string(step) + ", sequence " + std::to_string(b) + ": device " +
                             std::to_string(next[b]) + ", reference " + std::to_string(ref_next[b]);
        }
      }
      t.check_s += std::chrono::duration<double>(Clock::now() - check_start).count();
    }
    tokens = next;
    // The decode loop's throughput: the reference check's time is reported on its own.
    const double elapsed = std::chrono::duration<double>(Clock::now() - loop_start).count() - t.check_s;
    const double tok_s = elapsed > 0 ? (step + 1) * c.batch / elapsed : 0;
    if (tty) {
      std::printf("\r  step %d/%d  %.2f ms/step  %.0f tokens/s  seq[0] next token %d   ", step + 1, o.steps,
                  t.step_ms.back(), tok_s, next[0]);
      std::fflush(stdout);
    } else if (!o.json && ((step + 1) % plain_every == 0 || step + 1 == o.steps)) {
      std::printf("  step %d/%d  %.2f ms/step  %.0f tokens/s\n", step + 1, o.steps, t.step_ms.back(), tok_s);
      std::fflush(stdout);  // a pipe is fully buffered: show each progress line when it is made
    }
  }
  if (tty) std::printf("\n");
  const double total_s = std::chrono::duration<double>(Clock::now() - loop_start).count() - t.check_s;
  double meta_total_us = 0;
  for (double v : t.meta_us) meta_total_us += v;
  double step_total_ms = 0;
  for (double v : t.step_ms) step_total_ms += v;
  const bool tokens_ok = !o.check || t.mismatches == 0;
  const bool copies_ok = t.moved.implicit_copies == 0;
  // The kernel variant: every grid point read its metadata in place in pinned_host and the caches in device.
  const uint64_t kernel_calls = kernel_stats.calls.load();
  const bool kernel_ok = !kernel || (kernel_calls == static_cast<uint64_t>(o.steps) * c.batch * c.layers &&
                                     kernel_stats.metadata_pinned.load() == kernel_calls &&
                                     kernel_stats.cache_in_device.load() == kernel_calls);

  if (o.json) {
    std::printf("{\"batch\": %d, \"layers\": %d, \"steps\": %d, \"attention\": \"%s\", \"compile_ms\": %.3f,\n",
                c.batch, c.layers, o.steps, attention, compile_ms);
    std::printf(" \"processes\": %d, \"process_index\": %d, \"bytes_between_processes\": %" PRIu64 ",\n", c.tp, c.rank,
                t.moved.peer_bytes);
    std::printf(
        " \"step_ms\": {\"p50\": %.4f, \"p99\": %.4f, \"total\": %.3f},"
        " \"execute_ms\": {\"p50\": %.4f, \"p99\": %.4f},\n",
        Percentile(t.step_ms, 0.5), Percentile(t.step_ms, 0.99), step_total_ms, Percentile(t.exec_ms, 0.5),
        Percentile(t.exec_ms, 0.99));
    std::printf(
        " \"metadata_us\": {\"p50\": %.4f, \"p99\": %.4f, \"total\": %.3f, \"share_of_step\": %.6f,"
        " \"bytes_written_in_place\": %" PRIu64 "},\n",
        Percentile(t.meta_us, 0.5), Percentile(t.meta_us, 0.99), meta_total_us,
        step_total_ms > 0 ? meta_total_us / 1000 / step_total_ms : 0, t.meta_bytes_written);
    std::printf(" \"bytes_moved\": {");
    bool first = true;
    for (int from = 0; from < 3; ++from)
      for (int to = 0; to < 3; ++to) {
        if (!t.moved.bytes[from][to]) continue;
        std::printf("%s\"%s->%s\": %" PRIu64, first ? "" : ", ", KindName(from), KindName(to), t.moved.bytes[from][to]);
        first = false;
      }
    std::printf("},\n \"implicit_copies\": %" PRIu64 ", \"implicit_bytes\": %" PRIu64 ",\n", t.moved.implicit_copies,
                t.moved.implicit_bytes);
    std::printf(
        " \"tokens_per_s\": %.1f, \"reference_check\": %s, \"reference_check_ms\": %.3f, \"tokens_checked\": %d,"
        " \"tokens_exact\": %d, \"near_ties\": %d, \"mismatches\": %d,\n",
        total_s > 0 ? o.steps * c.batch / total_s : 0, o.check ? (tokens_ok ? "\"pass\"" : "\"fail\"") : "null",
        t.check_s * 1000, t.checked, t.exact, t.near_ties, t.mismatches);
    std::printf(" \"kernel\": {\"calls\": %" PRIu64 ", \"metadata_in_pinned_host\": %" PRIu64
                ", \"caches_in_device\": %" PRIu64 "},\n",
                kernel_calls, kernel_stats.metadata_pinned.load(), kernel_stats.cache_in_device.load());
    std::printf(" \"weights\": {\"source\": \"%s\", \"bytes_loaded_from_file\": %" PRIu64 ", \"load_ms\": %.3f}}\n",
                o.weights_path.empty() ? "seed" : "file", runner.file_bytes_loaded(), runner.load_ms());
  } else {
    std::printf("== summary (%d steps, batch %d)\n", o.steps, c.batch);
    std::printf("  %-34s %12s %12s\n", "", "p50", "p99");
    std::printf("  %-34s %9.3f ms %9.3f ms\n", "step (update + execute + read)", Percentile(t.step_ms, 0.5),
                Percentile(t.step_ms, 0.99));
    std::printf("  %-34s %9.3f ms %9.3f ms\n", "execute + read back tokens", Percentile(t.exec_ms, 0.5),
                Percentile(t.exec_ms, 0.99));
    std::printf("  %-34s %9.3f us %9.3f us\n", "metadata handling (in place)", Percentile(t.meta_us, 0.5),
                Percentile(t.meta_us, 0.99));
    std::printf("  metadata: %.1f us in all, %.4f%% of step time; %s written in place, 0 B copied\n", meta_total_us,
                step_total_ms > 0 ? 100 * meta_total_us / 1000 / step_total_ms : 0.0,
                HumanBytes(t.meta_bytes_written).c_str());
    std::printf("  bytes moved by the executions, per kind pair:");
    bool any = false;
    for (int from = 0; from < 3; ++from)
      for (int to = 0; to < 3; ++to) {
        if (!t.moved.bytes[from][to]) continue;
        std::printf("%s %s->%s %s", any ? "," : "", KindName(from), KindName(to),
                    HumanBytes(t.moved.bytes[from][to]).c_str());
        any = true;
      }
    std::printf("%s\n", any ? "" : " none");
    if (c.tp > 1)
      std::printf("  processes: %d; bytes between processes: %s received by process %d (the all_reduces)\n", c.tp,
                  HumanBytes(t.moved.peer_bytes).c_str(), c.rank);
    std::printf("  implicit copies: %" PRIu64 " (%s)%s\n", t.moved.implicit_copies,
                HumanBytes(t.moved.implicit_bytes).c_str(), copies_ok ? "" : "  <- must be 0");
    if (kernel)
      std::printf("  paged-attention kernel: %" PRIu64
                  " grid-point calls; metadata read in place in pinned_host by %" PRIu64
                  ", KV caches in device for %" PRIu64 "%s\n",
                  kernel_calls, kernel_stats.metadata_pinned.load(), kernel_stats.cache_in_device.load(),
                  kernel_ok ? "" : "  <- expected every call");
    std::printf("  throughput: %.0f tokens/s (the decode loop; the reference check's time is not in it)\n",
                total_s > 0 ? o.steps * c.batch / total_s : 0);
    if (!o.check) {
      std::printf("  reference check: skipped (--no-check)\n");
    } else if (tokens_ok) {
      std::printf("  reference check: PASS, %d tokens match the C++ reference (%d exact, %d near ties), %.1f ms\n",
                  t.checked, t.exact, t.near_ties, t.check_s * 1000);
    } else {
      std::printf("  reference check: FAIL, %d of %d tokens differ from the C++ reference (first: %s)\n", t.mismatches,
                  t.checked, t.first_mismatch.c_str());
    }
  }
  return tokens_ok && copies_ok && kernel_ok ? 0 : 1;
}

// --processes N without --store: runs this program N times as the processes of one job (the same arguments plus
// --store DIR --process-index I, DIR a fresh temporary folder); process 0 prints, the others' stdout is dropped.
// Exits with the first failing process's status (0 when all pass).
int Spawn(int argc, char** argv, const Options& o) {
  std::string tmpl = (getenv("TMPDIR") ? std::string(getenv("TMPDIR")) : "/tmp") + "/neuronmem-decode-XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    std::fprintf(stderr, "%s: cannot make a store folder: %s\n", kTool, std::strerror(errno));
    return 1;
  }
  std::vector<pid_t> pids;
  for (int i = 0; i < o.config.tp; ++i) {
    std::vector<std::string> args(argv, argv + argc);
    args.insert(args.end(), {"--store", tmpl, "--process-index", std::to_string(i)});
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      if (i > 0 && !std::freopen("/dev/null", "w", stdout)) _exit(1);
      std::vector<char*> cargs;
      for (std::string& a : args) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      execv("/proc/self/exe", cargs.data());
      std::fprintf(stderr, "%s: cannot start process %d: %s\n", kTool, i, std::strerror(errno));
      _exit(1);
    }
    if (pid < 0) std::fprintf(stderr, "%s: cannot start process %d: %s\n", kTool, i, std::strerror(errno));
    pids.push_back(pid);
  }
  int result = 0;
  for (int i = 0; i < static_cast<int>(pids.size()); ++i) {
    int st = 0;
    if (pids[i] < 0 || waitpid(pids[i], &st, 0) != pids[i]) {
      result = result ? result : 1;
      continue;
    }
    const int code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    if (code != 0) {
      if (!WIFEXITED(st)) std::fprintf(stderr, "%s: process %d ended by signal %d\n", kTool, i, WTERMSIG(st));
      result = result ? result : code;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);  // the store's files and folder
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const int parsed = ParseArgs(argc, argv, &o);
  if (parsed == 1) return 0;
  if (parsed == 2) return 2;
  if (!o.write_weights_path.empty()) {
    const std::string e = neuronmem_decode::WriteWeightsFile(o.config, o.seed, o.write_weights_path);
    if (!e.empty()) {
      std::fprintf(stderr, "%s: %s\n", kTool, e.c_str());
      return 1;
    }
    std::printf("wrote %" PRIu64 " bytes of weights (seed %" PRIu64 ") to %s\n",
                neuronmem_decode::WeightsFileBytes(o.config), o.seed, o.write_weights_path.c_str());
    return 0;
  }
  if (o.config.tp > 1 && o.store_dir.empty()) return Spawn(argc, argv, o);
  return Run(o);
}
