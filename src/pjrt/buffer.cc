// PJRT buffers over copy::Buffer: uploads (BufferFromHostBuffer), queries, copies between memories,
// ToHostBuffer, and the element-type and layout conversions.
#include <string>

#include "copy/copy_engine.h"
#include "pjrt/plugin.h"

namespace neuronmem::pjrt {

namespace {

struct TypePair {
  PJRT_Buffer_Type pjrt;
  ElementType type;
};
constexpr TypePair kTypes[] = {
    {PJRT_Buffer_Type_PRED, ElementType::kPred},
    {PJRT_Buffer_Type_S8, ElementType::kS8},
    {PJRT_Buffer_Type_S16, ElementType::kS16},
    {PJRT_Buffer_Type_S32, ElementType::kS32},
    {PJRT_Buffer_Type_S64, ElementType::kS64},
    {PJRT_Buffer_Type_U8, ElementType::kU8},
    {PJRT_Buffer_Type_U16, ElementType::kU16},
    {PJRT_Buffer_Type_U32, ElementType::kU32},
    {PJRT_Buffer_Type_U64, ElementType::kU64},
    {PJRT_Buffer_Type_F16, ElementType::kF16},
    {PJRT_Buffer_Type_F32, ElementType::kF32},
    {PJRT_Buffer_Type_F64, ElementType::kF64},
    {PJRT_Buffer_Type_BF16, ElementType::kBF16},
    {PJRT_Buffer_Type_C64, ElementType::kC64},
    {PJRT_Buffer_Type_C128, ElementType::kC128},
    {PJRT_Buffer_Type_F8E5M2, ElementType::kF8E5M2},
    {PJRT_Buffer_Type_F8E4M3FN, ElementType::kF8E4M3FN},
    {PJRT_Buffer_Type_F8E4M3B11FNUZ, ElementType::kF8E4M3B11FNUZ},
    {PJRT_Buffer_Type_F8E5M2FNUZ, ElementType::kF8E5M2FNUZ},
    {PJRT_Buffer_Type_F8E4M3FNUZ, ElementType::kF8E4M3FNUZ},
    {PJRT_Buffer_Type_S4, ElementType::kS4},
    {PJRT_Buffer_Type_U4, ElementType::kU4},
    {PJRT_Buffer_Type_S2, ElementType::kS2},
    {PJRT_Buffer_Type_U2, ElementType::kU2},
    {PJRT_Buffer_Type_F8E4M3, ElementType::kF8E4M3},
    {PJRT_Buffer_Type_F8E3M4, ElementType::kF8E3M4},
    {PJRT_Buffer_Type_F8E8M0FNU, ElementType::kF8E8M0FNU},
    {PJRT_Buffer_Type_F4E2M1FN, ElementType::kF4E2M1FN},
};

// FromPjrtType's table, indexed by PJRT_Buffer_Type (an upload looks its type up: no search on that path).
constexpr int kNumPjrtTypes = PJRT_Buffer_Type_U1 + 1;
struct PjrtTypeTable {
  ElementType of[kNumPjrtTypes] = {};
  constexpr PjrtTypeTable() {
    for (const TypePair& p : kTypes) of[p.pjrt] = p.type;
  }
};
constexpr PjrtTypeTable kFromPjrt;

}  // namespace

ElementType FromPjrtType(int64_t t) { return t >= 0 && t < kNumPjrtTypes ? kFromPjrt.of[t] : ElementType::kInvalid; }

PJRT_Buffer_Type ToPjrtType(ElementType t) {
  for (const TypePair& p : kTypes)
    if (p.type == t) return p.pjrt;
  return PJRT_Buffer_Type_INVALID;
}

PJRT_Error* BufferTypeOf(int64_t pjrt_type, const char* fn, ElementType* out) {
  if (pjrt_type <= PJRT_Buffer_Type_INVALID || pjrt_type > PJRT_Buffer_Type_U1)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: %lld is not a PJRT_Buffer_Type", fn,
                  static_cast<long long>(pjrt_type));
  const ElementType t = FromPjrtType(pjrt_type);
  if (t == ElementType::kInvalid) {
    return ErrorF(PJRT_Error_Code_UNIMPLEMENTED, "%s: PJRT_Buffer_Type %lld (token, S1, U1) has no buffers here", fn,
                  static_cast<long long>(pjrt_type));
  }
  if (ElementTypeToC(t) < 0) {
    return ErrorF(PJRT_Error_Code_UNIMPLEMENTED, "%s: element type %s cannot be held in a buffer yet", fn,
                  std::string(ElementTypeName(t)).c_str());
  }
  *out = t;
  return nullptr;
}

PJRT_Error* ShapeOf(int64_t pjrt_type, const int64_t* dims, size_t num_dims, const char* fn, const char* prefix,
                    ElementType* type) {
  if (PJRT_Error* e = BufferTypeOf(pjrt_type, fn, type)) return e;
  if (num_dims && !dims)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: %sdims is NULL but %snum_dims is %zu", fn, prefix, prefix,
                  num_dims);
  return nullptr;
}

PJRT_Error* CheckDenseLayout(const PJRT_Buffer_MemoryLayout* layout, size_t rank, const char* fn, const char* what) {
  if (!layout) return nullptr;
  if (layout->struct_size < PJRT_Buffer_MemoryLayout_STRUCT_SIZE)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: %s->struct_size is %zu, below %zu", fn, what,
                  layout->struct_size, static_cast<size_t>(PJRT_Buffer_MemoryLayout_STRUCT_SIZE));
  if (EnumValue(layout->type) != PJRT_Buffer_MemoryLayout_Type_Tiled) {
    return ErrorF(PJRT_Error_Code_UNIMPLEMENTED,
                  "%s: %s is a strides layout; only the dense major-to-minor tiled layout is supported", fn, what);
  }
  const PJRT_Buffer_MemoryLayout_Tiled& t = layout->tiled;
  bool dense = t.num_tiles == 0 && t.minor_to_major_size == rank && (rank == 0 || t.minor_to_major);
  for (size_t i = 0; dense && i < rank; ++i) dense = t.minor_to_major[i] == static_cast<int64_t>(rank - 1 - i);
  if (!dense) {
    return ErrorF(PJRT_Error_Code_UNIMPLEMENTED,
                  "%s: %s is not the dense major-to-minor layout (minor_to_major = {rank-1, ..., 0}, no tiles), the "
                  "only one the NeuronCore's buffers use",
                  fn, what);
  }
  return nullptr;
}

bool IsSubByte(ElementType t) { return t != ElementType::kPred && ElementInfo(t).bits < 8; }

namespace {

// The canonical byte of a sub-byte element whose value is in the low `bits` bits of `b` (the high bits are
// ignored, as PJRT's packing ignores them): sign-extended for the signed integers, zero-extended otherwise.
uint8_t CanonicalSubByte(ElementType t, uint8_t b) {
  const int bits = ElementInfo(t).bits;
  const uint8_t low = static_cast<uint8_t>(b & ((1u << bits) - 1));
  if (IsSignedInt(t) && (low >> (bits - 1))) return static_cast<uint8_t>(low | static_cast<uint8_t>(0xffu << bits));
  return low;
}

// The host elements of a sub-byte upload (one per byte, row-major or along byte_strides), made canonical in a
// dense copy. PJRT clients send sub-byte arrays unpacked (numpy / ml_dtypes: one element per byte).
void GatherSubByte(const copy::FromHostArgs& a, std::vector<uint8_t>* out) {
  uint64_t n = 1;
  for (int64_t d : a.dims) n *= static_cast<uint64_t>(d);
  out->resize(n);
  if (!n) return;
  const auto* src = static_cast<const uint8_t*>(a.data);
  const size_t rank = a.dims.size();
  std::vector<int64_t> strides(rank), index(rank, 0);
  for (size_t d = rank, s = 1; d-- > 0; s *= static_cast<size_t>(a.dims[d]))
    strides[d] = a.byte_strides ? a.byte_strides[d] : static_cast<int64_t>(s);
  for (uint64_t i = 0; i < n; ++i) {
    int64_t at = 0;
    for (size_t d = 0; d < rank; ++d) at += index[d] * strides[d];
    (*out)[i] = CanonicalSubByte(a.type, src[at]);
    for (size_t d = rank; d-- > 0;) {  // next row-major index
      if (++index[d] < a.dims[d]) break;
      index[d] = 0;
    }
  }
}

// A new buffer handle of `client` in *out, its buffer made by `make(copy::Buffer*)` (a copy engine call); make's
// failure named after `fn`, and no handle.
template <typename Make>
PJRT_Error* NewBuffer(PJRT_Client* client, const char* fn, PJRT_Buffer** out, Make&& make) {
  auto handle = std::make_unique<PJRT_Buffer>();
  handle->client = client;
  if (Status s = make(&handle->buffer)) return FromStatus(std::move(s), fn);
  *out = handle.release();
  return nullptr;
}

// A buffer handle's C++ memory target: `memory` if given (addressable by `device` when both are), else the
// default memory of `device`.
PJRT_Error* TargetOf(PJRT_Client* client, PJRT_Device* device, PJRT_Memory* memory, const char* fn,
                     const copy::MemoryView** out) {
  if (memory) {
    if (memory->client != client)
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: memory %s belongs to another client", fn,
                    memory->memory->debug_string().c_str());
    if (device) {
      if (device->client != client)
        return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: device belongs to another client", fn);
      bool addressable = false;
      for (PJRT_Device* d : memory->devices) addressable |= d == device;
      if (!addressable)
        return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: memory %s is not addressable by %s", fn,
                      memory->memory->debug_string().c_str(), device->description.to_string.c_str());
    }
    *out = &memory->memory->view();
    return nullptr;
  }
  if (!device)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: neither a device nor a memory is given as the target", fn);
  if (device->client != client)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: device belongs to another client", fn);
  if (PJRT_Error* e = CheckAddressable(device, fn, "device")) return e;
  *out = &device->device->default_memory()->view();
  return nullptr;
}

PJRT_Error* PJRT_Client_BufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_BufferFromHostBuffer_Args, buffer);
  args->buffer = nullptr;
  args->done_with_host_buffer = nullptr;
  NM_PJRT_REQUIRE(args->client);
  NM_PJRT_BEGIN
  PJRT_Client* client = args->client;
  copy::FromHostArgs a;
  if (PJRT_Error* e = ShapeOf(EnumValue(args->type), args->dims, args->num_dims, __func__, "", &a.type)) return e;
  a.dims = Span<const int64_t>(args->dims, args->num_dims);
  if (args->byte_strides) {
    if (args->num_byte_strides != args->num_dims)
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: num_byte_strides is %zu but num_dims is %zu", __func__,
                    args->num_byte_strides, args->num_dims);
    for (size_t d = 0; d < args->num_dims; ++d)
      if (args->byte_strides[d] < 0)
        return ErrorF(PJRT_Error_Code_UNIMPLEMENTED, "%s: byte_strides[%zu] is negative", __func__, d);
    a.byte_strides = args->byte_strides;
  }
  const int64_t semantics = EnumValue(args->host_buffer_semantics);
  if (semantics < 0 || semantics > PJRT_HostBufferSemantics_kMutableZeroCopy)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: host_buffer_semantics %lld is not a PJRT_HostBufferSemantics",
                  __func__, static_cast<long long>(semantics));
  // The PJRT and library enums list the four semantics in the same order.
  a.semantics = static_cast<copy::HostBufferSemantics>(semantics);
  if (PJRT_Error* e = TargetOf(client, args->device, args->memory, __func__, &a.memory)) return e;
  if (PJRT_Error* e = CheckDenseLayout(args->device_layout, args->num_dims, __func__, "device_layout")) return e;
  a.data = args->data;
  std::vector<uint8_t> canonical;
  if (IsSubByte(a.type)) {
    uint64_t bytes = 0;  // checks dims before GatherSubByte walks them
    if (Status s = copy::DenseBytes(a.type, a.dims, &bytes)) return FromStatus(std::move(s), __func__);
    if (bytes && !a.data)
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: data is NULL for %llu elements", __func__,
                    static_cast<unsigned long long>(bytes));
    GatherSubByte(a, &canonical);
    a.data = canonical.data();
    a.byte_strides = nullptr;
    a.semantics = copy::HostBufferSemantics::kImmutableOnlyDuringCall;  // the copy is ours, gone on return
  }
  return NewBuffer(client, __func__, &args->buffer, [&](copy::Buffer* buffer) -> Status {
    Event* done = nullptr;
    if (Status s = client->core->copy_engine().FromHost({&a, 1}, &buffer, nullptr, &done)) return s;
    args->done_with_host_buffer = NewPjrtEvent(done ? done : ReadyEvent());
    return Ok();
  });
  NM_PJRT_END
}

// A buffer whose content is left undefined (a frontend's output or donation target), in a device's default
// memory or a given memory.
PJRT_Error* PJRT_Client_CreateUninitializedBuffer(PJRT_Client_CreateUninitializedBuffer_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_CreateUninitializedBuffer_Args, buffer);
  args->buffer = nullptr;
  NM_PJRT_REQUIRE(args->client);
  NM_PJRT_BEGIN
  PJRT_Client* client = args->client;
  ElementType type;
  if (PJRT_Error* e = ShapeOf(EnumValue(args->shape_element_type), args->shape_dims, args->shape_num_dims, __func__,
                              "shape_", &type))
    return e;
  const copy::MemoryView* view = nullptr;
  if (PJRT_Error* e = TargetOf(client, args->device, args->memory, __func__, &view)) return e;
  if (PJRT_Error* e = CheckDenseLayout(args->shape_layout, args->shape_num_dims, __func__, "shape_layout")) return e;
  return NewBuffer(client, __func__, &args->buffer, [&](copy::Buffer* buffer) {
    return client->core->copy_engine().Allocate(*view, type, {args->shape_dims, args->shape_num_dims}, buffer);
  });
  NM_PJRT_END
}

PJRT_Error* PJRT_Buffer_Destroy(PJRT_Buffer_Destroy_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_Destroy_Args, buffer);
  delete args->buffer;
  return nullptr;
}

PJRT_Error* PJRT_Buffer_ElementType(PJRT_Buffer_ElementType_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_ElementType_Args, type);
  NM_PJRT_REQUIRE(args->buffer);
  args->type = ToPjrtType(args->buffer->buffer.element_type());
  return nullptr;
}

PJRT_Error* PJRT_Buffer_Dimensions(PJRT_Buffer_Dimensions_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_Dimensions_Args, num_dims);
  NM_PJRT_REQUIRE(args->buffer);
  const Span<const int64_t> dims = args->buffer->buffer.dims();
  args->dims = dims.data();
  args->num_dims = dims.size();
  return nullptr;
}

PJRT_Error* PJRT_Buffer_UnpaddedDimensions(PJRT_Buffer_UnpaddedDimensions_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_UnpaddedDimensions_Args, num_dims);
  NM_PJRT_REQUIRE(args->buffer);
  const Span<const int64_t> dims = args->buffer->buffer.dims();  // static shapes: nothing is padded
  args->unpadded_dims = dims.data();
  args->num_dims = dims.size();
  return nullptr;
}

PJRT_Error* PJRT_Buffer_DynamicDimensionIndices(PJRT_Buffer_DynamicDimensionIndices_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_DynamicDimensionIndices_Args, num_dynamic_dims);
  NM_PJRT_REQUIRE(args->buffer);
  args->dynamic_dim_indices = nullptr;
  args->num_dynamic_dims = 0;
  return nullptr;
}

PJRT_Error* PJRT_Buffer_GetMemoryLayout(PJRT_Buffer_GetMemoryLayout_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_GetMemoryLayout_Args, layout);
  NM_PJRT_REQUIRE(args->buffer);
  NM_PJRT_BEGIN
  PJRT_Buffer* b = args->buffer;
  std::call_once(b->layout_once, [b] {
    const size_t rank = b->buffer.dims().size();
    for (size_t i = 0; i < rank; ++i) b->minor_to_major.push_back(static_cast<int64_t>(rank - 1 - i));
  });
  args->layout = PJRT_Buffer_MemoryLayout{};
  args->layout.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE;
  args->layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  args->layout.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
  args->layout.tiled.minor_to_major = b->minor_to_major.data();
  args->layout.tiled.minor_to_major_size = b->minor_to_major.size();
  args->layout.tiled.num_tiles = 0;
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_Buffer_OnDeviceSizeInBytes(PJRT_Buffer_OnDeviceSizeInBytes_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes);
  NM_PJRT_REQUIRE(args->buffer);
  args->on_device_size_in_bytes = args->buffer->buffer.bytes();
  return nullptr;
}

PJRT_Memory* MemoryOf(const PJRT_Buffer* b) { return b->client->shell(b->buffer.memory()); }

PJRT_Error* PJRT_Buffer_Device(PJRT_Buffer_Device_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_Device_Args, device);
  NM_PJRT_REQUIRE(args->buffer);
  args->device = MemoryOf(args->buffer)->devices[0];
  return nullptr;
}

PJRT_Error* PJRT_Buffer_Memory(PJRT_Buffer_Memory_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_Memory_Args, memory);
  NM_PJRT_REQUIRE(args->buffer);
  args->memory = MemoryOf(args->buffer);
  return nullptr;
}

PJRT_Error* PJRT_Buffer_Delete(PJRT_Buffer_Delete_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_Delete_Args, buffer);
  NM_PJRT_REQUIRE(args->buffer);
  args->buffer->buffer.Delete();
  return nullptr;
}

PJRT_Error* PJRT_Buffer_IsDeleted(PJRT_Buffer_IsDeleted_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_IsDeleted_Args, is_deleted);
  NM_PJRT_REQUIRE(args->buffer);
  args->is_deleted = args->buffer->buffer.deleted();
  return nullptr;
}

// A copy of src into `memory` (a memory of src's client), as a new handle.
PJRT_Error* CopyInto(PJRT_Buffer* src, PJRT_Memory* memory, const char* fn, PJRT_Buffer** out) {
  if (memory->client != src->client)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: the destination belongs to another client than the buffer",
                  fn);
  return NewBuffer(src->client, fn, out, [&](copy::Buffer* buffer) {
    Event* ready = nullptr;
    Status s = src->client->core->copy_engine().CopyToMemory(src->buffer, memory->memory->view(), {}, buffer, &ready);
    if (!s) Release(ready);  // the new buffer's ready event stands for the copy
    return s;
  });
}

PJRT_Error* PJRT_Buffer_CopyToDevice(PJRT_Buffer_CopyToDevice_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_CopyToDevice_Args, dst_buffer);
  args->dst_buffer = nullptr;
  NM_PJRT_REQUIRE(args->buffer);
  NM_PJRT_REQUIRE(args->dst_device);
  NM_PJRT_BEGIN
  if (args->dst_device->client != args->buffer->client)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: dst_device belongs to another client than the buffer",
                  __func__);
  if (PJRT_Error* e = CheckAddressable(args->dst_device, __func__, "dst_device")) return e;
  return CopyInto(args->buffer, args->dst_device->by_kind[static_cast<size_t>(MemoryKind::kDevice)], __func__,
                  &args->dst_buffer);
  NM_PJRT_END
}

PJRT_Error* PJRT_Buffer_CopyToMemory(PJRT_Buffer_CopyToMemory_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_CopyToMemory_Args, dst_buffer);
  args->dst_buffer = nullptr;
  NM_PJRT_REQUIRE(args->buffer);
  NM_PJRT_REQUIRE(args->dst_memory);
  NM_PJRT_BEGIN
  return CopyInto(args->buffer, args->dst_memory, __func__, &args->dst_buffer);
  NM_PJRT_END
}

PJRT_Error* PJRT_Buffer_ToHostBuffer(PJRT_Buffer_ToHostBuffer_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_ToHostBuffer_Args, event);
  args->event = nullptr;
  NM_PJRT_REQUIRE(args->src);
  NM_PJRT_BEGIN
  copy::Buffer& b = args->src->buffer;
  if (PJRT_Error* e = CheckDenseLayout(args->host_layout, b.dims().size(), __func__, "host_layout")) return e;
  if (!args->dst) {  // the size query
    args->dst_size = b.bytes();
    return nullptr;
  }
  if (args->dst_size < b.bytes())
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: dst_size is %zu bytes, the buffer holds %llu", __func__,
                  args->dst_size, static_cast<unsigned long long>(b.bytes()));
  Event* ev = nullptr;
  if (Status s = args->src->client->core->copy_engine().Read(b, 0, args->dst, b.bytes(), {}, &ev))
    return FromStatus(std::move(s), __func__);
  args->event = NewPjrtEvent(ev);
  return nullptr;
  NM_PJRT_END
}

// Raw bytes of the buffer (its device layout: one element per byte, row-major) from `offset`, asynchronously.
PJRT_Error* PJRT_Buffer_CopyRawToHost(PJRT_Buffer_CopyRawToHost_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_CopyRawToHost_Args, event);
  args->event = nullptr;
  NM_PJRT_REQUIRE(args->buffer);
  NM_PJRT_BEGIN
  if (args->offset < 0 || args->transfer_size < 0)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: offset %lld and transfer_size %lld must not be negative",
                  __func__, static_cast<long long>(args->offset), static_cast<long long>(args->transfer_size));
  if (args->transfer_size && !args->dst)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: dst is NULL for %lld bytes", __func__,
                  static_cast<long long>(args->transfer_size));
  Event* ev = nullptr;
  if (Status s = args->buffer->client->core->copy_engine().Read(args->buffer->buffer,
                                                                static_cast<uint64_t>(args->offset), args->dst,
                                                                static_cast<uint64_t>(args->transfer_size), {}, &ev))
    return FromStatus(std::move(s), __func__);
  args->event = NewPjrtEvent(ev);
  return nullptr;
  NM_PJRT_END
}

// A new buffer over the same bytes as another type and shape of the same size (PJRT's bitcast); the source is
// deleted as by a donation. Types narrower than a byte and PRED keep canonical bytes (IsSubByte), so a bitcast
// may not turn other bytes into them: between those types only a reshape (the same type) is allowed.
PJRT_Error* PJRT_Buffer_Bitcast(PJRT_Buffer_Bitcast_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_Bitcast_Args, out_buffer);
  args->out_buffer = nullptr;
  NM_PJRT_REQUIRE(args->buffer);
  NM_PJRT_BEGIN
  PJRT_Buffer* src = args->buffer;
  ElementType type;
  if (PJRT_Error* e = ShapeOf(EnumValue(args->element_type), args->dims, args->num_dims, __func__, "", &type)) return e;
  if (PJRT_Error* e = CheckDenseLayout(args->device_layout, args->num_dims, __func__, "device_layout")) return e;
  const ElementType from = src->buffer.element_type();
  const bool canonical_bytes = IsSubByte(type) || type == ElementType::kPred;
  if (type != from && (canonical_bytes || IsSubByte(from) || from == ElementType::kPred)) {
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "%s: a bitcast from %s to %s is refused: buffers of PRED and the types narrower than a byte hold one "
                  "canonical element per byte, so only a reshape keeps them valid",
                  __func__, std::string(ElementTypeName(from)).c_str(), std::string(ElementTypeName(type)).c_str());
  }
  return NewBuffer(src->client, __func__, &args->out_buffer, [&](copy::Buffer* buffer) {
    return src->client->core->copy_engine().Bitcast(src->buffer, type, {args->dims, args->num_dims}, buffer);
  });
  NM_PJRT_END
}

PJRT_Error* PJRT_Buffer_IsOnCpu(PJRT_Buffer_IsOnCpu_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_IsOnCpu_Args, is_on_cpu);
  NM_PJRT_REQUIRE(args->buffer);
  args->is_on_cpu = MemoryOf(args->buffer)->memory->kind() != MemoryKind::kDevice;  // host memory kinds
  return nullptr;
}

PJRT_Error* PJRT_Buffer_ReadyEvent(PJRT_Buffer_ReadyEvent_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_ReadyEvent_Args, event);
  args->event = nullptr;
  NM_PJRT_REQUIRE(args->buffer);
  NM_PJRT_BEGIN
  args->event = NewPjrtEvent(args->buffer->buffer.ReadyEvent());
  return nullptr;
  NM_PJRT_END
}

// External references (DLPack and the like): each holds a use of the buffer's bytes (plugin.h).
PJRT_Error* PJRT_Buffer_IncreaseExternalReferenceCount(PJRT_Buffer_IncreaseExternalReferenceCount_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_IncreaseExternalReferenceCount_Args, buffer);
  NM_PJRT_REQUIRE(args->buffer);
  NM_PJRT_BEGIN
  PJRT_Buffer* b = args->buffer;
  copy::StorageUse use;
  EventRef definition;
  if (Status s = b->client->core->copy_engine().UseBuffer(b->buffer, &use, &definition))
    return FromStatus(std::move(s), __func__);
  std::lock_guard<std::mutex> lock(b->external_mu);
  b->external_uses.push_back(std::move(use));
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_Buffer_DecreaseExternalReferenceCount(PJRT_Buffer_DecreaseExternalReferenceCount_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_DecreaseExternalReferenceCount_Args, buffer);
  NM_PJRT_REQUIRE(args->buffer);
  PJRT_Buffer* b = args->buffer;
  copy::StorageUse released;  // let go outside the lock
  {
    std::lock_guard<std::mutex> lock(b->external_mu);
    if (b->external_uses.empty())
      return ErrorF(PJRT_Error_Code_FAILED_PRECONDITION,
                    "%s: the buffer has no external reference (more decreases than increases)", __func__);
    released = std::move(b->external_uses.back());
    b->external_uses.pop_back();
  }
  return nullptr;
}

// The address of the buffer's bytes (host memory of the software NeuronCore, whatever the kind), valid while
// the buffer is neither deleted nor donated, or while an external reference holds them.
PJRT_Error* BytesOf(PJRT_Buffer* b, const char* fn, void** out) {
  copy::StorageUse use;
  EventRef definition;
  if (Status s = b->client->core->copy_engine().UseBuffer(b->buffer, &use, &definition))
    return FromStatus(std::move(s), fn);
  *out = use.s ? use.s->data : nullptr;
  return nullptr;
}

PJRT_Error* PJRT_Buffer_OpaqueDeviceMemoryDataPointer(PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args, device_memory_ptr);
  args->device_memory_ptr = nullptr;
  NM_PJRT_REQUIRE(args->buffer);
  NM_PJRT_BEGIN
  return BytesOf(args->buffer, __func__, &args->device_memory_ptr);
  NM_PJRT_END
}

PJRT_Error* PJRT_Buffer_UnsafePointer(PJRT_Buffer_UnsafePointer_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Buffer_UnsafePointer_Args, buffer_pointer);
  args->buffer_pointer = 0;
  NM_PJRT_REQUIRE(args->buffer);
  NM_PJRT_BEGIN
  void* p = nullptr;
  if (PJRT_Error* e = BytesOf(args->buffer, __func__, &p)) return e;
  args->buffer_pointer = reinterpret_cast<uintptr_t>(p);
  return nullptr;
  NM_PJRT_END
}

}  // namespace

void FillBuffers(PJRT_Api* api) {
  api->PJRT_Client_BufferFromHostBuffer = PJRT_Client_BufferFromHostBuffer;
  api->PJRT_Client_CreateUninitializedBuffer = PJRT_Client_CreateUninitializedBuffer;
  api->PJRT_Buffer_Destroy = PJRT_Buffer_Destroy;
  api->PJRT_Buffer_ElementType = PJRT_Buffer_ElementType;
  api->PJRT_Buffer_Dimensions = PJRT_Buffer_Dimensions;
  api->PJRT_Buffer_UnpaddedDimensions = PJRT_Buffer_UnpaddedDimensions;
  api->PJRT_Buffer_DynamicDimensionIndices = PJRT_Buffer_DynamicDimensionIndices;
  api->PJRT_Buffer_GetMemoryLayout = PJRT_Buffer_GetMemoryLayout;
  api->PJRT_Buffer_OnDeviceSizeInBytes = PJRT_Buffer_OnDeviceSizeInBytes;
  api->PJRT_Buffer_Device = PJRT_Buffer_Device;
  api->PJRT_Buffer_Memory = PJRT_Buffer_Memory;
  api->PJRT_Buffer_Delete = PJRT_Buffer_Delete;
  api->PJRT_Buffer_IsDeleted = PJRT_Buffer_IsDeleted;
  api->PJRT_Buffer_CopyToDevice = PJRT_Buffer_CopyToDevice;
  api->PJRT_Buffer_CopyToMemory = PJRT_Buffer_CopyToMemory;
  api->PJRT_Buffer_ToHostBuffer = PJRT_Buffer_ToHostBuffer;
  api->PJRT_Buffer_IsOnCpu = PJRT_Buffer_IsOnCpu;
  api->PJRT_Buffer_CopyRawToHost = PJRT_Buffer_CopyRawToHost;
  api->PJRT_Buffer_Bitcast = PJRT_Buffer_Bitcast;
  api->PJRT_Buffer_ReadyEvent = PJRT_Buffer_ReadyEvent;
  api->PJRT_Buffer_IncreaseExternalReferenceCount = PJRT_Buffer_IncreaseExternalReferenceCount;
  api->PJRT_Buffer_DecreaseExternalReferenceCount = PJRT_Buffer_DecreaseExternalReferenceCount;
  api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer = PJRT_Buffer_OpaqueDeviceMemoryDataPointer;
  api->PJRT_Buffer_UnsafePointer = PJRT_Buffer_UnsafePointer;
}

}  // namespace neuronmem::pjrt
