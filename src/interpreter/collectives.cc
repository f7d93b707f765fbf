// The ops that see the process grid (process.h): replica_id, partition_id and the collectives. Each
// collective computes its process group at run time from the grid's shape (the spec's cross_replica,
// cross_partition, cross_replica_and_partition and flattened_ids), meets the group's other members in a
// ProcessGrid exchange, and moves their bytes into its own results through the grid's transport.
#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "interpreter/elementwise.h"
#include "interpreter/kernel.h"
#include "interpreter/region.h"
#include "interpreter/run_state.h"

namespace neuronmem::interp {
namespace {

// ---- Process groups -------------------------------------------------------------------------------------

enum class GroupMode { kCrossReplica, kCrossPartition, kCrossReplicaAndPartition, kFlattenedIds };

const char* ModeName(GroupMode m) {
  switch (m) {
    case GroupMode::kCrossReplica: return "cross_replica";
    case GroupMode::kCrossPartition: return "cross_partition";
    case GroupMode::kCrossReplicaAndPartition: return "cross_replica_and_partition";
    case GroupMode::kFlattenedIds: return "flattened_ids";
  }
  return "";
}

// What every op of this file knows at run time: where it is (for errors) and its channel.
struct Site {
  std::string location;
  std::string_view op;
  int64_t channel = 0;
  OpSite Get() const { return OpSite{op, location, channel}; }
};

Site MakeSite(CompileCtx& cx, int64_t channel) {
  Site s;
  s.location = FormatLocation(cx.state()->filename, cx.op());
  s.op = cx.op().name;
  s.channel = channel;
  return s;
}

Status RunFailure(const Site& site, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
Status RunFailure(const Site& site, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return FailedPrecondition("%s: '%.*s': %s", site.location.c_str(), static_cast<int>(site.op.size()), site.op.data(),
                            buf);
}

// `channel_handle = #stablehlo.channel_handle<handle = H, type = T>` (absent: 0, 0).
Status ReadChannel(CompileCtx& cx, int64_t* handle, int64_t* type) {
  *handle = 0;
  *type = 0;
  const stablehlo::Attribute* a = cx.Attr("channel_handle");
  if (!a) return Ok();
  const stablehlo::Attribute* h = a->Get("handle");
  const stablehlo::Attribute* t = a->Get("type");
  if (!h || h->kind != stablehlo::Attribute::Kind::kInt) return cx.Invalid("channel_handle needs an integer `handle`");
  *handle = h->i;
  if (t) {
    if (t->kind != stablehlo::Attribute::Kind::kInt || t->i < 0 || t->i > 3)
      return cx.Invalid(
          "channel_handle's type must be 0 (invalid), 1 (device to device), 2 (device to host) or 3 "
          "(host to device)");
    *type = t->i;
  }
  return Ok();
}

// A 2-D si64 tensor attribute of groups (replica_groups, source_target_pairs): its rows, -1 entries (padding
// of ragged groups) dropped when `padding` is allowed.
Status ReadRows(CompileCtx& cx, std::string_view name, bool padding, std::vector<std::vector<int64_t>>* rows,
                bool* present = nullptr) {
  rows->clear();
  const stablehlo::Attribute* a = cx.Attr(name);
  if (present) *present = a != nullptr;
  if (!a) return present ? Ok() : cx.Invalid("missing %.*s", static_cast<int>(name.size()), name.data());
  std::vector<int64_t> flat;
  if (a->kind != stablehlo::Attribute::Kind::kDense || !CompileCtx::IntListOf(*a, &flat) || a->type.dims.size() != 2)
    return cx.Unsupported("%.*s must be a 2-dimensional integer tensor constant", static_cast<int>(name.size()),
                          name.data());
  const int64_t n = a->type.dims[0], m = a->type.dims[1];
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> row;
    for (int64_t j = 0; j < m; ++j) {
      const int64_t v = flat[static_cast<size_t>(i * m + j)];
      if (v == -1 && padding) continue;
      if (v < 0) return cx.Invalid("%.*s holds %" PRId64 "", static_cast<int>(name.size()), name.data(), v);
      row.push_back(v);
    }
    rows->push_back(std::move(row));
  }
  return Ok();
}

// The groups of a collective: the rows of replica_groups in one of the spec's modes. No group at all (or
// only empty ones) means one group of every id, as in XLA.
struct Groups {
  GroupMode mode = GroupMode::kCrossReplica;
  std::vector<std::vector<int64_t>> rows;
  bool all = false;
};

Status ReadGroups(CompileCtx& cx, GroupMode mode, Groups* g) {
  g->mode = mode;
  NEURONMEM_RETURN_IF_ERROR(ReadRows(cx, "replica_groups", true, &g->rows));
  std::vector<int64_t> seen;
  for (const auto& r : g->rows) seen.insert(seen.end(), r.begin(), r.end());
  g->all = seen.empty();
  std::sort(seen.begin(), seen.end());
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end())
    return cx.Invalid("replica_groups names a process twice");
  return Ok();
}

// The mode of the ops whose groups follow channel_id and use_global_device_ids (all_gather, all_reduce,
// reduce_scatter, collective_reduce).
Status GlobalIdsMode(CompileCtx& cx, int64_t channel, GroupMode* mode) {
  bool global = false;
  cx.Bool("use_global_device_ids", &global);
  if (global && channel <= 0) return cx.Invalid("use_global_device_ids needs a channel_handle with a handle > 0");
  *mode = channel <= 0 ? GroupMode::kCrossReplica
                       : (global ? GroupMode::kFlattenedIds : GroupMode::kCrossReplicaAndPartition);
  return Ok();
}

// The process group (process indices, in the spec's order) that process `self` is in; empty if none.
// Fails when an id is out of the grid's range.
Status GroupOf(const Groups& g, const ProcessGrid& grid, uint32_t self, const Site& site, std::vector<uint32_t>* out) {
  out->clear();
  const int64_t R = grid.num_replicas(), P = grid.num_partitions();
  const int64_t r0 = self / P, p0 = self % P;
  int64_t limit = R;
  const char* what = "replica";
  if (g.mode == GroupMode::kCrossPartition) {
    limit = P;
    what = "partition";
  } else if (g.mode == GroupMode::kFlattenedIds) {
    limit = R * P;
    what = "process";
  }
  std::vector<int64_t> all;
  const std::vector<int64_t>* row = nullptr;
  if (g.all) {
    for (int64_t i = 0; i < limit; ++i) all.push_back(i);
    row = &all;
  }
  const int64_t key = g.mode == GroupMode::kCrossPartition ? p0 : (g.mode == GroupMode::kFlattenedIds ? self : r0);
  for (const auto& r : g.rows) {
    for (int64_t id : r)
      if (id >= limit)
        return RunFailure(
            site, "replica_groups (%s) names %s %" PRId64 " of a grid of %" PRId64 " replicas x %" PRId64 " partitions",
            ModeName(g.mode), what, id, R, P);
    if (!row && std::find(r.begin(), r.end(), key) != r.end()) row = &r;
  }
  if (!row) return Ok();
  switch (g.mode) {
    case GroupMode::kCrossReplica:
      for (int64_t r : *row) out->push_back(static_cast<uint32_t>(r * P + p0));
      break;
    case GroupMode::kCrossPartition:
      for (int64_t p : *row) out->push_back(static_cast<uint32_t>(r0 * P + p));
      break;
    case GroupMode::kCrossReplicaAndPartition:
      for (int64_t p = 0; p < P; ++p)
        for (int64_t r : *row) out->push_back(static_cast<uint32_t>(r * P + p));
      break;
    case GroupMode::kFlattenedIds:
      for (int64_t id : *row) out->push_back(static_cast<uint32_t>(id));
      break;
  }
  return Ok();
}

Status NotInGroup(const Site& site, const ProcessGrid& grid, uint32_t self, GroupMode mode) {
  return RunFailure(site, "process %s is in no group of replica_groups (%s)", grid.Name(self).c_str(), ModeName(mode));
}

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

// Whole-tensor copy from process `from` (a member's view) into this process's memory.
Status CopyWhole(ProcessGrid& grid, uint32_t from, uint32_t to, const TensorView& src, char* dst) {
  Transfer t;
  t.from = from;
  t.to = to;
  t.src = static_cast<const char*>(src.data);
  t.dst = dst;
  t.row_bytes = src.Bytes();
  return t.row_bytes ? grid.CopyFrom(t) : Status();
}

// ---- replica_id / partition_id ------------------------------------------------------------------------

template <bool kReplica>
class IdKernel final : public Kernel {
 public:
  explicit IdKernel(uint32_t out) : out_(out) {}
  Status Run(Frame& f) const override {
    const ProcessContext& p = f.run->process;
    const uint32_t id = kReplica ? p.replica_id : p.partition_id;
    std::memcpy(f.slots[out_], &id, sizeof id);
    return Status();
  }

 private:
  uint32_t out_;
};

template <bool kReplica>
Status CompileId(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 0 || cx.num_outputs() != 1) return cx.Invalid("takes no operands and has one result");
  const Slot& o = cx.out_slot(0);
  if (!o.dims.empty() || o.type != ElementType::kU32 || o.quant) return cx.Invalid("the result must be a tensor<ui32>");
  *k = std::make_unique<IdKernel<kReplica>>(cx.out(0));
  return Ok();
}

// ---- Reductions over a group: all_reduce ----------------------------------------------------------------

// The operands of a reducing collective: operand k (converted first when its result type is a promotion
// of it), its result, a scratch buffer for a peer's values, and the computation on result-typed scalars.
struct ReducedOperand {
  uint32_t in = 0, out = 0, scratch = 0;
  std::unique_ptr<Kernel> promote;  // operand -> result type
  ScalarRegion body;
  uint32_t stage = 0;
};

Status ReadReducedOperands(CompileCtx& cx, size_t n, std::vector<ReducedOperand>* ops, std::vector<Shape>* shapes,
                           bool same_shape) {
  if (n == 0 || cx.num_outputs() != n) return cx.Invalid("expected as many results as operands (at least one)");
  ops->resize(n);
  for (size_t k = 0; k < n; ++k) {
    ReducedOperand& r = (*ops)[k];
    const Slot& in = cx.in_slot(k);
    const Slot& out = cx.out_slot(k);
    if (same_shape && in.dims != out.dims) return cx.Invalid("result %zu differs in shape from operand %zu", k, k);
    r.in = cx.in(k);
    r.out = cx.out(k);
    const ScalarType in_t = ScalarType::Of(in), out_t = ScalarType::Of(out);
    if (in_t != out_t) {
      if (!IsPromotable(in_t, out_t))
        return cx.Invalid("result %zu has type %s, not a promotion of operand %zu's %s", k,
                          ScalarTypeName(out_t).c_str(), k, ScalarTypeName(in_t).c_str());
      r.in = cx.AddScratch(out.type, in.dims);
      NEURONMEM_RETURN_IF_ERROR(MakeConvert(cx, cx.in(k), r.in, &r.promote));
    }
    r.scratch = cx.AddScratch(out.type, in.dims);
    NEURONMEM_RETURN_IF_ERROR(r.body.Compile(cx, 0, {out_t, out_t}, {out_t}));
    r.stage = ScalarRegion::AddStage(cx, 1);
    shapes->emplace_back(cx.slot(r.in));
  }
  return Ok();
}

// dst[i] = body(dst[i], src[i]) for every element.
Status Accumulate(Frame& f, const ReducedOperand& r, const Shape& s, char* dst, const char* src) {
  for (int64_t i = 0; i < s.count; ++i) {
    char* d = dst + i * s.esize;
    const char* args[2] = {d, src + i * s.esize};
    NEURONMEM_RETURN_IF_ERROR(r.body.Call(f, args));
    r.body.StoreResults(f, &d, &s.esize, r.stage);
  }
  return Status();
}

class AllReduceKernel final : public Kernel {
 public:
  AllReduceKernel(Site site, Groups groups, std::vector<ReducedOperand> ops, std::vector<Shape> shapes)
      : site_(std::move(site)), groups_(std::move(groups)), ops_(std::move(ops)), shapes_(std::move(shapes)) {}

  Status Run(Frame& f) const override {
    for (const auto& r : ops_)
      if (r.promote) NEURONMEM_RETURN_IF_ERROR(r.promote->Run(f));
    ProcessGrid& grid = f.run->grid();
    const uint32_t self = f.run->self();
    std::vector<uint32_t> group;
    NEURONMEM_RETURN_IF_ERROR(GroupOf(groups_, grid, self, site_, &group));
    if (group.empty()) return NotInGroup(site_, grid, self, groups_.mode);
    std::vector<TensorView> mine;
    for (size_t k = 0; k < ops_.size(); ++k) mine.push_back(shapes_[k].View(f.slots[ops_[k].in]));
    // reduce_without_init in group order: ((x0 + x1) + x2) + ..., the same on every member.
    return grid.Exchange(self, site_.Get(), group, mine.data(), mine.size(), [&](const TensorView* const* members) {
      for (size_t k = 0; k < ops_.size(); ++k) {
        const ReducedOperand& r = ops_[k];
        char* out = f.slots[r.out];
        NEURONMEM_RETURN_IF_ERROR(CopyWhole(grid, group[0], self, members[0][k], out));
        for (size_t m = 1; m < group.size(); ++m) {
          char* peer = f.slots[r.scratch];
          NEURONMEM_RETURN_IF_ERROR(CopyWhole(grid, group[m], self, members[m][k], peer));
          NEURONMEM_RETURN_IF_ERROR(Accumulate(f, r, shapes_[k], out, peer));
        }
      }
      return Status();
    });
  }

 private:
  Site site_;
  Groups groups_;
  std::vector<ReducedOperand> ops_;
  std::vector<Shape> shapes_;
};

Status CompileAllReduce(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  int64_t channel, type;
  NEURONMEM_RETURN_IF_ERROR(ReadChannel(cx, &channel, &type));
  Groups groups;
  GroupMode mode = GroupMode::kCrossReplica;
  NEURONMEM_RETURN_IF_ERROR(GlobalIdsMode(cx, channel, &mode));
  NEURONMEM_RETURN_IF_ERROR(ReadGroups(cx, mode, &groups));
  std::vector<ReducedOperand> ops;
  std::vector<Shape> shapes;
  NEURONMEM_RETURN_IF_ERROR(ReadReducedOperands(cx, cx.num_inputs(), &ops, &shapes, true));
  *k = std::make_unique<AllReduceKernel>(MakeSite(cx, channel), std::move(groups), std::move(ops), std::move(shapes));
  return Ok();
}

}  // namespace

void RegisterCollectiveOps(std::unordered_map<std::string_view, OpCompileFn>* r) {
  auto& m = *r;
  m["stablehlo.replica_id"] = CompileId<true>;
  m["stablehlo.partition_id"] = CompileId<false>;
  m["stablehlo.all_reduce"] = CompileAllReduce;
}

}  // namespace neuronmem::interp
