// A compiled program: functions (slots, kernels, bodies) and the program-wide state.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "interpreter/kernel.h"

namespace neuronmem::interp {

// The alignment of planned slots, workspaces and results.
constexpr size_t kAlign = 64;
inline size_t AlignUp(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

struct Function {
  std::string name;
  SlotTable slots;  // references stay valid while ops add slots
  Body body;
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::vector<std::unique_ptr<Body>> bodies;  // regions
  std::vector<const Function*> callees;
  std::vector<stablehlo::Type> param_types;   // flattened
  std::vector<stablehlo::Type> result_types;  // flattened
  size_t slot_array_bytes = 0;
  size_t frame_bytes = 0;  // slot pointers + planned intermediates
  size_t stack_bytes = 0;  // frame + the deepest callee stack
  // Spaces 1..: this frame's planned bytes, and with the deepest callee stack in that space.
  size_t space_frame_bytes[kMaxSpaces] = {};
  size_t space_stack_bytes[kMaxSpaces] = {};
  bool compiling = false;
  size_t fused_kernels = 0;  // kernels of fused regions (in `kernels` beside the ops they replace)
  // Slots of kind kAlias, in slot order (each points at its root, which is never itself an alias), and the
  // entry parameters whose memory an in-place op overwrites (the entry function only).
  std::vector<uint32_t> alias_slots;
  std::vector<uint32_t> overwritten_params;

  void AddCallee(const Function* f);
};

struct Program::Impl {
  // By name (a host-compute copy: name, '\0', "host"). Hashed: a map's string compares made n calls to n
  // functions cost n log n.
  std::unordered_map<std::string, std::unique_ptr<Function>> functions;
  const Function* entry = nullptr;
  ProgramState state;
  std::vector<ValueSpec> params, results;
  std::vector<uint32_t> param_results;  // results in a parameter's memory (non-empty ones): Run checks them
  std::vector<std::unique_ptr<uint64_t[]>> constants;
  size_t constant_bytes = 0;
  size_t num_kernels = 0;
  size_t num_in_place = 0;
  // Per entry parameter: the result whose memory takes the parameter's value when the program overwrites it
  // and a run does not donate it (-1: the program never overwrites it).
  std::vector<int32_t> fallback_result;
  size_t num_host_compute_moves = 0;
  size_t num_manual_devices = 0;  // Program::num_manual_devices
  std::vector<Program::FusedRegion> fused_regions;
};

// Sets up the frame of `fn` in `mem` (frame_bytes of it; callees use the rest) and, for spaces 1.., at
// spaces[k] (space_frame_bytes[k] of it).
void SetupFrame(const Function& fn, char* mem, char* const* spaces, Frame* frame);
// Points every alias slot of `fn` at its root's memory (once the frame's parameters are set).
inline void ResolveAliases(const Function& fn, Frame* frame) {
  for (uint32_t a : fn.alias_slots) frame->slots[a] = frame->slots[fn.slots[a].alias_of];
}
// Calls `fn` from `caller`: arguments and results are slots of the caller's frame; crosses[i] (nullable): result
// i is copied out of the space a move put it in (CrossesSpaces).
Status CallFunction(const Function& fn, Frame& caller, const uint32_t* arg_slots, const uint32_t* result_slots,
                    const bool* crosses = nullptr);

// A kernel calling `fn` (control.cc): args and results are slots of the caller's frame; crosses as for
// CallFunction (one per result).
std::unique_ptr<Kernel> MakeCallKernel(const Function* fn, std::vector<uint32_t> args, std::vector<uint32_t> results,
                                       std::vector<bool> crosses);

// The memory of a run's frames: space 0 from `workspace` (a local one when null) or given[0], the other
// spaces given or from host memory.
struct FrameMemory {
  char* mem = nullptr;
  char* spaces[kMaxSpaces] = {};
  Workspace local;
  std::unique_ptr<Workspace[]> space_ws;
  Status Reserve(const Function& fn, Workspace* workspace, char* const* given);
};

// The frames of spaces 1.. of one RunStandalone call from RunOptions::space_memory, given back when it ends.
class SpaceFrames {
 public:
  explicit SpaceFrames(const Program::RunOptions::SpaceMemory* memory) : memory_(memory) {}
  SpaceFrames(const SpaceFrames&) = delete;
  SpaceFrames& operator=(const SpaceFrames&) = delete;
  ~SpaceFrames();
  // Allocates fn's frames of spaces 1.. into spaces[1..]; RESOURCE_EXHAUSTED naming fn when one is refused.
  Status Allocate(const Function& fn, char** spaces);

 private:
  const Program::RunOptions::SpaceMemory* memory_;
  char* got_[kMaxSpaces] = {};
  size_t bytes_[kMaxSpaces] = {};
};

// Runs `fn` in frames of its own: args[i] / results[i] point to its parameters' and results' bytes. The frames see
// `state`, `run` and `context` as a Program run's do. Their memory: `frame_memory` (StandaloneFrameBytes(fn) bytes,
// 64-byte aligned) when given, else host memory reserved for the call.
Status RunStandalone(const Function& fn, const ProgramState* state, RunState* run, void* context, char* const* args,
                     char* const* results, char* frame_memory = nullptr);
// The bytes of frame memory RunStandalone takes for `fn` (at least 1), or 0 when its frames also need memory of
// other spaces (host compute inside it): it must then reserve its own.
size_t StandaloneFrameBytes(const Function& fn);

}  // namespace neuronmem::interp
