// The C handles: thin shells around the C++ objects (the way the PJRT C API wraps PjRtClient). Only
// src/api sees these definitions; the C++ layers never see a C handle. Events are the exception: the
// handle is the base-layer Event itself (src/base/event.h), so that the immortal ready event can be
// returned without an allocation.
#pragma once

#include <neuronmem/buffer.h>
#include <neuronmem/client.h>

#include <memory>
#include <string>
#include <vector>

#include "copy/buffer.h"
#include "core/client.h"

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
  std::unique_ptr<neuronmem::core::Client> client;
  std::vector<neuronmem_device_t> device_shells;
  std::vector<neuronmem_memory_t> memory_shells;
  std::vector<neuronmem_device_t*> devices;   // id order, for the borrowed-array queries
  std::vector<neuronmem_memory_t*> memories;  // id order
  // The extension structs this client accepts in a chain (neuronmem_client_extensions): none yet.
  std::vector<neuronmem_string_t> extensions;

  // Wraps a created client: one shell per device and memory, linked as the C++ objects are.
  explicit neuronmem_client(std::unique_ptr<neuronmem::core::Client> c);
  neuronmem::copy::CopyEngine& engine() const { return client->copy_engine(); }
  // The shell of a C++ memory (by its id).
  neuronmem_memory_t* shell(const neuronmem::copy::MemoryView& view) { return memories[static_cast<size_t>(view.id)]; }
};

struct neuronmem_buffer {
  neuronmem::copy::Buffer buffer;
  neuronmem_client_t* client = nullptr;
};
