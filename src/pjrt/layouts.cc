// The layouts extension (PJRT_Layouts_Extension, version 3): the memory layouts of the client's buffers, of a
// topology's and of an executable's outputs. Every buffer of the software NeuronCore is dense major-to-minor
// (minor_to_major = {rank-1, ..., 0}, no tiles, one element per byte for the types narrower than a byte), so each
// layout handed out is that one of some rank. Serialized as an xla.LayoutProto (protobuf wire format: field 1,
// minor_to_major, packed), which is what XLA's PjRtLayout::Serialize writes for such a layout.
#include <string>

#include "pjrt/plugin.h"
#include "stablehlo/ir.h"

namespace neuronmem::pjrt {
namespace {

void InitDenseLayout(size_t rank, PJRT_Layouts_MemoryLayout* out) {
  out->minor_to_major.clear();
  for (size_t i = 0; i < rank; ++i) out->minor_to_major.push_back(static_cast<int64_t>(rank - 1 - i));
}

std::string SerializeLayout(const PJRT_Layouts_MemoryLayout& layout) {
  std::string packed;
  for (int64_t v : layout.minor_to_major) {
    for (uint64_t u = static_cast<uint64_t>(v);; u >>= 7) {
      if (u < 0x80) {
        packed.push_back(static_cast<char>(u));
        break;
      }
      packed.push_back(static_cast<char>((u & 0x7f) | 0x80));
    }
  }
  if (packed.empty()) return {};  // rank 0: every field at its default, the empty message
  std::string out;
  out.push_back(0x0a);  // field 1, length-delimited (packed repeated int64)
  for (uint64_t n = packed.size();; n >>= 7) {
    if (n < 0x80) {
      out.push_back(static_cast<char>(n));
      break;
    }
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
  }
  return out + packed;
}

PJRT_Error* PJRT_Layouts_MemoryLayout_Destroy(PJRT_Layouts_MemoryLayout_Destroy_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Layouts_MemoryLayout_Destroy_Args, layout);
  if (args->layout && !args->layout->owned_by_executable) delete args->layout;
  return nullptr;
}

PJRT_Error* PJRT_Layouts_MemoryLayout_Serialize(PJRT_Layouts_MemoryLayout_Serialize_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Layouts_MemoryLayout_Serialize_Args, serialized_layout_deleter);
  args->serialized_bytes = nullptr;
  args->serialized_bytes_size = 0;
  args->serialized_layout = nullptr;
  args->serialized_layout_deleter = nullptr;
  NM_PJRT_REQUIRE(args->layout);
  NM_PJRT_BEGIN
  HandOutBytes(SerializeLayout(*args->layout), &args->serialized_bytes, &args->serialized_bytes_size,
               &args->serialized_layout, &args->serialized_layout_deleter);
  return nullptr;
  NM_PJRT_END
}

// The default layout of `type` and `dims` (the dense one): checks both as an upload would.
PJRT_Error* DefaultLayout(int64_t type, const int64_t* dims, size_t num_dims, const char* fn,
                          PJRT_Layouts_MemoryLayout** out) {
  ElementType t;
  if (PJRT_Error* e = ShapeOf(type, dims, num_dims, fn, "", &t)) return e;
  uint64_t bytes = 0;
  if (Status s = copy::DenseBytes(t, {dims, num_dims}, &bytes)) return FromStatus(std::move(s), fn);
  auto layout = std::make_unique<PJRT_Layouts_MemoryLayout>();
  InitDenseLayout(num_dims, layout.get());
  *out = layout.release();
  return nullptr;
}

PJRT_Error* PJRT_Layouts_PJRT_Client_GetDefaultLayout(PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args, layout);
  args->layout = nullptr;
  NM_PJRT_REQUIRE(args->client);
  NM_PJRT_BEGIN
  return DefaultLayout(EnumValue(args->type), args->dims, args->num_dims, __func__, &args->layout);
  NM_PJRT_END
}

PJRT_Error* PJRT_Layouts_PJRT_Topology_GetDefaultLayout(PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args, layout);
  args->layout = nullptr;
  NM_PJRT_REQUIRE(args->topology_description);
  NM_PJRT_BEGIN
  return DefaultLayout(EnumValue(args->type), args->dims, args->num_dims, __func__, &args->layout);
  NM_PJRT_END
}

PJRT_Error* PJRT_Layouts_PJRT_Buffer_MemoryLayout(PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args, layout);
  args->layout = nullptr;
  NM_PJRT_REQUIRE(args->buffer);
  NM_PJRT_BEGIN
  auto layout = std::make_unique<PJRT_Layouts_MemoryLayout>();
  InitDenseLayout(args->buffer->buffer.dims().size(), layout.get());
  args->layout = layout.release();
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_Layouts_PJRT_Executable_GetOutputLayouts(PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args, layouts);
  args->num_outputs = 0;
  args->layouts = nullptr;
  NM_PJRT_REQUIRE(args->executable);
  NM_PJRT_BEGIN
  PJRT_Executable* e = args->executable;
  std::call_once(e->layouts_once, [e] {
    const std::vector<size_t>& ranks = e->program->output_ranks;
    e->output_layouts.resize(ranks.size());
    for (size_t i = 0; i < ranks.size(); ++i) {
      InitDenseLayout(ranks[i], &e->output_layouts[i]);
      e->output_layouts[i].owned_by_executable = true;
      e->output_layout_ptrs.push_back(&e->output_layouts[i]);
    }
  });
  args->num_outputs = e->output_layout_ptrs.size();
  args->layouts = e->output_layout_ptrs.data();
  return nullptr;
  NM_PJRT_END
}

// Whether `mode` (an mhlo.layout_mode) asks for the dense layout of `rank`: "default", "auto" (the compiler's
// choice: the dense one), or "{rank-1,...,0}".
bool DenseLayoutMode(std::string_view mode, size_t rank) {
  if (mode == "default" || mode == "auto") return true;
  std::string dense = "{";
  for (size_t i = 0; i < rank; ++i) dense += (i ? "," : "") + std::to_string(rank - 1 - i);
  dense += "}";
  std::string compact;  // spaces removed
  for (char c : mode)
    if (c != ' ') compact.push_back(c);
  return compact == dense;
}

PJRT_Error* CheckLayoutMode(const stablehlo::NamedAttrs& attrs, const stablehlo::Type& type, const char* fn,
                            const char* what, size_t index) {
  const stablehlo::Attribute* a = stablehlo::Find(attrs, "mhlo.layout_mode");
  if (!a) return nullptr;
  const size_t rank = type.kind == stablehlo::Type::Kind::kTensor ? type.dims.size() : 0;
  if (a->kind == stablehlo::Attribute::Kind::kString && DenseLayoutMode(a->str, rank)) return nullptr;
  return ErrorF(PJRT_Error_Code_UNIMPLEMENTED,
                "%s: %s %zu asks for mhlo.layout_mode %.*s; the NeuronCore's buffers are dense major-to-minor only "
                "(\"default\", \"auto\" or the layout {rank-1,...,0})",
                fn, what, index, static_cast<int>(a->text.size()), a->text.data());
}

}  // namespace

PJRT_Error* CheckLayoutModes(const stablehlo::Module& ir, std::string_view entry, const char* fn) {
  const stablehlo::Function* f = ir.FindFunction(entry);
  if (!f) return nullptr;
  for (size_t i = 0; i < f->args.size(); ++i)
    if (PJRT_Error* e = CheckLayoutMode(f->args[i].attrs, f->args[i].type, fn, "argument", i)) return e;
  for (size_t i = 0; i < f->result_attrs.size() && i < f->result_types.size(); ++i)
    if (PJRT_Error* e = CheckLayoutMode(f->result_attrs[i], f->result_types[i], fn, "result", i)) return e;
  return nullptr;
}

PJRT_Layouts_Extension* LayoutsExtension() {
  static PJRT_Layouts_Extension ext = [] {
    PJRT_Layouts_Extension e{};
    e.base.struct_size = PJRT_Layouts_Extension_STRUCT_SIZE;
    e.base.type = PJRT_Extension_Type_Layouts;
    e.base.next = nullptr;
    e.PJRT_Layouts_MemoryLayout_Destroy = PJRT_Layouts_MemoryLayout_Destroy;
    e.PJRT_Layouts_MemoryLayout_Serialize = PJRT_Layouts_MemoryLayout_Serialize;
    e.PJRT_Layouts_PJRT_Client_GetDefaultLayout = PJRT_Layouts_PJRT_Client_GetDefaultLayout;
    e.PJRT_Layouts_PJRT_Buffer_MemoryLayout = PJRT_Layouts_PJRT_Buffer_MemoryLayout;
    e.PJRT_Layouts_PJRT_Topology_GetDefaultLayout = PJRT_Layouts_PJRT_Topology_GetDefaultLayout;
    e.PJRT_Layouts_PJRT_Executable_GetOutputLayouts = PJRT_Layouts_PJRT_Executable_GetOutputLayouts;
    return e;
  }();
  return &ext;
}

}  // namespace neuronmem::pjrt
