// libFuzzer target for the manifest's JSON reader: any input must either be rejected with a status or be a
// manifest whose JSON form reads back to the same JSON (the reader accepts exactly what the writer
// produces). Nothing may crash, hang, leak, overflow or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "manifest/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace mf = neuronmem::manifest;
  mf::Manifest m;
  if (mf::FromJson(std::string_view(reinterpret_cast<const char*>(data), size), &m)) return 0;
  const std::string once = mf::ToJson(m);
  mf::Manifest back;
  if (neuronmem::Status s = mf::FromJson(once, &back)) {
    std::fprintf(stderr, "the reader rejects what the writer produced: %s\n", s->message.c_str());
    std::abort();
  }
  if (mf::ToJson(back) != once) {
    std::fprintf(stderr, "the JSON form changed on a round trip\n");
    std::abort();
  }
  return 0;
}
