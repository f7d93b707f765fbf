// The liveness plan of the planned slots: greedy first-fit by live interval, one plan per memory space.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "interpreter/compiler.h"

namespace neuronmem::interp {

namespace {

// Greedy first-fit placement by live interval of the planned slots of one space (`keys`: (live_begin, slot id)
// of each); returns the peak.
size_t PlanSpace(SlotTable* slots, std::vector<uint64_t>* space_keys) {
  std::vector<uint64_t>& keys = *space_keys;
  std::sort(keys.begin(), keys.end());
  struct Active {
    size_t offset, size;
    uint32_t end;
  };
  std::vector<Active> active;     // sorted by offset
  uint32_t min_end = UINT32_MAX;  // the earliest end in `active`
  size_t peak = 0;
  for (uint64_t key : keys) {
    Slot& s = (*slots)[static_cast<uint32_t>(key)];
    if (min_end < s.live_begin) {
      active.erase(std::remove_if(active.begin(), active.end(), [&](const Active& a) { return a.end < s.live_begin; }),
                   active.end());
      min_end = UINT32_MAX;
      for (const Active& a : active) min_end = std::min(min_end, a.end);
    }
    const size_t size = AlignUp(std::max<size_t>(s.bytes, 1));
    size_t at = 0;
    size_t pos = 0;
    for (; pos < active.size(); ++pos) {
      if (active[pos].offset >= at + size) break;
      at = std::max(at, active[pos].offset + active[pos].size);
    }
    s.offset = at;
    active.insert(active.begin() + pos, Active{at, size, s.live_end});
    min_end = std::min(min_end, s.live_end);
    peak = std::max(peak, at + size);
  }
  return peak;
}

}  // namespace

void PlanSlots(SlotTable* slots, size_t* peaks) {
  // Per space, by (live_begin, slot id): one integer each.
  std::vector<uint64_t> keys[kMaxSpaces];
  for (uint32_t i = 0; i < slots->size(); ++i) {
    const Slot& s = (*slots)[i];
    if (s.kind == Slot::Kind::kPlanned && !s.fused) keys[s.space].push_back(uint64_t{s.live_begin} << 32 | i);
  }
  for (size_t k = 0; k < kMaxSpaces; ++k) peaks[k] = keys[k].empty() ? 0 : PlanSpace(slots, &keys[k]);
}

}  // namespace neuronmem::interp
