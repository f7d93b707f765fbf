// The ops that see the process grid (process.h): replica_id, partition_id and the collectives. Each
// collective computes its process group at run time from the grid's shape (the spec's cross_replica,
// cross_partition, cross_replica_and_partition and flattened_ids), meets the group's other members in a
// ProcessGrid exchange, and moves their bytes into its own results through the grid's transport.
#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "interpreter/elementwise.h"
#include "interpreter/kernel.h"
#include "interpreter/quant.h"
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
    return cx.Unsupported("%.*s must be a 2-dimensional integer tensor constant of at most 2^20 entries",
                          static_cast<int>(name.size()), name.data());
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

// How many elements a reducing collective's batched body computes at once (its values stay small).
constexpr int64_t kAccumulateWidth = 1024;

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
    const int64_t width = std::min<int64_t>(cx.slot(r.in).count, kAccumulateWidth);
    const Body* batched = nullptr;
    if (width > 1 && !cx.CompileRegionBatched(0, width, &batched) && batched->arg_slots.size() == 2 &&
        batched->result_slots.size() == 1) {
      r.batched = batched;
      r.width = width;
    }
    shapes->emplace_back(cx.slot(r.in));
  }
  return Ok();
}

// dst[i] = body(dst[i], src[i]) for every element: runs of r.width elements through the batched body (each
// element computed as the 0-d body computes it), the rest one call each.
Status Accumulate(Frame& f, const ReducedOperand& r, const Shape& s, char* dst, const char* src) {
  int64_t i = 0;
  if (r.batched) {
    const Body& body = *r.batched;
    const size_t run_bytes = static_cast<size_t>(r.width) * s.esize;
    for (; i + r.width <= s.count; i += r.width) {
      char* d = dst + i * s.esize;
      f.slots[body.arg_slots[0]] = d;
      f.slots[body.arg_slots[1]] = const_cast<char*>(src + i * s.esize);
      NEURONMEM_RETURN_IF_ERROR(RunBody(body, f));
      const char* result = f.slots[body.result_slots[0]];
      if (result != d) std::memmove(d, result, run_bytes);
    }
  }
  for (; i < s.count; ++i) {
    char* d = dst + i * s.esize;
    const char* args[2] = {d, src + i * s.esize};
    NEURONMEM_RETURN_IF_ERROR(r.body.Call(f, args));
    r.body.StoreResults(f, &d, &s.esize, r.stage);
  }
  return Status();
}

// Runs the operands' conversions to their result types.
Status Promote(Frame& f, const std::vector<ReducedOperand>& ops) {
  for (const auto& r : ops)
    if (r.promote) NEURONMEM_RETURN_IF_ERROR(r.promote->Run(f));
  return Status();
}

// The group of the running process; failing when it is in none.
Status MemberGroup(Frame& f, const Site& site, const Groups& groups, std::vector<uint32_t>* group) {
  ProcessGrid& grid = f.run->grid();
  const uint32_t self = f.run->self();
  NEURONMEM_RETURN_IF_ERROR(GroupOf(groups, grid, self, site, group));
  return group->empty() ? NotInGroup(site, grid, self, groups.mode) : Status();
}

// reduce_without_init over the members' operand k in group order, ((x0 op x1) op x2) ..., into r.out (the
// same on every member).
Status ReduceMembers(Frame& f, const std::vector<uint32_t>& group, const TensorView* const* members, size_t k,
                     const ReducedOperand& r, const Shape& s) {
  ProcessGrid& grid = f.run->grid();
  const uint32_t self = f.run->self();
  char* out = f.slots[r.out];
  NEURONMEM_RETURN_IF_ERROR(CopyWhole(grid, group[0], self, members[0][k], out));
  for (size_t m = 1; m < group.size(); ++m) {
    NEURONMEM_RETURN_IF_ERROR(CopyWhole(grid, group[m], self, members[m][k], f.slots[r.scratch]));
    NEURONMEM_RETURN_IF_ERROR(Accumulate(f, r, s, out, f.slots[r.scratch]));
  }
  return Status();
}

class AllReduceKernel final : public Kernel {
 public:
  AllReduceKernel(Site site, Groups groups, std::vector<ReducedOperand> ops, std::vector<Shape> shapes)
      : site_(std::move(site)), groups_(std::move(groups)), ops_(std::move(ops)), shapes_(std::move(shapes)) {}

  Status Run(Frame& f) const override {
    NEURONMEM_RETURN_IF_ERROR(Promote(f, ops_));
    std::vector<uint32_t> group;
    NEURONMEM_RETURN_IF_ERROR(MemberGroup(f, site_, groups_, &group));
    std::vector<TensorView> mine;
    for (size_t k = 0; k < ops_.size(); ++k) mine.push_back(shapes_[k].View(f.slots[ops_[k].in]));
    return f.run->grid().Exchange(
        f.run->self(), site_.Get(), group, mine.data(), mine.size(), [&](const TensorView* const* members) {
          for (size_t k = 0; k < ops_.size(); ++k)
            NEURONMEM_RETURN_IF_ERROR(ReduceMembers(f, group, members, k, ops_[k], shapes_[k]));
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

// ---- Data movement helpers --------------------------------------------------------------------------------

// Copies the box `part` at `src_at` of a row-major tensor `src_dims` (process `from`) to `dst_at` of a
// tensor `dst_dims` (process `to`): one Transfer per run of the outer dimensions, each a strided block.
Status CopyBox(ProcessGrid& grid, uint32_t from, uint32_t to, const char* src, const std::vector<int64_t>& src_dims,
               const std::vector<int64_t>& src_at, char* dst, const std::vector<int64_t>& dst_dims,
               const std::vector<int64_t>& dst_at, const std::vector<int64_t>& part, size_t esize) {
  const int64_t rank = static_cast<int64_t>(part.size());
  for (int64_t d : part)
    if (d == 0) return Status();
  const std::vector<int64_t> ss = Strides(src_dims), ds = Strides(dst_dims);
  // The contiguous run: trailing dimensions taken whole in both tensors, then one more.
  int64_t j = rank - 1, run = 1;
  while (j >= 0 && part[j] == src_dims[j] && part[j] == dst_dims[j]) run *= part[j--];
  if (j >= 0) run *= part[j];
  const int64_t row_dim = j - 1;  // the dimension the Transfer's rows walk (-1: none)
  Transfer t;
  t.from = from;
  t.to = to;
  t.row_bytes = static_cast<size_t>(run) * esize;
  if (row_dim >= 0) {
    t.rows = static_cast<size_t>(part[row_dim]);
    t.src_stride = static_cast<size_t>(ss[row_dim]) * esize;
    t.dst_stride = static_cast<size_t>(ds[row_dim]) * esize;
  }
  // Walk the dimensions above row_dim.
  const int64_t outer = std::max<int64_t>(row_dim, 0);
  std::vector<int64_t> idx(static_cast<size_t>(outer), 0);
  for (;;) {
    int64_t so = 0, dof = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t i = d < outer ? idx[d] : 0;
      so += (src_at[d] + i) * ss[d];
      dof += (dst_at[d] + i) * ds[d];
    }
    t.src = src + so * static_cast<int64_t>(esize);
    t.dst = dst + dof * static_cast<int64_t>(esize);
    NEURONMEM_RETURN_IF_ERROR(grid.CopyFrom(t));
    int64_t d = outer - 1;
    while (d >= 0 && ++idx[d] == part[d]) idx[d--] = 0;
    if (d < 0) return Status();
  }
}

// A constant holding the zero of a result (quantized types: their zero points), for processes that the
// spec gives zeros.
uint32_t ZeroOf(CompileCtx& cx, const Slot& s) {
  std::vector<char> zero(s.bytes, 0);
  if (s.quant) {
    const stablehlo::QuantType& q = *s.quant;
    const size_t esize = ElementByteSize(s.type);
    const std::vector<int64_t> st = Strides(s.dims);
    for (int64_t i = 0; i < s.count; ++i) {
      size_t z = 0;
      if (q.axis >= 0 && static_cast<size_t>(q.axis) < s.dims.size())
        z = static_cast<size_t>((i / st[q.axis]) % s.dims[q.axis]);
      int64_t v = z < q.zero_points.size() ? q.zero_points[z] : 0;
      v = std::min(std::max(v, q.storage_min), q.storage_max);
      std::memcpy(zero.data() + i * esize, &v, esize);  // little-endian: the low bytes
    }
  }
  return cx.AddConstant(s, zero.data());
}

// `have` must be `base` times the group size `g` (a product that overflows fails: empty tensors may have huge dims).
Status CheckExtent(const Site& site, const char* what, int64_t have, int64_t base, int64_t g) {
  int64_t want = 0;
  if (__builtin_mul_overflow(base, g, &want))
    return RunFailure(site, "%s: %" PRId64 " times the group's %" PRId64 " processes overflows", what, base, g);
  if (have == want) return Status();
  return RunFailure(site, "%s is %" PRId64 " but the process group makes it %" PRId64, what, have, want);
}

std::vector<TensorView> Views(Frame& f, const std::vector<uint32_t>& slots, const std::vector<Shape>& shapes) {
  std::vector<TensorView> v;
  for (size_t k = 0; k < slots.size(); ++k) v.push_back(shapes[k].View(f.slots[slots[k]]));
  return v;
}

// Operand / result slots of the tensor values of an op whose last operand or result is a token.
Status DataSlots(CompileCtx& cx, bool operands, std::vector<uint32_t>* slots, std::vector<Shape>* shapes) {
  const stablehlo::Operation& op = cx.op();
  const auto& types = operands ? op.operand_types : op.result_types;
  const size_t n = operands ? cx.num_inputs() : cx.num_outputs();
  if (types.size() != n || n == 0 || types[n - 1].kind != stablehlo::Type::Kind::kToken)
    return cx.Invalid("expected the %s to end with a !stablehlo.token", operands ? "operands" : "results");
  for (size_t i = 0; i + 1 < n; ++i) {
    if (types[i].kind == stablehlo::Type::Kind::kToken)
      return cx.Unsupported("token values other than the last %s are not supported", operands ? "operand" : "result");
    const uint32_t s = operands ? cx.in(i) : cx.out(i);
    slots->push_back(s);
    shapes->emplace_back(cx.slot(s));
  }
  return Ok();
}

// ---- all_gather -------------------------------------------------------------------------------------------

class AllGatherKernel final : public Kernel {
 public:
  AllGatherKernel(Site site, Groups groups, int64_t dim, std::vector<uint32_t> ins, std::vector<uint32_t> outs,
                  std::vector<Shape> in_shapes, std::vector<Shape> out_shapes)
      : site_(std::move(site)),
        groups_(std::move(groups)),
        dim_(dim),
        ins_(std::move(ins)),
        outs_(std::move(outs)),
        in_(std::move(in_shapes)),
        out_(std::move(out_shapes)) {}

  Status Run(Frame& f) const override {
    ProcessGrid& grid = f.run->grid();
    const uint32_t self = f.run->self();
    std::vector<uint32_t> group;
    NEURONMEM_RETURN_IF_ERROR(MemberGroup(f, site_, groups_, &group));
    const int64_t g = static_cast<int64_t>(group.size());
    for (size_t k = 0; k < ins_.size(); ++k)
      NEURONMEM_RETURN_IF_ERROR(
          CheckExtent(site_, "the result's all_gather_dim", out_[k].dims[dim_], in_[k].dims[dim_], g));
    const std::vector<TensorView> mine = Views(f, ins_, in_);
    return grid.Exchange(self, site_.Get(), group, mine.data(), mine.size(), [&](const TensorView* const* members) {
      for (size_t k = 0; k < ins_.size(); ++k) {
        std::vector<int64_t> src_at(in_[k].dims.size(), 0), dst_at = src_at;
        for (int64_t m = 0; m < g; ++m) {
          dst_at[dim_] = m * in_[k].dims[dim_];
          NEURONMEM_RETURN_IF_ERROR(CopyBox(grid, group[m], self, static_cast<const char*>(members[m][k].data),
                                            in_[k].dims, src_at, f.slots[outs_[k]], out_[k].dims, dst_at, in_[k].dims,
                                            in_[k].esize));
        }
      }
      return Status();
    });
  }

 private:
  Site site_;
  Groups groups_;
  int64_t dim_;
  std::vector<uint32_t> ins_, outs_;
  std::vector<Shape> in_, out_;
};

Status CompileAllGather(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  int64_t channel, type;
  NEURONMEM_RETURN_IF_ERROR(ReadChannel(cx, &channel, &type));
  GroupMode mode = GroupMode::kCrossReplica;
  NEURONMEM_RETURN_IF_ERROR(GlobalIdsMode(cx, channel, &mode));
  Groups groups;
  NEURONMEM_RETURN_IF_ERROR(ReadGroups(cx, mode, &groups));
  int64_t dim = 0;
  if (!cx.Int("all_gather_dim", &dim)) return cx.Invalid("missing the integer all_gather_dim");
  const size_t n = cx.num_inputs();
  if (n == 0 || cx.num_outputs() != n) return cx.Invalid("expected as many results as operands (at least one)");
  std::vector<uint32_t> ins, outs;
  std::vector<Shape> in_shapes, out_shapes;
  for (size_t i = 0; i < n; ++i) {
    const Slot& in = cx.in_slot(i);
    const Slot& out = cx.out_slot(i);
    if (dim < 0 || static_cast<size_t>(dim) >= in.dims.size())
      return cx.Invalid("all_gather_dim %" PRId64 " is out of range for operand %zu", dim, i);
    bool same = ScalarType::Of(in) == ScalarType::Of(out) && in.dims.size() == out.dims.size();
    for (size_t d = 0; same && d < in.dims.size(); ++d)
      same = static_cast<int64_t>(d) == dim || in.dims[d] == out.dims[d];
    if (!same) return cx.Invalid("result %zu must be operand %zu's type but for all_gather_dim", i, i);
    if (in.dims[dim] == 0 ? out.dims[dim] != 0 : out.dims[dim] % in.dims[dim] != 0)
      return cx.Invalid("result %zu's all_gather_dim is no multiple of the operand's", i);
    ins.push_back(cx.in(i));
    outs.push_back(cx.out(i));
    in_shapes.emplace_back(in);
    out_shapes.emplace_back(out);
  }
  *k = std::make_unique<AllGatherKernel>(MakeSite(cx, channel), std::move(groups), dim, std::move(ins), std::move(outs),
                                         std::move(in_shapes), std::move(out_shapes));
  return Ok();
}

// ---- reduce_scatter ---------------------------------------------------------------------------------------

class ReduceScatterKernel final : public Kernel {
 public:
  ReduceScatterKernel(Site site, Groups groups, int64_t dim, std::vector<ReducedOperand> ops,
                      std::vector<Shape> in_shapes, std::vector<Shape> out_shapes)
      : site_(std::move(site)),
        groups_(std::move(groups)),
        dim_(dim),
        ops_(std::move(ops)),
        in_(std::move(in_shapes)),
        out_(std::move(out_shapes)) {}

  Status Run(Frame& f) const override {
    NEURONMEM_RETURN_IF_ERROR(Promote(f, ops_));
    ProcessGrid& grid = f.run->grid();
    const uint32_t self = f.run->self();
    std::vector<uint32_t> group;
    NEURONMEM_RETURN_IF_ERROR(MemberGroup(f, site_, groups_, &group));
    const int64_t g = static_cast<int64_t>(group.size());
    const int64_t me = std::find(group.begin(), group.end(), self) - group.begin();
    for (size_t k = 0; k < ops_.size(); ++k)
      NEURONMEM_RETURN_IF_ERROR(
          CheckExtent(site_, "the operand's scatter_dimension", in_[k].dims[dim_], out_[k].dims[dim_], g));
    std::vector<TensorView> mine;
    for (size_t k = 0; k < ops_.size(); ++k) mine.push_back(in_[k].View(f.slots[ops_[k].in]));
    // Member m's part `me` of every operand, reduced in group order into the result.
    return grid.Exchange(self, site_.Get(), group, mine.data(), mine.size(), [&](const TensorView* const* members) {
      for (size_t k = 0; k < ops_.size(); ++k) {
        const ReducedOperand& r = ops_[k];
        std::vector<int64_t> src_at(in_[k].dims.size(), 0), dst_at = src_at;
        src_at[dim_] = me * out_[k].dims[dim_];
        for (int64_t m = 0; m < g; ++m) {
          char* dst = m == 0 ? f.slots[r.out] : f.slots[r.scratch];
          NEURONMEM_RETURN_IF_ERROR(CopyBox(grid, group[m], self, static_cast<const char*>(members[m][k].data),
                                            in_[k].dims, src_at, dst, out_[k].dims, dst_at, out_[k].dims,
                                            out_[k].esize));
          if (m > 0) NEURONMEM_RETURN_IF_ERROR(Accumulate(f, r, out_[k], f.slots[r.out], dst));
        }
      }
      return Status();
    });
  }

 private:
  Site site_;
  Groups groups_;
  int64_t dim_;
  std::vector<ReducedOperand> ops_;
  std::vector<Shape> in_, out_;
};

Status CompileReduceScatter(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  int64_t channel, type;
  NEURONMEM_RETURN_IF_ERROR(ReadChannel(cx, &channel, &type));
  GroupMode mode = GroupMode::kCrossReplica;
  NEURONMEM_RETURN_IF_ERROR(GlobalIdsMode(cx, channel, &mode));
  Groups groups;
  NEURONMEM_RETURN_IF_ERROR(ReadGroups(cx, mode, &groups));
  int64_t dim = 0;
  if (!cx.Int("scatter_dimension", &dim)) return cx.Invalid("missing the integer scatter_dimension");
  std::vector<ReducedOperand> ops;
  std::vector<Shape> in_shapes, out_shapes;
  NEURONMEM_RETURN_IF_ERROR(ReadReducedOperands(cx, cx.num_inputs(), &ops, &in_shapes, false));
  for (size_t i = 0; i < ops.size(); ++i) {
    const Slot& in = cx.slot(ops[i].in);
    const Slot& out = cx.out_slot(i);
    if (dim < 0 || static_cast<size_t>(dim) >= in.dims.size())
      return cx.Invalid("scatter_dimension %" PRId64 " is out of range for operand %zu", dim, i);
    bool same = in.dims.size() == out.dims.size();
    for (size_t d = 0; same && d < in.dims.size(); ++d)
      same = static_cast<int64_t>(d) == dim || in.dims[d] == out.dims[d];
    if (!same || (out.dims[dim] == 0 ? in.dims[dim] != 0 : in.dims[dim] % out.dims[dim] != 0))
      return cx.Invalid("result %zu must be operand %zu's shape with scatter_dimension divided", i, i);
    // The peer's part goes to a result-shaped scratch.
    ops[i].scratch = cx.AddScratch(out.type, out.dims);
    out_shapes.emplace_back(out);
  }
  *k = std::make_unique<ReduceScatterKernel>(MakeSite(cx, channel), std::move(groups), dim, std::move(ops),
                                             std::move(in_shapes), std::move(out_shapes));
  return Ok();
}

// ---- all_to_all -------------------------------------------------------------------------------------------

class AllToAllKernel final : public Kernel {
 public:
  AllToAllKernel(Site site, Groups groups, int64_t split, int64_t concat, int64_t count, std::vector<uint32_t> ins,
                 std::vector<uint32_t> outs, std::vector<Shape> in_shapes, std::vector<Shape> out_shapes)
      : site_(std::move(site)),
        groups_(std::move(groups)),
        split_(split),
        concat_(concat),
        count_(count),
        ins_(std::move(ins)),
        outs_(std::move(outs)),
        in_(std::move(in_shapes)),
        out_(std::move(out_shapes)) {}

  Status Run(Frame& f) const override {
    ProcessGrid& grid = f.run->grid();
    const uint32_t self = f.run->self();
    std::vector<uint32_t> group;
    NEURONMEM_RETURN_IF_ERROR(MemberGroup(f, site_, groups_, &group));
    NEURONMEM_RETURN_IF_ERROR(CheckExtent(site_, "split_count", count_, 1, static_cast<int64_t>(group.size())));
    const int64_t me = std::find(group.begin(), group.end(), self) - group.begin();
    const std::vector<TensorView> mine = Views(f, ins_, in_);
    // Receiver `me` takes part `me` of every sender's operand, placed at the sender's index along concat.
    return grid.Exchange(self, site_.Get(), group, mine.data(), mine.size(), [&](const TensorView* const* members) {
      for (size_t k = 0; k < ins_.size(); ++k) {
        std::vector<int64_t> part = in_[k].dims;
        part[split_] /= count_;
        std::vector<int64_t> src_at(part.size(), 0), dst_at = src_at;
        src_at[split_] = me * part[split_];
        for (int64_t m = 0; m < count_; ++m) {
          dst_at[concat_] = m * part[concat_];
          NEURONMEM_RETURN_IF_ERROR(CopyBox(grid, group[m], self, static_cast<const char*>(members[m][k].data),
                                            in_[k].dims, src_at, f.slots[outs_[k]], out_[k].dims, dst_at, part,
                                            in_[k].esize));
        }
      }
      return Status();
    });
  }

 private:
  Site site_;
  Groups groups_;
  int64_t split_, concat_, count_;
  std::vector<uint32_t> ins_, outs_;
  std::vector<Shape> in_, out_;
};

Status CompileAllToAll(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  int64_t channel, type;
  NEURONMEM_RETURN_IF_ERROR(ReadChannel(cx, &channel, &type));
  Groups groups;
  NEURONMEM_RETURN_IF_ERROR(
      ReadGroups(cx, channel <= 0 ? GroupMode::kCrossReplica : GroupMode::kCrossPartition, &groups));
  int64_t split = 0, concat = 0, count = 0;
  if (!cx.Int("split_dimension", &split) || !cx.Int("concat_dimension", &concat) || !cx.Int("split_count", &count))
    return cx.Invalid("needs the integers split_dimension, concat_dimension and split_count");
  if (count <= 0) return cx.Invalid("split_count must be > 0 (C4)");
  const size_t n = cx.num_inputs();
  if (n == 0 || cx.num_outputs() != n) return cx.Invalid("expected as many results as operands (at least one)");
  std::vector<uint32_t> ins, outs;
  std::vector<Shape> in_shapes, out_shapes;
  for (size_t i = 0; i < n; ++i) {
    const Slot& in = cx.in_slot(i);
    const Slot& out = cx.out_slot(i);
    const int64_t rank = static_cast<int64_t>(in.dims.size());
    if (split < 0 || split >= rank || concat < 0 || concat >= rank)
      return cx.Invalid("split_dimension or concat_dimension is out of range for operand %zu (C1, C3)", i);
    if (in.dims[split] % count != 0)
      return cx.Invalid("operand %zu's split dimension is no multiple of split_count", i);
    std::vector<int64_t> want = in.dims;
    want[split] /= count;
    if (__builtin_mul_overflow(want[concat], count, &want[concat]))
      return cx.Invalid("operand %zu's concat dimension %" PRId64 " times split_count %" PRId64 " overflows", i,
                        in.dims[concat], count);
    if (ScalarType::Of(in) != ScalarType::Of(out) || out.dims != want)
      return cx.Invalid("result %zu must be operand %zu split by split_count and concatenated (C8)", i, i);
    ins.push_back(cx.in(i));
    outs.push_back(cx.out(i));
    in_shapes.emplace_back(in);
    out_shapes.emplace_back(out);
  }
  *k = std::make_unique<AllToAllKernel>(MakeSite(cx, channel), std::move(groups), split, concat, count, std::move(ins),
                                        std::move(outs), std::move(in_shapes), std::move(out_shapes));
  return Ok();
}

// ---- collective_permute -----------------------------------------------------------------------------------

// The pairs of collective_permute and send/recv: (source, target) ids along one line of the grid.
// XLA's spelling of send/recv pairs, a frontend attribute: `mhlo.frontend_attributes =
// {_xla_send_recv_source_target_pairs = "{{0,1},{1,2}}"}` (what JAX's pipelining emits).
Status ReadFrontendPairs(CompileCtx& cx, std::vector<std::vector<int64_t>>* rows, bool* present) {
  const stablehlo::Attribute* fa = cx.Attr("mhlo.frontend_attributes");
  const stablehlo::Attribute* a = fa ? fa->Get("_xla_send_recv_source_target_pairs") : nullptr;
  if (!a) return Ok();
  if (a->kind != stablehlo::Attribute::Kind::kString)
    return cx.Invalid("_xla_send_recv_source_target_pairs must be a string \"{{a,b},...}\"");
  *present = true;
  const std::string_view t = a->str;
  int depth = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '{') {
      if (++depth == 2) rows->emplace_back();
    } else if (c == '}') {
      --depth;
    } else if (c >= '0' && c <= '9' && depth == 2) {
      const size_t start = i;
      int64_t v = 0;
      for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) {
        if (v > (INT64_MAX - (t[i] - '0')) / 10)
          return cx.Invalid("_xla_send_recv_source_target_pairs names id %.*s, which is too large",
                            static_cast<int>(std::min(t.size(), t.find_first_not_of("0123456789", start)) - start),
                            t.data() + start);
        v = v * 10 + (t[i] - '0');
      }
      --i;
      rows->back().push_back(v);
    } else if (c != ',' && c != ' ') {
      return cx.Invalid("_xla_send_recv_source_target_pairs \"%.*s\" is not of the form \"{{a,b},...}\"",
                        static_cast<int>(t.size()), t.data());
    }
    if (depth < 0 || depth > 2)
      return cx.Invalid("_xla_send_recv_source_target_pairs \"%.*s\" is not of the form \"{{a,b},...}\"",
                        static_cast<int>(t.size()), t.data());
  }
  return Ok();
}

Status ReadPairs(CompileCtx& cx, std::vector<std::pair<int64_t, int64_t>>* pairs, bool* present,
                 bool frontend = false) {
  std::vector<std::vector<int64_t>> rows;
  NEURONMEM_RETURN_IF_ERROR(ReadRows(cx, "source_target_pairs", false, &rows, present));
  if (!*present && frontend) NEURONMEM_RETURN_IF_ERROR(ReadFrontendPairs(cx, &rows, present));
  std::vector<int64_t> sources, targets;
  for (const auto& r : rows) {
    if (r.size() != 2) return cx.Invalid("source_target_pairs must have 2 columns (C1)");
    pairs->emplace_back(r[0], r[1]);
    sources.push_back(r[0]);
    targets.push_back(r[1]);
  }
  for (auto* v : {&sources, &targets}) {
    std::sort(v->begin(), v->end());
    if (std::adjacent_find(v->begin(), v->end()) != v->end())
      return cx.Invalid("source_target_pairs names a %s twice (C2, C3)", v == &sources ? "source" : "target");
  }
  return Ok();
}

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
                  const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  for (const auto& p : pairs)
    for (int64_t id : {p.first, p.second})
      if (id >= line.Size(grid))
        return RunFailure(site, "source_target_pairs names %s %" PRId64 " of a grid of %u replicas x %u partitions",
                          line.replicas ? "replica" : "partition", id, grid.num_replicas(), grid.num_partitions());
  return Status();
}

class CollectivePermuteKernel final : public Kernel {
 public:
  CollectivePermuteKernel(Site site, Line line, std::vector<std::pair<int64_t, int64_t>> pairs, uint32_t in,
                          uint32_t out, uint32_t zero, Shape shape)
      : site_(std::move(site)), line_(line), pairs_(std::move(pairs)), in_(in), out_(out), zero_(zero), shape_(shape) {}

  Status Run(Frame& f) const override {
    ProcessGrid& grid = f.run->grid();
    const uint32_t self = f.run->self();
    NEURONMEM_RETURN_IF_ERROR(CheckPairs(site_, grid, line_, pairs_));
    const int64_t id = line_.Id(grid, self);
    // Everyone named by a pair on this line meets; the others (and non-targets) get zeros.
    std::vector<int64_t> ids;
    int64_t source = -1;
    for (const auto& p : pairs_) {
      ids.push_back(p.first);
      ids.push_back(p.second);
      if (p.second == id) source = p.first;
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    if (source < 0) std::memcpy(f.slots[out_], f.slots[zero_], shape_.bytes);
    if (!std::binary_search(ids.begin(), ids.end(), id)) return Status();
    std::vector<uint32_t> group;
    for (int64_t i : ids) group.push_back(line_.Process(grid, self, i));
    const TensorView mine = shape_.View(f.slots[in_]);
    return grid.Exchange(self, site_.Get(), group, &mine, 1, [&](const TensorView* const* members) {
      if (source < 0) return Status();
      const size_t m = static_cast<size_t>(std::lower_bound(ids.begin(), ids.end(), source) - ids.begin());
      return CopyWhole(grid, group[m], self, members[m][0], f.slots[out_]);
    });
  }

 private:
  Site site_;
  Line line_;
  std::vector<std::pair<int64_t, int64_t>> pairs_;
  uint32_t in_, out_, zero_;
  Shape shape_;
};

Status CompileCollectivePermute(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  int64_t channel, type;
  NEURONMEM_RETURN_IF_ERROR(ReadChannel(cx, &channel, &type));
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("takes one operand and has one result");
  if (!SameValueType(cx.in_slot(0), cx.out_slot(0))) return cx.Invalid("the result must have the operand's type");
  std::vector<std::pair<int64_t, int64_t>> pairs;
  bool present = false;
  NEURONMEM_RETURN_IF_ERROR(ReadPairs(cx, &pairs, &present));
  if (!present) return cx.Invalid("missing source_target_pairs");
  Line line;
  line.replicas = channel <= 0;  // cross_replica, else cross_partition
  *k = std::make_unique<CollectivePermuteKernel>(MakeSite(cx, channel), line, std::move(pairs), cx.in(0), cx.out(0),
                                                 ZeroOf(cx, cx.out_slot(0)), Shape(cx.out_slot(0)));
  return Ok();
}

// ---- collective_broadcast / collective_reduce ---------------------------------------------------------------

// The root of operand k: group index 0, or with has_dynamic_root the k-th (or only) value of the root
// operand, an index into the group.
struct Root {
  bool dynamic = false;
  uint32_t slot = 0;
  ElementType type = ElementType::kInvalid;
  int64_t count = 0;

  Status Read(Frame& f, const Site& site, size_t k, size_t group_size, size_t* out) const {
    if (!dynamic) {
      *out = 0;
      return Status();
    }
    const char* p = f.slots[slot] + (count == 1 ? 0 : k) * ElementByteSize(type);
    int64_t v = 0;
    switch (ElementByteSize(type)) {
      case 1: v = IsSignedInt(type) ? *reinterpret_cast<const int8_t*>(p) : *reinterpret_cast<const uint8_t*>(p); break;
      case 2:
        v = IsSignedInt(type) ? *reinterpret_cast<const int16_t*>(p) : *reinterpret_cast<const uint16_t*>(p);
        break;
      case 4:
        v = IsSignedInt(type) ? *reinterpret_cast<const int32_t*>(p) : *reinterpret_cast<const uint32_t*>(p);
        break;
      default: std::memcpy(&v, p, 8); break;
    }
    if (v < 0 || static_cast<size_t>(v) >= group_size)
      return RunFailure(site, "root %" PRId64 " of value %zu is not an index into its group of %zu", v, k, group_size);
    *out = static_cast<size_t>(v);
    return Status();
  }
};

// has_dynamic_root: the last operand holds the roots (1-D integers, one per value or one for all).
Status ReadRoot(CompileCtx& cx, size_t* values, Root* root) {
  *values = cx.num_inputs();
  bool dynamic = false;
  cx.Bool("has_dynamic_root", &dynamic);
  if (!dynamic) return Ok();
  if (*values < 2) return cx.Invalid("has_dynamic_root needs the values and a root operand");
  --*values;
  const Slot& r = cx.in_slot(*values);
  if (!IsInteger(r.type) || r.quant || r.dims.size() != 1 || (r.count != 1 && r.count != static_cast<int64_t>(*values)))
    return cx.Invalid("the root operand must be a 1-D integer tensor of 1 or %zu values", *values);
  root->dynamic = true;
  root->slot = cx.in(*values);
  root->type = r.type;
  root->count = r.count;
  return Ok();
}

class CollectiveBroadcastKernel final : public Kernel {
 public:
  CollectiveBroadcastKernel(Site site, Groups groups, Root root, std::vector<uint32_t> ins, std::vector<uint32_t> outs,
                            std::vector<uint32_t> zeros, std::vector<Shape> shapes)
      : site_(std::move(site)),
        groups_(std::move(groups)),
        root_(root),
        ins_(std::move(ins)),
        outs_(std::move(outs)),
        zeros_(std::move(zeros)),
        shapes_(std::move(shapes)) {}

  Status Run(Frame& f) const override {
    ProcessGrid& grid = f.run->grid();
    const uint32_t self = f.run->self();
    std::vector<uint32_t> group;
    NEURONMEM_RETURN_IF_ERROR(GroupOf(groups_, grid, self, site_, &group));
    if (group.empty()) {  // in no group: zeros
      for (size_t k = 0; k < outs_.size(); ++k) std::memcpy(f.slots[outs_[k]], f.slots[zeros_[k]], shapes_[k].bytes);
      return Status();
    }
    std::vector<size_t> roots(ins_.size());
    for (size_t k = 0; k < ins_.size(); ++k)
      NEURONMEM_RETURN_IF_ERROR(root_.Read(f, site_, k, group.size(), &roots[k]));
    const std::vector<TensorView> mine = Views(f, ins_, shapes_);
    return grid.Exchange(self, site_.Get(), group, mine.data(), mine.size(), [&](const TensorView* const* members) {
      for (size_t k = 0; k < ins_.size(); ++k)
        NEURONMEM_RETURN_IF_ERROR(CopyWhole(grid, group[roots[k]], self, members[roots[k]][k], f.slots[outs_[k]]));
      return Status();
    });
  }

 private:
  Site site_;
  Groups groups_;
  Root root_;
  std::vector<uint32_t> ins_, outs_, zeros_;
  std::vector<Shape> shapes_;
};

Status CompileCollectiveBroadcast(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  int64_t channel, type;
  NEURONMEM_RETURN_IF_ERROR(ReadChannel(cx, &channel, &type));
  Groups groups;
  NEURONMEM_RETURN_IF_ERROR(
      ReadGroups(cx, channel <= 0 ? GroupMode::kCrossReplica : GroupMode::kCrossPartition, &groups));
  size_t n = 0;
  Root root;
  NEURONMEM_RETURN_IF_ERROR(ReadRoot(cx, &n, &root));
  if (n == 0 || cx.num_outputs() != n) return cx.Invalid("expected one result per value (at least one)");
  std::vector<uint32_t> ins, outs, zeros;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n; ++i) {
    if (!SameValueType(cx.in_slot(i), cx.out_slot(i)))
      return cx.Invalid("result %zu must have operand %zu's type", i, i);
    ins.push_back(cx.in(i));
    outs.push_back(cx.out(i));
    zeros.push_back(ZeroOf(cx, cx.out_slot(i)));
    shapes.emplace_back(cx.in_slot(i));
  }
  *k = std::make_unique<CollectiveBroadcastKernel>(MakeSite(cx, channel), std::move(groups), root, std::move(ins),
                                                   std::move(outs), std::move(zeros), std::move(shapes));
  return Ok();
}

// collective_reduce: the group's values reduced (in group order) at its root; the other members get zeros.
class CollectiveReduceKernel final : public Kernel {
 public:
  CollectiveReduceKernel(Site site, Groups groups, Root root, std::vector<ReducedOperand> ops,
                         std::vector<uint32_t> zeros, std::vector<Shape> shapes)
      : site_(std::move(site)),
        groups_(std::move(groups)),
        root_(root),
        ops_(std::move(ops)),
        zeros_(std::move(zeros)),
        shapes_(std::move(shapes)) {}

  Status Run(Frame& f) const override {
    NEURONMEM_RETURN_IF_ERROR(Promote(f, ops_));
    ProcessGrid& grid = f.run->grid();
    const uint32_t self = f.run->self();
    std::vector<uint32_t> group;
    NEURONMEM_RETURN_IF_ERROR(MemberGroup(f, site_, groups_, &group));
    const size_t me = static_cast<size_t>(std::find(group.begin(), group.end(), self) - group.begin());
    std::vector<size_t> roots(ops_.size());
    for (size_t k = 0; k < ops_.size(); ++k)
      NEURONMEM_RETURN_IF_ERROR(root_.Read(f, site_, k, group.size(), &roots[k]));
    std::vector<TensorView> mine;
    for (size_t k = 0; k < ops_.size(); ++k) mine.push_back(shapes_[k].View(f.slots[ops_[k].in]));
    return grid.Exchange(self, site_.Get(), group, mine.data(), mine.size(), [&](const TensorView* const* members) {
      for (size_t k = 0; k < ops_.size(); ++k) {
        if (roots[k] != me) {
          std::memcpy(f.slots[ops_[k].out], f.slots[zeros_[k]], shapes_[k].bytes);
          continue;
        }
        NEURONMEM_RETURN_IF_ERROR(ReduceMembers(f, group, members, k, ops_[k], shapes_[k]));
      }
      return Status();
    });
  }

 private:
  Site site_;
  Groups groups_;
  Root root_;
  std::vector<ReducedOperand> ops_;
  std::vector<uint32_t> zeros_;
  std::vector<Shape> shapes_;
};

Status CompileCollectiveReduce(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  int64_t channel, type;
  NEURONMEM_RETURN_IF_ERROR(ReadChannel(cx, &channel, &type));
  GroupMode mode = GroupMode::kCrossReplica;
  NEURONMEM_RETURN_IF_ERROR(GlobalIdsMode(cx, channel, &mode));
  Groups groups;
  NEURONMEM_RETURN_IF_ERROR(ReadGroups(cx, mode, &groups));
  size_t n = 0;
  Root root;
  NEURONMEM_RETURN_IF_ERROR(ReadRoot(cx, &n, &root));
  std::vector<ReducedOperand> ops;
  std::vector<Shape> shapes;
  NEURONMEM_RETURN_IF_ERROR(ReadReducedOperands(cx, n, &ops, &shapes, true));
  std::vector<uint32_t> zeros;
  for (size_t i = 0; i < n; ++i) zeros.push_back(ZeroOf(cx, cx.out_slot(i)));
  *k = std::make_unique<CollectiveReduceKernel>(MakeSite(cx, channel), std::move(groups), root, std::move(ops),
                                                std::move(zeros), std::move(shapes));
  return Ok();
}

// ---- send / recv ------------------------------------------------------------------------------------------

// What send and recv share: channel, host transfer or not, and the pairs. Pairs name partitions of the
// sender's replica, or replicas when the grid has one partition (docs/process-grid.md).
struct Channel {
  Site site;
  bool host = false;
  bool has_pairs = false;
  std::vector<std::pair<int64_t, int64_t>> pairs;

  Line LineOf(const ProcessGrid& grid) const {
    Line l;
    l.replicas = grid.num_partitions() == 1;
    return l;
  }
};

Status ReadSendRecv(CompileCtx& cx, bool send, Channel* c) {
  int64_t channel, type;
  NEURONMEM_RETURN_IF_ERROR(ReadChannel(cx, &channel, &type));
  cx.Bool("is_host_transfer", &c->host);
  const int64_t host_type = send ? 2 : 3;
  if (type == (send ? 3 : 2)) return cx.Invalid("channel type %" PRId64 " cannot %s", type, send ? "send" : "receive");
  if (type != 0 && (type == host_type) != c->host)
    return cx.Invalid("channel type %" PRId64 " disagrees with is_host_transfer = %s (C5)", type,
                      c->host ? "true" : "false");
  NEURONMEM_RETURN_IF_ERROR(ReadPairs(cx, &c->pairs, &c->has_pairs, /*frontend=*/true));
  c->site = MakeSite(cx, channel);
  return Ok();
}

HostTransfers* HostOf(Frame& f) {
  static HostTransfers none;  // fails every transfer, naming it
  return f.run->process.host ? f.run->process.host : &none;
}

class SendKernel final : public Kernel {
 public:
  SendKernel(Channel c, std::vector<uint32_t> ins, std::vector<Shape> shapes)
      : c_(std::move(c)), ins_(std::move(ins)), shapes_(std::move(shapes)) {}
  Status Run(Frame& f) const override {
    ProcessGrid& grid = f.run->grid();
    const uint32_t self = f.run->self();
    const std::vector<TensorView> data = Views(f, ins_, shapes_);
    if (c_.host) return HostOf(f)->Send(HostCall{c_.site.Get(), self, {}}, data.data(), data.size());
    int64_t target = -1;
    if (c_.has_pairs) {
      const Line line = c_.LineOf(grid);
      NEURONMEM_RETURN_IF_ERROR(CheckPairs(c_.site, grid, line, c_.pairs));
      const int64_t id = line.Id(grid, self);
      for (const auto& p : c_.pairs)
        if (p.first == id) target = line.Process(grid, self, p.second);
      if (target < 0) return Status();  // not a source: nothing to send
    }
    return grid.Send(self, c_.site.Get(), target, data.data(), data.size());
  }

 private:
  Channel c_;
  std::vector<uint32_t> ins_;
  std::vector<Shape> shapes_;
};

class RecvKernel final : public Kernel {
 public:
  RecvKernel(Channel c, std::vector<uint32_t> outs, std::vector<uint32_t> zeros, std::vector<Shape> shapes)
      : c_(std::move(c)), outs_(std::move(outs)), zeros_(std::move(zeros)), shapes_(std::move(shapes)) {}
  Status Run(Frame& f) const override {
    ProcessGrid& grid = f.run->grid();
    const uint32_t self = f.run->self();
    const std::vector<TensorView> results = Views(f, outs_, shapes_);
    if (c_.host) return HostOf(f)->Recv(HostCall{c_.site.Get(), self, {}}, results.data(), results.size());
    int64_t source = -1;
    if (c_.has_pairs) {
      const Line line = c_.LineOf(grid);
      NEURONMEM_RETURN_IF_ERROR(CheckPairs(c_.site, grid, line, c_.pairs));
      const int64_t id = line.Id(grid, self);
      for (const auto& p : c_.pairs)
        if (p.second == id) source = line.Process(grid, self, p.first);
      if (source < 0) {  // not a target: zeros, as collective_permute gives
        for (size_t k = 0; k < outs_.size(); ++k) std::memcpy(f.slots[outs_[k]], f.slots[zeros_[k]], shapes_[k].bytes);
        return Status();
      }
    }
    return grid.Recv(self, c_.site.Get(), source, results.data(), results.size());
  }

 private:
  Channel c_;
  std::vector<uint32_t> outs_, zeros_;
  std::vector<Shape> shapes_;
};

Status CompileSend(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  Channel c;
  NEURONMEM_RETURN_IF_ERROR(ReadSendRecv(cx, true, &c));
  std::vector<uint32_t> ins;
  std::vector<Shape> shapes;
  NEURONMEM_RETURN_IF_ERROR(DataSlots(cx, true, &ins, &shapes));
  *k = std::make_unique<SendKernel>(std::move(c), std::move(ins), std::move(shapes));
  return Ok();
}

Status CompileRecv(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  Channel c;
  NEURONMEM_RETURN_IF_ERROR(ReadSendRecv(cx, false, &c));
  std::vector<uint32_t> outs, zeros;
  std::vector<Shape> shapes;
  NEURONMEM_RETURN_IF_ERROR(DataSlots(cx, false, &outs, &shapes));
  if (c.has_pairs)
    for (uint32_t o : outs) zeros.push_back(ZeroOf(cx, cx.slot(o)));
  *k = std::make_unique<RecvKernel>(std::move(c), std::move(outs), std::move(zeros), std::move(shapes));
  return Ok();
}

// ---- infeed / outfeed -------------------------------------------------------------------------------------

template <bool kInfeed>
class FeedKernel final : public Kernel {
 public:
  FeedKernel(Site site, std::string config, std::vector<uint32_t> slots, std::vector<Shape> shapes)
      : site_(std::move(site)), config_(std::move(config)), slots_(std::move(slots)), shapes_(std::move(shapes)) {}
  Status Run(Frame& f) const override {
    const std::vector<TensorView> v = Views(f, slots_, shapes_);
    const HostCall call{site_.Get(), f.run->self(), config_};
    return kInfeed ? HostOf(f)->Infeed(call, v.data(), v.size()) : HostOf(f)->Outfeed(call, v.data(), v.size());
  }

 private:
  Site site_;
  std::string config_;
  std::vector<uint32_t> slots_;
  std::vector<Shape> shapes_;
};

template <bool kInfeed>
Status CompileFeed(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::vector<uint32_t> slots;
  std::vector<Shape> shapes;
  NEURONMEM_RETURN_IF_ERROR(DataSlots(cx, !kInfeed, &slots, &shapes));
  std::string config;
  if (const stablehlo::Attribute* a = cx.Attr(kInfeed ? "infeed_config" : "outfeed_config"))
    config = std::string(a->str);
  *k = std::make_unique<FeedKernel<kInfeed>>(MakeSite(cx, 0), std::move(config), std::move(slots), std::move(shapes));
  return Ok();
}

}  // namespace

void RegisterCollectiveOps(OpTable* r) {
  auto& m = *r;
  m["stablehlo.replica_id"] = CompileId<true>;
  m["stablehlo.partition_id"] = CompileId<false>;
  m["stablehlo.all_reduce"] = CompileAllReduce;
  m["stablehlo.all_gather"] = CompileAllGather;
  m["stablehlo.reduce_scatter"] = CompileReduceScatter;
  m["stablehlo.all_to_all"] = CompileAllToAll;
  m["stablehlo.collective_permute"] = CompileCollectivePermute;
  m["stablehlo.collective_broadcast"] = CompileCollectiveBroadcast;
  m["stablehlo.collective_reduce"] = CompileCollectiveReduce;
  m["stablehlo.send"] = CompileSend;
  m["stablehlo.recv"] = CompileRecv;
  m["stablehlo.infeed"] = CompileFeed<true>;
  m["stablehlo.outfeed"] = CompileFeed<false>;
}

}  // namespace neuronmem::interp
