// The C handles: thin shells around the C++ objects (the way the PJRT C API wraps PjRtClient). Only
// src/api sees these definitions; the C++ layers never see a C handle. Events are the exception: the
// handle is the base-layer Event itself (src/base/event.h), so that the immortal ready event can be
// returned without an allocation.
#pragma once

#include <neuronmem/buffer.h>
#include <neuronmem/client.h>

#include <neuronmem/executable.h>
#include <neuronmem/manifest.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "copy/buffer.h"
#include "core/client.h"
#include "dist/fabric.h"
#include "exec/custom_kernels.h"
#include "exec/executable.h"
#include "exec/session.h"
#include "exec/stats.h"
#include "manifest/manifest.h"

struct neuronmem_memory {
  neuronmem::core::Memory* memory = nullptr;
  neuronmem_client_t* client = nullptr;
  std::string kind_name;                     // NUL-terminated for the C caller
  std::vector<neuronmem_device_t*> devices;  // addressable by
};

struct neuronmem_device {
  neuronmem::core::Device* device = nullptr;
  neuronmem_client_t* client = nullptr;
  std::vector<neuronmem_memory_t*> memories;  // addressable, id order
  neuronmem_memory_t* by_kind[neuronmem::kNumMemoryKinds] = {};
};

struct neuronmem_client {
  // The endpoint to the job's other processes (only with num_processes >= 2); first, so that it outlives the
  // session, whose executor sends through it.
  std::unique_ptr<neuronmem::dist::Fabric> fabric;
  // The executor's composition root: the core client, the executor, the kernel registry, the destroy rules.
  std::unique_ptr<neuronmem::exec::Session> session;
  neuronmem::core::Client* client = nullptr;  // session->client()
  std::vector<neuronmem_device_t> device_shells;
  std::vector<neuronmem_memory_t> memory_shells;
  std::vector<neuronmem_device_t*> devices;   // id order, for the borrowed-array queries
  std::vector<neuronmem_memory_t*> memories;  // id order
  // The extension structs this client accepts in a chain (neuronmem_client_extensions): none yet.
  std::vector<neuronmem_string_t> extensions;
  uint64_t execution_timeout_ns = 0;  // neuronmem_client_options_t.execution_timeout_ns (0: none)
  // Its place in a job of several processes (docs/distributed.md), and the endpoint to its peers.
  uint32_t process_index = 0, num_processes = 1;
  // Descriptions of the job's devices by global id ({debug_string, to_string}, borrowed by callers; nodes
  // of a std::map never move), made on first use.
  std::mutex described_mu;
  std::map<int32_t, std::array<std::string, 2>> described;

  // Wraps a created session: one shell per device and memory, linked as the C++ objects are.
  explicit neuronmem_client(std::unique_ptr<neuronmem::exec::Session> s);
  neuronmem::copy::CopyEngine& engine() const { return client->copy_engine(); }
  // The shell of a C++ memory (by its id).
  neuronmem_memory_t* shell(const neuronmem::copy::MemoryView& view) { return memories[static_cast<size_t>(view.id)]; }
};

struct neuronmem_buffer {
  neuronmem::copy::Buffer buffer;
  neuronmem_client_t* client = nullptr;
};

struct neuronmem_manifest {
  neuronmem::manifest::Manifest m;
  // The JSON form, built on the first neuronmem_manifest_to_json call (writing it costs about half as
  // much as loading the manifest, and most frontends only query), then kept for the handle's lifetime.
  mutable std::once_flag json_once;
  mutable std::string json;
};

struct neuronmem_executable {
  std::shared_ptr<const neuronmem::exec::Executable> exe;
  neuronmem_client_t* client = nullptr;
  neuronmem::exec::ExecutableLease lease;  // counted by the client's session until the handle goes
};

struct neuronmem_execution {
  std::shared_ptr<const neuronmem::exec::ExecutionStats> stats;
  neuronmem::EventRef done;
  std::shared_ptr<neuronmem::exec::ExecutionControl> control;  // neuronmem_execution_cancel
};
