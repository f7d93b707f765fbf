#include "base/fault.h"

#include <atomic>
#include <cstddef>

namespace neuronmem::fault {
namespace {

struct State {
  std::atomic<bool> armed{false};
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> first{0};  // the hit number that fails first
  std::atomic<uint64_t> last{0};   // and the last
};

State g_sites[static_cast<size_t>(Site::kCount)];

State& Of(Site s) { return g_sites[static_cast<size_t>(s)]; }

}  // namespace

void Arm(Site site, uint64_t nth, uint64_t count) {
  State& s = Of(site);
  s.armed.store(false, std::memory_order_relaxed);
  s.hits.store(0, std::memory_order_relaxed);
  if (nth == 0 || count == 0) return;
  s.first.store(nth, std::memory_order_relaxed);
  s.last.store(nth + count - 1, std::memory_order_relaxed);
  s.armed.store(true, std::memory_order_release);
}

void DisarmAll() {
  for (State& s : g_sites) {
    s.armed.store(false, std::memory_order_relaxed);
    s.hits.store(0, std::memory_order_relaxed);
  }
}

bool Armed(Site site) { return Of(site).armed.load(std::memory_order_acquire); }

bool Hit(Site site) {
  State& s = Of(site);
  if (!s.armed.load(std::memory_order_relaxed)) return false;
  const uint64_t n = s.hits.fetch_add(1, std::memory_order_relaxed) + 1;
  const uint64_t last = s.last.load(std::memory_order_relaxed);
  if (n >= last) s.armed.store(false, std::memory_order_relaxed);
  return n >= s.first.load(std::memory_order_relaxed) && n <= last;
}

uint64_t Hits(Site site) { return Of(site).hits.load(std::memory_order_relaxed); }

}  // namespace neuronmem::fault
