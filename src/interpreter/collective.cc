// What the ops of the process grid share (collective.h): sites, channels, groups, pairs, roots, copies
// between processes, reduced operands, and the kernel bases.
#include "interpreter/collective.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "interpreter/elementwise.h"
#include "interpreter/manual_devices.h"
#include "interpreter/run_state.h"

namespace neuronmem::interp {

void RegisterCollectiveOps(OpTable* r) {
  collective::RegisterReducingCollectives(r);
  collective::RegisterMovingCollectives(r);
  collective::RegisterProcessOps(r);
}

namespace collective {
namespace {

const char* ModeName(GroupMode m) {
  switch (m) {
    case GroupMode::kCrossReplica: return "cross_replica";
    case GroupMode::kCrossPartition: return "cross_partition";
    case GroupMode::kCrossReplicaAndPartition: return "cross_replica_and_partition";
    case GroupMode::kFlattenedIds: return "flattened_ids";
  }
  return "";
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

Status NotInGroup(const Site& site, const ProcessGrid& grid, uint32_t self, GroupMode mode) {
  return RunFailure(site, "process %s is in no group of replica_groups (%s)", grid.Name(self).c_str(), ModeName(mode));
}

// How many elements a reducing collective's batched body computes at once (its values stay small).
constexpr int64_t kAccumulateWidth = 1024;

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

}  // namespace

Site MakeSite(CompileCtx& cx, int64_t channel) {
  Site s;
  s.location = FormatLocation(cx.state()->filename, cx.op());
  s.op = cx.op().name;
  s.channel = channel;
  return s;
}

Status RunFailure(const Site& site, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return FailedPrecondition("%s: '%.*s': %s", site.location.c_str(), static_cast<int>(site.op.size()), site.op.data(),
                            buf);
}

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

Status ReadChannelGroups(CompileCtx& cx, ModeRule rule, int64_t* channel, Groups* groups) {
  int64_t type = 0;
  NEURONMEM_RETURN_IF_ERROR(ReadChannel(cx, channel, &type));
  GroupMode mode = *channel <= 0 ? GroupMode::kCrossReplica : GroupMode::kCrossPartition;
  if (rule == ModeRule::kGlobalIds) NEURONMEM_RETURN_IF_ERROR(GlobalIdsMode(cx, *channel, &mode));
  NEURONMEM_RETURN_IF_ERROR(ReadGroups(cx, mode, groups));
  // In a manual computation's body the partitions are the mesh's devices, each the process of its manual
  // coordinates (manual_devices.h).
  const ManualDevices* devices = cx.manual_devices();
  if (!devices) return Ok();
  if (mode == GroupMode::kCrossPartition || mode == GroupMode::kFlattenedIds) {
    NEURONMEM_RETURN_IF_ERROR(devices->MapGroups(cx, "replica_groups", groups->all, &groups->rows));
    groups->all = false;
  } else if (mode == GroupMode::kCrossReplicaAndPartition && devices->free_combinations() > 1) {
    std::vector<std::vector<int64_t>> every;  // each group: every partition of its replicas, so every device
    return devices->MapGroups(cx, "replica_groups (cross_replica_and_partition: every partition of the replicas)", true,
                              &every);
  }
  return Ok();
}

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

Status CopyWhole(ProcessGrid& grid, uint32_t from, uint32_t to, const TensorView& src, char* dst) {
  Transfer t;
  t.from = from;
  t.to = to;
  t.src = static_cast<const char*>(src.data);
  t.dst = dst;
  t.row_bytes = src.Bytes();
  return t.row_bytes ? grid.CopyFrom(t) : Status();
}

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

Status ReadPairs(CompileCtx& cx, std::vector<std::pair<int64_t, int64_t>>* pairs, bool* present, bool frontend) {
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

Status CheckPairs(const Site& site, const ProcessGrid& grid, const Line& line,
                  const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  for (const auto& p : pairs)
    for (int64_t id : {p.first, p.second})
      if (id >= line.Size(grid))
        return RunFailure(site, "source_target_pairs names %s %" PRId64 " of a grid of %u replicas x %u partitions",
                          line.replicas ? "replica" : "partition", id, grid.num_replicas(), grid.num_partitions());
  return Status();
}

Status Root::Read(Frame& f, const Site& site, size_t k, size_t group_size, size_t* out) const {
  if (!dynamic) {
    *out = 0;
    return Status();
  }
  const char* p = f.slots[slot] + (count == 1 ? 0 : k) * ElementByteSize(type);
  int64_t v = 0;
  switch (ElementByteSize(type)) {
    case 1: v = IsSignedInt(type) ? *reinterpret_cast<const int8_t*>(p) : *reinterpret_cast<const uint8_t*>(p); break;
    case 2: v = IsSignedInt(type) ? *reinterpret_cast<const int16_t*>(p) : *reinterpret_cast<const uint16_t*>(p); break;
    case 4: v = IsSignedInt(type) ? *reinterpret_cast<const int32_t*>(p) : *reinterpret_cast<const uint32_t*>(p); break;
    default: std::memcpy(&v, p, 8); break;
  }
  if (v < 0 || static_cast<size_t>(v) >= group_size)
    return RunFailure(site, "root %" PRId64 " of value %zu is not an index into its group of %zu", v, k, group_size);
  *out = static_cast<size_t>(v);
  return Status();
}

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

Status GroupKernel::Join(Frame& f, Member* m, bool* in_group) const {
  m->grid = &f.run->grid();
  m->self = f.run->self();
  NEURONMEM_RETURN_IF_ERROR(GroupOf(groups_, *m->grid, m->self, site_, &m->group));
  if (in_group) *in_group = !m->group.empty();
  if (m->group.empty()) return in_group ? Status() : NotInGroup(site_, *m->grid, m->self, groups_.mode);
  m->index = static_cast<size_t>(std::find(m->group.begin(), m->group.end(), m->self) - m->group.begin());
  return Status();
}

Status GroupKernel::Meet(const Member& m, const std::vector<TensorView>& mine,
                         const ProcessGrid::ExchangeRead& read) const {
  return m.grid->Exchange(m.self, site_.Get(), m.group, mine.data(), mine.size(), read);
}

Status ReducingKernel::Begin(Frame& f, Member* m, std::vector<TensorView>* mine) const {
  for (const auto& r : ops_)
    if (r.promote) NEURONMEM_RETURN_IF_ERROR(r.promote->Run(f));
  NEURONMEM_RETURN_IF_ERROR(Join(f, m));
  mine->clear();
  for (size_t k = 0; k < ops_.size(); ++k) mine->push_back(shapes_[k].View(f.slots[ops_[k].in]));
  return Status();
}

Status ReducingKernel::ReduceMembers(Frame& f, const Member& m, const TensorView* const* members, size_t k) const {
  for (size_t i = 0; i < m.group.size(); ++i)
    NEURONMEM_RETURN_IF_ERROR(FoldMember(f, m, m.group[i], members[i][k], k, i == 0));
  return Status();
}

Status ReducingKernel::FoldMember(Frame& f, const Member& m, uint32_t from, const TensorView& value, size_t k,
                                  bool first) const {
  const ReducedOperand& r = ops_[k];
  if (first) return CopyWhole(*m.grid, from, m.self, value, f.slots[r.out]);
  NEURONMEM_RETURN_IF_ERROR(CopyWhole(*m.grid, from, m.self, value, f.slots[r.scratch]));
  return Accumulate(f, r, shapes_[k], f.slots[r.out], f.slots[r.scratch]);
}

}  // namespace collective
}  // namespace neuronmem::interp
