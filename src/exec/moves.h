// Intra-graph moves executed: the placement custom calls (annotate_device_placement, MoveToHost,
// MoveToDevice, AwsNeuronMemoryPlacement) copy their operand into their result, which the executable's
// plan put in the destination kind's memory (a memory space per kind), and count the bytes as explicit
// transfers of the running execution (RunContext, handed to the interpreter as the run's context).
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "base/memory_kind.h"
#include "copy/worker_pool.h"
#include "exec/stats.h"
#include "interpreter/interpreter.h"
#include "memory/memory.h"
#include "stablehlo/ir.h"

namespace neuronmem::exec {

// Whether `target` is one of the placement targets, and whether op is a custom call to one of them.
bool IsPlacementTarget(std::string_view target);
bool IsPlacementCall(const stablehlo::Operation& op);

// The interpreter's built-in targets with the placement targets replaced by executed moves.
const interp::CustomCallRegistry& PlacementRegistry();

// interp::CompileOptions::space_copy: control flow copying a moved value back out of its memory (a callee's,
// branch's or loop body's result that a move inside put in host memory, copied into the op's device result)
// is a transfer between the two kinds, counted as explicit (the graph's move caused it).
void CountedSpaceCopy(void* run_context, void* dst, const void* src, size_t bytes);
// One move (operand 0 into result 0, the run's RunContext as run_context): copies the bytes and counts them as
// an explicit transfer from the kind the operand lies in to the kind of the result's memory. A copy within
// one kind is no transfer: it is not counted. The placement targets and host compute's copies run it.
Status ExecuteMove(const interp::CustomCallContext& c);

// What a running execution's moves need: which memory kind each address lies in, and the statistics. Shared by
// every thread that runs part of the execution (an sdy.manual_computation's devices run at once): `ranges` is set
// before the program runs and only read while it runs; the frames of the devices' bodies come and go under `mu`;
// the statistics' counts are atomic.
struct RunContext {
  struct Range {
    const char* begin;
    const char* end;
    MemoryKind kind;
  };
  std::vector<Range> ranges;  // the workspaces of each space, the arguments
  ExecutionStats* stats = nullptr;
  uint32_t core = 0;
  copy::WorkerPool* pool = nullptr;  // the executor's oneTBB arena: where a kernel's grid points run
  // Per kind: the core's memory that the frames of a manual computation's devices take for the spaces other than
  // 0 (AllocateSpaceFrames), so that what their bodies move lies in the kind's memory and counts as a transfer.
  memory::Memory* memories[kNumMemoryKinds] = {};

  void Add(const void* p, uint64_t bytes, MemoryKind kind) {
    if (bytes) ranges.push_back({static_cast<const char*>(p), static_cast<const char*>(p) + bytes, kind});
  }
  // The kind of the memory at p: device for what no range holds (the program's constants).
  MemoryKind KindOf(const void* p) const {
    const char* c = static_cast<const char*>(p);
    for (const Range& r : ranges)
      if (c >= r.begin && c < r.end) return r.kind;
    std::lock_guard<std::mutex> lock(mu);
    for (const Range& r : frames)
      if (c >= r.begin && c < r.end) return r.kind;
    return MemoryKind::kDevice;
  }

  mutable std::mutex mu;
  std::vector<Range> frames;  // the devices' frames that AllocateSpaceFrames handed out and that are still held
};

// interp::Program::RunOptions::SpaceMemory over a RunContext (its `context`): frames of space k come from
// memories[k] (space k is the memory kind k: the executable's plan) and are known to KindOf while held.
void* AllocateSpaceFrames(void* run_context, size_t space, size_t bytes);
void ReleaseSpaceFrames(void* run_context, size_t space, void* p, size_t bytes);

}  // namespace neuronmem::exec
