// Polling for a condition that is about to hold, before paying a sleep and a wake-up for it.
#pragma once

#include <chrono>
#include <thread>

namespace neuronmem {

// Polls ready() for up to `limit`, yielding between polls; returns whether it held. For waits that usually end
// within microseconds (a core's launch thread between back-to-back launches, a caller waiting for the other core's
// part of its launch), before sleeping as usual. A yield lets any runnable thread have the core: on 2 busy vCPUs,
// spinning on pause instead kept the very thread being waited for off its core (a 2-core launch 8.8-17 us p50,
// 26 us-1.8 ms p99, against 5.6 us and 9.6 us yielding; docs/performance.md, "Multi-core launches").
template <class Ready>
bool PollFor(std::chrono::nanoseconds limit, Ready&& ready) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point until = Clock::now() + limit;
  while (!ready()) {
    if (Clock::now() >= until) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace neuronmem
