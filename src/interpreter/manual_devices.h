// The devices of an sdy.manual_computation whose body communicates, as the body's collectives name them
// (manual_computation.cc compiles the body with them: CompileCtx::SetManualDevices).
//
// The body runs once per combination of the manual axes' coordinates: process p of a grid of one replica and one
// partition per combination, p row-major over the manual axes in mesh order. The collectives' groups and pairs
// name devices of the whole mesh, as XLA's partitioner and JAX's shard_map emit them (a channel_handle, and
// use_global_device_ids where the op has it): the device at a mesh position (row-major over every axis) has id
// device_ids[position] when the mesh lists device_ids, else the position. A device is the process of its manual
// coordinates: devices that differ only in the coordinates of the axes that are not manual (free axes: the body
// sees the dims they shard whole) are one process of this run. So a group may only join devices at the same free
// coordinates, and the groups at every free coordinate must be those at free coordinate 0 with the free
// coordinates changed (the same manual coordinates in the same order); otherwise INVALID_ARGUMENT naming the op.
// partition_id reports the id of the device at the process's manual coordinates and free coordinate 0.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "interpreter/kernel.h"

namespace neuronmem::interp {

class ManualDevices {
 public:
  struct Axis {
    std::string name;
    int64_t size = 1;
    bool manual = false;
  };
  // `device_ids`: the mesh's, a permutation of its positions (empty: position p is device p).
  ManualDevices(std::string mesh, std::vector<Axis> axes, std::vector<int64_t> device_ids);

  // What tells functions compiled for these devices apart from those compiled for others.
  const std::string& key() const { return key_; }
  int64_t devices() const { return devices_; }          // of the mesh
  int64_t processes() const { return processes_; }      // combinations of the manual axes' coordinates
  int64_t free_combinations() const { return frees_; }  // combinations of the other axes' coordinates
  // Per process: the partition_id it reports (the device at its manual coordinates, free coordinates 0).
  const std::vector<uint32_t>& partition_ids() const { return partition_ids_; }

  // The groups of a collective whose ids are partitions (cross_partition, flattened_ids; `all`: one group of
  // every device) as processes: the groups of the devices at free coordinate 0, each device replaced by its
  // process. INVALID_ARGUMENT naming the op (`what`: the attribute) for an id outside the mesh, a group that joins
  // devices at different free coordinates, or groups that differ in more than their free coordinates.
  Status MapGroups(const CompileCtx& cx, const char* what, bool all, std::vector<std::vector<int64_t>>* rows) const;
  // The (source, target) pairs of collective_permute, send or recv along partitions, the same way.
  Status MapPairs(const CompileCtx& cx, std::vector<std::pair<int64_t, int64_t>>* pairs) const;

  // "device 3 (x=1, y=1)".
  std::string Describe(int64_t id) const;

 private:
  int64_t IdAt(int64_t process, int64_t free) const { return id_at_[static_cast<size_t>(process * frees_ + free)]; }
  Status CheckIds(const CompileCtx& cx, const char* what, const std::vector<int64_t>& ids) const;

  std::string mesh_, key_;
  std::vector<Axis> axes_;
  int64_t devices_ = 1, processes_ = 1, frees_ = 1;
  std::vector<int64_t> process_of_, free_of_;  // per device id
  std::vector<int64_t> position_of_;           // per device id
  std::vector<int64_t> id_at_;                 // per (process, free combination)
  std::vector<uint32_t> partition_ids_;
};

}  // namespace neuronmem::interp
