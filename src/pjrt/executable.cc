// PJRT compile, executables and execute: StableHLO text ("mlir" format) through the manifest and
// exec::Session::Compile (the C API's path), execution through the session's executor.
#include <cstring>
#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "pjrt/compile_options.h"
#include "pjrt/plugin.h"

namespace neuronmem::pjrt {
namespace {

constexpr char kSerialMagic[] = "NEURONMEM-PJRT-EXECUTABLE-1\n";

std::string Fingerprint(std::string_view source, std::string_view options) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  const auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  };
  mix(source);
  mix(std::string_view("\0", 1));
  mix(options);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

const char* KindName(MemoryKind k) { return MemoryKindName(k).data(); }  // static NUL-terminated names

// Compiles `code` (StableHLO text, or a portable artifact: MLIR bytecode of the vhlo dialect) with the serialized
// CompileOptionsProto `options` for `client`.
PJRT_Error* CompileProgram(PJRT_Client* client, std::string_view code, std::string_view options, const char* fn,
                           PJRT_LoadedExecutable** out) {
  CompileOptions decoded;
  std::string why;
  if (!DecodeCompileOptions(options, &decoded, &why)) {
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: compile_options is no serialized CompileOptionsProto (%s)", fn,
                  why.c_str());
  }
  const size_t cores = client->devices.size();
  // In a job, a program runs on the job's devices (global ids: process p's local core l is p * cores + l); this
  // process runs the ones it has.
  const size_t job_devices = client->all_devices.size();
  const int64_t first_global = static_cast<int64_t>(client->process_index) * static_cast<int64_t>(cores);
  if (decoded.num_replicas < 0 || decoded.num_partitions < 0 ||
      static_cast<uint64_t>(decoded.num_replicas) * static_cast<uint64_t>(decoded.num_partitions) > job_devices) {
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "%s: compile_options asks for %lld replicas x %lld partitions; the %s has %zu NeuronCores", fn,
                  static_cast<long long>(decoded.num_replicas), static_cast<long long>(decoded.num_partitions),
                  client->num_processes > 1 ? "job" : "client", job_devices);
  }
  exec::ExecutableOptions co;
  co.placement = client->placement;
  co.num_replicas = decoded.num_replicas ? static_cast<uint32_t>(decoded.num_replicas) : 1;
  co.num_partitions = static_cast<uint32_t>(decoded.num_partitions);  // 0: the module's mhlo.num_partitions
  co.filename = "<pjrt program>";
  uint32_t first_device = 0;  // a one-device program's device (its device assignment's)
  if (decoded.has_device_assignment) {
    // An assignment of this process's devices only is a program of this process (local ids); any other names
    // the job's devices.
    bool local_only = true;
    for (const std::vector<int64_t>& ids : decoded.computation_devices)
      for (int64_t id : ids)
        local_only = local_only && id >= first_global && id - first_global < static_cast<int64_t>(cores);
    if (local_only)
      for (std::vector<int64_t>& ids : decoded.computation_devices)
        for (int64_t& id : ids) id -= first_global;
    const int64_t R = decoded.replica_count, P = decoded.computation_count;
    bool valid = R >= 1 && P >= 1 && static_cast<int64_t>(decoded.computation_devices.size()) == P;
    for (int64_t c = 0; valid && c < P; ++c) {
      const std::vector<int64_t>& ids = decoded.computation_devices[static_cast<size_t>(c)];
      valid = static_cast<int64_t>(ids.size()) == R;
      for (int64_t r = 0; valid && r < R; ++r)
        valid = ids[static_cast<size_t>(r)] >= 0 && static_cast<uint64_t>(ids[static_cast<size_t>(r)]) < job_devices;
    }
    if (!valid || static_cast<uint64_t>(R * P) > job_devices) {
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                    "%s: the device assignment of compile_options is malformed or names devices the %s (%zu "
                    "NeuronCores) does not have",
                    fn, client->num_processes > 1 ? "job" : "client", job_devices);
    }
    if (R * P == 1) {
      // One device: one of this process's.
      if (!local_only)
        return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                      "%s: the device assignment names device %lld, which is not addressable by process %u", fn,
                      static_cast<long long>(decoded.computation_devices[0][0]), client->process_index);
      first_device = static_cast<uint32_t>(decoded.computation_devices[0][0]);
    } else {
      // The executor's grid puts replica r, partition c on device r * P + c: the assignment must say the same.
      for (int64_t c = 0; c < P; ++c)
        for (int64_t r = 0; r < R; ++r)
          if (decoded.computation_devices[static_cast<size_t>(c)][static_cast<size_t>(r)] != r * P + c)
            return ErrorF(PJRT_Error_Code_UNIMPLEMENTED,
                          "%s: a device assignment of several devices must place replica r, partition p on device r * "
                          "num_partitions + p (PJRT_Client_DefaultDeviceAssignment's)",
                          fn);
    }
    co.num_replicas = static_cast<uint32_t>(R);
    co.num_partitions = static_cast<uint32_t>(P);
  }
  manifest::Options mo;
  mo.num_cores = static_cast<uint32_t>(job_devices);  // send/recv pairs name the job's devices
  mo.filename = co.filename;
  manifest::Manifest m;
  if (Status s = manifest::LoadFromText(code, mo, &m)) return FromStatus(std::move(s), fn);
  if (m.ir)
    if (PJRT_Error* e = CheckLayoutModes(*m.ir, m.entry, fn)) return e;
  auto program = std::make_shared<Program>();
  auto loaded = std::make_unique<PJRT_LoadedExecutable>();
  // A program of one device that does not see the process grid runs on any core (PJRT's portable
  // executables, execute_device): it is compiled for every core, and still reports one replica.
  const bool single = co.num_replicas == 1 && co.num_partitions <= 1;
  exec::ExecutableOptions any_core = co;
  any_core.num_replicas = 0;  // as many as the cores hold; num_partitions stays (0: the module's)
  if (Status s = client->session->Compile(m, single ? any_core : co, &program->exe, &loaded->lease))
    return FromStatus(std::move(s), fn);
  // Not portable after all (it sees the grid, or the module asks for partitions): compiled as asked.
  if (single && (program->exe->uses_grid() || program->exe->num_partitions() != 1)) {
    loaded->lease.Reset();
    if (Status s = client->session->Compile(m, co, &program->exe, &loaded->lease)) return FromStatus(std::move(s), fn);
    first_device = 0;
  }
  program->portable = single && !program->exe->uses_grid() && program->exe->num_partitions() == 1;
  program->num_replicas = program->portable ? 1 : program->exe->num_replicas();
  program->num_partitions = program->portable ? 1 : program->exe->num_partitions();
  const exec::Executable& e = *program->exe;
  program->name = m.ir && !m.ir->name.empty() ? std::string(m.ir->name) : m.entry;
  program->source = std::string(code);
  program->options = std::string(options);
  program->fingerprint = Fingerprint(code, options);
  for (const exec::ValueInfo& v : e.outputs()) {
    program->output_types.push_back(ToPjrtType(v.type));
    program->output_ranks.push_back(v.dims.size());
    program->output_dims.insert(program->output_dims.end(), v.dims.begin(), v.dims.end());
    program->output_kinds.push_back(KindName(v.kind));
    program->output_kind_sizes.push_back(MemoryKindName(v.kind).size());
  }
  for (const exec::ValueInfo& v : e.parameters()) {
    program->parameter_kinds.push_back(KindName(v.kind));
    program->parameter_kind_sizes.push_back(MemoryKindName(v.kind).size());
  }
  loaded->client = client;
  if (program->portable) {
    loaded->addressable_devices.push_back(client->devices[first_device]);
    loaded->logical_ids.push_back({0, 0});
  } else {
    // The program's devices that are this process's; in a job, a program that does not use the process grid runs
    // on local devices only (each process its own copy).
    const int64_t first = program->exe->uses_grid() ? first_global : 0;
    for (uint32_t d = 0; d < e.num_devices(); ++d) {
      const int64_t local = static_cast<int64_t>(d) - first;
      if (local < 0 || static_cast<uint64_t>(local) >= cores) continue;
      loaded->addressable_devices.push_back(client->devices[static_cast<size_t>(local)]);
      loaded->logical_ids.push_back({static_cast<int>(e.replica_of(d)), static_cast<int>(e.partition_of(d))});
    }
    if (loaded->addressable_devices.empty())
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                    "%s: the program runs on devices 0..%u of the job; none of them is process %u's", fn,
                    e.num_devices() - 1, client->process_index);
  }
  loaded->program = std::move(program);
  *out = loaded.release();
  return nullptr;
}

PJRT_Error* PJRT_Client_Compile(PJRT_Client_Compile_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_Compile_Args, executable);
  args->executable = nullptr;
  NM_PJRT_REQUIRE(args->client);
  NM_PJRT_REQUIRE(args->program);
  const PJRT_Program* p = args->program;
  if (p->struct_size < PJRT_Program_STRUCT_SIZE)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: program->struct_size is %zu, below %zu", __func__,
                  p->struct_size, static_cast<size_t>(PJRT_Program_STRUCT_SIZE));
  if (p->code_size && !p->code)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: program->code is NULL but code_size is %zu", __func__,
                  p->code_size);
  if (args->compile_options_size && !args->compile_options)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: compile_options is NULL but compile_options_size is %zu",
                  __func__, args->compile_options_size);
  NM_PJRT_BEGIN
  const std::string format(p->format ? p->format : "", p->format ? p->format_size : 0);
  if (format == "hlo" || format == "hlo_with_config") {
    return ErrorF(PJRT_Error_Code_UNIMPLEMENTED,
                  "%s: program format '%s' (an HLO module) is not read by this plugin: send StableHLO (format "
                  "\"mlir\", e.g. jax.jit(...).lower(...).as_text())",
                  __func__, format.c_str());
  }
  if (format != "mlir") {
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: unknown program format '%s' (this plugin reads \"mlir\")",
                  __func__, format.c_str());
  }
  return CompileProgram(
      args->client, std::string_view(p->code ? p->code : "", p->code_size),
      std::string_view(args->compile_options ? args->compile_options : "", args->compile_options_size), __func__,
      &args->executable);
  NM_PJRT_END
}

// ---- executables

#define NM_PJRT_PROGRAM(args)        \
  NM_PJRT_REQUIRE(args->executable); \
  const Program& prog = *args->executable->program

PJRT_Error* PJRT_Executable_Destroy(PJRT_Executable_Destroy_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_Destroy_Args, executable);
  delete args->executable;
  return nullptr;
}

PJRT_Error* PJRT_Executable_Name(PJRT_Executable_Name_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_Name_Args, executable_name_size);
  NM_PJRT_PROGRAM(args);
  args->executable_name = prog.name.c_str();
  args->executable_name_size = prog.name.size();
  return nullptr;
}

PJRT_Error* PJRT_Executable_NumReplicas(PJRT_Executable_NumReplicas_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_NumReplicas_Args, num_replicas);
  NM_PJRT_PROGRAM(args);
  args->num_replicas = prog.num_replicas;
  return nullptr;
}

PJRT_Error* PJRT_Executable_NumPartitions(PJRT_Executable_NumPartitions_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_NumPartitions_Args, num_partitions);
  NM_PJRT_PROGRAM(args);
  args->num_partitions = prog.num_partitions;
  return nullptr;
}

PJRT_Error* PJRT_Executable_NumOutputs(PJRT_Executable_NumOutputs_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_NumOutputs_Args, num_outputs);
  NM_PJRT_PROGRAM(args);
  args->num_outputs = prog.exe->outputs().size();
  return nullptr;
}

// The "generated code" of the software NeuronCore is the program text it interprets.
PJRT_Error* PJRT_Executable_SizeOfGeneratedCodeInBytes(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_SizeOfGeneratedCodeInBytes_Args, size_in_bytes);
  NM_PJRT_PROGRAM(args);
  args->size_in_bytes = static_cast<int64_t>(prog.source.size());
  return nullptr;
}

PJRT_Error* PJRT_Executable_GetCostAnalysis(PJRT_Executable_GetCostAnalysis_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_GetCostAnalysis_Args, properties);
  NM_PJRT_PROGRAM(args);
  (void)prog;
  args->num_properties = 0;  // no cost model
  args->properties = nullptr;
  return nullptr;
}

PJRT_Error* PJRT_Executable_OutputElementTypes(PJRT_Executable_OutputElementTypes_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_OutputElementTypes_Args, num_output_types);
  NM_PJRT_PROGRAM(args);
  args->output_types = const_cast<PJRT_Buffer_Type*>(prog.output_types.data());
  args->num_output_types = prog.output_types.size();
  return nullptr;
}

PJRT_Error* PJRT_Executable_OutputDimensions(PJRT_Executable_OutputDimensions_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_OutputDimensions_Args, dim_sizes);
  NM_PJRT_PROGRAM(args);
  args->num_outputs = prog.output_ranks.size();
  args->dims = prog.output_dims.data();
  args->dim_sizes = prog.output_ranks.data();
  return nullptr;
}

PJRT_Error* PJRT_Executable_OutputMemoryKinds(PJRT_Executable_OutputMemoryKinds_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_OutputMemoryKinds_Args, memory_kind_sizes);
  NM_PJRT_PROGRAM(args);
  args->num_outputs = prog.output_kinds.size();
  args->memory_kinds = prog.output_kinds.data();
  args->memory_kind_sizes = prog.output_kind_sizes.data();
  return nullptr;
}

PJRT_Error* PJRT_Executable_ParameterMemoryKinds(PJRT_Executable_ParameterMemoryKinds_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_ParameterMemoryKinds_Args, memory_kind_sizes);
  NM_PJRT_PROGRAM(args);
  args->num_parameters = prog.parameter_kinds.size();
  args->memory_kinds = prog.parameter_kinds.data();
  args->memory_kind_sizes = prog.parameter_kind_sizes.data();
  return nullptr;
}

PJRT_Error* PJRT_Executable_Fingerprint(PJRT_Executable_Fingerprint_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_Fingerprint_Args, executable_fingerprint_size);
  NM_PJRT_PROGRAM(args);
  args->executable_fingerprint = prog.fingerprint.c_str();
  args->executable_fingerprint_size = prog.fingerprint.size();
  return nullptr;
}

// Arguments, outputs and the planned workspace, split by device and host memory kinds.
PJRT_Error* PJRT_Executable_GetCompiledMemoryStats(PJRT_Executable_GetCompiledMemoryStats_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_GetCompiledMemoryStats_Args, host_temp_size_in_bytes);
  NM_PJRT_PROGRAM(args);
  const exec::Executable& e = *prog.exe;
  int64_t arg[2] = {0, 0}, out[2] = {0, 0}, alias[2] = {0, 0};
  for (const exec::ValueInfo& v : e.parameters()) {
    arg[v.kind != MemoryKind::kDevice] += static_cast<int64_t>(v.bytes);
    if (v.donation >= 0) alias[v.kind != MemoryKind::kDevice] += static_cast<int64_t>(v.bytes);
  }
  for (const exec::ValueInfo& v : e.outputs()) out[v.kind != MemoryKind::kDevice] += static_cast<int64_t>(v.bytes);
  const auto temp = static_cast<int64_t>(e.peak_device_bytes());
  const auto host_temp = static_cast<int64_t>(e.peak_host_bytes());
  args->generated_code_size_in_bytes = 0;
  args->argument_size_in_bytes = arg[0];
  args->output_size_in_bytes = out[0];
  args->alias_size_in_bytes = alias[0];
  args->temp_size_in_bytes = temp;
  args->host_generated_code_size_in_bytes = 0;
  args->host_argument_size_in_bytes = arg[1];
  args->host_output_size_in_bytes = out[1];
  args->host_alias_size_in_bytes = alias[1];
  args->host_temp_size_in_bytes = host_temp;
  if (NM_PJRT_HAS(args, PJRT_Executable_GetCompiledMemoryStats_Args, peak_memory_in_bytes))
    args->peak_memory_in_bytes = arg[0] + out[0] - alias[0] + temp;
  if (NM_PJRT_HAS(args, PJRT_Executable_GetCompiledMemoryStats_Args, peak_unpadded_heap_bytes)) {
    args->total_size_in_bytes = arg[0] + out[0] - alias[0] + temp;
    args->total_allocation_bytes = temp;
    args->indefinite_allocations = 0;
    args->peak_unpadded_heap_bytes = temp;
  }
  return nullptr;
}

// code == NULL asks the size; else the program text is copied into code (code_size bytes at least).
PJRT_Error* PJRT_Executable_OptimizedProgram(PJRT_Executable_OptimizedProgram_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_OptimizedProgram_Args, program);
  NM_PJRT_PROGRAM(args);
  NM_PJRT_REQUIRE(args->program);
  PJRT_Program* p = args->program;
  if (p->struct_size < PJRT_Program_STRUCT_SIZE)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: program->struct_size is %zu, below %zu", __func__,
                  p->struct_size, static_cast<size_t>(PJRT_Program_STRUCT_SIZE));
  static const char kFormat[] = "mlir";
  p->format = kFormat;
  p->format_size = 4;
  if (!p->code) {
    p->code_size = prog.source.size();
    return nullptr;
  }
  if (p->code_size < prog.source.size())
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: program->code_size is %zu, the program has %zu bytes",
                  __func__, p->code_size, prog.source.size());
  std::memcpy(p->code, prog.source.data(), prog.source.size());
  p->code_size = prog.source.size();
  return nullptr;
}

// The serialized form: a magic line, the options' length (8 bytes, little-endian), the options, the text.
PJRT_Error* PJRT_Executable_Serialize(PJRT_Executable_Serialize_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_Serialize_Args, serialized_executable_deleter);
  NM_PJRT_PROGRAM(args);
  NM_PJRT_BEGIN
  std::string bytes = kSerialMagic;
  uint64_t n = prog.options.size();
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  bytes += prog.options;
  bytes += prog.source;
  HandOutBytes(std::move(bytes), &args->serialized_bytes, &args->serialized_bytes_size, &args->serialized_executable,
               &args->serialized_executable_deleter);
  return nullptr;
  NM_PJRT_END
}

// The CompileOptionsProto the executable was compiled with, as the frontend sent it.
PJRT_Error* PJRT_Executable_GetCompileOptions(PJRT_Executable_GetCompileOptions_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_GetCompileOptions_Args, serialized_compile_options_deleter);
  NM_PJRT_PROGRAM(args);
  NM_PJRT_BEGIN
  HandOutBytes(prog.options, &args->serialized_bytes, &args->serialized_bytes_size, &args->serialized_compile_options,
               &args->serialized_compile_options_deleter);
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_Executable_DeserializeAndLoad(PJRT_Executable_DeserializeAndLoad_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Executable_DeserializeAndLoad_Args, loaded_executable);
  args->loaded_executable = nullptr;
  NM_PJRT_REQUIRE(args->client);
  if (args->serialized_executable_size && !args->serialized_executable)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: serialized_executable is NULL but its size is %zu", __func__,
                  args->serialized_executable_size);
  NM_PJRT_BEGIN
  const std::string_view bytes(args->serialized_executable ? args->serialized_executable : "",
                               args->serialized_executable_size);
  const size_t magic = sizeof kSerialMagic - 1;
  if (bytes.size() < magic + 8 || bytes.substr(0, magic) != kSerialMagic) {
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "%s: the bytes are no executable serialized by this plugin (PJRT_Executable_Serialize)", __func__);
  }
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[magic + i])) << (8 * i);
  if (n > bytes.size() - magic - 8)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: the serialized executable is truncated", __func__);
  std::string_view options = bytes.substr(magic + 8, n);
  const std::string_view source = bytes.substr(magic + 8 + n);
  if (NM_PJRT_HAS(args, PJRT_Executable_DeserializeAndLoad_Args, overridden_serialized_compile_options_size) &&
      args->overridden_serialized_compile_options && args->overridden_serialized_compile_options_size) {
    options =
        std::string_view(args->overridden_serialized_compile_options, args->overridden_serialized_compile_options_size);
  }
  return CompileProgram(args->client, source, options, __func__, &args->loaded_executable);
  NM_PJRT_END
}

// ---- loaded executables

PJRT_Error* PJRT_LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args* args) {
  NM_PJRT_ARGS(args, PJRT_LoadedExecutable_Destroy_Args, executable);
  delete args->executable;
  return nullptr;
}

PJRT_Error* PJRT_ExecuteContext_Create(PJRT_ExecuteContext_Create_Args* args) {
  NM_PJRT_ARGS(args, PJRT_ExecuteContext_Create_Args, context);
  args->context = nullptr;
  NM_PJRT_BEGIN
  args->context = new PJRT_ExecuteContext;
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_ExecuteContext_Destroy(PJRT_ExecuteContext_Destroy_Args* args) {
  NM_PJRT_ARGS(args, PJRT_ExecuteContext_Destroy_Args, context);
  delete args->context;
  return nullptr;
}

PJRT_Error* PJRT_LoadedExecutable_GetExecutable(PJRT_LoadedExecutable_GetExecutable_Args* args) {
  NM_PJRT_ARGS(args, PJRT_LoadedExecutable_GetExecutable_Args, executable);
  args->executable = nullptr;
  NM_PJRT_REQUIRE(args->loaded_executable);
  NM_PJRT_BEGIN
  auto* e = new PJRT_Executable;
  e->program = args->loaded_executable->program;
  args->executable = e;
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_LoadedExecutable_AddressableDevices(PJRT_LoadedExecutable_AddressableDevices_Args* args) {
  NM_PJRT_ARGS(args, PJRT_LoadedExecutable_AddressableDevices_Args, num_addressable_devices);
  NM_PJRT_REQUIRE(args->executable);
  args->addressable_devices = args->executable->addressable_devices.data();
  args->num_addressable_devices = args->executable->addressable_devices.size();
  return nullptr;
}

PJRT_Error* PJRT_LoadedExecutable_AddressableDeviceLogicalIds(
    PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args* args) {
  NM_PJRT_ARGS(args, PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args, num_addressable_device_logical_ids);
  NM_PJRT_REQUIRE(args->executable);
  args->addressable_device_logical_ids = args->executable->logical_ids.data();
  args->num_addressable_device_logical_ids = args->executable->logical_ids.size();
  return nullptr;
}

// The executable's devices as an xla.DeviceAssignmentProto: replica r, partition p on the device that runs it.
PJRT_Error* PJRT_LoadedExecutable_GetDeviceAssignment(PJRT_LoadedExecutable_GetDeviceAssignment_Args* args) {
  NM_PJRT_ARGS(args, PJRT_LoadedExecutable_GetDeviceAssignment_Args, serialized_device_assignment_deleter);
  NM_PJRT_REQUIRE(args->executable);
  NM_PJRT_BEGIN
  const PJRT_LoadedExecutable& le = *args->executable;
  const int64_t R = static_cast<int64_t>(le.program->num_replicas),
                P = static_cast<int64_t>(le.program->num_partitions);
  // Replica r, partition c runs on device r * P + c of the job (a launch across processes); this process's
  // devices by their global ids (a program of this process runs on its own).
  std::vector<std::vector<int64_t>> devices(static_cast<size_t>(P), std::vector<int64_t>(static_cast<size_t>(R)));
  for (int64_t c = 0; c < P; ++c)
    for (int64_t r = 0; r < R; ++r) devices[static_cast<size_t>(c)][static_cast<size_t>(r)] = r * P + c;
  for (size_t i = 0; i < le.addressable_devices.size(); ++i) {
    const PJRT_LogicalDeviceIds& ids = le.logical_ids[i];
    devices[static_cast<size_t>(ids.partition)][static_cast<size_t>(ids.replica)] =
        le.addressable_devices[i]->description.id;  // global: what a compile's device_assignment names
  }
  HandOutBytes(EncodeDeviceAssignment(R, P, devices), &args->serialized_bytes, &args->serialized_bytes_size,
               &args->serialized_device_assignment, &args->serialized_device_assignment_deleter);
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_LoadedExecutable_Delete(PJRT_LoadedExecutable_Delete_Args* args) {
  NM_PJRT_ARGS(args, PJRT_LoadedExecutable_Delete_Args, executable);
  NM_PJRT_REQUIRE(args->executable);
  args->executable->deleted.store(true, std::memory_order_release);
  return nullptr;
}

PJRT_Error* PJRT_LoadedExecutable_IsDeleted(PJRT_LoadedExecutable_IsDeleted_Args* args) {
  NM_PJRT_ARGS(args, PJRT_LoadedExecutable_IsDeleted_Args, is_deleted);
  NM_PJRT_REQUIRE(args->executable);
  args->is_deleted = args->executable->deleted.load(std::memory_order_acquire);
  return nullptr;
}

PJRT_Error* PJRT_LoadedExecutable_Fingerprint(PJRT_LoadedExecutable_Fingerprint_Args* args) {
  NM_PJRT_ARGS(args, PJRT_LoadedExecutable_Fingerprint_Args, executable_fingerprint_size);
  NM_PJRT_REQUIRE(args->executable);
  args->executable_fingerprint = args->executable->program->fingerprint.c_str();
  args->executable_fingerprint_size = args->executable->program->fingerprint.size();
  return nullptr;
}

// `count` empty result handles of `client`, handed out once the execution is submitted.
struct Results {
  std::vector<std::unique_ptr<PJRT_Buffer>> handles;
  std::vector<copy::Buffer*> buffers;
  Results(PJRT_Client* client, size_t count) : handles(count), buffers(count) {
    for (size_t k = 0; k < count; ++k) {
      handles[k] = std::make_unique<PJRT_Buffer>();
      handles[k]->client = client;
      buffers[k] = &handles[k]->buffer;
    }
  }
};

// The cores an execution runs on: execute_device's (a portable execution, num_devices 1), else the executable's
// addressable devices, one argument list each.
PJRT_Error* CoresOf(const PJRT_LoadedExecutable_Execute_Args* args, const char* fn, std::vector<uint32_t>* cores) {
  const PJRT_LoadedExecutable* le = args->executable;
  PJRT_Device* execute_device =
      NM_PJRT_HAS(args, PJRT_LoadedExecutable_Execute_Args, execute_device) ? args->execute_device : nullptr;
  const size_t n = args->num_devices;
  if (execute_device) {
    if (n != 1)
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: num_devices is %zu; with execute_device it must be 1", fn,
                    n);
    if (execute_device->client != le->client)
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: execute_device belongs to another client", fn);
    if (PJRT_Error* e = CheckAddressable(execute_device, fn, "execute_device")) return e;
    if (!le->program->portable && !(le->program->exe->num_devices() == 1 && execute_device->device->id() == 0))
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                    "%s: execute_device runs executables of one device that do not use replica or partition ids; "
                    "this one runs on %zu devices",
                    fn, le->addressable_devices.size());
    cores->push_back(static_cast<uint32_t>(execute_device->device->id()));
    return nullptr;
  }
  if (n != le->addressable_devices.size())
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "%s: num_devices is %zu; the executable runs on %zu devices (%zu replicas x %zu partitions)", fn, n,
                  le->addressable_devices.size(), le->program->num_replicas, le->program->num_partitions);
  for (PJRT_Device* d : le->addressable_devices) cores->push_back(static_cast<uint32_t>(d->device->id()));
  return nullptr;
}

// The argument lists as the library's buffers (num_devices * num_args, row-major), all of the executable's
// client; checks the output lists too.
PJRT_Error* ArgumentsOf(const PJRT_LoadedExecutable_Execute_Args* args, const char* fn,
                        std::vector<copy::Buffer*>* buffers) {
  const exec::Executable& e = *args->executable->program->exe;
  const size_t n = args->num_devices, num_args = args->num_args;
  if (num_args != e.parameters().size())
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: num_args is %zu; the executable has %zu parameters", fn,
                  num_args, e.parameters().size());
  if (num_args && !args->argument_lists)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: argument_lists is NULL", fn);
  if (!args->output_lists) return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: output_lists is NULL", fn);
  buffers->assign(n * num_args, nullptr);
  for (size_t d = 0; d < n; ++d) {
    if (!args->output_lists[d]) return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: output_lists[%zu] is NULL", fn, d);
    if (num_args && !args->argument_lists[d])
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: argument_lists[%zu] is NULL", fn, d);
    for (size_t i = 0; i < num_args; ++i) {
      PJRT_Buffer* b = args->argument_lists[d][i];
      if (!b) return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: argument_lists[%zu][%zu] is NULL", fn, d, i);
      if (b->client != args->executable->client)
        return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                      "%s: argument_lists[%zu][%zu] is a buffer of another client than the executable's", fn, d, i);
      (*buffers)[d * num_args + i] = &b->buffer;
    }
  }
  return nullptr;
}

// options->non_donatable_input_indices, each a parameter index below num_args.
PJRT_Error* NonDonatableOf(const PJRT_ExecuteOptions* o, size_t num_args, const char* fn, std::vector<size_t>* out) {
  if (!NM_PJRT_HAS(o, PJRT_ExecuteOptions, num_non_donatable_input_indices) || !o->num_non_donatable_input_indices)
    return nullptr;
  if (!o->non_donatable_input_indices)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "%s: options->non_donatable_input_indices is NULL but its count is %zu", fn,
                  o->num_non_donatable_input_indices);
  for (size_t i = 0; i < o->num_non_donatable_input_indices; ++i) {
    const int64_t k = o->non_donatable_input_indices[i];
    if (k < 0 || static_cast<size_t>(k) >= num_args)
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                    "%s: options->non_donatable_input_indices[%zu] is %lld; the executable has %zu parameters", fn, i,
                    static_cast<long long>(k), num_args);
    out->push_back(static_cast<size_t>(k));
  }
  return nullptr;
}

// Checks the launch (devices, argument and output lists, options), converts it, and runs it through the session:
// Session::Execute on one device, Session::Launch on several or with a launch id (options->launch_id: the id of
// a launch across the processes of a job).
PJRT_Error* PJRT_LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args* args) {
  NM_PJRT_ARGS(args, PJRT_LoadedExecutable_Execute_Args, device_complete_events);
  NM_PJRT_REQUIRE(args->executable);
  NM_PJRT_REQUIRE(args->options);
  const PJRT_ExecuteOptions* o = args->options;
  if (o->struct_size < offsetof(PJRT_ExecuteOptions, launch_id) + sizeof(o->launch_id))
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: options->struct_size is %zu, too small", __func__,
                  o->struct_size);
  NM_PJRT_BEGIN
  PJRT_LoadedExecutable* le = args->executable;
  if (le->deleted.load(std::memory_order_acquire))
    return ErrorF(PJRT_Error_Code_FAILED_PRECONDITION, "%s: the executable was deleted (PJRT_LoadedExecutable_Delete)",
                  __func__);
  std::vector<uint32_t> cores;
  if (PJRT_Error* err = CoresOf(args, __func__, &cores)) return err;
  std::vector<copy::Buffer*> buffers;
  if (PJRT_Error* err = ArgumentsOf(args, __func__, &buffers)) return err;
  std::vector<size_t> non_donatable;
  if (PJRT_Error* err = NonDonatableOf(o, args->num_args, __func__, &non_donatable)) return err;
  std::shared_ptr<const exec::HostCallbacks> host;
  if (PJRT_Error* err = HostCallbacksOf(o, cores, &host)) return err;

  const size_t n = cores.size(), num_outputs = le->program->exe->outputs().size();
  Results results(le->client, n * num_outputs);
  std::vector<Event*> done(n, nullptr);
  const auto common = [&](auto& request) {  // what an ExecuteRequest and a LaunchRequest both carry
    request.executable = le->program->exe;
    request.arguments = Span<copy::Buffer* const>(buffers.data(), buffers.size());
    request.non_donatable = Span<const size_t>(non_donatable.data(), non_donatable.size());
    request.host = host;
  };
  exec::Session& session = *le->client->session;
  Status s;
  // A launch id (PJRT's launch_id, which every process of a job gives alike) goes with a launch; one device
  // without one is a plain execution.
  if (n == 1 && o->launch_id == 0) {
    exec::ExecuteRequest request;
    common(request);
    request.core = cores[0];
    s = session.Execute(request, results.buffers.data(), &done[0], nullptr);
  } else {
    exec::LaunchRequest request;
    common(request);
    request.cores = Span<const uint32_t>(cores.data(), cores.size());
    request.launch_id = static_cast<uint64_t>(static_cast<int64_t>(o->launch_id));
    s = session.Launch(request, results.buffers.data(), done.data(), nullptr);
  }
  if (s) return FromStatus(std::move(s), __func__);
  for (size_t d = 0; d < n; ++d) {
    for (size_t k = 0; k < num_outputs; ++k) args->output_lists[d][k] = results.handles[d * num_outputs + k].release();
    if (args->device_complete_events) {
      args->device_complete_events[d] = NewPjrtEvent(done[d]);
    } else {
      Release(done[d]);
    }
  }
  return nullptr;
  NM_PJRT_END
}

}  // namespace

void FillExecutables(PJRT_Api* api) {
  api->PJRT_Client_Compile = PJRT_Client_Compile;
  api->PJRT_ExecuteContext_Create = PJRT_ExecuteContext_Create;
  api->PJRT_ExecuteContext_Destroy = PJRT_ExecuteContext_Destroy;
  api->PJRT_Executable_Destroy = PJRT_Executable_Destroy;
  api->PJRT_Executable_Name = PJRT_Executable_Name;
  api->PJRT_Executable_NumReplicas = PJRT_Executable_NumReplicas;
  api->PJRT_Executable_NumPartitions = PJRT_Executable_NumPartitions;
  api->PJRT_Executable_NumOutputs = PJRT_Executable_NumOutputs;
  api->PJRT_Executable_SizeOfGeneratedCodeInBytes = PJRT_Executable_SizeOfGeneratedCodeInBytes;
  api->PJRT_Executable_GetCostAnalysis = PJRT_Executable_GetCostAnalysis;
  api->PJRT_Executable_OutputElementTypes = PJRT_Executable_OutputElementTypes;
  api->PJRT_Executable_OutputDimensions = PJRT_Executable_OutputDimensions;
  api->PJRT_Executable_OutputMemoryKinds = PJRT_Executable_OutputMemoryKinds;
  api->PJRT_Executable_ParameterMemoryKinds = PJRT_Executable_ParameterMemoryKinds;
  api->PJRT_Executable_Fingerprint = PJRT_Executable_Fingerprint;
  api->PJRT_Executable_GetCompiledMemoryStats = PJRT_Executable_GetCompiledMemoryStats;
  api->PJRT_Executable_OptimizedProgram = PJRT_Executable_OptimizedProgram;
  api->PJRT_Executable_Serialize = PJRT_Executable_Serialize;
  api->PJRT_Executable_DeserializeAndLoad = PJRT_Executable_DeserializeAndLoad;
  api->PJRT_Executable_GetCompileOptions = PJRT_Executable_GetCompileOptions;
  api->PJRT_LoadedExecutable_AddressableDeviceLogicalIds = PJRT_LoadedExecutable_AddressableDeviceLogicalIds;
  api->PJRT_LoadedExecutable_GetDeviceAssignment = PJRT_LoadedExecutable_GetDeviceAssignment;
  api->PJRT_LoadedExecutable_Destroy = PJRT_LoadedExecutable_Destroy;
  api->PJRT_LoadedExecutable_GetExecutable = PJRT_LoadedExecutable_GetExecutable;
  api->PJRT_LoadedExecutable_AddressableDevices = PJRT_LoadedExecutable_AddressableDevices;
  api->PJRT_LoadedExecutable_Delete = PJRT_LoadedExecutable_Delete;
  api->PJRT_LoadedExecutable_IsDeleted = PJRT_LoadedExecutable_IsDeleted;
  api->PJRT_LoadedExecutable_Fingerprint = PJRT_LoadedExecutable_Fingerprint;
  api->PJRT_LoadedExecutable_Execute = PJRT_LoadedExecutable_Execute;
}

}  // namespace neuronmem::pjrt
