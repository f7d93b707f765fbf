#include "exec/custom_kernels.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <map>
#include <unordered_map>
#include <vector>

#include "exec/moves.h"

namespace neuronmem::exec {

namespace {

constexpr char kNkiTarget[] = "AwsNeuronCustomNativeKernel";
// The most points a kernel's launch grid may have: one call each (a product that overflows wrapped to 0 calls).
constexpr int64_t kMaxGridPoints = int64_t{1} << 31;

}  // namespace

bool IsBuiltInTarget(std::string_view name) {
  return IsPlacementTarget(name) || name == kNkiTarget || name.substr(0, 6) == "check.";
}

Status CustomKernelRegistry::Register(std::string name, CustomKernelFn fn) {
  if (IsBuiltInTarget(name))
    return InvalidArgument(
        "'%s' is a custom-call target the executor runs itself (a placement move, a check, or the NKI "
        "dispatch); a kernel cannot replace it",
        name.c_str());
  auto shared = std::make_shared<const CustomKernelFn>(std::move(fn));
  std::lock_guard<std::mutex> lock(mu_);
  kernels_[std::move(name)] = std::move(shared);
  return Ok();
}

std::shared_ptr<const CustomKernelFn> CustomKernelRegistry::Find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : it->second;
}

namespace {

struct Launch {
  std::string name;
  std::vector<int64_t> grid;
  std::shared_ptr<const CustomKernelFn> fn;
};

std::string_view BackendConfig(const stablehlo::Operation* op) {
  if (!op) return {};
  const stablehlo::Attribute* a = stablehlo::Find(op->attributes, "backend_config");
  if (!a) a = stablehlo::Find(op->attributes, "mhlo.backend_config");
  if (!a) a = stablehlo::Find(op->attributes, "composite_attributes");  // a composite a kernel takes over
  if (!a) return {};
  return a->kind == stablehlo::Attribute::Kind::kString ? a->str : a->text;
}

std::string IndexText(const int64_t* index, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

// Runs `launch` once per grid point over the custom call's operands and results.
Status RunLaunch(const interp::CustomCallContext& c, const Launch& launch) {
  const auto* run = static_cast<const RunContext*>(c.run_context);
  std::vector<CustomKernelTensor> views(c.num_operands + c.num_results);
  for (size_t i = 0; i < views.size(); ++i) {
    const interp::TensorView& v = i < c.num_operands ? c.operands[i] : c.results[i - c.num_operands];
    views[i] = CustomKernelTensor(v, run ? run->KindOf(v.data) : MemoryKind::kDevice);
  }
  CustomKernelCall call;
  call.target = c.target;
  call.name = launch.name;
  call.backend_config = BackendConfig(c.op);
  call.inputs = views.data();
  call.num_inputs = c.num_operands;
  call.outputs = views.data() + c.num_operands;
  call.num_outputs = c.num_results;
  call.grid = launch.grid.data();
  call.grid_rank = launch.grid.size();
  call.core = run ? run->core : 0;
  int64_t points = 1;
  for (int64_t g : launch.grid) points *= g;
  const size_t rank = launch.grid.size();
  auto point = [&](int64_t p, std::vector<int64_t>* index) -> Status {
    index->assign(rank, 0);
    for (size_t d = rank; d-- > 0;) {
      (*index)[d] = p % launch.grid[d];
      p /= launch.grid[d];
    }
    CustomKernelCall at = call;
    at.grid_index = index->data();
    Status s = (*launch.fn)(at);
    if (s) s = Annotate(std::move(s), "kernel '" + launch.name + "' at grid point " + IndexText(index->data(), rank));
    return s;
  };
  if (points == 1) {
    std::vector<int64_t> index;
    return point(0, &index);
  }
  std::mutex mu;
  int64_t first = points;
  Status failure;
  // The hand-over to oneTBB's workers and their join, stated where ThreadSanitizer sees them (Debian's libtbb
  // is not instrumented): each chunk acquires what was written before the launch (the release store) and
  // releases what it wrote, which the caller acquires after parallel_for before it reads `failure` or frees
  // the views.
  std::atomic<int64_t> points_done;
  points_done.store(0, std::memory_order_release);
  // The points run on the executor's arena (RunContext::pool), whichever thread runs the execution: a launch
  // thread or a submitting caller would otherwise run them in its own (the caller's) arena.
  auto grid = [&] {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, points), [&](const tbb::blocked_range<int64_t>& r) {
      (void)points_done.load(std::memory_order_acquire);
      std::vector<int64_t> index;
      for (int64_t p = r.begin(); p != r.end(); ++p) {
        Status s = point(p, &index);
        if (!s) continue;
        std::lock_guard<std::mutex> lock(mu);
        if (p < first) {
          first = p;
          failure = std::move(s);
        }
        break;
      }
      points_done.fetch_add(static_cast<int64_t>(r.size()), std::memory_order_acq_rel);
    });
  };
  if (run && run->pool) {
    run->pool->Execute([](void* g) { (*static_cast<decltype(grid)*>(g))(); }, &grid);
  } else {
    grid();
  }
  if (points_done.load(std::memory_order_acquire) != points) return Internal("a grid launch ended unfinished");
  return failure;
}

std::string Where(const std::string& filename, const manifest::Location& loc) {
  return filename + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column);
}

}  // namespace

Status BuildCustomCalls(const manifest::Manifest& m, const CustomKernelRegistry* kernels, const std::string& filename,
                        interp::CustomCallRegistry* out) {
  *out = PlacementRegistry();
  if (!kernels) return Ok();
  // A kernel registered under `name` runs what the graph calls by that name.
  const auto take = [&](const std::string& name) {
    std::shared_ptr<const CustomKernelFn> fn = kernels->Find(name);
    if (!fn) return;  // built in, or unknown: the interpreter reports it with its location
    auto launch = std::make_shared<Launch>();
    launch->name = name;
    launch->fn = std::move(fn);
    out->Register(name, [launch](const interp::CustomCallContext& c) { return RunLaunch(c, *launch); });
  };
  // Targets the graph calls by name.
  for (const manifest::CustomCallTarget& t : m.custom_call_targets)
    if (t.target != kNkiTarget) take(t.target);
  // Composites whose name has a kernel: it takes them over (the interpreter calls a target of a composite's name
  // instead of its decomposition).
  for (const manifest::Composite& c : m.composites)
    if (!out->Find(c.name)) take(c.name);
  // NKI kernels by func_name, one launch per call site (the custom_call op in the manifest's IR).
  if (m.kernels.empty()) return Ok();
  auto sites = std::make_shared<std::unordered_map<const stablehlo::Operation*, Launch>>();
  for (const manifest::Kernel& k : m.kernels) {
    const std::string where = Where(filename, k.loc) + ": 'stablehlo.custom_call' @" + kNkiTarget;
    Launch launch;
    launch.name = k.func_name;
    launch.grid = k.grid;
    int64_t points = 1;
    for (int64_t g : k.grid) {
      if (g <= 0) return InvalidArgument("%s: grid dimension %lld must be positive", where.c_str(), (long long)g);
      if (__builtin_mul_overflow(points, g, &points) || points > kMaxGridPoints)
        return InvalidArgument("%s: the grid %s has more than %lld points", where.c_str(),
                               IndexText(k.grid.data(), k.grid.size()).c_str(), (long long)kMaxGridPoints);
    }
    launch.fn = kernels->Find(k.func_name);
    if (!launch.fn)
      return Unimplemented(
          "%s: no kernel is registered as '%s' (the func_name of its backend_config); register it "
          "with neuronmem_client_register_kernel",
          where.c_str(), k.func_name.c_str());
    (*sites)[k.ir_op] = std::move(launch);
  }
  out->Register(kNkiTarget, [sites](const interp::CustomCallContext& c) -> Status {
    auto it = c.op ? sites->find(c.op) : sites->end();
    if (it == sites->end()) return Internal("no kernel launch is known for this call site");
    return RunLaunch(c, it->second);
  });
  return Ok();
}

}  // namespace neuronmem::exec
