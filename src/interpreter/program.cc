// Running a program: frames (slot pointers into a workspace per memory space), calls, and Program::Run.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "interpreter/program.h"
#include "interpreter/run_state.h"

namespace neuronmem::interp {

void SetupFrame(const Function& fn, char* mem, char* const* spaces, Frame* frame) {
  frame->slots = reinterpret_cast<char**>(mem);
  char* data[kMaxSpaces] = {mem + fn.slot_array_bytes};
  for (size_t k = 1; k < kMaxSpaces; ++k) {
    data[k] = spaces[k];
    frame->space_stack[k] = spaces[k] ? spaces[k] + fn.space_frame_bytes[k] : nullptr;
  }
  frame->space_stack[0] = nullptr;
  for (size_t i = 0; i < fn.slots.size(); ++i) {
    const Slot& s = fn.slots[i];
    switch (s.kind) {
      case Slot::Kind::kPlanned: frame->slots[i] = s.fused ? nullptr : data[s.space] + s.offset; break;
      case Slot::Kind::kConst: frame->slots[i] = const_cast<char*>(s.const_data); break;
      case Slot::Kind::kExternal:
      case Slot::Kind::kAlias: frame->slots[i] = nullptr; break;  // set by the caller / ResolveAliases
    }
  }
  frame->stack = mem + fn.frame_bytes;
}

Status CallFunction(const Function& fn, Frame& caller, const uint32_t* arg_slots, const uint32_t* result_slots,
                    const bool* crosses) {
  Frame frame;
  SetupFrame(fn, caller.stack, caller.space_stack, &frame);
  frame.state = caller.state;
  frame.context = caller.context;
  frame.run = caller.run;
  frame.interrupt = caller.interrupt;
  for (size_t i = 0; i < fn.body.arg_slots.size(); ++i) frame.slots[fn.body.arg_slots[i]] = caller.slots[arg_slots[i]];
  ResolveAliases(fn, &frame);
  NEURONMEM_RETURN_IF_ERROR(RunBody(fn.body, frame));
  for (size_t i = 0; i < fn.body.result_slots.size(); ++i) {
    const uint32_t src = fn.body.result_slots[i];
    CopyValue(caller, caller.slots[result_slots[i]], frame.slots[src], fn.slots[src].bytes, crosses && crosses[i]);
  }
  return Ok();
}

void Function::AddCallee(const Function* f) {
  // Kept unique by CompileFunction (a search here made n distinct calls cost n^2).
  if (callees.empty() || callees.back() != f) callees.push_back(f);
}

size_t ValueSpec::NumBytes() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return static_cast<size_t>(n) * ElementByteSize(type);
}

Status FrameMemory::Reserve(const Function& fn, Workspace* workspace, char* const* given) {
  if (given) {
    mem = given[0];
    for (size_t k = 1; k < kMaxSpaces; ++k) spaces[k] = given[k];
  } else {
    Workspace* ws = workspace ? workspace : &local;
    mem = ws->Reserve(fn.stack_bytes);
    // Without the executor's memories, the other spaces are ordinary host memory.
    for (size_t k = 1; k < kMaxSpaces && mem; ++k) {
      if (!fn.space_stack_bytes[k]) continue;
      if (!space_ws) space_ws.reset(new Workspace[kMaxSpaces]);
      spaces[k] = space_ws[k].Reserve(fn.space_stack_bytes[k]);
      if (!spaces[k]) mem = nullptr;
    }
  }
  if (!mem && fn.stack_bytes)
    return ResourceExhausted("no memory for the %zu-byte workspace of @%s", fn.stack_bytes, fn.name.c_str());
  return Ok();
}

SpaceFrames::~SpaceFrames() {
  for (size_t k = 1; k < kMaxSpaces; ++k)
    if (got_[k]) memory_->release(memory_->context, k, got_[k], bytes_[k]);
}

Status SpaceFrames::Allocate(const Function& fn, char** spaces) {
  for (size_t k = 1; k < kMaxSpaces; ++k) {
    if (!fn.space_stack_bytes[k]) continue;
    got_[k] = static_cast<char*>(memory_->allocate(memory_->context, k, fn.space_stack_bytes[k]));
    if (!got_[k])
      return ResourceExhausted("no memory of space %zu for the %zu-byte frames of @%s", k, fn.space_stack_bytes[k],
                               fn.name.c_str());
    bytes_[k] = fn.space_stack_bytes[k];
    spaces[k] = got_[k];
  }
  return Ok();
}

Status RunStandalone(const Function& fn, const ProgramState* state, RunState* run, void* context, char* const* args,
                     char* const* results, char* frame_memory) {
  FrameMemory fm;
  if (frame_memory && !StandaloneFrameBytes(fn)) return Internal("@%s needs memory of other spaces", fn.name.c_str());
  const Program::RunOptions::SpaceMemory* space_memory = run ? run->space_memory : nullptr;
  SpaceFrames space_frames(space_memory && space_memory->allocate ? space_memory : nullptr);
  if (frame_memory) {
    fm.mem = frame_memory;
  } else if (StandaloneFrameBytes(fn) || !space_memory || !space_memory->allocate) {
    NEURONMEM_RETURN_IF_ERROR(fm.Reserve(fn, nullptr, nullptr));
  } else {
    // Space 0 on the heap, the others the embedder's (the values the body moves lie in their memory).
    fm.mem = fm.local.Reserve(fn.stack_bytes);
    if (!fm.mem && fn.stack_bytes)
      return ResourceExhausted("no memory for the %zu-byte workspace of @%s", fn.stack_bytes, fn.name.c_str());
    NEURONMEM_RETURN_IF_ERROR(space_frames.Allocate(fn, fm.spaces));
  }
  Frame frame;
  SetupFrame(fn, fm.mem, fm.spaces, &frame);
  frame.state = state;
  frame.context = context;
  frame.run = run;
  frame.interrupt = run ? run->interrupt : nullptr;
  for (size_t i = 0; i < fn.body.arg_slots.size(); ++i) frame.slots[fn.body.arg_slots[i]] = args[i];
  ResolveAliases(fn, &frame);
  NEURONMEM_RETURN_IF_ERROR(RunBody(fn.body, frame));
  for (size_t i = 0; i < fn.body.result_slots.size(); ++i) {
    const uint32_t src = fn.body.result_slots[i];
    if (fn.slots[src].bytes) std::memmove(results[i], frame.slots[src], fn.slots[src].bytes);
  }
  return Ok();
}

size_t StandaloneFrameBytes(const Function& fn) {
  for (size_t k = 1; k < kMaxSpaces; ++k)
    if (fn.space_stack_bytes[k]) return 0;
  return std::max<size_t>(fn.stack_bytes, 1);
}

Program::Program(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Program::~Program() = default;
const std::vector<ValueSpec>& Program::parameters() const { return impl_->params; }
const std::vector<ValueSpec>& Program::results() const { return impl_->results; }
size_t Program::workspace_bytes() const { return impl_->entry->stack_bytes; }
size_t Program::workspace_bytes(size_t space) const {
  if (space == 0) return impl_->entry->stack_bytes;
  return space < kMaxSpaces ? impl_->entry->space_stack_bytes[space] : 0;
}
size_t Program::constant_bytes() const { return impl_->constant_bytes; }
size_t Program::num_kernels() const { return impl_->num_kernels; }
size_t Program::num_in_place() const { return impl_->num_in_place; }
const std::vector<Program::FusedRegion>& Program::fused_regions() const { return impl_->fused_regions; }
size_t Program::num_host_compute_moves() const { return impl_->num_host_compute_moves; }
size_t Program::num_manual_devices() const { return impl_->num_manual_devices; }
bool Program::overwrites_parameter(size_t i) const {
  return i < impl_->fallback_result.size() && impl_->fallback_result[i] >= 0;
}

namespace {

// A run's per-result list of at most `capacity` entries: on the stack up to 8 (the usual few results: a run
// allocates nothing for it), else on the heap.
template <typename T>
class RunList {
 public:
  explicit RunList(size_t capacity) {
    if (capacity > kInline) {
      heap_.resize(capacity);
      data_ = heap_.data();
    }
  }
  RunList(const RunList&) = delete;
  RunList& operator=(const RunList&) = delete;
  void push_back(const T& v) { data_[size_++] = v; }
  T& operator[](size_t i) { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kInline = 8;
  T inline_[kInline] = {};
  std::vector<T> heap_;
  T* data_ = inline_;
  size_t size_ = 0;
};

}  // namespace

Status Program::Run(const TensorView* args, size_t num_args, ResultAllocator* allocator,
                    std::vector<TensorView>* results, Workspace* workspace) const {
  RunOptions options;
  options.workspace = workspace;
  return Run(args, num_args, allocator, results, options);
}

Status Program::Run(const TensorView* args, size_t num_args, ResultAllocator* allocator,
                    std::vector<TensorView>* results, const RunOptions& options) const {
  const Function& fn = *impl_->entry;
  if (num_args != impl_->params.size())
    return InvalidArgument("@%s takes %zu arguments, %zu given", fn.name.c_str(), impl_->params.size(), num_args);
  for (size_t i = 0; i < num_args; ++i) {
    const ValueSpec& p = impl_->params[i];
    bool ok = args[i].type == p.type && args[i].rank == p.dims.size() && (args[i].data || p.bytes == 0);
    for (size_t d = 0; ok && d < p.dims.size(); ++d) ok = args[i].dims[d] == p.dims[d];
    if (!ok)
      return InvalidArgument("argument %zu of @%s does not match its parameter (%s with %zu dims expected)", i,
                             fn.name.c_str(), std::string(ElementTypeName(p.type)).c_str(), p.dims.size());
  }
  if (options.process) {
    const ProcessContext& pc = *options.process;
    if (!pc.grid || pc.replica_id >= pc.grid->num_replicas() || pc.partition_id >= pc.grid->num_partitions())
      return InvalidArgument("@%s: process (%u, %u) is not in the run's process grid", fn.name.c_str(), pc.replica_id,
                             pc.partition_id);
  }
  FrameMemory fm;
  NEURONMEM_RETURN_IF_ERROR(fm.Reserve(fn, options.workspace, options.spaces));
  RunState run;
  if (options.process) run.process = *options.process;
  run.interrupt = options.interrupt;
  run.parallel = options.parallel;
  run.space_memory = options.space_memory;
  Frame frame;
  SetupFrame(fn, fm.mem, fm.spaces, &frame);
  frame.state = &impl_->state;
  frame.context = options.context;
  frame.run = &run;
  frame.interrupt = options.interrupt;
  for (size_t i = 0; i < num_args; ++i) frame.slots[fn.body.arg_slots[i]] = static_cast<char*>(args[i].data);
  // The results' memory first: a parameter the program overwrites but this run does not donate is copied into
  // the memory of its donation's result, where the updates then happen (the argument stays as it was).
  results->clear();
  const size_t n = fn.body.result_slots.size();
  RunList<char*> dsts(n);
  for (size_t i = 0; i < n; ++i) {
    const ValueSpec& spec = impl_->results[i];
    dsts.push_back(static_cast<char*>(allocator->Allocate(i, spec.bytes)));
    if (!dsts[i] && spec.bytes) return ResourceExhausted("no memory for result %zu (%zu bytes)", i, spec.bytes);
  }
  for (uint32_t p : fn.overwritten_params) {
    if (options.donated && options.donated[p]) continue;
    char* dst = dsts[static_cast<size_t>(impl_->fallback_result[p])];
    if (dst != args[p].data) std::memcpy(dst, args[p].data, impl_->params[p].bytes);
    frame.slots[fn.body.arg_slots[p]] = dst;
  }
  // Results written where the allocator puts them, not computed in the workspace and copied: a result whose
  // memory is a planned slot of space 0 (its own, or the root of the in-place updates it ends) that no other
  // result shares, when that memory is aligned as planned slots are and apart from every argument (the
  // allocator may hand out a donated argument's memory, which the program may still read). No other value takes
  // the slot's memory while the result is live (to the end), so nothing else is moved.
  RunList<std::pair<uint32_t, size_t>> roots(n);  // (root slot, result), the candidates
  for (size_t i = 0; i < n; ++i) {
    const uint32_t s = fn.body.result_slots[i];
    const Slot& sl = fn.slots[s];
    const uint32_t root = sl.kind == Slot::Kind::kAlias ? sl.alias_of : s;
    const Slot& r = fn.slots[root];
    if (r.kind == Slot::Kind::kPlanned && !r.fused && r.space == 0 && r.bytes == sl.bytes && sl.bytes &&
        reinterpret_cast<uintptr_t>(dsts[i]) % kAlign == 0)
      roots.push_back({root, i});
  }
  std::sort(roots.begin(), roots.end());
  for (size_t k = 0; k < roots.size(); ++k) {
    const auto [root, i] = roots[k];
    if ((k > 0 && roots[k - 1].first == root) || (k + 1 < roots.size() && roots[k + 1].first == root)) continue;
    char* dst = dsts[i];
    const size_t bytes = impl_->results[i].bytes;
    bool apart = true;
    for (size_t p = 0; p < num_args && apart; ++p) {
      const char* a = static_cast<const char*>(args[p].data);
      apart = !(a && a < dst + bytes && dst < a + impl_->params[p].bytes);
    }
    if (apart) frame.slots[root] = dst;
  }
  ResolveAliases(fn, &frame);
  Status status = RunBody(fn.body, frame);
  // A run given no grid ends its own (data it sent itself and never received fails it).
  if (run.solo) status = run.solo->Finish(0, std::move(status));
  NEURONMEM_RETURN_IF_ERROR(std::move(status));
  // A result's memory may be an argument's (a donated one) that another result returns: copy every such
  // source aside before any result is written, so the order of the copies cannot matter. Only a result that
  // returns an entry parameter (or a value updated in place in one) can read memory a result is written to
  // (the others read the workspace or constants, which no allocator hands out), so only those (listed at
  // compile) are checked.
  std::vector<std::unique_ptr<char[]>> staged;
  std::vector<std::pair<uint32_t, const char*>> staged_src;
  for (uint32_t i : impl_->param_results) {
    const char* src = frame.slots[fn.body.result_slots[i]];
    const size_t bytes = impl_->results[i].bytes;
    for (size_t k = 0; k < n && src != dsts[i]; ++k) {
      if (k == i || !impl_->results[k].bytes) continue;
      if (src < dsts[k] + impl_->results[k].bytes && dsts[k] < src + bytes) {
        staged.emplace_back(new char[bytes]);
        std::memcpy(staged.back().get(), src, bytes);
        staged_src.emplace_back(i, staged.back().get());
        break;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const ValueSpec& spec = impl_->results[i];
    void* dst = dsts[i];
    const char* src = frame.slots[fn.body.result_slots[i]];
    for (const auto& [index, copy] : staged_src)
      if (index == i) src = copy;
    if (spec.bytes && dst != src) std::memcpy(dst, src, spec.bytes);
    TensorView v;
    v.data = dst;
    v.type = spec.type;
    v.dims = spec.dims.data();
    v.rank = spec.dims.size();
    results->push_back(v);
  }
  return Ok();
}

Workspace::~Workspace() { std::free(data_); }

char* Workspace::Reserve(size_t bytes) {
  if (bytes <= size_ && data_) return data_;
  std::free(data_);
  data_ = static_cast<char*>(std::aligned_alloc(kAlign, AlignUp(std::max<size_t>(bytes, kAlign))));
  size_ = data_ ? bytes : 0;
  return data_;
}

void* HostResultAllocator::Allocate(size_t, size_t bytes) {
  void* p = std::aligned_alloc(kAlign, AlignUp(std::max<size_t>(bytes, 1)));
  if (p) blocks_.emplace_back(p);
  return p;
}

void HostResultAllocator::Free::operator()(void* p) const { std::free(p); }

}  // namespace neuronmem::interp
