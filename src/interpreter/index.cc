// Indexed data movement and sorting: gather, scatter (with its update computation), sort (with its
// comparator), chlo.top_k. Semantics from the StableHLO spec, including the batching dimensions of gather
// and scatter; scatter skips updates whose result index is out of bounds and applies the others in
// row-major order of the updates, as the reference interpreter does.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "interpreter/kernel.h"
#include "interpreter/quant.h"
#include "interpreter/region.h"
#include "interpreter/shape.h"
#include "numerics/float_formats.h"

namespace neuronmem::interp {
namespace {

// Reads the integer list `key` of a dialect attribute (#stablehlo.gather<...>); absent = empty.
bool DialectList(const stablehlo::Attribute& a, std::string_view key, std::vector<int64_t>* out) {
  out->clear();
  const stablehlo::Attribute* e = a.Get(key);
  return !e || CompileCtx::IntListOf(*e, out);
}
// Reads the integer `key` of a dialect attribute; absent = `out` unchanged.
bool DialectInt(const stablehlo::Attribute& a, std::string_view key, int64_t* out) {
  const stablehlo::Attribute* e = a.Get(key);
  if (!e) return true;
  if (e->kind != stablehlo::Attribute::Kind::kInt) return false;
  *out = e->i;
  return true;
}

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Checks that `v` holds distinct axes below `rank`.
bool ValidAxes(const std::vector<int64_t>& v, size_t rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t a : v) {
    if (a < 0 || a >= static_cast<int64_t>(rank) || seen[a]) return false;
    seen[a] = true;
  }
  return true;
}

// How a start index is read from the indices tensor for one batch position: the index vector dimension
// and the tensor's dims/strides.
struct IndexSource {
  uint32_t slot;
  ElementType type;
  std::vector<int64_t> dims, strides;
  int64_t index_vector_dim;
  size_t components;

  // Component c of the start index at batch position `batch` (the indices' dims without index_vector_dim).
  int64_t Get(Frame& f, const std::vector<int64_t>& batch, size_t c) const {
    int64_t off = 0;
    for (size_t d = 0, b = 0; d < dims.size(); ++d) {
      const int64_t i = static_cast<int64_t>(d) == index_vector_dim ? static_cast<int64_t>(c) : batch[b++];
      off += i * strides[d];
    }
    return ReadInt(f.slots[slot] + off * ElementByteSize(type), type);
  }
};

Status MakeIndexSource(CompileCtx& cx, uint32_t slot, int64_t ivd, IndexSource* s) {
  const Slot& sl = cx.slot(slot);
  if (!IsInteger(sl.type)) return cx.Invalid("indices must be integers");
  if (ivd < 0 || ivd > static_cast<int64_t>(sl.dims.size())) return cx.Invalid("index_vector_dim out of range");
  s->slot = slot;
  s->type = sl.type;
  s->dims = sl.dims;
  s->strides = Strides(sl.dims);
  s->index_vector_dim = ivd;
  s->components = ivd < static_cast<int64_t>(sl.dims.size()) ? static_cast<size_t>(sl.dims[ivd]) : 1;
  return Ok();
}

// ---- gather --------------------------------------------------------------------------------------

struct GatherPlan {
  std::vector<int64_t> offset_dims, collapsed, operand_batching, indices_batching, start_index_map, slice_sizes;
  std::vector<int64_t> operand_dims, result_dims, batch_dims;  // batch_dims: result axes not in offset_dims
  std::vector<int64_t> offset_operand_axes;                    // operand axes that take offset_index, in order
  IndexSource idx;
  size_t esize;
  // The result's innermost run_dims axes are offset axes that step through the operand contiguously (its
  // trailing axes in order, each taken whole but the outermost): run_elems elements copied by one memcpy.
  size_t run_dims = 0;
  int64_t run_elems = 1;
};

class GatherKernel final : public Kernel {
 public:
  GatherKernel(uint32_t operand, uint32_t out, GatherPlan p) : operand_(operand), out_(out), p_(std::move(p)) {}
  // One start index per run of run_elems result elements (the whole slice row for an embedding lookup or a
  // paged-attention block), not per element.
  Status Run(Frame& f) const override {
    const size_t outer_rank = p_.result_dims.size() - p_.run_dims;
    int64_t count = 1;  // runs
    for (size_t d = 0; d < p_.result_dims.size(); ++d) count *= d < outer_rank ? p_.result_dims[d] : 1;
    if (p_.run_elems == 0) count = 0;
    const std::vector<int64_t> ostr = Strides(p_.operand_dims);
    const size_t rank = p_.operand_dims.size();
    const size_t run_bytes = static_cast<size_t>(p_.run_elems) * p_.esize;
    std::vector<int64_t> ri(p_.result_dims.size(), 0), batch(p_.batch_dims.size()), full(rank);
    const char* operand = f.slots[operand_];
    char* out = f.slots[out_];
    for (int64_t o = 0; o < count; ++o) {
      for (size_t b = 0; b < p_.batch_dims.size(); ++b) batch[b] = ri[p_.batch_dims[b]];
      std::fill(full.begin(), full.end(), 0);
      for (size_t c = 0; c < p_.start_index_map.size(); ++c) {
        const int64_t d = p_.start_index_map[c];
        const int64_t hi = p_.operand_dims[d] - p_.slice_sizes[d];
        full[d] = std::clamp<int64_t>(p_.idx.Get(f, batch, c), 0, std::max<int64_t>(hi, 0));
      }
      for (size_t i = 0; i < p_.operand_batching.size(); ++i) {
        const int64_t ds = p_.indices_batching[i];
        full[p_.operand_batching[i]] += batch[ds - (ds < p_.idx.index_vector_dim ? 0 : 1)];
      }
      for (size_t i = 0; i < p_.offset_dims.size(); ++i) full[p_.offset_operand_axes[i]] += ri[p_.offset_dims[i]];
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d) off += full[d] * ostr[d];
      std::memcpy(out + o * run_bytes, operand + off * p_.esize, run_bytes);
      for (size_t d = outer_rank; d-- > 0;) {
        if (++ri[d] < p_.result_dims[d]) break;
        ri[d] = 0;
      }
    }
    return Status();
  }

 private:
  uint32_t operand_, out_;
  GatherPlan p_;
};

// Gather from `operand_slot` into `result_slot` (the op's own slots, or f32 copies for quantized types).
Status CompileGatherWith(CompileCtx& cx, uint32_t operand_slot, uint32_t result_slot, std::vector<int64_t> slice_sizes,
                         std::unique_ptr<Kernel>* k) {
  const stablehlo::Attribute* dn = cx.Attr("dimension_numbers");
  if (!dn) return cx.Invalid("missing dimension_numbers");
  GatherPlan p;
  int64_t ivd = 0;  // the printer drops index_vector_dim when it is 0
  if (!DialectList(*dn, "offset_dims", &p.offset_dims) || !DialectList(*dn, "collapsed_slice_dims", &p.collapsed) ||
      !DialectList(*dn, "operand_batching_dims", &p.operand_batching) ||
      !DialectList(*dn, "start_indices_batching_dims", &p.indices_batching) ||
      !DialectList(*dn, "start_index_map", &p.start_index_map) || !DialectInt(*dn, "index_vector_dim", &ivd) || ivd < 0)
    return cx.Invalid("malformed dimension_numbers");
  const Slot operand = cx.slot(operand_slot), indices = cx.in_slot(1), result = cx.slot(result_slot);
  p.operand_dims = operand.dims;
  p.result_dims = result.dims;
  p.slice_sizes = std::move(slice_sizes);
  p.esize = ElementByteSize(operand.type);
  const size_t rank = operand.dims.size();
  NEURONMEM_RETURN_IF_ERROR(MakeIndexSource(cx, cx.in(1), ivd, &p.idx));
  // The spec's constraints (C1)-(C23) that the kernel relies on.
  if (operand.type != result.type) return cx.Invalid("operand and result element types differ");
  if (p.slice_sizes.size() != rank) return cx.Invalid("slice_sizes must have %zu entries", rank);
  if (rank != p.offset_dims.size() + p.collapsed.size() + p.operand_batching.size())
    return cx.Invalid(
        "rank(operand) must be size(offset_dims) + size(collapsed_slice_dims) + "
        "size(operand_batching_dims)");
  std::vector<int64_t> no_offset = p.collapsed;
  no_offset.insert(no_offset.end(), p.operand_batching.begin(), p.operand_batching.end());
  if (!ValidAxes(no_offset, rank) || !ValidAxes(p.start_index_map, rank) ||
      !ValidAxes(p.offset_dims, result.dims.size()) || !ValidAxes(p.indices_batching, indices.dims.size()) ||
      p.operand_batching.size() != p.indices_batching.size() || Contains(p.indices_batching, ivd))
    return cx.Invalid("malformed dimension_numbers");
  if (p.start_index_map.size() != p.idx.components)
    return cx.Invalid("start_index_map must have one entry per index vector component");
  for (size_t d = 0; d < rank; ++d) {
    if (p.slice_sizes[d] < 0 || p.slice_sizes[d] > operand.dims[d]) return cx.Invalid("slice_sizes out of range");
    if (Contains(no_offset, static_cast<int64_t>(d)) && p.slice_sizes[d] > 1)
      return cx.Invalid("collapsed and batching slice sizes must be at most 1");
    if (!Contains(no_offset, static_cast<int64_t>(d))) p.offset_operand_axes.push_back(static_cast<int64_t>(d));
  }
  for (size_t i = 0; i < p.operand_batching.size(); ++i)
    if (operand.dims[p.operand_batching[i]] != indices.dims[p.indices_batching[i]])
      return cx.Invalid("batching dimension sizes differ");
  // (C22): the result shape.
  std::vector<int64_t> expect(result.dims.size(), -1);
  for (size_t i = 0; i < p.offset_dims.size(); ++i) expect[p.offset_dims[i]] = p.slice_sizes[p.offset_operand_axes[i]];
  std::vector<int64_t> batch_sizes;
  for (size_t d = 0; d < indices.dims.size(); ++d)
    if (static_cast<int64_t>(d) != ivd) batch_sizes.push_back(indices.dims[d]);
  for (size_t d = 0, b = 0; d < result.dims.size(); ++d) {
    if (expect[d] >= 0) continue;
    p.batch_dims.push_back(static_cast<int64_t>(d));
    if (b >= batch_sizes.size()) return cx.Invalid("the result shape does not match the gather");
    expect[d] = batch_sizes[b++];
  }
  if (p.batch_dims.size() != batch_sizes.size() || expect != result.dims)
    return cx.Invalid("the result shape does not match the gather");
  // The contiguous run: result axis R-k is offset axis i taking operand axis rank-k, for k = 1, 2, ... while
  // every axis inside it is taken whole.
  const size_t result_rank = result.dims.size();
  for (size_t k = 1; k <= result_rank && k <= rank; ++k) {
    const int64_t axis = static_cast<int64_t>(result_rank - k);
    const auto it = std::find(p.offset_dims.begin(), p.offset_dims.end(), axis);
    if (it == p.offset_dims.end() ||
        p.offset_operand_axes[static_cast<size_t>(it - p.offset_dims.begin())] != static_cast<int64_t>(rank - k))
      break;
    p.run_dims = k;
    p.run_elems *= result.dims[static_cast<size_t>(axis)];
    if (p.slice_sizes[rank - k] != operand.dims[rank - k]) break;
  }
  *k = std::make_unique<GatherKernel>(operand_slot, result_slot, std::move(p));
  return Ok();
}

Status CompileGather(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 2 || cx.num_outputs() != 1) return cx.Invalid("expected operand and start_indices");
  std::vector<int64_t> slice_sizes;
  if (!cx.IntList("slice_sizes", &slice_sizes)) return cx.Invalid("missing slice_sizes");
  if (cx.in_slot(0).quant || cx.out_slot(0).quant) {
    // The spec's quantized gather: dequantize, gather, quantize.
    return CompileQuantized(
        cx, k, [&](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* inner) {
          return CompileGatherWith(c, in[0], out, slice_sizes, inner);
        });
  }
  return CompileGatherWith(cx, cx.in(0), cx.out(0), std::move(slice_sizes), k);
}

}  // namespace

Status GatherResultDims(CompileCtx& cx, const std::vector<int64_t>& slice_sizes, size_t result_rank,
                        std::vector<int64_t>* dims) {
  const stablehlo::Attribute* dn = cx.Attr("dimension_numbers");
  std::vector<int64_t> offset_dims, collapsed, operand_batching;
  int64_t ivd = 0;
  if (!dn || !DialectList(*dn, "offset_dims", &offset_dims) || !DialectList(*dn, "collapsed_slice_dims", &collapsed) ||
      !DialectList(*dn, "operand_batching_dims", &operand_batching) || !DialectInt(*dn, "index_vector_dim", &ivd) ||
      cx.num_inputs() < 2)
    return cx.Invalid("malformed dimension_numbers");
  const std::vector<int64_t>& indices = cx.in_slot(1).dims;
  std::vector<int64_t> offsets, batch;  // slice sizes of the offset axes; sizes of the batch axes
  for (size_t d = 0; d < slice_sizes.size(); ++d)
    if (!Contains(collapsed, static_cast<int64_t>(d)) && !Contains(operand_batching, static_cast<int64_t>(d)))
      offsets.push_back(slice_sizes[d]);
  for (size_t d = 0; d < indices.size(); ++d)
    if (static_cast<int64_t>(d) != ivd) batch.push_back(indices[d]);
  if (offsets.size() != offset_dims.size() || offsets.size() + batch.size() != result_rank ||
      !ValidAxes(offset_dims, result_rank))
    return cx.Invalid("the dimension numbers do not describe a result of rank %zu", result_rank);
  dims->assign(result_rank, -1);
  for (size_t i = 0; i < offset_dims.size(); ++i) (*dims)[offset_dims[i]] = offsets[i];
  for (size_t d = 0, b = 0; d < result_rank; ++d)
    if ((*dims)[d] < 0) (*dims)[d] = batch[b++];
  return Ok();
}

namespace {

// dynamic_gather(operand, start_indices, slice_sizes): gather with slice_sizes from a constant operand.
Status CompileDynamicGather(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 3 || cx.num_outputs() != 1) return cx.Invalid("expected operand, start_indices, slice_sizes");
  std::vector<int64_t> slice_sizes;
  NEURONMEM_RETURN_IF_ERROR(ConstantInts(cx, 2, "slice_sizes", &slice_sizes));
  if (cx.in_slot(0).quant || cx.out_slot(0).quant) {  // as gather: dequantize, gather, quantize
    return CompileQuantized(
        cx, k, [&](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* inner) {
          return CompileGatherWith(c, in[0], out, slice_sizes, inner);
        });
  }
  return CompileGatherWith(cx, cx.in(0), cx.out(0), std::move(slice_sizes), k);
}

// ---- scatter -------------------------------------------------------------------------------------

struct ScatterPlan {
  std::vector<int64_t> update_window_dims, inserted, input_batching, indices_batching, to_operand;
  std::vector<int64_t> input_dims, update_dims, scatter_dims;  // scatter_dims: update axes not window axes
  std::vector<int64_t> window_input_axes;                      // input axes that take the window index
  IndexSource idx;
  std::vector<uint32_t> inputs, updates, results;
  std::vector<size_t> esize;
  // The body returns the update (a replacement, as a KV-cache write), and the updates' innermost run_dims axes
  // are window axes that step through the input's trailing axes, each taken whole but the outermost:
  // run_elems updates land contiguously and are copied at once (run_dims 0: element by element).
  size_t run_dims = 0;
  int64_t run_elems = 1;
};

class ScatterKernel final : public Kernel {
 public:
  ScatterKernel(ScatterPlan p, ScalarRegion body, uint32_t stage)
      : p_(std::move(p)), body_(std::move(body)), stage_(stage) {}
  Status Run(Frame& f) const override {
    const size_t n = p_.inputs.size();
    int64_t count = 1, ucount = 1;
    for (int64_t d : p_.input_dims) count *= d;
    for (int64_t d : p_.update_dims) ucount *= d;
    for (size_t k = 0; k < n; ++k)
      if (f.slots[p_.results[k]] != f.slots[p_.inputs[k]])
        std::memmove(f.slots[p_.results[k]], f.slots[p_.inputs[k]], count * p_.esize[k]);
    if (ucount == 0) return Status();
    Walk w(p_);
    if (p_.run_dims > 0) return RunReplacement(f, ucount, &w);
    std::vector<const char*> args(2 * n);
    std::vector<char*> dst(n);
    for (int64_t u = 0; u < ucount; ++u) {
      if (u > 0) w.Next(p_.update_dims.size());
      int64_t off = 0;
      if (!w.Offset(f, p_, &off)) continue;
      for (size_t k = 0; k < n; ++k) {
        dst[k] = f.slots[p_.results[k]] + off * p_.esize[k];
        args[k] = dst[k];
        args[n + k] = f.slots[p_.updates[k]] + u * p_.esize[k];
      }
      NEURONMEM_RETURN_IF_ERROR(body_.Call(f, args.data()));
      body_.StoreResults(f, dst.data(), p_.esize.data(), stage_);
    }
    return Status();
  }

 private:
  // The update index being applied and the input index it lands on.
  struct Walk {
    explicit Walk(const ScatterPlan& p)
        : ui(p.update_dims.size(), 0),
          batch(p.scatter_dims.size()),
          full(p.input_dims.size()),
          str(Strides(p.input_dims)),
          update_dims(p.update_dims) {}
    // Advances the update index over its first `axes` axes (row-major).
    void Next(size_t axes) {
      for (size_t d = axes; d-- > 0;) {
        if (++ui[d] < update_dims[d]) break;
        ui[d] = 0;
      }
    }
    // The input index of update `ui` (in `full`) and its element offset; false when it is out of bounds.
    bool Offset(Frame& f, const ScatterPlan& p, int64_t* off) {
      for (size_t b = 0; b < p.scatter_dims.size(); ++b) batch[b] = ui[p.scatter_dims[b]];
      std::fill(full.begin(), full.end(), 0);
      for (size_t c = 0; c < p.to_operand.size(); ++c) {
        const int64_t d = p.to_operand[c];
        const int64_t v = p.idx.Get(f, batch, c);
        // A start index beyond +-dim is out of bounds whatever is added to it (and cannot overflow).
        if (v < -p.input_dims[d] || v > p.input_dims[d]) return false;
        full[d] = v;
      }
      for (size_t i = 0; i < p.input_batching.size(); ++i) {
        const int64_t ds = p.indices_batching[i];
        full[p.input_batching[i]] += batch[ds - (ds < p.idx.index_vector_dim ? 0 : 1)];
      }
      for (size_t i = 0; i < p.update_window_dims.size(); ++i)
        full[p.window_input_axes[i]] += ui[p.update_window_dims[i]];
      *off = 0;
      bool in_bounds = true;
      for (size_t d = 0; d < full.size(); ++d) {
        if (full[d] < 0 || full[d] >= p.input_dims[d]) in_bounds = false;
        *off += full[d] * str[d];
      }
      return in_bounds;
    }
    std::vector<int64_t> ui, batch, full, str;
    const std::vector<int64_t>& update_dims;
  };

  // A replacement scatter with contiguous runs: per run one index computation and one copy when the whole run is
  // in bounds (its first and last elements are), else element by element as the spec skips each one outside.
  Status RunReplacement(Frame& f, int64_t ucount, Walk* w) const {
    const size_t es = p_.esize[0], outer_axes = p_.update_dims.size() - p_.run_dims;
    char* out = f.slots[p_.results[0]];
    const char* upd = f.slots[p_.updates[0]];
    for (int64_t u = 0; u < ucount; u += p_.run_elems) {
      if (u > 0) w->Next(outer_axes);
      int64_t first = 0, last = 0;
      const bool first_in = w->Offset(f, p_, &first);
      for (size_t d = outer_axes; d < w->ui.size(); ++d) w->ui[d] = p_.update_dims[d] - 1;
      const bool last_in = w->Offset(f, p_, &last);
      if (first_in && last_in && last - first == p_.run_elems - 1) {
        std::memcpy(out + first * es, upd + u * es, static_cast<size_t>(p_.run_elems) * es);
      } else {
        for (size_t d = outer_axes; d < w->ui.size(); ++d) w->ui[d] = 0;
        for (int64_t e = 0; e < p_.run_elems; ++e) {
          if (e > 0) w->Next(w->ui.size());
          int64_t off = 0;
          if (w->Offset(f, p_, &off)) std::memcpy(out + off * es, upd + (u + e) * es, es);
        }
      }
      for (size_t d = outer_axes; d < w->ui.size(); ++d) w->ui[d] = 0;
    }
    return Status();
  }

  ScatterPlan p_;
  ScalarRegion body_;
  uint32_t stage_;
};

// Whether the scatter's body is `return %update` (its second block argument).
bool ReturnsUpdate(const stablehlo::Operation& op) {
  if (op.regions.size() != 1 || op.regions[0].blocks.size() != 1) return false;
  const stablehlo::Block& b = op.regions[0].blocks[0];
  if (b.args.size() != 2 || b.ops.size() != 1) return false;
  const stablehlo::Operation& ret = b.ops[0];
  return (ret.name == "stablehlo.return" || ret.name == "func.return") && ret.operands.size() == 1 &&
         ret.operands[0].name == b.args[1].name && ret.operands[0].index == 0;
}

Status CompileScatter(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  const size_t n = cx.num_outputs();
  if (n == 0 || cx.num_inputs() != 2 * n + 1) return cx.Invalid("expected N inputs, scatter_indices, N updates");
  const stablehlo::Attribute* dn = cx.Attr("scatter_dimension_numbers");
  if (!dn) return cx.Invalid("missing scatter_dimension_numbers");
  ScatterPlan p;
  int64_t ivd = -1;
  if (!DialectList(*dn, "update_window_dims", &p.update_window_dims) ||
      !DialectList(*dn, "inserted_window_dims", &p.inserted) ||
      !DialectList(*dn, "input_batching_dims", &p.input_batching) ||
      !DialectList(*dn, "scatter_indices_batching_dims", &p.indices_batching) ||
      !DialectList(*dn, "scatter_dims_to_operand_dims", &p.to_operand))
    return cx.Invalid("malformed scatter_dimension_numbers");
  const Slot& indices = cx.in_slot(n);
  // index_vector_dim defaults to 0 when the attribute omits it (the printer drops the default).
  ivd = 0;
  if (!DialectInt(*dn, "index_vector_dim", &ivd)) return cx.Invalid("malformed index_vector_dim");
  NEURONMEM_RETURN_IF_ERROR(MakeIndexSource(cx, cx.in(n), ivd, &p.idx));
  const Slot in0 = cx.in_slot(0), up0 = cx.in_slot(n + 1);
  p.input_dims = in0.dims;
  p.update_dims = up0.dims;
  const size_t rank = in0.dims.size();
  std::vector<ScalarType> types;
  for (size_t i = 0; i < n; ++i) {
    const Slot& in = cx.in_slot(i);
    const Slot& up = cx.in_slot(n + 1 + i);
    const Slot& out = cx.out_slot(i);
    // Quantized: the body combines quantized values (dequantize, compute, quantize per update).
    const ScalarType t = ScalarType::Of(in);
    if (in.dims != in0.dims || up.dims != up0.dims || out.dims != in0.dims || ScalarType::Of(out) != t ||
        ScalarType::Of(up) != t)
      return cx.Invalid("inputs, updates and results must agree in shape and element type");
    p.inputs.push_back(cx.in(i));
    p.updates.push_back(cx.in(n + 1 + i));
    p.results.push_back(cx.out(i));
    p.esize.push_back(ElementByteSize(in.type));
    types.push_back(t);
  }
  std::vector<int64_t> no_window = p.inserted;
  no_window.insert(no_window.end(), p.input_batching.begin(), p.input_batching.end());
  if (rank != p.update_window_dims.size() + no_window.size() || !ValidAxes(no_window, rank) ||
      !ValidAxes(p.to_operand, rank) || !ValidAxes(p.update_window_dims, up0.dims.size()) ||
      !ValidAxes(p.indices_batching, indices.dims.size()) || p.input_batching.size() != p.indices_batching.size() ||
      Contains(p.indices_batching, ivd) || p.to_operand.size() != p.idx.components)
    return cx.Invalid("malformed scatter_dimension_numbers");
  for (size_t d = 0; d < rank; ++d)
    if (!Contains(no_window, static_cast<int64_t>(d))) p.window_input_axes.push_back(static_cast<int64_t>(d));
  // (C4): the updates' shape.
  std::vector<int64_t> scatter_sizes;
  for (size_t d = 0; d < indices.dims.size(); ++d)
    if (static_cast<int64_t>(d) != ivd) scatter_sizes.push_back(indices.dims[d]);
  for (size_t d = 0, s = 0; d < up0.dims.size(); ++d) {
    if (Contains(p.update_window_dims, static_cast<int64_t>(d))) continue;
    p.scatter_dims.push_back(static_cast<int64_t>(d));
    if (s >= scatter_sizes.size() || up0.dims[d] != scatter_sizes[s++])
      return cx.Invalid("the updates' shape does not match scatter_indices");
  }
  if (p.scatter_dims.size() != scatter_sizes.size())
    return cx.Invalid("the updates' shape does not match scatter_indices");
  for (size_t i = 0; i < p.update_window_dims.size(); ++i)
    if (up0.dims[p.update_window_dims[i]] > in0.dims[p.window_input_axes[i]])
      return cx.Invalid("an update window is larger than the input");
  std::vector<ScalarType> arg_types = types;
  arg_types.insert(arg_types.end(), types.begin(), types.end());
  ScalarRegion body;
  NEURONMEM_RETURN_IF_ERROR(body.Compile(cx, 0, arg_types, types));
  const uint32_t stage = ScalarRegion::AddStage(cx, n);
  // Contiguous runs of a replacement: update axis U-k is window axis i taking input axis R-k, for k = 1, 2, ...
  // while every axis inside it is taken whole.
  const size_t urank = up0.dims.size();
  for (size_t k = 1; n == 1 && ReturnsUpdate(cx.op()) && k <= urank && k <= rank; ++k) {
    const auto it =
        std::find(p.update_window_dims.begin(), p.update_window_dims.end(), static_cast<int64_t>(urank - k));
    if (it == p.update_window_dims.end() ||
        p.window_input_axes[static_cast<size_t>(it - p.update_window_dims.begin())] != static_cast<int64_t>(rank - k))
      break;
    p.run_dims = k;
    p.run_elems *= up0.dims[urank - k];
    if (up0.dims[urank - k] != in0.dims[rank - k]) break;
  }
  for (size_t i = 0; i < n; ++i) cx.InPlace(i, i);  // at an input's last use only the updated elements are written
  *k = std::make_unique<ScatterKernel>(std::move(p), std::move(body), stage);
  return Ok();
}

// ---- sort ----------------------------------------------------------------------------------------

class SortKernel final : public Kernel {
 public:
  SortKernel(std::vector<uint32_t> in, std::vector<uint32_t> out, std::vector<size_t> esize, std::vector<int64_t> dims,
             size_t axis, ScalarRegion cmp, uint32_t perm)
      : in_(std::move(in)),
        out_(std::move(out)),
        esize_(std::move(esize)),
        dims_(std::move(dims)),
        axis_(axis),
        cmp_(std::move(cmp)),
        perm_(perm) {}

  Status Run(Frame& f) const override {
    const size_t n = in_.size();
    int64_t count = 1;
    for (int64_t d : dims_) count *= d;
    if (count == 0) return Status();
    const int64_t len = dims_[axis_];
    int64_t inner = 1;
    for (size_t d = axis_ + 1; d < dims_.size(); ++d) inner *= dims_[d];
    const int64_t outer = count / (len * inner);
    int64_t* perm = reinterpret_cast<int64_t*>(f.slots[perm_]);
    std::vector<const char*> args(2 * n);
    Status failure;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * len * inner + i;
        std::iota(perm, perm + len, int64_t{0});
        // The comparator's arguments are (lhs0, rhs0, lhs1, rhs1, ...). A stable sort is a valid result of
        // an unstable one, and never reads out of bounds if the comparator is not a strict weak order.
        std::stable_sort(perm, perm + len, [&](int64_t a, int64_t b) {
          if (failure) return false;
          for (size_t k = 0; k < n; ++k) {
            args[2 * k] = f.slots[in_[k]] + (base + a * inner) * esize_[k];
            args[2 * k + 1] = f.slots[in_[k]] + (base + b * inner) * esize_[k];
          }
          Status s = cmp_.Call(f, args.data());
          if (s) {
            failure = std::move(s);
            return false;
          }
          return *reinterpret_cast<const bool*>(cmp_.Result(f, 0));
        });
        if (failure) return failure;
        for (size_t k = 0; k < n; ++k)
          for (int64_t j = 0; j < len; ++j)
            std::memcpy(f.slots[out_[k]] + (base + j * inner) * esize_[k],
                        f.slots[in_[k]] + (base + perm[j] * inner) * esize_[k], esize_[k]);
      }
    }
    return Status();
  }

 private:
  std::vector<uint32_t> in_, out_;
  std::vector<size_t> esize_;
  std::vector<int64_t> dims_;
  size_t axis_;
  ScalarRegion cmp_;
  uint32_t perm_;
};

Status CompileSort(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  const size_t n = cx.num_outputs();
  if (n == 0 || cx.num_inputs() != n) return cx.Invalid("expected as many results as inputs");
  const Slot in0 = cx.in_slot(0);
  const int64_t rank = static_cast<int64_t>(in0.dims.size());
  int64_t dim = -1;
  if (!cx.Int("dimension", &dim)) return cx.Invalid("missing dimension");
  if (dim < -rank || dim >= rank) return cx.Invalid("dimension %lld out of range", static_cast<long long>(dim));
  if (dim < 0) dim += rank;
  std::vector<uint32_t> ins, outs;
  std::vector<size_t> esize;
  std::vector<ScalarType> arg_types;
  for (size_t i = 0; i < n; ++i) {
    const Slot& in = cx.in_slot(i);
    const Slot& out = cx.out_slot(i);
    // Quantized: the comparator compares quantized values (as their dequantized values).
    if (in.dims != in0.dims || out.dims != in.dims || ScalarType::Of(out) != ScalarType::Of(in))
      return cx.Invalid("inputs and results must have the same shape and types");
    ins.push_back(cx.in(i));
    outs.push_back(cx.out(i));
    esize.push_back(ElementByteSize(in.type));
    arg_types.push_back(ScalarType::Of(in));
    arg_types.push_back(ScalarType::Of(in));
  }
  ScalarRegion cmp;
  NEURONMEM_RETURN_IF_ERROR(cmp.Compile(cx, 0, arg_types, {ElementType::kPred}));
  const uint32_t perm = cx.AddScratch(ElementType::kS64, {rank ? in0.dims[dim] : 1});
  *k = std::make_unique<SortKernel>(std::move(ins), std::move(outs), std::move(esize), in0.dims,
                                    static_cast<size_t>(dim), std::move(cmp), perm);
  return Ok();
}

// ---- chlo.top_k ----------------------------------------------------------------------------------

// a > b in the order top_k sorts by: TOTALORDER for floats, the value for integers.
template <typename T>
bool TotalGreater(T a, T b) {
  if constexpr (kIsFloat<T>) {
    return TotalOrderKey(a) > TotalOrderKey(b);
  } else {
    return a > b;
  }
}

// The k largest elements of each row (last dim) in descending order by `greater`, ties in index order, and
// their indices (chlo.top_k; its decomposition sorts stably with a TOTALORDER greater-than).
template <typename T, typename Greater>
void TopKRows(const T* in, T* values, int32_t* indices, int64_t* perm, int64_t rows, int64_t len, int64_t k,
              Greater greater) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = in + r * len;
    std::iota(perm, perm + len, int64_t{0});
    std::stable_sort(perm, perm + len, [&](int64_t a, int64_t b) { return greater(row[a], row[b]); });
    for (int64_t j = 0; j < k; ++j) {
      values[r * k + j] = row[perm[j]];
      indices[r * k + j] = static_cast<int32_t>(perm[j]);
    }
  }
}

// TOTALORDER for floats, the value for integers (and for the storage integers of a per-tensor quantized type,
// whose order is the dequantized values' order: scales are positive).
template <typename T>
class TopKKernel final : public Kernel {
 public:
  TopKKernel(uint32_t in, uint32_t values, uint32_t indices, int64_t rows, int64_t len, int64_t k, uint32_t perm)
      : in_(in), values_(values), indices_(indices), rows_(rows), len_(len), k_(k), perm_(perm) {}
  Status Run(Frame& f) const override {
    TopKRows(Ptr<T>(f, in_), Ptr<T>(f, values_), Ptr<int32_t>(f, indices_), Ptr<int64_t>(f, perm_), rows_, len_, k_,
             [](T a, T b) { return TotalGreater(a, b); });
    return Status();
  }

 private:
  uint32_t in_, values_, indices_;
  int64_t rows_, len_, k_;
  uint32_t perm_;
};

// f8/f6/f4 (one byte per element): TOTALORDER of the values each encoding stands for (exact f32s), through a
// table of the 256 encodings' keys; the values are copied as they are.
class SmallFloatTopKKernel final : public Kernel {
 public:
  SmallFloatTopKKernel(ElementType type, uint32_t in, uint32_t values, uint32_t indices, int64_t rows, int64_t len,
                       int64_t k, uint32_t perm)
      : in_(in), values_(values), indices_(indices), rows_(rows), len_(len), k_(k), perm_(perm) {
    const numerics::FloatFormat* format = numerics::SmallFloatFormat(type);
    for (uint32_t b = 0; b < 256; ++b) keys_[b] = TotalOrderKey(numerics::DecodeFloat(*format, b));
  }
  Status Run(Frame& f) const override {
    TopKRows(Ptr<uint8_t>(f, in_), Ptr<uint8_t>(f, values_), Ptr<int32_t>(f, indices_), Ptr<int64_t>(f, perm_), rows_,
             len_, k_, [this](uint8_t a, uint8_t b) { return keys_[a] > keys_[b]; });
    return Status();
  }

 private:
  uint32_t in_, values_, indices_;
  int64_t rows_, len_, k_;
  uint32_t perm_;
  int64_t keys_[256];
};

Status CompileTopK(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 2) return cx.Invalid("expected one operand, values and indices");
  const Slot in = cx.in_slot(0), values = cx.out_slot(0), indices = cx.out_slot(1);
  if (in.dims.empty()) return cx.Invalid("the operand must have rank >= 1");
  if (in.quant && in.quant->axis == static_cast<int32_t>(in.dims.size()) - 1)
    return cx.Invalid("an operand quantized along its last dim cannot be sorted: its values have different scales");
  if (!SameQuant(in.quant, values.quant)) return cx.Invalid("the values must have the operand's quantized type");
  int64_t kk = -1;
  if (!cx.Int("k", &kk)) return cx.Invalid("missing k");
  const int64_t len = in.dims.back();
  if (kk < 0 || kk > len)
    return cx.Invalid("k = %lld is outside [0, %lld]", static_cast<long long>(kk), static_cast<long long>(len));
  std::vector<int64_t> rdims = in.dims;
  rdims.back() = kk;
  if (values.dims != rdims || values.type != in.type || indices.dims != rdims || indices.type != ElementType::kS32)
    return cx.Invalid("results must be the operand's type and i32 with last dim k");
  const int64_t rows = len ? in.count / len : 0;
  const uint32_t perm = cx.AddScratch(ElementType::kS64, {std::max<int64_t>(len, 1)});
  if (IsSmallFloat(in.type)) {
    *k = std::make_unique<SmallFloatTopKKernel>(in.type, cx.in(0), cx.out(0), cx.out(1), rows, len, kk, perm);
    return Ok();
  }
  *k = Dispatch(in.type, [&](auto tag) -> std::unique_ptr<Kernel> {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_void_v<T> || kIsComplex<T>) {  // complex numbers have no order; i1: true > false
      return nullptr;
    } else {
      return std::make_unique<TopKKernel<T>>(cx.in(0), cx.out(0), cx.out(1), rows, len, kk, perm);
    }
  });
  if (!*k) return cx.Unsupported("element type %s is not supported", std::string(ElementTypeName(in.type)).c_str());
  return Ok();
}

}  // namespace

void RegisterIndexOps(OpTable* r) {
  (*r)["stablehlo.gather"] = CompileGather;
  (*r)["stablehlo.dynamic_gather"] = CompileDynamicGather;
  (*r)["stablehlo.scatter"] = CompileScatter;
  (*r)["stablehlo.sort"] = CompileSort;
  (*r)["chlo.top_k"] = CompileTopK;
}

}  // namespace neuronmem::interp
