// The part of a serialized xla.CompileOptionsProto the plugin uses, decoded by hand from the protobuf wire
// format (no protobuf dependency): executable_build_options (field 3) .num_replicas (4), .num_partitions (5),
// .device_assignment (9: replica_count 1, computation_count 2, computation_devices 3 { replica_device_ids 1 }).
// Every other field is skipped by its wire type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace neuronmem::pjrt {

struct CompileOptions {
  int64_t num_replicas = 0;    // 0: not given
  int64_t num_partitions = 0;  // 0: not given
  bool has_device_assignment = false;
  int64_t replica_count = 0, computation_count = 0;
  // computation_devices[c][r]: the device id of replica r of computation (partition) c.
  std::vector<std::vector<int64_t>> computation_devices;
};

// Decodes `bytes` (empty is fine: nothing given). false with `error` naming the problem (truncated, a wire
// type the field cannot have, a group) when the bytes are no CompileOptionsProto.
bool DecodeCompileOptions(std::string_view bytes, CompileOptions* out, std::string* error);

// A serialized xla.DeviceAssignmentProto: replica_count, computation_count, and per computation (partition)
// c the device of each replica r, computation_devices[c][r].
std::string EncodeDeviceAssignment(int64_t replica_count, int64_t computation_count,
                                   const std::vector<std::vector<int64_t>>& computation_devices);

}  // namespace neuronmem::pjrt
