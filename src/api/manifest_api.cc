// C shim for the placement manifest: argument checks and conversions; the manifest and its upload plan are
// src/manifest (the shim turns the plan into one batch for the copy engine).
#include <neuronmem/manifest.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/handles.h"
#include "api/shim.h"
#include "base/element_type.h"
#include "base/file.h"
#include "base/memory_kind.h"
#include "base/status.h"
#include "copy/copy_engine.h"
#include "manifest/manifest.h"
#include "manifest/upload_plan.h"
#include "stablehlo/bytecode.h"
#include "stablehlo/parser.h"

using neuronmem::InvalidArgument;
using neuronmem::OutOfRange;
namespace copy = neuronmem::copy;
namespace mf = neuronmem::manifest;

namespace {

neuronmem_string_t Str(const std::string& s) { return {s.c_str(), s.size()}; }

// The manifest's kind as the C enum (the numeric values agree: base/memory_kind.h).
neuronmem_memory_kind_t KindEnum(neuronmem::MemoryKind kind) { return static_cast<neuronmem_memory_kind_t>(kind); }

neuronmem_status_t* ResolveOptions(const neuronmem_manifest_options_t* o, mf::Options* out) {
  if (!o) return nullptr;
  if (auto s = neuronmem::api::CheckArgs(*o, NEURONMEM_MIN_SIZE(neuronmem_manifest_options_t, num_cores),
                                         "neuronmem_manifest_options_t")) {
    return s.release();
  }
  const int64_t policy = neuronmem::api::EnumValue(o->policy);  // never loaded as the enum
  if (policy < 0 || policy > NEURONMEM_PLACEMENT_POLICY_TORCH_NEURONX) {
    return InvalidArgument("policy %lld is not a neuronmem_placement_policy_t", static_cast<long long>(policy))
        .release();
  }
  if (o->entry) out->entry = o->entry;
  if (o->filename) out->filename = o->filename;
  out->policy = static_cast<mf::Policy>(policy);
  if (o->num_cores) out->num_cores = o->num_cores;
  return nullptr;
}

neuronmem_status_t* Finish(mf::Manifest m, neuronmem_manifest_t** out) {
  auto h = std::make_unique<neuronmem_manifest_t>();
  h->m = std::move(m);
  *out = h.release();
  return nullptr;
}

void FillValue(const mf::Value& v, neuronmem_manifest_value_t* out) {
  out->index = v.index;
  out->memory_kind = KindEnum(v.memory_kind);
  out->name = Str(v.name);
  out->element_type = Str(v.type.element_type);
  out->buffer_element_type = v.type.is_tuple || v.type.is_token ? -1 : neuronmem::ElementTypeToC(v.type.element);
  out->kind_explicit = v.kind_explicit;
  out->dims = v.type.dims.data();
  out->num_dims = v.type.dims.size();
  out->aliasing_output = v.aliasing_output;
  out->buffer_donor = v.buffer_donor;
  out->line = v.loc.line;
  out->column = v.loc.column;
  out->num_attributes = v.attributes.size();
}

neuronmem_status_t* ValueMemory(const std::vector<mf::Value>& values, const neuronmem_device_t* device, size_t index,
                                const char* what, neuronmem_memory_t** out) {
  if (index >= values.size()) {
    return OutOfRange("%s %zu does not exist: the manifest has %zu", what, index, values.size()).release();
  }
  *out = device->by_kind[KindEnum(values[index].memory_kind)];
  return nullptr;
}

}  // namespace

extern "C" {

neuronmem_status_t* neuronmem_manifest_load_text(const char* text, size_t size,
                                                 const neuronmem_manifest_options_t* options,
                                                 neuronmem_manifest_t** out) {
  NEURONMEM_REQUIRE(out);
  *out = nullptr;
  if (size) NEURONMEM_REQUIRE(text);
  NEURONMEM_API_BEGIN
  mf::Options opt;
  if (auto* s = ResolveOptions(options, &opt)) return s;
  mf::Manifest m;
  if (auto s = mf::LoadFromText(std::string_view(text ? text : "", size), opt, &m)) return s.release();
  return Finish(std::move(m), out);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_manifest_load_file(const char* path, const neuronmem_manifest_options_t* options,
                                                 neuronmem_manifest_t** out) {
  NEURONMEM_REQUIRE(out);
  *out = nullptr;
  NEURONMEM_REQUIRE(path);
  NEURONMEM_API_BEGIN
  mf::Options opt;
  opt.filename = path;
  if (auto* s = ResolveOptions(options, &opt)) return s;
  std::string text;
  if (auto s = neuronmem::ReadRegularFile(path, neuronmem::kMaxTextFileBytes, &text)) return s.release();
  mf::Manifest m;
  if (auto s = mf::LoadFromText(text, opt, &m)) return s.release();
  return Finish(std::move(m), out);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_manifest_list_entries(const char* text, size_t size, const char* filename,
                                                    neuronmem_manifest_entry_visitor_t visit, void* user_data) {
  NEURONMEM_REQUIRE(visit);
  if (size) NEURONMEM_REQUIRE(text);
  NEURONMEM_API_BEGIN
  std::vector<std::string> names;
  if (auto s =
          mf::ListPublicFunctions(std::string_view(text ? text : "", size), filename ? filename : "<input>", &names)) {
    return s.release();
  }
  for (const std::string& n : names) visit(Str(n), user_data);
  return nullptr;
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_manifest_write_artifact(const char* text, size_t size, const char* filename,
                                                      const char* target_version, neuronmem_bytes_visitor_t visit,
                                                      void* user_data) {
  NEURONMEM_REQUIRE(visit);
  if (size) NEURONMEM_REQUIRE(text);
  NEURONMEM_API_BEGIN
  namespace shlo = neuronmem::stablehlo;
  shlo::BytecodeWriteOptions o;
  if (target_version) {
    if (auto s = shlo::ParseBytecodeTarget(target_version, o.target)) return s.release();
  }
  o.location_file = filename ? filename : "<input>";
  std::vector<shlo::Module> modules;
  if (auto s = shlo::ParseModules(std::string_view(text ? text : "", size), o.location_file, &modules)) {
    return s.release();
  }
  if (modules.size() != 1) {
    return InvalidArgument("%s: an artifact holds one module, the input has %zu", o.location_file.c_str(),
                           modules.size())
        .release();
  }
  std::string bytes;
  if (auto s = shlo::WriteBytecode(modules[0], o, &bytes)) return s.release();
  visit(bytes.data(), bytes.size(), user_data);
  return nullptr;
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_manifest_load_json(const char* json, size_t size, neuronmem_manifest_t** out) {
  NEURONMEM_REQUIRE(out);
  *out = nullptr;
  NEURONMEM_REQUIRE(json);
  NEURONMEM_API_BEGIN
  mf::Manifest m;
  if (auto s = mf::FromJson(std::string_view(json, size), &m)) return s.release();
  return Finish(std::move(m), out);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_manifest_to_json(const neuronmem_manifest_t* manifest, neuronmem_string_t* out) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_API_BEGIN
  std::call_once(manifest->json_once, [manifest] { manifest->json = mf::ToJson(manifest->m); });
  *out = Str(manifest->json);
  return nullptr;
  NEURONMEM_API_END
}

void neuronmem_manifest_destroy(neuronmem_manifest_t* manifest) { delete manifest; }

neuronmem_status_t* neuronmem_manifest_entry(const neuronmem_manifest_t* manifest, neuronmem_string_t* out_module,
                                             neuronmem_string_t* out_entry) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out_module);
  NEURONMEM_REQUIRE(out_entry);
  *out_module = Str(manifest->m.module);
  *out_entry = Str(manifest->m.entry);
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_counts(const neuronmem_manifest_t* manifest, neuronmem_manifest_counts_t* out) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_manifest_counts_t, num_channels);
  const mf::Manifest& m = manifest->m;
  out->num_arguments = m.arguments.size();
  out->num_results = m.results.size();
  out->num_moves = m.moves.size();
  out->num_host_compute = m.host_compute.size();
  out->num_kernels = m.kernels.size();
  out->num_custom_call_targets = m.custom_call_targets.size();
  out->num_channels = m.channels.size();
  if (out->struct_size >= NEURONMEM_MIN_SIZE(neuronmem_manifest_counts_t, num_warnings)) {
    out->num_warnings = m.warnings.size();
  }
  if (out->struct_size >= NEURONMEM_MIN_SIZE(neuronmem_manifest_counts_t, num_composites)) {
    out->num_composites = m.composites.size();
  }
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_argument(const neuronmem_manifest_t* manifest, size_t index,
                                                neuronmem_manifest_value_t* out) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_manifest_value_t, num_attributes);
  if (index >= manifest->m.arguments.size()) {
    return OutOfRange("argument %zu does not exist: the entry function has %zu", index, manifest->m.arguments.size())
        .release();
  }
  FillValue(manifest->m.arguments[index], out);
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_result(const neuronmem_manifest_t* manifest, size_t index,
                                              neuronmem_manifest_value_t* out) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_manifest_value_t, num_attributes);
  if (index >= manifest->m.results.size()) {
    return OutOfRange("result %zu does not exist: the entry function has %zu", index, manifest->m.results.size())
        .release();
  }
  FillValue(manifest->m.results[index], out);
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_value_attribute(const neuronmem_manifest_t* manifest, bool is_result,
                                                       size_t index, size_t attr, neuronmem_string_t* out_key,
                                                       neuronmem_string_t* out_value) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out_key);
  NEURONMEM_REQUIRE(out_value);
  const auto& values = is_result ? manifest->m.results : manifest->m.arguments;
  if (index >= values.size() || attr >= values[index].attributes.size()) {
    return OutOfRange("no attribute %zu on %s %zu", attr, is_result ? "result" : "argument", index).release();
  }
  *out_key = Str(values[index].attributes[attr].first);
  *out_value = Str(values[index].attributes[attr].second);
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_move(const neuronmem_manifest_t* manifest, size_t index,
                                            neuronmem_manifest_move_t* out) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_manifest_move_t, column);
  if (index >= manifest->m.moves.size()) {
    return OutOfRange("move %zu does not exist: the manifest has %zu", index, manifest->m.moves.size()).release();
  }
  const mf::Move& mv = manifest->m.moves[index];
  out->function = Str(mv.function);
  out->value = Str(mv.value);
  out->result = Str(mv.result);
  out->spelling = Str(mv.spelling);
  out->from_kind = Str(mv.from_kind);
  out->to_kind = Str(mv.to_kind);
  out->from_memory_kind = KindEnum(mv.from_memory_kind);
  out->to_memory_kind = KindEnum(mv.to_memory_kind);
  out->element_type = Str(mv.type.element_type);
  out->dims = mv.type.dims.data();
  out->num_dims = mv.type.dims.size();
  out->line = mv.loc.line;
  out->column = mv.loc.column;
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_host_compute(const neuronmem_manifest_t* manifest, size_t index,
                                                    neuronmem_string_t* out_op, neuronmem_string_t* out_function,
                                                    uint32_t* out_line, uint32_t* out_column) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out_op);
  NEURONMEM_REQUIRE(out_function);
  NEURONMEM_REQUIRE(out_line);
  NEURONMEM_REQUIRE(out_column);
  if (index >= manifest->m.host_compute.size()) {
    return OutOfRange("host-compute region %zu does not exist", index).release();
  }
  const mf::HostCompute& h = manifest->m.host_compute[index];
  *out_op = Str(h.op);
  *out_function = Str(h.function);
  *out_line = h.loc.line;
  *out_column = h.loc.column;
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_kernel(const neuronmem_manifest_t* manifest, size_t index,
                                              neuronmem_manifest_kernel_t* out) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_manifest_kernel_t, column);
  if (index >= manifest->m.kernels.size()) return OutOfRange("kernel %zu does not exist", index).release();
  const mf::Kernel& k = manifest->m.kernels[index];
  out->function = Str(k.function);
  out->func_name = Str(k.func_name);
  out->binary = Str(k.binary);
  out->grid = k.grid.data();
  out->grid_rank = k.grid.size();
  out->num_input_names = k.input_names.size();
  out->num_output_names = k.output_names.size();
  out->num_operands = k.num_operands;
  out->num_results = k.num_results;
  out->line = k.loc.line;
  out->column = k.loc.column;
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_kernel_io_name(const neuronmem_manifest_t* manifest, size_t index,
                                                      bool is_output, size_t name_index, neuronmem_string_t* out) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out);
  if (index >= manifest->m.kernels.size()) return OutOfRange("kernel %zu does not exist", index).release();
  const auto& names = is_output ? manifest->m.kernels[index].output_names : manifest->m.kernels[index].input_names;
  if (name_index >= names.size()) return OutOfRange("kernel %zu has no name %zu", index, name_index).release();
  *out = Str(names[name_index]);
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_custom_call_target(const neuronmem_manifest_t* manifest, size_t index,
                                                          neuronmem_string_t* out_target, uint64_t* out_count) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out_target);
  NEURONMEM_REQUIRE(out_count);
  if (index >= manifest->m.custom_call_targets.size()) {
    return OutOfRange("custom-call target %zu does not exist", index).release();
  }
  *out_target = Str(manifest->m.custom_call_targets[index].target);
  *out_count = manifest->m.custom_call_targets[index].count;
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_channel(const neuronmem_manifest_t* manifest, size_t index,
                                               neuronmem_manifest_channel_t* out) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_manifest_channel_t, column);
  if (index >= manifest->m.channels.size()) return OutOfRange("channel %zu does not exist", index).release();
  const mf::Channel& c = manifest->m.channels[index];
  static_assert(sizeof(std::pair<int64_t, int64_t>) == 2 * sizeof(int64_t), "pairs flatten");
  out->function = Str(c.function);
  out->op = Str(c.op);
  out->handle = c.handle;
  out->type = static_cast<int32_t>(c.type);
  out->is_host_transfer = c.is_host_transfer;
  out->source_target_pairs =
      c.source_target_pairs.empty() ? nullptr : reinterpret_cast<const int64_t*>(c.source_target_pairs.data());
  out->num_pairs = c.source_target_pairs.size();
  out->num_payloads = c.payload.size();
  out->line = c.loc.line;
  out->column = c.loc.column;
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_composite(const neuronmem_manifest_t* manifest, size_t index,
                                                 neuronmem_manifest_composite_t* out) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_manifest_composite_t, column);
  if (index >= manifest->m.composites.size()) {
    return OutOfRange("composite %zu does not exist: the manifest has %zu", index, manifest->m.composites.size())
        .release();
  }
  const mf::Composite& c = manifest->m.composites[index];
  out->function = Str(c.function);
  out->name = Str(c.name);
  out->decomposition = Str(c.decomposition);
  out->version = c.version;
  out->num_attributes = c.attributes.size();
  out->line = c.loc.line;
  out->column = c.loc.column;
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_composite_attribute(const neuronmem_manifest_t* manifest, size_t index,
                                                           size_t attr, neuronmem_string_t* out_key,
                                                           neuronmem_string_t* out_value) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out_key);
  NEURONMEM_REQUIRE(out_value);
  if (index >= manifest->m.composites.size() || attr >= manifest->m.composites[index].attributes.size()) {
    return OutOfRange("no attribute %zu on composite %zu", attr, index).release();
  }
  *out_key = Str(manifest->m.composites[index].attributes[attr].first);
  *out_value = Str(manifest->m.composites[index].attributes[attr].second);
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_warning(const neuronmem_manifest_t* manifest, size_t index,
                                               neuronmem_string_t* out) {
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(out);
  if (index >= manifest->m.warnings.size()) {
    return OutOfRange("warning %zu does not exist: the manifest has %zu", index, manifest->m.warnings.size()).release();
  }
  *out = Str(manifest->m.warnings[index]);
  return nullptr;
}

neuronmem_status_t* neuronmem_manifest_argument_memory(const neuronmem_manifest_t* manifest,
                                                       const neuronmem_device_t* device, size_t index,
                                                       neuronmem_memory_t** out_memory) {
  NEURONMEM_REQUIRE(out_memory);
  *out_memory = nullptr;
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(device);
  return ValueMemory(manifest->m.arguments, device, index, "argument", out_memory);
}

neuronmem_status_t* neuronmem_manifest_result_memory(const neuronmem_manifest_t* manifest,
                                                     const neuronmem_device_t* device, size_t index,
                                                     neuronmem_memory_t** out_memory) {
  NEURONMEM_REQUIRE(out_memory);
  *out_memory = nullptr;
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(device);
  return ValueMemory(manifest->m.results, device, index, "result", out_memory);
}

neuronmem_status_t* neuronmem_manifest_upload_arguments(const neuronmem_manifest_upload_args_t* upload,
                                                        neuronmem_buffer_t** out_buffers,
                                                        neuronmem_event_t** out_ready) {
  if (out_ready) *out_ready = nullptr;
  NEURONMEM_REQUIRE(upload);
  NEURONMEM_REQUIRE(out_buffers);
  if (auto s = neuronmem::api::CheckArgs(*upload, NEURONMEM_MANIFEST_UPLOAD_ARGS_STRUCT_SIZE,
                                         "neuronmem_manifest_upload_args_t")) {
    return s.release();
  }
  const neuronmem_manifest_t* manifest = upload->manifest;
  neuronmem_device_t* device = upload->device;
  const void* const* host_data = upload->host_data;
  const size_t num_arguments = upload->num_arguments;
  // Read as an integer, never loaded as the enum (any int32 may arrive from C); negative values wrap to huge
  // ones, refused below.
  const auto host_buffer_semantics = static_cast<uint32_t>(neuronmem::api::EnumValue(upload->host_buffer_semantics));
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_REQUIRE(device);
  // out_buffers has as many slots as the manifest has arguments only when the counts agree: check that
  // before writing to any slot (PlanArgumentUploads checks the rest).
  if (num_arguments != manifest->m.arguments.size()) {
    return InvalidArgument("the entry function @%s takes %zu arguments, %zu were given", manifest->m.entry.c_str(),
                           manifest->m.arguments.size(), num_arguments)
        .release();
  }
  for (size_t i = 0; i < num_arguments; ++i) out_buffers[i] = nullptr;
  NEURONMEM_API_BEGIN
  neuronmem_client_t* client = device->client;
  std::vector<mf::ArgumentUpload> plan;
  if (host_buffer_semantics > NEURONMEM_HOST_BUFFER_MUTABLE_ZERO_COPY) {
    return InvalidArgument("host_buffer_semantics %u is not a neuronmem_host_buffer_semantics_t", host_buffer_semantics)
        .release();
  }
  const auto semantics = static_cast<copy::HostBufferSemantics>(host_buffer_semantics);
  auto in_pinned_arena = [client](const void* p, uint64_t n) { return client->client->pinned_arena().Contains(p, n); };
  if (auto s = mf::PlanArgumentUploads(manifest->m, host_data, num_arguments, in_pinned_arena, &plan)) {
    return s.release();
  }
  if (plan.empty()) {
    if (out_ready) *out_ready = neuronmem::ReadyEvent();
    return nullptr;
  }
  std::vector<copy::FromHostArgs> batch(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    copy::FromHostArgs& a = batch[i];
    a.data = host_data[i];
    a.type = plan[i].element_type;
    a.dims = neuronmem::Span<const int64_t>(plan[i].dims->data(), plan[i].dims->size());
    a.memory = &device->by_kind[static_cast<size_t>(plan[i].memory_kind)]->memory->view();
    a.semantics = plan[i].zero_copy ? copy::HostBufferSemantics::kImmutableZeroCopy : semantics;
  }
  std::vector<std::unique_ptr<neuronmem_buffer_t>> handles(plan.size());
  std::vector<copy::Buffer*> buffers(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    handles[i] = std::make_unique<neuronmem_buffer_t>();
    handles[i]->client = client;
    buffers[i] = &handles[i]->buffer;
  }
  if (auto s = client->engine().FromHost(batch, buffers.data(), out_ready, nullptr)) return s.release();
  for (size_t i = 0; i < plan.size(); ++i) out_buffers[i] = handles[i].release();
  return nullptr;
  NEURONMEM_API_END
}

}  // extern "C"
