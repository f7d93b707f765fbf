// The collectives that move values between the processes of a group without computing (collective.h):
// all_gather, all_to_all, collective_broadcast, and collective_permute (whose group is its pairs').
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "interpreter/collective.h"
#include "interpreter/manual_devices.h"
#include "interpreter/run_state.h"

namespace neuronmem::interp::collective {
namespace {

// The operands of a collective that moves each operand into its result, and their shapes.
struct Values {
  std::vector<uint32_t> ins, outs;
  std::vector<Shape> in, out;
};

// Operand i and result i for the first n operands (at least one; as many results, else `count_error`):
// `check(i, in, out)` says what is wrong with a pair, or succeeds.
Status ReadValues(CompileCtx& cx, size_t n, const std::function<Status(size_t, const Slot&, const Slot&)>& check,
                  Values* v, const char* count_error = "expected as many results as operands (at least one)") {
  if (n == 0 || cx.num_outputs() != n) return cx.Invalid("%s", count_error);
  for (size_t i = 0; i < n; ++i) {
    const Slot& in = cx.in_slot(i);
    const Slot& out = cx.out_slot(i);
    NEURONMEM_RETURN_IF_ERROR(check(i, in, out));
    v->ins.push_back(cx.in(i));
    v->outs.push_back(cx.out(i));
    v->in.emplace_back(in);
    v->out.emplace_back(out);
  }
  return Ok();
}

// A group collective over Values.
class MovingKernel : public GroupKernel {
 protected:
  MovingKernel(GroupHead head, Values v) : GroupKernel(std::move(head)), v_(std::move(v)) {}
  Values v_;
};

// ---- all_gather -------------------------------------------------------------------------------------------

class AllGatherKernel final : public MovingKernel {
 public:
  AllGatherKernel(GroupHead head, int64_t dim, Values v) : MovingKernel(std::move(head), std::move(v)), dim_(dim) {}

  Status Run(Frame& f) const override {
    Member m;
    NEURONMEM_RETURN_IF_ERROR(Join(f, &m));
    const int64_t g = static_cast<int64_t>(m.group.size());
    const std::vector<Shape>& in = v_.in;
    const std::vector<Shape>& out = v_.out;
    for (size_t k = 0; k < v_.ins.size(); ++k)
      NEURONMEM_RETURN_IF_ERROR(
          CheckExtent(site_, "the result's all_gather_dim", out[k].dims[dim_], in[k].dims[dim_], g));
    return Meet(m, Views(f, v_.ins, in), [&](const TensorView* const* members) {
      for (size_t k = 0; k < v_.ins.size(); ++k) {
        std::vector<int64_t> src_at(in[k].dims.size(), 0), dst_at = src_at;
        for (int64_t i = 0; i < g; ++i) {
          dst_at[dim_] = i * in[k].dims[dim_];
          NEURONMEM_RETURN_IF_ERROR(CopyBox(*m.grid, m.group[i], m.self, static_cast<const char*>(members[i][k].data),
                                            in[k].dims, src_at, f.slots[v_.outs[k]], out[k].dims, dst_at, in[k].dims,
                                            in[k].esize));
        }
      }
      return Status();
    });
  }

 private:
  int64_t dim_;
};

Status CompileAllGather(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  GroupHead head;
  NEURONMEM_RETURN_IF_ERROR(ReadGroupHead(cx, ModeRule::kGlobalIds, &head));
  int64_t dim = 0;
  if (!cx.Int("all_gather_dim", &dim)) return cx.Invalid("missing the integer all_gather_dim");
  Values v;
  NEURONMEM_RETURN_IF_ERROR(ReadValues(
      cx, cx.num_inputs(),
      [&](size_t i, const Slot& in, const Slot& out) {
        if (dim < 0 || static_cast<size_t>(dim) >= in.dims.size())
          return cx.Invalid("all_gather_dim %" PRId64 " is out of range for operand %zu", dim, i);
        bool same = ScalarType::Of(in) == ScalarType::Of(out) && in.dims.size() == out.dims.size();
        for (size_t d = 0; same && d < in.dims.size(); ++d)
          same = static_cast<int64_t>(d) == dim || in.dims[d] == out.dims[d];
        if (!same) return cx.Invalid("result %zu must be operand %zu's type but for all_gather_dim", i, i);
        if (in.dims[dim] == 0 ? out.dims[dim] != 0 : out.dims[dim] % in.dims[dim] != 0)
          return cx.Invalid("result %zu's all_gather_dim is no multiple of the operand's", i);
        return Ok();
      },
      &v));
  *k = std::make_unique<AllGatherKernel>(std::move(head), dim, std::move(v));
  return Ok();
}

// ---- all_to_all -------------------------------------------------------------------------------------------

class AllToAllKernel final : public MovingKernel {
 public:
  AllToAllKernel(GroupHead head, int64_t split, int64_t concat, int64_t count, Values v)
      : MovingKernel(std::move(head), std::move(v)), split_(split), concat_(concat), count_(count) {}

  Status Run(Frame& f) const override {
    Member m;
    NEURONMEM_RETURN_IF_ERROR(Join(f, &m));
    NEURONMEM_RETURN_IF_ERROR(CheckExtent(site_, "split_count", count_, 1, static_cast<int64_t>(m.group.size())));
    const std::vector<Shape>& in = v_.in;
    const std::vector<Shape>& out = v_.out;
    const size_t n = v_.ins.size();
    std::vector<std::vector<int64_t>> part(n);
    for (size_t k = 0; k < n; ++k) {
      part[k] = in[k].dims;
      part[k][split_] /= count_;
    }
    // Receiver `me` takes part `me` of every sender's operand (`values`: member i's operands, `i_part`: whether they
    // are only its part for this member), placed at the sender's index along concat.
    const auto take = [&](int64_t i, const TensorView* values, bool i_part) -> Status {
      for (size_t k = 0; k < n; ++k) {
        std::vector<int64_t> src_at(part[k].size(), 0), dst_at = src_at;
        if (!i_part) src_at[split_] = static_cast<int64_t>(m.index) * part[k][split_];
        dst_at[concat_] = i * part[k][concat_];
        NEURONMEM_RETURN_IF_ERROR(CopyBox(*m.grid, m.group[i], m.self, static_cast<const char*>(values[k].data),
                                          i_part ? part[k] : in[k].dims, src_at, f.slots[v_.outs[k]], out[k].dims,
                                          dst_at, part[k], in[k].esize));
      }
      return Status();
    };
    const std::vector<TensorView> mine = Views(f, v_.ins, in);
    if (!m.grid->SpansProcesses(m.group))
      return Meet(m, mine, [&](const TensorView* const* members) {
        for (int64_t i = 0; i < count_; ++i) NEURONMEM_RETURN_IF_ERROR(take(i, members[i], false));
        return Status();
      });
    // Across OS processes each member sends every remote member only its part, and receives only its own part from
    // each (buffered sends first, so no order between processes can wait on another); the local members meet.
    size_t bytes = 0;
    std::vector<size_t> at(n);
    for (size_t k = 0; k < n; ++k) {
      at[k] = bytes;
      bytes += in[k].bytes / static_cast<size_t>(count_);
    }
    BufferLease buffer = m.grid->StagingAcross(bytes);
    if (!buffer) return ResourceExhausted("all_to_all: no memory to hold %zu bytes from other processes", bytes);
    std::vector<TensorView> parts(n);
    for (size_t k = 0; k < n; ++k) {
      parts[k] = in[k].View(buffer.get() + at[k]);
      parts[k].dims = part[k].data();
    }
    std::vector<uint32_t> local;
    for (int64_t i = 0; i < count_; ++i) {
      const uint32_t peer = m.group[i];
      if (!m.grid->IsRemote(peer)) {
        local.push_back(peer);
        continue;
      }
      for (size_t k = 0; k < n; ++k) {  // part i of this member's operands, packed
        std::vector<int64_t> src_at(part[k].size(), 0), dst_at = src_at;
        src_at[split_] = i * part[k][split_];
        NEURONMEM_RETURN_IF_ERROR(CopyBox(*m.grid, m.self, m.self, static_cast<const char*>(mine[k].data), in[k].dims,
                                          src_at, buffer.get() + at[k], part[k], dst_at, part[k], in[k].esize));
      }
      NEURONMEM_RETURN_IF_ERROR(m.grid->SendAcross(m.self, site_.Get(), peer, parts.data(), n));
    }
    for (int64_t i = 0; i < count_; ++i) {
      if (!m.grid->IsRemote(m.group[i])) continue;
      NEURONMEM_RETURN_IF_ERROR(m.grid->RecvAcross(m.self, site_.Get(), m.group[i], parts.data(), n));
      NEURONMEM_RETURN_IF_ERROR(take(i, parts.data(), true));
    }
    return m.grid->Exchange(m.self, site_.Get(), local, mine.data(), n, [&](const TensorView* const* members) {
      for (size_t l = 0; l < local.size(); ++l) {
        const int64_t i = std::find(m.group.begin(), m.group.end(), local[l]) - m.group.begin();
        NEURONMEM_RETURN_IF_ERROR(take(i, members[l], false));
      }
      return Status();
    });
  }

 private:
  int64_t split_, concat_, count_;
};

Status CompileAllToAll(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  GroupHead head;
  NEURONMEM_RETURN_IF_ERROR(ReadGroupHead(cx, ModeRule::kReplicaOrPartition, &head));
  int64_t split = 0, concat = 0, count = 0;
  if (!cx.Int("split_dimension", &split) || !cx.Int("concat_dimension", &concat) || !cx.Int("split_count", &count))
    return cx.Invalid("needs the integers split_dimension, concat_dimension and split_count");
  if (count <= 0) return cx.Invalid("split_count must be > 0 (C4)");
  Values v;
  NEURONMEM_RETURN_IF_ERROR(ReadValues(
      cx, cx.num_inputs(),
      [&](size_t i, const Slot& in, const Slot& out) {
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
        return Ok();
      },
      &v));
  *k = std::make_unique<AllToAllKernel>(std::move(head), split, concat, count, std::move(v));
  return Ok();
}

// ---- collective_broadcast ---------------------------------------------------------------------------------

class CollectiveBroadcastKernel final : public MovingKernel {
 public:
  CollectiveBroadcastKernel(GroupHead head, Root root, Values v, std::vector<uint32_t> zeros)
      : MovingKernel(std::move(head), std::move(v)), root_(root), zeros_(std::move(zeros)) {}

  Status Run(Frame& f) const override {
    Member m;
    bool in_group = false;
    NEURONMEM_RETURN_IF_ERROR(Join(f, &m, &in_group));
    if (!in_group) {  // in no group: zeros
      for (size_t k = 0; k < v_.outs.size(); ++k) std::memcpy(f.slots[v_.outs[k]], f.slots[zeros_[k]], v_.out[k].bytes);
      return Status();
    }
    std::vector<size_t> roots;
    NEURONMEM_RETURN_IF_ERROR(root_.ReadAll(f, site_, v_.ins.size(), m.group.size(), &roots));
    // Only the roots' values are read: across OS processes only they travel, down a chain from the root's process.
    std::vector<bool> needed(m.group.size() * v_.ins.size());
    for (size_t k = 0; k < v_.ins.size(); ++k) needed[roots[k] * v_.ins.size() + k] = true;
    const std::vector<TensorView> mine = Views(f, v_.ins, v_.in);
    return m.grid->ShareAcross(
        m.self, site_.Get(), m.group, mine.data(), mine.size(), needed, [&](const TensorView* const* members) {
          for (size_t k = 0; k < v_.ins.size(); ++k)
            NEURONMEM_RETURN_IF_ERROR(
                CopyWhole(*m.grid, m.group[roots[k]], m.self, members[roots[k]][k], f.slots[v_.outs[k]]));
          return Status();
        });
  }

 private:
  Root root_;
  std::vector<uint32_t> zeros_;
};

Status CompileCollectiveBroadcast(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  GroupHead head;
  NEURONMEM_RETURN_IF_ERROR(ReadGroupHead(cx, ModeRule::kReplicaOrPartition, &head));
  size_t n = 0;
  Root root;
  NEURONMEM_RETURN_IF_ERROR(ReadRoot(cx, &n, &root));
  Values v;
  NEURONMEM_RETURN_IF_ERROR(ReadValues(
      cx, n,
      [&](size_t i, const Slot& in, const Slot& out) {
        return SameValueType(in, out) ? Ok() : cx.Invalid("result %zu must have operand %zu's type", i, i);
      },
      &v, "expected one result per value (at least one)"));
  *k = std::make_unique<CollectiveBroadcastKernel>(std::move(head), root, std::move(v), ZerosOf(cx, n));
  return Ok();
}

// ---- collective_permute -----------------------------------------------------------------------------------

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
    const uint32_t from = source < 0 ? 0 : line_.Process(grid, self, source);
    if (grid.SpansProcesses(group)) {
      // Across OS processes each value goes only to its target: sent to a remote one (buffered), received from a
      // remote source; the members of this OS process meet for the rest.
      for (const auto& p : pairs_) {
        const uint32_t to = line_.Process(grid, self, p.second);
        if (p.first == id && grid.IsRemote(to))
          NEURONMEM_RETURN_IF_ERROR(grid.SendAcross(self, site_.Get(), to, &mine, 1));
      }
      if (source >= 0 && grid.IsRemote(from)) {
        BufferLease held = grid.StagingAcross(shape_.bytes);
        if (!held)
          return ResourceExhausted("%.*s: no memory to hold %zu bytes from process %u",
                                   static_cast<int>(site_.Get().location.size()), site_.Get().location.data(),
                                   shape_.bytes, from);
        const TensorView staged = shape_.View(held.get());
        NEURONMEM_RETURN_IF_ERROR(grid.RecvAcross(self, site_.Get(), from, &staged, 1));
        NEURONMEM_RETURN_IF_ERROR(CopyWhole(grid, from, self, staged, f.slots[out_]));
        source = -1;  // nothing to read from the local members
      }
      std::vector<uint32_t> local;
      for (uint32_t g : group)
        if (!grid.IsRemote(g)) local.push_back(g);
      group = std::move(local);
    }
    return grid.Exchange(self, site_.Get(), group, &mine, 1, [&](const TensorView* const* members) {
      if (source < 0) return Status();
      const size_t m = static_cast<size_t>(std::find(group.begin(), group.end(), from) - group.begin());
      return CopyWhole(grid, from, self, members[m][0], f.slots[out_]);
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
  if (const ManualDevices* devices = cx.manual_devices(); devices && !line.replicas)
    NEURONMEM_RETURN_IF_ERROR(devices->MapPairs(cx, &pairs));  // a manual computation's devices
  *k = std::make_unique<CollectivePermuteKernel>(MakeSite(cx, channel), line, std::move(pairs), cx.in(0), cx.out(0),
                                                 ZeroOf(cx, cx.out_slot(0)), Shape(cx.out_slot(0)));
  return Ok();
}

}  // namespace

void RegisterMovingCollectives(OpTable* r) {
  auto& m = *r;
  m["stablehlo.all_gather"] = CompileAllGather;
  m["stablehlo.all_to_all"] = CompileAllToAll;
  m["stablehlo.collective_permute"] = CompileCollectivePermute;
  m["stablehlo.collective_broadcast"] = CompileCollectiveBroadcast;
}

}  // namespace neuronmem::interp::collective
