// The state of one run of a program, shared by the frames of the run: its process (process.h) and the
// values interpreter.probe records.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "interpreter/process.h"

namespace neuronmem::interp {

// Values recorded by interpreter.probe, in the order they were recorded (per probe id, the k-th record is
// iteration k), kept in memory for check.expect_serialized_eq. Thread-safe: the processes of a
// run_parallel share their parent run's store.
class ProbeStore {
 public:
  struct Probe {
    std::string id;
    ElementType type = ElementType::kInvalid;
    std::vector<int64_t> dims;
    std::vector<char> data;
  };
  void Add(std::string_view id, const TensorView& v);
  // Copies the `iteration`-th record of `id` into `out`; false if there is none. `*count` is the number of
  // records of `id`.
  bool Find(std::string_view id, int64_t iteration, Probe* out, size_t* count) const;

 private:
  mutable std::mutex mu_;
  std::vector<Probe> probes_;
};

struct RunState {
  ProcessContext process;             // RunOptions::process, or process (0, 0) of `solo`
  std::unique_ptr<ProcessGrid> solo;  // the one-process grid of a run given none, made on first use
  ProbeStore* probes = nullptr;       // the run's probes (a run_parallel's processes share their parent's)
  std::unique_ptr<ProbeStore> own_probes;
  const std::atomic<int>* interrupt = nullptr;              // RunOptions::interrupt, seen by every frame of the run
  const Program::RunOptions::Parallel* parallel = nullptr;  // RunOptions::parallel (nested runs inherit it)
  // RunOptions::space_memory (nested runs inherit it): where RunStandalone's frames of spaces 1.. lie.
  const Program::RunOptions::SpaceMemory* space_memory = nullptr;

  ProcessGrid& grid() {
    if (!process.grid) {
      solo = std::make_unique<ProcessGrid>(1, 1);
      process.grid = solo.get();
    }
    return *process.grid;
  }
  uint32_t self() const {
    return process.replica_id * (process.grid ? process.grid->num_partitions() : 1) + process.partition_id;
  }
  ProbeStore& probe_store() {
    if (!probes) {
      own_probes = std::make_unique<ProbeStore>();
      probes = own_probes.get();
    }
    return *probes;
  }
};

}  // namespace neuronmem::interp
