// Compiling a manifest's graph into an executable: the interpreter's program with memory spaces per kind,
// parameters and outputs from the manifest, donation pairs.
#include "exec/executable.h"

#include <algorithm>
#include <cinttypes>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "exec/moves.h"
#include "interpreter/specialize.h"

namespace neuronmem::exec {

namespace {

std::string Where(const std::string& filename, const manifest::Location& loc) {
  return filename + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column);
}

std::string ShapeText(ElementType type, const std::vector<int64_t>& dims) {
  std::string s(ElementTypeName(type));
  s += '[';
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + ']';
}

// "file:line:col: argument 1 (%name)": where a parameter or result is declared.
std::string ValueWhere(const manifest::Value& v, const char* what, const std::string& filename) {
  std::string w = Where(filename, v.loc) + ": " + what + " " + std::to_string(v.index);
  if (!v.name.empty()) w += " (" + v.name + ")";
  return w;
}

// Tuple parameters and results: UNIMPLEMENTED naming the first one (the interpreter flattens tuples, but a
// buffer holds one array, and PJRT's executables take and return arrays).
Status RefuseTuples(const std::vector<manifest::Value>& values, const char* what, const std::string& filename) {
  for (const manifest::Value& v : values)
    if (v.type.is_tuple)
      return Unimplemented("%s: tuple values are not supported by the executor (flatten them)",
                           ValueWhere(v, what, filename).c_str());
  return Ok();
}

// A parameter or output of the entry function as the executor takes it: a dense array of an element type
// buffers can hold (a token is an empty pred[0] buffer). UNIMPLEMENTED otherwise, at the value's location.
Status CheckValue(const manifest::Value& v, const interp::ValueSpec& spec, const char* what,
                  const std::string& filename, ValueInfo* out) {
  const std::string where = ValueWhere(v, what, filename);
  if (ElementTypeToC(spec.type) < 0)
    return Unimplemented("%s: element type %s cannot be held in a buffer", where.c_str(),
                         std::string(ElementTypeName(spec.type)).c_str());
  out->type = spec.type;
  out->dims = spec.dims;
  out->kind = v.memory_kind;
  out->bytes = spec.bytes;
  out->name = std::string(what) + " " + std::to_string(v.index);
  if (!v.name.empty()) out->name += " (" + v.name + ")";
  return Ok();
}

bool SameShape(const manifest::Value& a, const manifest::Value& b) {
  return a.type.element_type == b.type.element_type && a.type.dims == b.type.dims;
}

// Donation pairs from the manifest: tf.aliasing_output names the output; a jax.buffer_donor goes to the first
// output left that has its shape and memory kind (as XLA matches donors). donation[i]: the output argument i is
// donated into, or -1. Decided before the graph is compiled: the interpreter updates donated arguments in place.
Status MatchDonations(const manifest::Manifest& m, const std::string& filename, std::vector<int64_t>* donation) {
  donation->assign(m.arguments.size(), -1);
  std::vector<int64_t> donor(m.results.size(), -1);  // per output
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const manifest::Value& a = m.arguments[i];
    if (a.aliasing_output < 0) continue;
    const std::string where = Where(filename, a.loc) + ": argument " + std::to_string(i);
    if (static_cast<size_t>(a.aliasing_output) >= m.results.size())
      return InvalidArgument("%s: tf.aliasing_output = %" PRId64 " but the function has %zu results", where.c_str(),
                             a.aliasing_output, m.results.size());
    const size_t k = static_cast<size_t>(a.aliasing_output);
    const manifest::Value& o = m.results[k];
    if (donor[k] >= 0)
      return InvalidArgument("%s: output %zu is already the donation of argument %" PRId64, where.c_str(), k, donor[k]);
    if (!SameShape(a, o) || a.memory_kind != o.memory_kind)
      return InvalidArgument(
          "%s: %s in %s cannot be donated to output %zu, a %s in %s", where.c_str(),
          ShapeText(a.type.element, a.type.dims).c_str(), std::string(MemoryKindName(a.memory_kind)).c_str(), k,
          ShapeText(o.type.element, o.type.dims).c_str(), std::string(MemoryKindName(o.memory_kind)).c_str());
    (*donation)[i] = static_cast<int64_t>(k);
    donor[k] = static_cast<int64_t>(i);
  }
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const manifest::Value& a = m.arguments[i];
    if (!a.buffer_donor || (*donation)[i] >= 0) continue;
    for (size_t k = 0; k < m.results.size(); ++k) {
      if (donor[k] < 0 && SameShape(a, m.results[k]) && a.memory_kind == m.results[k].memory_kind) {
        (*donation)[i] = static_cast<int64_t>(k);
        donor[k] = static_cast<int64_t>(i);
        break;
      }
    }
  }
  return Ok();
}

// Calls visit(op) for every op of `fn`, its regions and every function it calls (each function once), until
// visit returns an error.
template <typename Visit>
Status WalkOps(const stablehlo::Module& module, const stablehlo::Function& fn, const Visit& visit) {
  // Iterative, each function once, callees through an index: a chain of thousands of nested calls neither
  // recurses nor costs n^2 (issue 23, classes 4 and 7).
  const stablehlo::FunctionIndex functions(module);
  std::unordered_set<const stablehlo::Function*> seen{&fn};
  std::vector<const stablehlo::Region*> regions{&fn.body};
  while (!regions.empty()) {
    const stablehlo::Region* r = regions.back();
    regions.pop_back();
    for (const stablehlo::Block& b : r->blocks) {
      for (const stablehlo::Operation& op : b.ops) {
        NEURONMEM_RETURN_IF_ERROR(visit(op));
        if (op.name == "func.call" && !op.callee.empty()) {
          const stablehlo::Function* g = functions.Find(op.callee);
          if (g && seen.insert(g).second) regions.push_back(&g->body);
        }
        for (const stablehlo::Region& sub : op.regions) regions.push_back(&sub);
      }
    }
  }
  return Ok();
}

// Ops that see the process grid: the program runs as one process of a launch (replica and partition ids,
// collectives, send/recv between cores or with the host).
bool UsesProcessGrid(std::string_view name) {
  static constexpr std::string_view kOps[] = {"stablehlo.replica_id",
                                              "stablehlo.partition_id",
                                              "stablehlo.all_reduce",
                                              "stablehlo.all_gather",
                                              "stablehlo.reduce_scatter",
                                              "stablehlo.all_to_all",
                                              "stablehlo.collective_permute",
                                              "stablehlo.collective_broadcast",
                                              "stablehlo.collective_reduce",
                                              "stablehlo.send",
                                              "stablehlo.recv"};
  return std::find(std::begin(kOps), std::end(kOps), name) != std::end(kOps);
}

// UNIMPLEMENTED at the first infeed or outfeed of the entry, its regions or a function it calls: the
// executor has no feed queues (a frontend moves data with arguments, results or host transfers instead).
// *uses_grid: whether any op sees the process grid.
Status ScanOps(const stablehlo::Module& module, const stablehlo::Function& entry, const std::string& filename,
               bool* uses_grid, bool* unbounded, uint64_t* fingerprint) {
  *uses_grid = false;
  *unbounded = false;
  return WalkOps(module, entry, [&](const stablehlo::Operation& op) -> Status {
    uint64_t& h = *fingerprint;
    for (char c : op.name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    h = (h ^ op.loc.line) * 0x100000001b3ull;
    h = (h ^ op.loc.column) * 0x100000001b3ull;
    if (op.name == "stablehlo.infeed" || op.name == "stablehlo.outfeed")
      return Unimplemented(
          "%s:%u:%u: '%.*s': the executor has no %s queue; pass the data as arguments, results or host "
          "transfers (send/recv with is_host_transfer)",
          filename.c_str(), op.loc.line, op.loc.column, static_cast<int>(op.name.size()), op.name.data(),
          op.name == "stablehlo.infeed" ? "infeed" : "outfeed");
    if (UsesProcessGrid(op.name)) *uses_grid = true;
    // A loop may never end (a kernel is the frontend's own code: how long it runs is the frontend's to know).
    if (op.name == "stablehlo.while") *unbounded = true;
    return Ok();
  });
}

// The module's mhlo.num_partitions, or 1.
Status ModulePartitions(const stablehlo::Module& module, const std::string& filename, uint32_t* out) {
  *out = 1;
  const stablehlo::Attribute* a = stablehlo::Find(module.attributes, "mhlo.num_partitions");
  if (!a) return Ok();
  if (a->kind != stablehlo::Attribute::Kind::kInt || a->i < 1 || a->i > static_cast<int64_t>(manifest::kMaxCores))
    return InvalidArgument("%s:%u:%u: mhlo.num_partitions must be an integer in 1..%u", filename.c_str(), a->loc.line,
                           a->loc.column, manifest::kMaxCores);
  *out = static_cast<uint32_t>(a->i);
  return Ok();
}

}  // namespace

uint64_t Executable::peak_host_bytes() const {
  if (!program_) return 0;
  uint64_t n = 0;
  for (size_t k = 1; k < interp::kMaxSpaces; ++k) n += program_->workspace_bytes(k);
  return n;
}

namespace {

// The launch's shape: num_partitions (the option, else the module's mhlo.num_partitions) and num_replicas (the
// option, else the cores per partition); at most the client's cores.
Status LaunchShape(const manifest::Manifest& m, const ExecutableOptions& options, uint32_t num_cores,
                   uint32_t* replicas, uint32_t* partitions) {
  *partitions = options.num_partitions;
  if (!*partitions) NEURONMEM_RETURN_IF_ERROR(ModulePartitions(*m.ir, options.filename, partitions));
  if (*partitions > num_cores)
    return InvalidArgument("num_partitions is %u but the client has %u cores", *partitions, num_cores);
  *replicas = options.num_replicas ? options.num_replicas : num_cores / *partitions;
  if (static_cast<uint64_t>(*replicas) * *partitions > num_cores) {
    return InvalidArgument("num_replicas %u times num_partitions %u is more than the client's %u cores", *replicas,
                           *partitions, num_cores);
  }
  return Ok();
}

// The manifest's send/recv channels with the host.
std::vector<HostChannel> HostChannels(const manifest::Manifest& m, const std::string& filename) {
  std::vector<HostChannel> out;
  for (const manifest::Channel& c : m.channels) {
    if (!c.is_host_transfer) continue;
    HostChannel h;
    h.handle = c.handle;
    h.send = c.op == "send";
    h.where = Where(filename, c.loc) + ": 'stablehlo." + c.op + "'";
    out.push_back(std::move(h));
  }
  return out;
}

// Where each intra-graph move puts its result: the memory space of its kind, by the move's op.
void PlaceMoves(const manifest::Manifest& m, interp::CompileOptions* co) {
  auto move_kinds = std::make_shared<std::unordered_map<const stablehlo::Operation*, MemoryKind>>();
  for (const manifest::Move& mv : m.moves) (*move_kinds)[mv.ir_op] = mv.to_memory_kind;
  co->result_space = [move_kinds](const stablehlo::Operation& op) -> uint8_t {
    if (move_kinds->empty() || !IsPlacementCall(op)) return 0;
    auto it = move_kinds->find(&op);
    return it == move_kinds->end() ? 0 : static_cast<uint8_t>(it->second);
  };
}

// Donated arguments are updated in place, each in the memory space of its kind (tuples are refused later).
void DonateInPlace(const manifest::Manifest& m, const std::vector<int64_t>& donation, interp::CompileOptions* co) {
  const auto is_tuple = [](const manifest::Value& v) { return v.type.is_tuple; };
  if (std::any_of(m.arguments.begin(), m.arguments.end(), is_tuple) ||
      std::any_of(m.results.begin(), m.results.end(), is_tuple))
    return;
  for (size_t i = 0; i < donation.size(); ++i) {
    co->donations.push_back(static_cast<int32_t>(donation[i]));
    co->param_spaces.push_back(static_cast<uint8_t>(m.arguments[i].memory_kind));
  }
}

// Host compute (_xla_compute_type = "host" on an op, a call or a called function): runs in pinned_host memory,
// its reads of device values and device code's reads of its values through counted moves. The ops on the host
// are those the manifest found there, by identity.
void PlaceHostCompute(const manifest::Manifest& m, interp::CompileOptions* co) {
  if (m.host_compute.empty()) return;
  using Place = interp::CompileOptions::HostCompute::Place;
  interp::CompileOptions::HostCompute& hc = co->host_compute;
  auto host_ops = std::make_shared<std::unordered_set<const stablehlo::Operation*>>();
  for (const manifest::HostCompute& h : m.host_compute)
    if (h.ir_op) host_ops->insert(h.ir_op);
  hc.place = [host_ops](const stablehlo::Operation& op) {
    if (IsPlacementCall(op)) return Place::kMove;
    return host_ops->count(&op) ? Place::kHost : Place::kAround;
  };
  const stablehlo::Function* entry = m.ir->FindFunction(m.entry);
  hc.entry_on_host = entry && manifest::IsHostCompute(entry->attributes);
  hc.space = static_cast<uint8_t>(MemoryKind::kPinnedHost);
  hc.host_spaces = 1u << static_cast<int>(MemoryKind::kPinnedHost) | 1u << static_cast<int>(MemoryKind::kUnpinnedHost);
  for (const manifest::Value& r : m.results) hc.result_spaces.push_back(static_cast<uint8_t>(r.memory_kind));
  hc.move = ExecuteMove;
}

}  // namespace

// The steps: the launch shape, a scan of the ops (feeds refused, grid use), the host channels, the custom
// calls, the interpreter's options (placement moves, donations, host compute), the program, then its values
// checked against the manifest's and the donations recorded.
Status Executable::Compile(const manifest::Manifest& m, const ExecutableOptions& options, uint32_t num_cores,
                           const CustomKernelRegistry* kernels, std::shared_ptr<const Executable>* out) {
  return Build(m, options, num_cores, kernels, nullptr, out);
}

Status Executable::Specialize(const std::vector<std::vector<int64_t>>& dims,
                              std::shared_ptr<const Executable>* out) const {
  if (!poly_) return FailedPrecondition("the executable is not shape-polymorphic");
  std::lock_guard<std::mutex> lock(poly_->mu);
  auto& cache = poly_->cache;
  for (auto it = cache.begin(); it != cache.end(); ++it) {
    if (it->first != dims) continue;
    cache.splice(cache.begin(), cache, it);
    *out = cache.front().second;
    return Ok();
  }
  ExecutableOptions o = poly_->options;
  o.param_dims = dims;
  std::shared_ptr<const Executable> e;
  NEURONMEM_RETURN_IF_ERROR(Build(poly_->manifest, o, poly_->num_cores, nullptr, &custom_calls_, &e));
  ++poly_->compiled;
  cache.emplace_front(dims, e);
  while (cache.size() > kMaxSpecializations) cache.pop_back();  // executions hold theirs
  *out = std::move(e);
  return Ok();
}

uint64_t Executable::num_specializations() const {
  if (!poly_) return 0;
  std::lock_guard<std::mutex> lock(poly_->mu);
  return poly_->compiled;
}

Status Executable::Build(const manifest::Manifest& m, const ExecutableOptions& options, uint32_t num_cores,
                         const CustomKernelRegistry* kernels, const interp::CustomCallRegistry* calls,
                         std::shared_ptr<const Executable>* out) {
  if (!m.ir) {
    return FailedPrecondition(
        "the manifest has no graph to compile: it was read from JSON; load it from the StableHLO text");
  }
  uint32_t replicas = 0, partitions = 0;
  NEURONMEM_RETURN_IF_ERROR(LaunchShape(m, options, num_cores, &replicas, &partitions));
  bool uses_grid = false, unbounded = false;
  uint64_t fingerprint = 0xcbf29ce484222325ull ^ (static_cast<uint64_t>(replicas) << 32 | partitions);
  if (const stablehlo::Function* entry = m.ir->FindFunction(m.entry))
    NEURONMEM_RETURN_IF_ERROR(ScanOps(*m.ir, *entry, options.filename, &uses_grid, &unbounded, &fingerprint));
  std::shared_ptr<Executable> e(new Executable());
  e->uses_grid_ = uses_grid;
  e->unbounded_ = unbounded;
  e->fingerprint_ = fingerprint;
  e->host_channels_ = HostChannels(m, options.filename);
  e->ir_ = m.ir;
  e->placement_ = options.placement;
  e->num_replicas_ = replicas;
  e->num_partitions_ = partitions;
  e->num_moves_ = m.moves.size();
  interp::CompileOptions co;
  co.entry = m.entry;
  co.filename = options.filename;
  if (calls)
    e->custom_calls_ = *calls;
  else
    NEURONMEM_RETURN_IF_ERROR(BuildCustomCalls(m, kernels, options.filename, &e->custom_calls_));
  co.custom_calls = &e->custom_calls_;
  // A shape-polymorphic entry compiles per argument shapes (Specialize); the values are the manifest's.
  if (options.param_dims.empty() && interp::Specializations::IsPolymorphic(*m.ir, m.entry)) {
    NEURONMEM_RETURN_IF_ERROR(RefuseTuples(m.arguments, "argument", options.filename));
    NEURONMEM_RETURN_IF_ERROR(RefuseTuples(m.results, "result", options.filename));
    for (const auto* values : {&m.arguments, &m.results}) {
      const bool is_arg = values == &m.arguments;
      for (const manifest::Value& v : *values) {
        ValueInfo info;
        interp::ValueSpec spec;
        spec.type = v.type.element;
        spec.dims = v.type.dims;
        NEURONMEM_RETURN_IF_ERROR(CheckValue(v, spec, is_arg ? "argument" : "result", options.filename, &info));
        (is_arg ? e->params_ : e->outputs_).push_back(std::move(info));
        if (!is_arg) e->returned_kinds_.push_back(v.memory_kind);
      }
    }
    e->poly_ = std::make_unique<Polymorphic>();
    e->poly_->manifest = m;
    e->poly_->options = options;
    e->poly_->num_cores = num_cores;
    *out = std::move(e);
    return Ok();
  }
  co.param_dims = options.param_dims;
  co.space_copy = CountedSpaceCopy;
  PlaceMoves(m, &co);
  // A bad donation is reported after what the graph itself gets wrong.
  std::vector<int64_t> donation;
  Status donation_error = MatchDonations(m, options.filename, &donation);
  if (!donation_error) DonateInPlace(m, donation, &co);
  PlaceHostCompute(m, &co);
  NEURONMEM_RETURN_IF_ERROR(interp::Compile(*m.ir, co, &e->program_));
  NEURONMEM_RETURN_IF_ERROR(e->TakeValues(m, options.filename));
  NEURONMEM_RETURN_IF_ERROR(std::move(donation_error));
  for (size_t i = 0; i < donation.size(); ++i) {
    if (donation[i] < 0) continue;
    e->params_[i].donation = donation[i];
    e->outputs_[static_cast<size_t>(donation[i])].donation = static_cast<int64_t>(i);
  }
  *out = std::move(e);
  return Ok();
}

Status Executable::TakeValues(const manifest::Manifest& m, const std::string& filename) {
  NEURONMEM_RETURN_IF_ERROR(RefuseTuples(m.arguments, "argument", filename));
  NEURONMEM_RETURN_IF_ERROR(RefuseTuples(m.results, "result", filename));
  num_moves_ += program_->num_host_compute_moves();
  const auto& params = program_->parameters();
  const auto& results = program_->results();
  if (params.size() != m.arguments.size() || results.size() != m.results.size()) {
    return Internal("%s: @%s: the program has %zu parameters and %zu results, the manifest %zu and %zu",
                    filename.c_str(), m.entry.c_str(), params.size(), results.size(), m.arguments.size(),
                    m.results.size());
  }
  params_.resize(params.size());
  outputs_.resize(results.size());
  for (size_t i = 0; i < params.size(); ++i)
    NEURONMEM_RETURN_IF_ERROR(CheckValue(m.arguments[i], params[i], "argument", filename, &params_[i]));
  for (size_t i = 0; i < results.size(); ++i)
    NEURONMEM_RETURN_IF_ERROR(CheckValue(m.results[i], results[i], "result", filename, &outputs_[i]));
  for (size_t i = 0; i < results.size(); ++i) {
    const int32_t p = results[i].param;
    returned_kinds_.push_back(p >= 0 ? params_[static_cast<size_t>(p)].kind
                                     : static_cast<MemoryKind>(results[i].space));
  }
  return Ok();
}

}  // namespace neuronmem::exec
