#include "exec/moves.h"

#include <chrono>
#include <cstring>
#include <string_view>

namespace neuronmem::exec {

namespace {

constexpr const char* kPlacementTargets[] = {"annotate_device_placement", "MoveToHost", "MoveToDevice",
                                             "AwsNeuronMemoryPlacement"};

uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace

Status ExecuteMove(const interp::CustomCallContext& c) {
  if (c.num_operands != 1 || c.num_results != 1 || c.operands[0].type != c.results[0].type ||
      c.operands[0].Bytes() != c.results[0].Bytes())
    return InvalidArgument("@%.*s takes one operand and returns it in another memory",
                           static_cast<int>(c.target.size()), c.target.data());
  const uint64_t bytes = c.results[0].Bytes();
  auto* run = static_cast<RunContext*>(c.run_context);
  const uint64_t t0 = run ? NowNs() : 0;
  if (bytes && c.results[0].data != c.operands[0].data) std::memmove(c.results[0].data, c.operands[0].data, bytes);
  if (run) {
    const MemoryKind from = run->KindOf(c.operands[0].data), to = run->KindOf(c.results[0].data);
    if (from != to) {
      run->stats->AddExplicit(from, to, bytes);
      run->stats->AddExplicitTime(NowNs() - t0);
    }
  }
  return Ok();
}

void* AllocateSpaceFrames(void* run_context, size_t space, size_t bytes) {
  auto* run = static_cast<RunContext*>(run_context);
  memory::Memory* mem = space < kNumMemoryKinds ? run->memories[space] : nullptr;
  void* p = nullptr;
  if (!mem || mem->Allocate(bytes, 64, &p)) return nullptr;  // the device fails RESOURCE_EXHAUSTED
  std::lock_guard<std::mutex> lock(run->mu);
  run->frames.push_back(
      {static_cast<const char*>(p), static_cast<const char*>(p) + bytes, static_cast<MemoryKind>(space)});
  return p;
}

void ReleaseSpaceFrames(void* run_context, size_t space, void* p, size_t bytes) {
  auto* run = static_cast<RunContext*>(run_context);
  {
    std::lock_guard<std::mutex> lock(run->mu);
    for (size_t i = 0; i < run->frames.size(); ++i) {
      if (run->frames[i].begin != p) continue;
      run->frames[i] = run->frames.back();
      run->frames.pop_back();
      break;
    }
  }
  // Memory this run allocated: a memory cannot refuse it back, the status carries nothing to act on.
  run->memories[space]->Free(p, bytes).IgnoreError();
}

bool IsPlacementTarget(std::string_view target) {
  for (const char* t : kPlacementTargets)
    if (target == t) return true;
  return false;
}

void CountedSpaceCopy(void* run_context, void* dst, const void* src, size_t bytes) {
  auto* run = static_cast<RunContext*>(run_context);
  const uint64_t t0 = run ? NowNs() : 0;
  std::memmove(dst, src, bytes);
  if (!run) return;
  const MemoryKind from = run->KindOf(src), to = run->KindOf(dst);
  if (from != to) run->stats->AddExplicit(from, to, bytes);
  run->stats->AddExplicitTime(NowNs() - t0);
}

bool IsPlacementCall(const stablehlo::Operation& op) {
  if (op.name != "stablehlo.custom_call") return false;
  std::string_view target = op.callee;
  if (target.empty()) {
    const stablehlo::Attribute* a = stablehlo::Find(op.attributes, "call_target_name");
    if (a) target = a->str;
  }
  return IsPlacementTarget(target);
}

const interp::CustomCallRegistry& PlacementRegistry() {
  static const interp::CustomCallRegistry* r = [] {
    auto* reg = new interp::CustomCallRegistry(interp::CustomCallRegistry::BuiltIn());
    for (const char* t : kPlacementTargets) reg->Register(t, ExecuteMove);
    return reg;
  }();
  return *r;
}

}  // namespace neuronmem::exec
