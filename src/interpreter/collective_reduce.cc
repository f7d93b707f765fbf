// The collectives that reduce over a process group (collective.h): all_reduce, reduce_scatter and
// collective_reduce. Each promotes its operands to their result types, meets its group, and folds the
// members' values in group order with its body.
#include <cinttypes>
#include <cstring>
#include <memory>
#include <vector>

#include "interpreter/collective.h"

namespace neuronmem::interp::collective {
namespace {

// ---- all_reduce -------------------------------------------------------------------------------------------

class AllReduceKernel final : public ReducingKernel {
 public:
  using ReducingKernel::ReducingKernel;

  Status Run(Frame& f) const override {
    Member m;
    std::vector<TensorView> mine;
    NEURONMEM_RETURN_IF_ERROR(Begin(f, &m, &mine));
    // Across OS processes: folded along the group (the same order and bits as below, O(bytes) per process).
    if (m.grid->SpansProcesses(m.group)) {
      std::vector<TensorView> out;
      for (size_t k = 0; k < ops_.size(); ++k) out.push_back(shapes_[k].View(f.slots[ops_[k].out]));
      return m.grid->FoldAcross(m.self, site_.Get(), m.group, mine.data(), out.data(), mine.size(),
                                [&](uint32_t from, const TensorView* values, bool first) {
                                  for (size_t k = 0; k < ops_.size(); ++k)
                                    NEURONMEM_RETURN_IF_ERROR(FoldMember(f, m, from, values[k], k, first));
                                  return Status();
                                });
    }
    return Meet(m, mine, [&](const TensorView* const* members) {
      for (size_t k = 0; k < ops_.size(); ++k) NEURONMEM_RETURN_IF_ERROR(ReduceMembers(f, m, members, k));
      return Status();
    });
  }
};

Status CompileAllReduce(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  GroupHead head;
  NEURONMEM_RETURN_IF_ERROR(ReadGroupHead(cx, ModeRule::kGlobalIds, &head));
  std::vector<ReducedOperand> ops;
  std::vector<Shape> shapes;
  NEURONMEM_RETURN_IF_ERROR(ReadReducedOperands(cx, cx.num_inputs(), &ops, &shapes, true));
  *k = std::make_unique<AllReduceKernel>(std::move(head), std::move(ops), std::move(shapes));
  return Ok();
}

// ---- reduce_scatter ---------------------------------------------------------------------------------------

class ReduceScatterKernel final : public ReducingKernel {
 public:
  ReduceScatterKernel(GroupHead head, int64_t dim, std::vector<ReducedOperand> ops, std::vector<Shape> in_shapes,
                      std::vector<Shape> out_shapes)
      : ReducingKernel(std::move(head), std::move(ops), std::move(in_shapes)), dim_(dim), out_(std::move(out_shapes)) {}

  Status Run(Frame& f) const override {
    Member m;
    std::vector<TensorView> mine;
    NEURONMEM_RETURN_IF_ERROR(Begin(f, &m, &mine));
    const int64_t g = static_cast<int64_t>(m.group.size());
    const int64_t me = static_cast<int64_t>(m.index);
    const std::vector<Shape>& in = shapes_;
    for (size_t k = 0; k < ops_.size(); ++k)
      NEURONMEM_RETURN_IF_ERROR(
          CheckExtent(site_, "the operand's scatter_dimension", in[k].dims[dim_], out_[k].dims[dim_], g));
    // Across OS processes: every operand folded along the group (in group order, O(bytes) per process) into
    // operand-shaped storage of this call, then this member's part of it into the result.
    if (m.grid->SpansProcesses(m.group)) {
      std::vector<std::vector<char>> acc(ops_.size()), tmp(ops_.size());
      std::vector<TensorView> whole;
      for (size_t k = 0; k < ops_.size(); ++k) {
        acc[k].resize(in[k].bytes ? in[k].bytes : 1);
        tmp[k].resize(acc[k].size());
        whole.push_back(in[k].View(acc[k].data()));
      }
      NEURONMEM_RETURN_IF_ERROR(m.grid->FoldAcross(
          m.self, site_.Get(), m.group, mine.data(), whole.data(), mine.size(),
          [&](uint32_t from, const TensorView* values, bool first) {
            for (size_t k = 0; k < ops_.size(); ++k) {
              NEURONMEM_RETURN_IF_ERROR(
                  CopyWhole(*m.grid, from, m.self, values[k], first ? acc[k].data() : tmp[k].data()));
              if (!first) NEURONMEM_RETURN_IF_ERROR(Accumulate(f, ops_[k], in[k], acc[k].data(), tmp[k].data()));
            }
            return Status();
          }));
      for (size_t k = 0; k < ops_.size(); ++k) {
        std::vector<int64_t> src_at(in[k].dims.size(), 0), dst_at = src_at;
        src_at[dim_] = me * out_[k].dims[dim_];
        NEURONMEM_RETURN_IF_ERROR(CopyBox(*m.grid, m.self, m.self, acc[k].data(), in[k].dims, src_at,
                                          f.slots[ops_[k].out], out_[k].dims, dst_at, out_[k].dims, out_[k].esize));
      }
      return Status();
    }
    // Member m's part `me` of every operand, reduced in group order into the result.
    return Meet(m, mine, [&](const TensorView* const* members) {
      for (size_t k = 0; k < ops_.size(); ++k) {
        const ReducedOperand& r = ops_[k];
        std::vector<int64_t> src_at(in[k].dims.size(), 0), dst_at = src_at;
        src_at[dim_] = me * out_[k].dims[dim_];
        for (int64_t i = 0; i < g; ++i) {
          char* dst = i == 0 ? f.slots[r.out] : f.slots[r.scratch];
          NEURONMEM_RETURN_IF_ERROR(CopyBox(*m.grid, m.group[i], m.self, static_cast<const char*>(members[i][k].data),
                                            in[k].dims, src_at, dst, out_[k].dims, dst_at, out_[k].dims,
                                            out_[k].esize));
          if (i > 0) NEURONMEM_RETURN_IF_ERROR(Accumulate(f, r, out_[k], f.slots[r.out], dst));
        }
      }
      return Status();
    });
  }

 private:
  int64_t dim_;
  std::vector<Shape> out_;
};

Status CompileReduceScatter(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  GroupHead head;
  NEURONMEM_RETURN_IF_ERROR(ReadGroupHead(cx, ModeRule::kGlobalIds, &head));
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
  *k = std::make_unique<ReduceScatterKernel>(std::move(head), dim, std::move(ops), std::move(in_shapes),
                                             std::move(out_shapes));
  return Ok();
}

// ---- collective_reduce ------------------------------------------------------------------------------------

// The group's values reduced (in group order) at its root; the other members get zeros.
class CollectiveReduceKernel final : public ReducingKernel {
 public:
  CollectiveReduceKernel(GroupHead head, Root root, std::vector<ReducedOperand> ops, std::vector<uint32_t> zeros,
                         std::vector<Shape> shapes)
      : ReducingKernel(std::move(head), std::move(ops), std::move(shapes)), root_(root), zeros_(std::move(zeros)) {}

  Status Run(Frame& f) const override {
    Member m;
    std::vector<TensorView> mine;
    NEURONMEM_RETURN_IF_ERROR(Begin(f, &m, &mine));
    std::vector<size_t> roots;
    NEURONMEM_RETURN_IF_ERROR(root_.ReadAll(f, site_, ops_.size(), m.group.size(), &roots));
    return Meet(m, mine, [&](const TensorView* const* members) {
      for (size_t k = 0; k < ops_.size(); ++k) {
        if (roots[k] != m.index) {
          std::memcpy(f.slots[ops_[k].out], f.slots[zeros_[k]], shapes_[k].bytes);
          continue;
        }
        NEURONMEM_RETURN_IF_ERROR(ReduceMembers(f, m, members, k));
      }
      return Status();
    });
  }

 private:
  Root root_;
  std::vector<uint32_t> zeros_;
};

Status CompileCollectiveReduce(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  GroupHead head;
  NEURONMEM_RETURN_IF_ERROR(ReadGroupHead(cx, ModeRule::kGlobalIds, &head));
  size_t n = 0;
  Root root;
  NEURONMEM_RETURN_IF_ERROR(ReadRoot(cx, &n, &root));
  std::vector<ReducedOperand> ops;
  std::vector<Shape> shapes;
  NEURONMEM_RETURN_IF_ERROR(ReadReducedOperands(cx, n, &ops, &shapes, true));
  *k = std::make_unique<CollectiveReduceKernel>(std::move(head), root, std::move(ops), ZerosOf(cx, n),
                                                std::move(shapes));
  return Ok();
}

}  // namespace

void RegisterReducingCollectives(OpTable* r) {
  auto& m = *r;
  m["stablehlo.all_reduce"] = CompileAllReduce;
  m["stablehlo.reduce_scatter"] = CompileReduceScatter;
  m["stablehlo.collective_reduce"] = CompileCollectiveReduce;
}

}  // namespace neuronmem::interp::collective
