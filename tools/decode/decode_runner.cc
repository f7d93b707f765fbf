#include "decode_runner.h"

#include <chrono>
#include <cstring>

namespace neuronmem_decode {

std::string StatusText(neuronmem_status_t* s) {
  if (!s) return "";
  const neuronmem_string_t m = neuronmem_status_message(s);
  std::string text = std::string(neuronmem_status_code_name(neuronmem_status_code(s))) + ": " +
                     std::string(m.data ? m.data : "", m.size);
  neuronmem_status_free(s);
  return text;
}

const char* KindName(int kind) {
  switch (kind) {
    case NEURONMEM_MEMORY_KIND_DEVICE: return "device";
    case NEURONMEM_MEMORY_KIND_PINNED_HOST: return "pinned_host";
    case NEURONMEM_MEMORY_KIND_UNPINNED_HOST: return "unpinned_host";
    default: return "?";
  }
}

namespace {

// A buffer of `spec` in `memory`, filled from bytes [offset, offset + size) of `path` by io_uring; its event is
// appended to *events.
std::string LoadRange(neuronmem_client_t* client, neuronmem_memory_t* memory, const ArgSpec& spec,
                      const std::string& path, uint64_t offset, neuronmem_buffer_t** out,
                      std::vector<neuronmem_event_t*>* events) {
  neuronmem_buffer_allocate_args_t a{};
  a.struct_size = sizeof a;
  a.client = client;
  a.memory = memory;
  a.element_type = spec.is_s32 ? NEURONMEM_ELEMENT_TYPE_S32 : NEURONMEM_ELEMENT_TYPE_F32;
  a.dims = spec.dims.data();
  a.num_dims = spec.dims.size();
  std::string e = StatusText(neuronmem_buffer_allocate(&a, out));
  if (!e.empty()) return spec.name + ": " + e;
  neuronmem_buffer_load_file_args_t l{};
  l.struct_size = sizeof l;
  l.buffer = *out;
  l.path = path.c_str();
  l.file_offset = offset;
  l.size = spec.bytes();
  neuronmem_event_t* ready = nullptr;
  e = StatusText(neuronmem_buffer_load_file(&l, &ready));
  if (!e.empty()) return "load " + spec.name + " from " + path + ": " + e;
  events->push_back(ready);
  return "";
}

}  // namespace

Runner::~Runner() {
  for (neuronmem_buffer_t* b : args_) neuronmem_buffer_destroy(b);
  for (int32_t* p : meta_)
    if (p) neuronmem_status_free(neuronmem_client_host_free(client_, p));
  neuronmem_executable_destroy(exe_);
}

std::string Runner::Init(neuronmem_client_t* client, const Config& c, const std::string& text,
                         const std::string& filename, uint64_t seed, const std::string& weights_file) {
  c_ = c;
  client_ = client;
  // The client's first device (in a job of several processes, this process's: its global id is not 0).
  neuronmem_device_t* const* devices = nullptr;
  size_t num_devices = 0;
  std::string e = StatusText(neuronmem_client_devices(client, &devices, &num_devices));
  if (e.empty() && num_devices == 0) e = "the client has no device";
  if (!e.empty()) return "device 0: " + e;
  device_ = devices[0];
  neuronmem_compile_options_t opts{};
  opts.struct_size = sizeof opts;
  opts.filename = filename.c_str();
  opts.argument_placement = NEURONMEM_ARGUMENT_PLACEMENT_STRICT;
  opts.num_replicas = static_cast<uint32_t>(c.tp);  // tensor parallelism: one replica per process
  const auto t0 = std::chrono::steady_clock::now();
  e = StatusText(neuronmem_executable_compile_text(client, text.data(), text.size(), &opts, &exe_));
  if (!e.empty()) return "compile: " + e;
  compile_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  const std::vector<ArgSpec> specs = Arguments(c);
  if (weights_file.empty()) {
    weights_ = MakeWeights(c, seed);
  } else {
    e = ReadWeightsFile(c, weights_file, &weights_);
    if (!e.empty()) return e;
  }
  std::vector<neuronmem_event_t*> loads;  // weights loaded from the file, one event per tensor
  uint64_t file_offset = 0;
  const auto load_start = std::chrono::steady_clock::now();
  const std::vector<float> zero_cache(specs[kKCache].bytes() / 4, 0.0f);
  const std::vector<int32_t> first_tokens = FirstTokens(c);
  args_.assign(specs.size(), nullptr);
  std::vector<neuronmem_buffer_from_host_args_t> uploads;
  std::vector<size_t> upload_index;
  for (size_t i = 0; i < specs.size(); ++i) {
    neuronmem_memory_t* memory = nullptr;
    e = StatusText(neuronmem_executable_parameter_memory(exe_, device_, i, &memory));
    if (!e.empty()) {
      e = "parameter " + std::to_string(i) + ": " + e;
      break;  // loads already started are waited for below
    }
    neuronmem_buffer_from_host_args_t a{};
    a.struct_size = sizeof a;
    a.element_type = specs[i].is_s32 ? NEURONMEM_ELEMENT_TYPE_S32 : NEURONMEM_ELEMENT_TYPE_F32;
    a.dims = specs[i].dims.data();
    a.num_dims = specs[i].dims.size();
    a.memory = memory;
    if (i >= kBlockTable && i <= kSlotMapping) {
      void* p = nullptr;
      e = StatusText(neuronmem_client_host_allocate(client, specs[i].bytes(), 64, &p));
      if (!e.empty()) return "host_allocate " + specs[i].name + ": " + e;
      std::memset(p, 0, specs[i].bytes());
      meta_[i - kBlockTable] = static_cast<int32_t*>(p);
      if (c.metadata_in_device) continue;  // the caller copies it into device memory before each step
      a.data = p;
      a.host_buffer_semantics = NEURONMEM_HOST_BUFFER_MUTABLE_ZERO_COPY;
      e = StatusText(neuronmem_buffer_from_host(client, &a, &args_[i], nullptr, nullptr));
      if (!e.empty()) return specs[i].name + ": " + e;
      bool zero_copy = false;
      e = StatusText(neuronmem_buffer_is_zero_copy(args_[i], &zero_copy));
      if (!e.empty()) return specs[i].name + ": " + e;
      if (!zero_copy) return specs[i].name + " was copied, not wrapped zero-copy";
      continue;
    }
    if (i >= kEmbed && !weights_file.empty()) {
      e = LoadRange(client, memory, specs[i], weights_file, file_offset, &args_[i], &loads);
      if (!e.empty()) break;
      file_offset += specs[i].bytes();
      continue;
    }
    a.host_buffer_semantics = NEURONMEM_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES;
    if (i == kTokens) {
      a.data = first_tokens.data();
    } else if (i == kKCache || i == kVCache) {
      a.data = zero_cache.data();
    } else {
      a.data = weights_[i - kEmbed].data();
    }
    uploads.push_back(a);
    upload_index.push_back(i);
  }
  // Every load that was started is waited for, even after an error (the events are freed, the buffers outlive them).
  for (neuronmem_event_t* ready : loads) {
    const std::string le = StatusText(neuronmem_event_wait(ready, -1));
    if (e.empty() && !le.empty()) e = "load " + weights_file + ": " + le;
    neuronmem_event_destroy(ready);
  }
  if (!e.empty()) return e;
  if (!weights_file.empty()) {
    file_bytes_loaded_ = file_offset;
    load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
  }
  // Tokens, caches and (without a weights file) weights: one batched upload.
  std::vector<neuronmem_buffer_t*> uploaded(uploads.size());
  neuronmem_event_t* ready = nullptr;
  e = StatusText(neuronmem_buffer_from_host_batch(client, uploads.data(), uploads.size(), uploaded.data(), &ready));
  if (!e.empty()) return "upload: " + e;
  for (size_t k = 0; k < uploaded.size(); ++k) args_[upload_index[k]] = uploaded[k];
  e = StatusText(neuronmem_event_wait(ready, -1));
  neuronmem_event_destroy(ready);
  return e.empty() ? "" : "upload: " + e;
}

std::string Runner::Step(neuronmem_buffer_t* const* metadata_buffers, std::vector<int32_t>* next_tokens,
                         StepStats* stats) {
  const std::string where = "step " + std::to_string(step_++) + ": ";
  std::vector<neuronmem_buffer_t*> args = args_;
  if (metadata_buffers)
    for (int i = 0; i < 4; ++i) args[static_cast<size_t>(kBlockTable + i)] = metadata_buffers[i];
  neuronmem_execute_args_t ea{};
  ea.struct_size = sizeof ea;
  ea.executable = exe_;
  ea.device = device_;
  ea.arguments = args.data();
  ea.num_arguments = args.size();
  neuronmem_buffer_t* results[3] = {};
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* execution = nullptr;
  std::string e = StatusText(neuronmem_executable_execute(&ea, results, &done, &execution));
  if (!e.empty()) return where + e;
  e = StatusText(neuronmem_event_wait(done, -1));
  neuronmem_event_destroy(done);
  // The donated caches are deleted; their memory is results 1 and 2. The next tokens stay on the device.
  const int replaced[3] = {kTokens, kKCache, kVCache};
  for (int r = 0; r < 3; ++r) {
    neuronmem_buffer_destroy(args_[static_cast<size_t>(replaced[r])]);
    args_[static_cast<size_t>(replaced[r])] = results[r];
  }
  if (e.empty() && next_tokens) {
    next_tokens->resize(static_cast<size_t>(c_.batch));
    neuronmem_buffer_read_args_t ra{};
    ra.struct_size = sizeof ra;
    ra.buffer = results[0];
    ra.size = next_tokens->size() * 4;
    ra.dst = next_tokens->data();
    e = StatusText(neuronmem_buffer_read(&ra, nullptr));
  }
  for (int from = 0; e.empty() && stats && from < 3; ++from) {
    for (int to = 0; e.empty() && to < 3; ++to) {
      neuronmem_transfer_counts_t tc{};
      tc.struct_size = sizeof tc;
      e = StatusText(neuronmem_execution_transfers(execution, static_cast<neuronmem_memory_kind_t>(from),
                                                   static_cast<neuronmem_memory_kind_t>(to), &tc));
      stats->bytes[from][to] += tc.explicit_bytes + tc.implicit_bytes;
      stats->implicit_copies += tc.implicit_transfers;
      stats->implicit_bytes += tc.implicit_bytes;
      stats->peer_bytes += tc.peer_bytes;
    }
  }
  neuronmem_execution_destroy(execution);
  return e.empty() ? "" : where + e;
}

}  // namespace neuronmem_decode
