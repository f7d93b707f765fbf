// What the ops that see the process grid (process.h) share: their site and channel, process groups, pairs,
// the views they hand the grid and the copies out of other processes' memory, the operands of reducing
// collectives, and the kernel bases whose Run starts the same way (the running process joins its group).
//
// The ops themselves: collective_reduce.cc (all_reduce, reduce_scatter, collective_reduce),
// collective_move.cc (all_gather, all_to_all, collective_permute, collective_broadcast), process_ops.cc
// (replica_id, partition_id, send, recv, infeed, outfeed).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "interpreter/kernel.h"
#include "interpreter/process.h"
#include "interpreter/region.h"

namespace neuronmem::interp::collective {

// ---- Sites and channels -----------------------------------------------------------------------------------

// What every op of the grid knows at run time: where it is (for errors) and its channel.
struct Site {
  std::string location;
  std::string_view op;
  int64_t channel = 0;
  OpSite Get() const { return OpSite{op, location, channel}; }
};

Site MakeSite(CompileCtx& cx, int64_t channel);

// FAILED_PRECONDITION "file:line:col: 'op': message".
Status RunFailure(const Site& site, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// `channel_handle = #stablehlo.channel_handle<handle = H, type = T>` (absent: 0, 0).
Status ReadChannel(CompileCtx& cx, int64_t* handle, int64_t* type);

// ---- Process groups ---------------------------------------------------------------------------------------

enum class GroupMode { kCrossReplica, kCrossPartition, kCrossReplicaAndPartition, kFlattenedIds };

// The groups of a collective: the rows of replica_groups in one of the spec's modes. No group at all (or
// only empty ones) means one group of every id, as in XLA.
struct Groups {
  GroupMode mode = GroupMode::kCrossReplica;
  std::vector<std::vector<int64_t>> rows;
  bool all = false;
};

// How a collective's channel picks its group mode.
enum class ModeRule {
  kGlobalIds,           // channel_id and use_global_device_ids (all_gather, all_reduce, reduce_scatter,
                        // collective_reduce)
  kReplicaOrPartition,  // cross_replica without a channel, else cross_partition (all_to_all,
                        // collective_broadcast)
};

// The channel and the groups of a collective.
Status ReadChannelGroups(CompileCtx& cx, ModeRule rule, int64_t* channel, Groups* groups);

// The process group (process indices, in the spec's order) that process `self` is in; empty if none.
// Fails when an id is out of the grid's range.
Status GroupOf(const Groups& g, const ProcessGrid& grid, uint32_t self, const Site& site, std::vector<uint32_t>* out);

// ---- Views and copies -------------------------------------------------------------------------------------

// A slot's shape, kept by a kernel for the views it hands the grid.
struct Shape {
  ElementType type = ElementType::kInvalid;
  std::vector<int64_t> dims;
  size_t bytes = 0;
  size_t esize = 0;
  int64_t count = 0;
  explicit Shape(const Slot& s)
      : type(s.type), dims(s.dims), bytes(s.bytes), esize(ElementByteSize(s.type)), count(s.count) {}
  TensorView View(char* p) const {
    TensorView v;
    v.data = p;
    v.type = type;
    v.dims = dims.data();
    v.rank = dims.size();
    return v;
  }
};

// The views of `slots` in frame f.
std::vector<TensorView> Views(Frame& f, const std::vector<uint32_t>& slots, const std::vector<Shape>& shapes);

// Operand / result slots of the tensor values of an op whose last operand or result is a token.
Status DataSlots(CompileCtx& cx, bool operands, std::vector<uint32_t>* slots, std::vector<Shape>* shapes);

// Whole-tensor copy from process `from` (a member's view) into this process's memory.
Status CopyWhole(ProcessGrid& grid, uint32_t from, uint32_t to, const TensorView& src, char* dst);

// Copies the box `part` at `src_at` of a row-major tensor `src_dims` (process `from`) to `dst_at` of a
// tensor `dst_dims` (process `to`): one Transfer per run of the outer dimensions, each a strided block.
Status CopyBox(ProcessGrid& grid, uint32_t from, uint32_t to, const char* src, const std::vector<int64_t>& src_dims,
               const std::vector<int64_t>& src_at, char* dst, const std::vector<int64_t>& dst_dims,
               const std::vector<int64_t>& dst_at, const std::vector<int64_t>& part, size_t esize);

// A constant holding the zero of a result (quantized types: their zero points), for processes that the
// spec gives zeros.
uint32_t ZeroOf(CompileCtx& cx, const Slot& s);
// The zeros of results 0 .. n-1, in order.
inline std::vector<uint32_t> ZerosOf(CompileCtx& cx, size_t n) {
  std::vector<uint32_t> zeros;
  for (size_t i = 0; i < n; ++i) zeros.push_back(ZeroOf(cx, cx.out_slot(i)));
  return zeros;
}

// `have` must be `base` times the group size `g` (a product that overflows fails: empty tensors may have huge dims).
Status CheckExtent(const Site& site, const char* what, int64_t have, int64_t base, int64_t g);

// ---- Pairs (collective_permute, send / recv) -------------------------------------------------------------

// The (source, target) pairs of source_target_pairs; with `frontend`, XLA's send/recv spelling when that
// attribute is absent. `*present`: whether the op names pairs at all.
Status ReadPairs(CompileCtx& cx, std::vector<std::pair<int64_t, int64_t>>* pairs, bool* present, bool frontend = false);

// The line of processes that a list of pairs numbers: replicas of this partition (`replicas`) or partitions
// of this replica. Fails when an id is beyond the line.
struct Line {
  bool replicas = true;
  uint32_t Process(const ProcessGrid& grid, uint32_t self, int64_t id) const {
    const uint32_t P = grid.num_partitions();
    return replicas ? static_cast<uint32_t>(id) * P + self % P : (self / P) * P + static_cast<uint32_t>(id);
  }
  int64_t Id(const ProcessGrid& grid, uint32_t self) const {
    return replicas ? self / grid.num_partitions() : self % grid.num_partitions();
  }
  int64_t Size(const ProcessGrid& grid) const { return replicas ? grid.num_replicas() : grid.num_partitions(); }
};

Status CheckPairs(const Site& site, const ProcessGrid& grid, const Line& line,
                  const std::vector<std::pair<int64_t, int64_t>>& pairs);

// ---- Roots (collective_broadcast, collective_reduce) ------------------------------------------------------

// The root of operand k: group index 0, or with has_dynamic_root the k-th (or only) value of the root
// operand, an index into the group.
struct Root {
  bool dynamic = false;
  uint32_t slot = 0;
  ElementType type = ElementType::kInvalid;
  int64_t count = 0;

  Status Read(Frame& f, const Site& site, size_t k, size_t group_size, size_t* out) const;
  // The roots of operands 0 .. n-1 (Read).
  Status ReadAll(Frame& f, const Site& site, size_t n, size_t group_size, std::vector<size_t>* out) const {
    out->assign(n, 0);
    for (size_t k = 0; k < n; ++k) NEURONMEM_RETURN_IF_ERROR(Read(f, site, k, group_size, &(*out)[k]));
    return Status();
  }
};

// has_dynamic_root: the last operand holds the roots (1-D integers, one per value or one for all).
// `*values`: the number of operands before it.
Status ReadRoot(CompileCtx& cx, size_t* values, Root* root);

// ---- Reduced operands (all_reduce, reduce_scatter, collective_reduce) ---------------------------------------

// The operands of a reducing collective: operand k (converted first when its result type is a promotion
// of it), its result, a scratch buffer for a peer's values, and the computation on result-typed scalars.
struct ReducedOperand {
  uint32_t in = 0, out = 0, scratch = 0;
  std::unique_ptr<Kernel> promote;  // operand -> result type
  ScalarRegion body;
  uint32_t stage = 0;
  // The body compiled for `width` elements at once (CompileRegionBatched), when it is element-wise only:
  // Accumulate runs it on whole runs of `width` elements instead of calling it per element.
  const Body* batched = nullptr;
  int64_t width = 0;
};

// The first n operands and results; `shapes` gets the shape of each (promoted) operand. With `same_shape`,
// each result must have its operand's shape.
Status ReadReducedOperands(CompileCtx& cx, size_t n, std::vector<ReducedOperand>* ops, std::vector<Shape>* shapes,
                           bool same_shape);

// dst[i] = body(dst[i], src[i]) for every element: runs of r.width elements through the batched body (each
// element computed as the 0-d body computes it), the rest one call each.
Status Accumulate(Frame& f, const ReducedOperand& r, const Shape& s, char* dst, const char* src);

// ---- Kernel bases ------------------------------------------------------------------------------------------

// The running process as a member of its collective's group.
struct Member {
  ProcessGrid* grid = nullptr;
  uint32_t self = 0;            // its process index
  std::vector<uint32_t> group;  // process indices, in the group's order
  size_t index = 0;             // self's place in `group`
};

// What a collective over process groups reads first at compile: its channel and groups (ReadChannelGroups),
// and the site they make.
struct GroupHead {
  Site site;
  Groups groups;
};
inline Status ReadGroupHead(CompileCtx& cx, ModeRule rule, GroupHead* out) {
  int64_t channel = 0;
  NEURONMEM_RETURN_IF_ERROR(ReadChannelGroups(cx, rule, &channel, &out->groups));
  out->site = MakeSite(cx, channel);
  return Ok();
}

// A collective over process groups: its site and groups.
class GroupKernel : public Kernel {
 public:
  explicit GroupKernel(GroupHead head) : site_(std::move(head.site)), groups_(std::move(head.groups)) {}

 protected:
  // The running process and its group; `*in_group` false (and no failure) when it is in none. Without
  // `in_group`, being in no group fails naming the process.
  Status Join(Frame& f, Member* m, bool* in_group = nullptr) const;
  // The group's rendezvous: every member contributes `mine`; `read` runs with all members' views.
  Status Meet(const Member& m, const std::vector<TensorView>& mine, const ProcessGrid::ExchangeRead& read) const;

  Site site_;
  Groups groups_;
};

// A reducing collective: its operands (promoted to their result types first) and their shapes.
class ReducingKernel : public GroupKernel {
 public:
  ReducingKernel(GroupHead head, std::vector<ReducedOperand> ops, std::vector<Shape> shapes)
      : GroupKernel(std::move(head)), ops_(std::move(ops)), shapes_(std::move(shapes)) {}

 protected:
  // Runs the operands' conversions to their result types, joins the group (failing when in none) and gives
  // the views of the (promoted) operands.
  Status Begin(Frame& f, Member* m, std::vector<TensorView>* mine) const;
  // reduce_without_init over the members' operand k in group order, ((x0 op x1) op x2) ..., into operand k's
  // result (the same on every member).
  Status ReduceMembers(Frame& f, const Member& m, const TensorView* const* members, size_t k) const;
  // One step of that fold: operand k's result becomes `value` (of member `from`; `first`) or is folded with it.
  Status FoldMember(Frame& f, const Member& m, uint32_t from, const TensorView& value, size_t k, bool first) const;

  std::vector<ReducedOperand> ops_;
  std::vector<Shape> shapes_;  // of the promoted operands
};

// ---- Registration -----------------------------------------------------------------------------------------

void RegisterReducingCollectives(OpTable* r);  // collective_reduce.cc
void RegisterMovingCollectives(OpTable* r);    // collective_move.cc
void RegisterProcessOps(OpTable* r);           // process_ops.cc

}  // namespace neuronmem::interp::collective
