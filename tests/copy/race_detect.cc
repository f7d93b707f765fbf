// A deliberate data race in libneuronmem code that runs on a oneTBB worker, for the ThreadSanitizer build.
// It proves that tests/tsan.supp (which hides oneTBB's own false positives) does not also hide races in our
// code: expect_tsan_race.py runs this program with that file and requires a data-race report whose stack
// goes through the copy engine. A clean exit would mean the TSan run of the 'concurrency' suite is blind.
//
// The race: a read into caller memory is gated on a pending event; once the gate completes, a worker
// drains the queue and copies into `out` while this thread keeps reading `out` without waiting on the
// read's event (a user bug the documentation forbids: the destination belongs to the transfer until its
// event is ready).
#include <neuronmem/neuronmem.h>

#include <cstdio>
#include <vector>

#include "common/client_helpers.h"
#include "common/transfer_helpers.h"

namespace {
int Fail(const char* what, neuronmem_status_t* s) {
  std::fprintf(stderr, "race_detect: %s failed: %s\n", what, s ? neuronmem_status_message(s).data : "");
  neuronmem_status_free(s);
  return 2;
}
}  // namespace

int main() {
  neuronmem_client_t* client = nullptr;
  if (neuronmem_status_t* s = neuronmem_test::CreateSmallClient(8u << 20, &client)) return Fail("client_create", s);
  neuronmem_memory_t* hbm = nullptr;
  if (neuronmem_status_t* s = neuronmem_client_lookup_memory(client, 0, &hbm)) return Fail("lookup_memory", s);

  const int64_t n = 64 << 10;
  int64_t dims[1] = {n};
  neuronmem_buffer_t* buf = nullptr;
  if (neuronmem_status_t* s = neuronmem_test::Allocate(client, hbm, NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &buf))
    return Fail("buffer_allocate", s);

  neuronmem_event_t* gate = nullptr;
  if (neuronmem_status_t* s = neuronmem_event_create(client, &gate)) return Fail("event_create", s);
  std::vector<unsigned char> out(static_cast<size_t>(n));
  neuronmem_event_t* done = nullptr;
  if (neuronmem_status_t* s = neuronmem_test::Read(buf, 0, out.data(), static_cast<uint64_t>(n), &gate, 1, &done))
    return Fail("buffer_read", s);
  // A worker now copies into `out`.
  if (neuronmem_status_t* s = neuronmem_event_complete(gate, nullptr)) return Fail("event_complete", s);

  // Racy reads of `out` until the read is done (is_ready's acquire ends the race; before it, every read
  // conflicts with the worker's write).
  unsigned sum = 0;
  for (;;) {
    for (size_t i = 0; i < out.size(); i += 64) sum += static_cast<volatile unsigned char&>(out[i]);
    bool ready = false;
    if (neuronmem_status_t* s = neuronmem_event_is_ready(done, &ready)) return Fail("event_is_ready", s);
    if (ready) break;
  }
  std::printf("race_detect: finished without a report (checksum %u)\n", sum);
  neuronmem_event_destroy(done);
  neuronmem_event_destroy(gate);
  neuronmem_buffer_destroy(buf);
  if (neuronmem_status_t* s = neuronmem_client_destroy(client)) return Fail("client_destroy", s);
  return 0;
}
