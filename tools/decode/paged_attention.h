// The decode step's paged attention as a registered kernel (Attention::kKernel in decode_model.h), through the
// public C API only: an NKI kernel (AwsNeuronCustomNativeKernel, func_name "paged_attention", grid [batch]) that
// reads the block table, sequence lengths and positions where they lie (pinned_host: a pointer into the
// arena, no copy into device) and the KV caches in device.
//
// Operands: q [B, heads, head_dim] f32; k_cache, v_cache [layers, num_blocks, block_size, hidden] f32;
// block_table [B, max_blocks] s32; seq_lens [B] s32; positions [B] s32; layer (scalar s32).
// Result: [B, heads, head_dim] f32, softmax(q.k / sqrt(head_dim)) . v over the sequence's first seq_len tokens.
// Grid point b computes sequence b. Metadata the cache cannot serve fails the execution with a status that
// names the sequence: a length outside 1..max_blocks * block_size, a position that is not seq_len - 1, a block id
// outside the KV cache (the gather variant would clamp it and read another sequence's keys).
#pragma once

#include <neuronmem/neuronmem.h>

#include <atomic>
#include <cstdint>

namespace neuronmem_decode {

// What the kernel saw, counted across calls (the kernel's user data; thread-safe).
struct PagedAttentionStats {
  std::atomic<uint64_t> calls{0};            // grid points run
  std::atomic<uint64_t> metadata_pinned{0};  // ... whose block table, lengths and positions lay in pinned_host
  std::atomic<uint64_t> cache_in_device{0};  // ... whose K and V caches lay in device
  std::atomic<uint64_t> errors{0};           // ... that returned an error
};

// The kernel (neuronmem_kernel_fn_t); user_data: a PagedAttentionStats (nullable).
neuronmem_status_t* PagedAttentionKernel(const neuronmem_kernel_call_t* call, void* user_data);

// Registers PagedAttentionKernel on `client` as kPagedAttentionKernel. `stats` (nullable) must outlive the client.
neuronmem_status_t* RegisterPagedAttention(neuronmem_client_t* client, PagedAttentionStats* stats);

}  // namespace neuronmem_decode
