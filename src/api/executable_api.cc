// C shim for executables: argument checks and conversions; compiling and executing are src/exec.
#include <neuronmem/executable.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/handles.h"
#include "api/shim.h"
#include "base/element_type.h"
#include "base/memory_kind.h"
#include "base/status.h"
#include "exec/executable.h"
#include "exec/runtime.h"
#include "manifest/manifest.h"

using neuronmem::FailedPrecondition;
using neuronmem::InvalidArgument;
using neuronmem::OutOfRange;
namespace exec = neuronmem::exec;
namespace mf = neuronmem::manifest;

namespace {

struct ResolvedOptions {
  mf::Options manifest;
  exec::ExecutableOptions compile;
};

neuronmem_status_t* ResolveOptions(const neuronmem_compile_options_t* o, ResolvedOptions* out) {
  if (!o) return nullptr;
  if (auto s = neuronmem::api::CheckArgs(*o, NEURONMEM_MIN_SIZE(neuronmem_compile_options_t, num_replicas),
                                         "neuronmem_compile_options_t")) {
    return s.release();
  }
  const int64_t policy = neuronmem::api::EnumValue(o->policy);
  if (policy < 0 || policy > NEURONMEM_PLACEMENT_POLICY_TORCH_NEURONX)
    return InvalidArgument("policy %lld is not a neuronmem_placement_policy_t", static_cast<long long>(policy))
        .release();
  const int64_t placement = neuronmem::api::EnumValue(o->argument_placement);
  if (placement < 0 || placement > NEURONMEM_ARGUMENT_PLACEMENT_AUTO_COPY)
    return InvalidArgument("argument_placement %lld is not a neuronmem_argument_placement_t",
                           static_cast<long long>(placement))
        .release();
  if (o->entry) out->manifest.entry = o->entry;
  if (o->filename) out->manifest.filename = o->filename;
  out->manifest.policy = static_cast<mf::Policy>(policy);
  out->compile.placement = static_cast<exec::ArgumentPlacement>(placement);
  out->compile.num_replicas = o->num_replicas;
  if (NEURONMEM_HAS_FIELD(o, neuronmem_compile_options_t, num_partitions))
    out->compile.num_partitions = o->num_partitions;
  return nullptr;
}

neuronmem_status_t* Finish(neuronmem_client_t* client, const mf::Manifest& m, exec::ExecutableOptions options,
                           neuronmem_executable_t** out) {
  auto h = std::make_unique<neuronmem_executable_t>();
  if (auto s = client->session->Compile(m, options, &h->exe, &h->lease)) return s.release();
  h->client = client;
  *out = h.release();
  return nullptr;
}

void FillValue(const exec::ValueInfo& v, neuronmem_executable_value_t* out) {
  out->element_type = static_cast<neuronmem_element_type_t>(neuronmem::ElementTypeToC(v.type));
  out->dims = v.dims.empty() ? nullptr : v.dims.data();
  out->num_dims = v.dims.size();
  out->memory_kind = static_cast<neuronmem_memory_kind_t>(v.kind);
  out->bytes = v.bytes;
  out->donation = v.donation;
}

neuronmem_status_t* ValueMemory(const neuronmem_executable_t* e, const neuronmem_device_t* device, size_t index,
                                bool output, neuronmem_memory_t** out) {
  *out = nullptr;
  if (device->client != e->client)
    return InvalidArgument("the device belongs to another client than the executable").release();
  const auto& values = output ? e->exe->outputs() : e->exe->parameters();
  if (index >= values.size())
    return OutOfRange("%s %zu does not exist: the executable has %zu", output ? "output" : "parameter", index,
                      values.size())
        .release();
  *out = device->by_kind[static_cast<size_t>(values[index].kind)];
  return nullptr;
}

// The C++ buffers of `count` argument handles: each non-NULL and of `client`. per_device > 0: a launch's
// row-major lists, named "argument i of device d".
neuronmem_status_t* ArgumentBuffers(neuronmem_client_t* client, neuronmem_buffer_t* const* handles, size_t count,
                                    size_t per_device, std::vector<neuronmem::copy::Buffer*>* out) {
  out->resize(count);
  // The argument's name, built only for an error (this runs on every execute).
  const auto what = [per_device](size_t i) {
    return per_device ? "argument " + std::to_string(i % per_device) + " of args->devices[" +
                            std::to_string(i / per_device) + "]"
                      : "argument " + std::to_string(i);
  };
  for (size_t i = 0; i < count; ++i) {
    neuronmem_buffer_t* b = handles[i];
    if (!b) return InvalidArgument("args->arguments[%zu] (%s) is NULL", i, what(i).c_str()).release();
    if (b->client != client)
      return InvalidArgument("%s is a buffer of another client than the executable's", what(i).c_str()).release();
    (*out)[i] = &b->buffer;
  }
  return nullptr;
}

// What execute and execute_devices share: the devices' cores (each device non-NULL and of the executable's
// client; `device_arg` names the argument, "args->device" or "args->devices"), the argument buffers
// (num_devices lists of num_arguments, row-major) and the non-donatable list.
struct Submission {
  std::vector<uint32_t> cores;
  std::vector<neuronmem::copy::Buffer*> buffers;
};
neuronmem_status_t* CheckSubmission(const neuronmem_executable_t* h, const neuronmem_device_t* const* devices,
                                    size_t num_devices, bool one_device, neuronmem_buffer_t* const* arguments,
                                    size_t num_arguments, const size_t* non_donatable, size_t num_non_donatable,
                                    Submission* out) {
  // Per device, before num_devices * num_arguments is formed (it could wrap).
  const size_t num_params = h->exe->parameters().size();
  if (num_arguments != num_params && one_device)
    return InvalidArgument("%zu arguments given, the executable takes %zu", num_arguments, num_params).release();
  if (num_arguments != num_params)
    return InvalidArgument("%zu arguments given per device, the executable takes %zu", num_arguments, num_params)
        .release();
  out->cores.resize(num_devices);
  for (size_t d = 0; d < num_devices; ++d) {
    const neuronmem_device_t* device = devices[d];
    // The argument's name, built only for an error (this runs on every execute).
    const auto name = [one_device, d] {
      return one_device ? std::string("args->device") : "args->devices[" + std::to_string(d) + "]";
    };
    if (!device) return InvalidArgument("%s is NULL", name().c_str()).release();
    if (device->client != h->client)
      return InvalidArgument("%s belongs to another client than the executable", name().c_str()).release();
    out->cores[d] = static_cast<uint32_t>(device->device->id());
  }
  if (num_arguments && !arguments)
    return InvalidArgument("args->arguments is NULL but num_arguments is %zu", num_arguments).release();
  if (num_non_donatable && !non_donatable)
    return InvalidArgument("args->non_donatable is NULL but num_non_donatable is %zu", num_non_donatable).release();
  return ArgumentBuffers(h->client, arguments, num_devices * num_arguments, one_device ? 0 : num_arguments,
                         &out->buffers);
}

// `count` empty result handles of `client` and their C++ buffers, handed out once the execution is submitted.
struct ResultHandles {
  std::vector<std::unique_ptr<neuronmem_buffer_t>> handles;
  std::vector<neuronmem::copy::Buffer*> buffers;

  ResultHandles(neuronmem_client_t* client, size_t count) : handles(count), buffers(count) {
    for (size_t k = 0; k < count; ++k) {
      handles[k] = std::make_unique<neuronmem_buffer_t>();
      handles[k]->client = client;
      buffers[k] = &handles[k]->buffer;
    }
  }
  void Release(neuronmem_buffer_t** out) {
    for (size_t k = 0; k < handles.size(); ++k) out[k] = handles[k].release();
  }
};

neuronmem_kernel_tensor_t TensorView(const exec::CustomKernelTensor& t) {
  neuronmem_kernel_tensor_t v{};
  v.data = t.data;
  v.element_type = static_cast<neuronmem_element_type_t>(neuronmem::ElementTypeToC(t.type));
  v.dims = t.rank ? t.dims : nullptr;
  v.num_dims = t.rank;
  v.memory_kind = static_cast<neuronmem_memory_kind_t>(t.kind);
  return v;
}

// A launch's host callbacks: each C callback behind an exec::HostCallback, keyed by channel id.
// INVALID_ARGUMENT for a NULL array with a count, a NULL fn, a channel id listed twice.
neuronmem_status_t* AddHostCallbacks(const neuronmem_host_callback_t* cbs, size_t n, const char* what,
                                     std::map<int64_t, exec::HostCallback>* out) {
  if (n && !cbs) return InvalidArgument("args->%s is NULL but num_%s is %zu", what, what, n).release();
  for (size_t i = 0; i < n; ++i) {
    const neuronmem_host_callback_t c = cbs[i];
    if (!c.fn) return InvalidArgument("args->%s[%zu].fn is NULL", what, i).release();
    const exec::HostCallback fn = [c](const exec::HostTransfer& t) -> neuronmem::Status {
      std::vector<neuronmem_kernel_tensor_t> views(t.num_tensors);
      for (size_t k = 0; k < t.num_tensors; ++k) views[k] = TensorView(t.tensors[k]);
      neuronmem_host_transfer_t h{};
      h.struct_size = sizeof h;
      h.channel_id = t.channel;
      h.device = static_cast<int32_t>(t.core);
      h.replica_id = t.replica;
      h.partition_id = t.partition;
      h.tensors = views.empty() ? nullptr : views.data();
      h.num_tensors = views.size();
      // The callback runs on the core's launch thread: a blocking call into the library there could wait for
      // the launch it is part of, so it is refused (api::RefuseBlockingInCallback).
      neuronmem::CallerCallbackScope in_callback("a host-transfer callback (neuronmem_host_callback_fn_t)");
      return neuronmem::api::CallbackResult(c.fn(&h, c.user_data), "the host-transfer callback");
    };
    if (!out->emplace(c.channel_id, fn).second)
      return InvalidArgument("args->%s lists channel %lld twice", what, static_cast<long long>(c.channel_id)).release();
  }
  return nullptr;
}

neuronmem_execution_t* NewExecution(std::shared_ptr<const exec::ExecutionStats> stats, neuronmem::Event* done,
                                    std::shared_ptr<exec::ExecutionControl> control) {
  auto* x = new neuronmem_execution_t();
  x->stats = std::move(stats);
  x->done = neuronmem::EventRef(neuronmem::Share(done));
  x->control = std::move(control);
  return x;
}

// An execution's deadline: its own timeout_ns, else the client's; UINT64_MAX is none.
uint64_t Timeout(const neuronmem_client_t* client, uint64_t requested) {
  const uint64_t t = requested ? requested : client->execution_timeout_ns;
  return t == UINT64_MAX ? 0 : t;
}

}  // namespace

extern "C" {

neuronmem_status_t* neuronmem_executable_compile_text(neuronmem_client_t* client, const char* text, size_t size,
                                                      const neuronmem_compile_options_t* options,
                                                      neuronmem_executable_t** out) {
  NEURONMEM_REQUIRE(out);
  *out = nullptr;
  NEURONMEM_REQUIRE(client);
  if (size) NEURONMEM_REQUIRE(text);
  NEURONMEM_API_BEGIN
  ResolvedOptions opt;
  // In a job, send/recv pairs name the job's devices (global ids).
  opt.manifest.num_cores = static_cast<uint32_t>(client->devices.size()) * client->num_processes;
  if (auto* s = ResolveOptions(options, &opt)) return s;
  opt.compile.filename = opt.manifest.filename;
  mf::Manifest m;
  if (auto s = mf::LoadFromText(std::string_view(text ? text : "", size), opt.manifest, &m)) return s.release();
  return Finish(client, m, opt.compile, out);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_executable_compile_manifest(neuronmem_client_t* client,
                                                          const neuronmem_manifest_t* manifest,
                                                          const neuronmem_compile_options_t* options,
                                                          neuronmem_executable_t** out) {
  NEURONMEM_REQUIRE(out);
  *out = nullptr;
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(manifest);
  NEURONMEM_API_BEGIN
  ResolvedOptions opt;
  if (auto* s = ResolveOptions(options, &opt)) return s;
  opt.compile.filename = opt.manifest.filename;
  return Finish(client, manifest->m, opt.compile, out);
  NEURONMEM_API_END
}

void neuronmem_executable_destroy(neuronmem_executable_t* executable) {
  delete executable;  // its lease ends the count in the client's session
}

neuronmem_status_t* neuronmem_executable_properties(const neuronmem_executable_t* executable,
                                                    neuronmem_executable_properties_t* out) {
  NEURONMEM_REQUIRE(executable);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_executable_properties_t, num_explicit_moves);
  const exec::Executable& e = *executable->exe;
  out->num_parameters = e.parameters().size();
  out->num_outputs = e.outputs().size();
  out->num_replicas = e.num_replicas();
  out->peak_device_bytes = e.peak_device_bytes();
  out->peak_host_bytes = e.peak_host_bytes();
  out->num_ops = e.num_ops();
  out->num_explicit_moves = e.num_moves();
  if (NEURONMEM_HAS_FIELD(out, neuronmem_executable_properties_t, num_partitions))
    out->num_partitions = e.num_partitions();
  if (NEURONMEM_HAS_FIELD(out, neuronmem_executable_properties_t, num_specializations))
    out->num_specializations = e.num_specializations();
  if (NEURONMEM_HAS_FIELD(out, neuronmem_executable_properties_t, num_manual_devices))
    out->num_manual_devices = e.num_manual_devices();
  return nullptr;
}

neuronmem_status_t* neuronmem_executable_parameter(const neuronmem_executable_t* executable, size_t index,
                                                   neuronmem_executable_value_t* out) {
  NEURONMEM_REQUIRE(executable);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_executable_value_t, donation);
  const auto& v = executable->exe->parameters();
  if (index >= v.size())
    return OutOfRange("parameter %zu does not exist: the executable has %zu", index, v.size()).release();
  FillValue(v[index], out);
  return nullptr;
}

neuronmem_status_t* neuronmem_executable_output(const neuronmem_executable_t* executable, size_t index,
                                                neuronmem_executable_value_t* out) {
  NEURONMEM_REQUIRE(executable);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_executable_value_t, donation);
  const auto& v = executable->exe->outputs();
  if (index >= v.size())
    return OutOfRange("output %zu does not exist: the executable has %zu", index, v.size()).release();
  FillValue(v[index], out);
  return nullptr;
}

neuronmem_status_t* neuronmem_executable_parameter_memory(const neuronmem_executable_t* executable,
                                                          const neuronmem_device_t* device, size_t index,
                                                          neuronmem_memory_t** out) {
  NEURONMEM_REQUIRE(out);
  *out = nullptr;
  NEURONMEM_REQUIRE(executable);
  NEURONMEM_REQUIRE(device);
  return ValueMemory(executable, device, index, false, out);
}

neuronmem_status_t* neuronmem_executable_output_memory(const neuronmem_executable_t* executable,
                                                       const neuronmem_device_t* device, size_t index,
                                                       neuronmem_memory_t** out) {
  NEURONMEM_REQUIRE(out);
  *out = nullptr;
  NEURONMEM_REQUIRE(executable);
  NEURONMEM_REQUIRE(device);
  return ValueMemory(executable, device, index, true, out);
}

neuronmem_status_t* neuronmem_executable_execute(const neuronmem_execute_args_t* args, neuronmem_buffer_t** out_results,
                                                 neuronmem_event_t** out_done, neuronmem_execution_t** out_execution) {
  NEURONMEM_REQUIRE(args);
  NEURONMEM_REQUIRE(out_results);
  NEURONMEM_REQUIRE(out_done);
  *out_done = nullptr;
  if (out_execution) *out_execution = nullptr;
  if (auto s = neuronmem::api::CheckArgs(*args, NEURONMEM_MIN_SIZE(neuronmem_execute_args_t, num_non_donatable),
                                         "neuronmem_execute_args_t")) {
    return s.release();
  }
  if (!args->executable) return neuronmem::api::NullArg(__func__, "args->executable");
  if (!args->device) return neuronmem::api::NullArg(__func__, "args->device");
  NEURONMEM_API_BEGIN
  neuronmem_executable_t* h = args->executable;
  neuronmem_client_t* client = h->client;
  const size_t num_outputs = h->exe->outputs().size();
  for (size_t k = 0; k < num_outputs; ++k) out_results[k] = nullptr;
  Submission sub;
  const neuronmem_device_t* device = args->device;
  if (auto* s = CheckSubmission(h, &device, 1, true, args->arguments, args->num_arguments, args->non_donatable,
                                args->num_non_donatable, &sub))
    return s;
  neuronmem::Span<neuronmem::Event* const> waits;
  if (auto s = neuronmem::api::WaitList(args->wait, "args->", &waits)) return s.release();
  ResultHandles results(client, num_outputs);
  exec::ExecuteRequest request;
  request.executable = h->exe;
  request.core = sub.cores[0];
  request.arguments = neuronmem::Span<neuronmem::copy::Buffer* const>(sub.buffers.data(), sub.buffers.size());
  request.waits = waits;
  request.non_donatable = neuronmem::Span<const size_t>(args->non_donatable, args->num_non_donatable);
  request.timeout_ns =
      Timeout(client, NEURONMEM_HAS_FIELD(args, neuronmem_execute_args_t, timeout_ns) ? args->timeout_ns : 0);
  if (out_execution) request.control = std::make_shared<exec::ExecutionControl>();
  neuronmem::Event* done = nullptr;
  std::shared_ptr<const exec::ExecutionStats> stats;
  if (auto s = client->session->Execute(request, results.buffers.data(), &done, out_execution ? &stats : nullptr))
    return s.release();
  results.Release(out_results);
  *out_done = done;
  if (out_execution) *out_execution = NewExecution(std::move(stats), done, std::move(request.control));
  return nullptr;
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_executable_execute_devices(const neuronmem_execute_devices_args_t* args,
                                                         neuronmem_buffer_t** out_results, neuronmem_event_t** out_done,
                                                         neuronmem_execution_t** out_executions) {
  NEURONMEM_REQUIRE(args);
  NEURONMEM_REQUIRE(out_results);
  NEURONMEM_REQUIRE(out_done);
  if (auto s = neuronmem::api::CheckArgs(*args, NEURONMEM_MIN_SIZE(neuronmem_execute_devices_args_t, num_non_donatable),
                                         "neuronmem_execute_devices_args_t")) {
    return s.release();
  }
  const size_t n = args->num_devices;
  // The arrays are cleared only as far as a launch can reach: no client has more devices than kMaxCores, and
  // n * num_outputs cannot wrap below that.
  const size_t max_devices = args->executable ? args->executable->client->devices.size() : mf::kMaxCores;
  if (n > max_devices) {
    return InvalidArgument("args->num_devices is %zu but the %s has %zu devices (each at most once)", n,
                           args->executable ? "client" : "largest client", max_devices)
        .release();
  }
  for (size_t d = 0; d < n; ++d) {
    out_done[d] = nullptr;
    if (out_executions) out_executions[d] = nullptr;
  }
  if (!args->executable) return neuronmem::api::NullArg(__func__, "args->executable");
  if (n && !args->devices) return InvalidArgument("args->devices is NULL but num_devices is %zu", n).release();
  NEURONMEM_API_BEGIN
  neuronmem_executable_t* h = args->executable;
  neuronmem_client_t* client = h->client;
  const size_t num_outputs = h->exe->outputs().size();
  for (size_t d = 0; d < n; ++d)
    for (size_t k = 0; k < num_outputs; ++k) out_results[d * num_outputs + k] = nullptr;
  if (n == 0) return InvalidArgument("args->num_devices is 0: a launch needs at least one device").release();
  Submission sub;
  if (auto* s = CheckSubmission(h, args->devices, n, false, args->arguments, args->num_arguments, args->non_donatable,
                                args->num_non_donatable, &sub))
    return s;
  std::vector<neuronmem::Span<neuronmem::Event* const>> waits;
  if (args->waits) {
    waits.resize(n);
    for (size_t d = 0; d < n; ++d) {
      const std::string where = "args->waits[" + std::to_string(d) + "].";
      if (auto s = neuronmem::api::WaitList(args->waits[d], where.c_str(), &waits[d])) return s.release();
    }
  }
  auto host = std::make_shared<exec::HostCallbacks>();
  if (NEURONMEM_HAS_FIELD(args, neuronmem_execute_devices_args_t, num_recv_callbacks)) {
    if (auto* s = AddHostCallbacks(args->send_callbacks, args->num_send_callbacks, "send_callbacks", &host->send))
      return s;
    if (auto* s = AddHostCallbacks(args->recv_callbacks, args->num_recv_callbacks, "recv_callbacks", &host->recv))
      return s;
  }
  ResultHandles results(client, n * num_outputs);
  exec::LaunchRequest request;
  request.executable = h->exe;
  request.cores = neuronmem::Span<const uint32_t>(sub.cores.data(), n);
  request.arguments = neuronmem::Span<neuronmem::copy::Buffer* const>(sub.buffers.data(), sub.buffers.size());
  request.waits = neuronmem::Span<const neuronmem::Span<neuronmem::Event* const>>(waits.data(), waits.size());
  request.non_donatable = neuronmem::Span<const size_t>(args->non_donatable, args->num_non_donatable);
  request.host = std::move(host);
  request.timeout_ns =
      Timeout(client, NEURONMEM_HAS_FIELD(args, neuronmem_execute_devices_args_t, timeout_ns) ? args->timeout_ns : 0);
  if (NEURONMEM_HAS_FIELD(args, neuronmem_execute_devices_args_t, launch_id)) request.launch_id = args->launch_id;
  std::vector<std::shared_ptr<exec::ExecutionControl>> controls;
  if (out_executions) {
    for (size_t d = 0; d < n; ++d) controls.push_back(std::make_shared<exec::ExecutionControl>());
    request.controls = controls.data();
  }
  std::vector<neuronmem::Event*> done(n, nullptr);
  std::vector<std::shared_ptr<const exec::ExecutionStats>> stats(n);
  if (auto s = client->session->Launch(request, results.buffers.data(), done.data(),
                                       out_executions ? stats.data() : nullptr))
    return s.release();
  results.Release(out_results);
  for (size_t d = 0; d < n; ++d) {
    out_done[d] = done[d];
    if (out_executions) out_executions[d] = NewExecution(std::move(stats[d]), done[d], std::move(controls[d]));
  }
  return nullptr;
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_executable_logical_ids(const neuronmem_executable_t* executable,
                                                     const neuronmem_device_t* device, uint32_t* out_replica,
                                                     uint32_t* out_partition) {
  NEURONMEM_REQUIRE(out_replica);
  NEURONMEM_REQUIRE(out_partition);
  *out_replica = 0;
  *out_partition = 0;
  NEURONMEM_REQUIRE(executable);
  NEURONMEM_REQUIRE(device);
  if (device->client != executable->client)
    return InvalidArgument("the device belongs to another client than the executable").release();
  const exec::Executable& e = *executable->exe;
  // In a job, a program that uses the process grid runs on global device ids (docs/distributed.md).
  const neuronmem_client_t* client = executable->client;
  const auto d = static_cast<uint32_t>(device->device->id()) +
                 (e.uses_grid() ? client->process_index * static_cast<uint32_t>(client->devices.size()) : 0);
  if (d >= e.num_devices())
    return InvalidArgument("device %u: the executable runs on devices 0..%u (num_replicas %u, num_partitions %u)", d,
                           e.num_devices() - 1, e.num_replicas(), e.num_partitions())
        .release();
  *out_replica = e.replica_of(d);
  *out_partition = e.partition_of(d);
  return nullptr;
}

neuronmem_status_t* neuronmem_execution_stats(const neuronmem_execution_t* execution,
                                              neuronmem_execution_stats_t* out) {
  NEURONMEM_REQUIRE(execution);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_execution_stats_t, queue_ns);
  if (!neuronmem::IsReady(execution->done.get()))
    return FailedPrecondition("the execution has not finished: wait for its event first").release();
  const exec::ExecutionStats& st = *execution->stats;
  const exec::TransferCounts t = st.Total();
  out->explicit_transfers = t.explicit_transfers;
  out->explicit_bytes = t.explicit_bytes;
  out->implicit_transfers = t.implicit_transfers;
  out->implicit_bytes = t.implicit_bytes;
  out->op_ns = st.op_ns;
  out->transfer_ns = st.explicit_transfer_ns.load() + st.implicit_transfer_ns.load();
  out->queue_ns = st.queue_ns;
  if (NEURONMEM_HAS_FIELD(out, neuronmem_execution_stats_t, peer_bytes)) {
    out->peer_transfers = t.peer_transfers;
    out->peer_bytes = t.peer_bytes;
  }
  if (NEURONMEM_HAS_FIELD(out, neuronmem_execution_stats_t, manual_threads)) {
    out->manual_cores = st.manual_cores.load();
    out->manual_threads = st.manual_threads.load();
  }
  return nullptr;
}

neuronmem_status_t* neuronmem_execution_transfers(const neuronmem_execution_t* execution, neuronmem_memory_kind_t from,
                                                  neuronmem_memory_kind_t to, neuronmem_transfer_counts_t* out) {
  NEURONMEM_REQUIRE(execution);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_transfer_counts_t, implicit_bytes);
  neuronmem::MemoryKind f, t;
  if (!neuronmem::MemoryKindFromC(neuronmem::api::EnumValue(from), &f) ||
      !neuronmem::MemoryKindFromC(neuronmem::api::EnumValue(to), &t))
    return InvalidArgument("from and to must be neuronmem_memory_kind_t values").release();
  if (!neuronmem::IsReady(execution->done.get()))
    return FailedPrecondition("the execution has not finished: wait for its event first").release();
  const exec::TransferCounts c = execution->stats->pairs[static_cast<int>(f)][static_cast<int>(t)].Load();
  out->explicit_transfers = c.explicit_transfers;
  out->explicit_bytes = c.explicit_bytes;
  out->implicit_transfers = c.implicit_transfers;
  out->implicit_bytes = c.implicit_bytes;
  if (NEURONMEM_HAS_FIELD(out, neuronmem_transfer_counts_t, peer_bytes)) {
    out->peer_transfers = c.peer_transfers;
    out->peer_bytes = c.peer_bytes;
  }
  return nullptr;
}

neuronmem_status_t* neuronmem_execution_cancel(neuronmem_execution_t* execution) {
  NEURONMEM_REQUIRE(execution);
  if (execution->control) execution->control->Stop(NEURONMEM_STATUS_CANCELLED);
  return nullptr;
}

void neuronmem_execution_destroy(neuronmem_execution_t* execution) { delete execution; }

neuronmem_status_t* neuronmem_client_register_kernel(neuronmem_client_t* client,
                                                     const neuronmem_kernel_registration_t* args) {
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(args);
  if (auto s = neuronmem::api::CheckArgs(*args, NEURONMEM_MIN_SIZE(neuronmem_kernel_registration_t, user_data),
                                         "neuronmem_kernel_registration_t")) {
    return s.release();
  }
  if (!args->name || !*args->name) return InvalidArgument("args->name must be a non-empty string").release();
  if (!args->fn) return neuronmem::api::NullArg(__func__, "args->fn");
  NEURONMEM_API_BEGIN
  const neuronmem_kernel_fn_t fn = args->fn;
  void* const user_data = args->user_data;
  neuronmem::Status s = client->session->kernels().Register(
      args->name, [fn, user_data](const exec::CustomKernelCall& k) -> neuronmem::Status {
        std::vector<neuronmem_kernel_tensor_t> views(k.num_inputs + k.num_outputs);
        for (size_t i = 0; i < views.size(); ++i) {
          views[i] = TensorView(i < k.num_inputs ? k.inputs[i] : k.outputs[i - k.num_inputs]);
        }
        neuronmem_kernel_call_t call{};
        call.struct_size = sizeof call;
        call.target = {k.target.data(), k.target.size()};
        call.name = {k.name.data(), k.name.size()};
        call.backend_config = {k.backend_config.data(), k.backend_config.size()};
        call.inputs = views.data();
        call.num_inputs = k.num_inputs;
        call.outputs = views.data() + k.num_inputs;
        call.num_outputs = k.num_outputs;
        call.grid = k.grid_rank ? k.grid : nullptr;
        call.grid_rank = k.grid_rank;
        call.grid_index = k.grid_rank ? k.grid_index : nullptr;
        call.device = static_cast<int32_t>(k.core);  // device ids are core indices
        // A kernel runs on the core's thread or a oneTBB worker: a blocking call into the library there could
        // wait for the very execution it is part of, so it is refused (api::RefuseBlockingInCallback).
        neuronmem::CallerCallbackScope in_kernel("a kernel (neuronmem_kernel_fn_t)");
        return neuronmem::api::CallbackResult(fn(&call, user_data), "the kernel");
      });
  return s.release();
  NEURONMEM_API_END
}

}  // extern "C"
