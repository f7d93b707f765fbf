#include "exec/transport.h"

namespace neuronmem::exec {

namespace {

class InProcessTransport final : public Transport {
 public:
  explicit InProcessTransport(copy::CopyEngine& engine) : engine_(engine) {}
  const char* name() const override { return "in-process"; }
  Status Copy(const interp::Transfer& t) override {
    if (t.rows == 1 || (t.src_stride == t.row_bytes && t.dst_stride == t.row_bytes)) {
      engine_.PeerCopy(t.dst, t.src, t.bytes());  // one contiguous run
      return Ok();
    }
    for (size_t r = 0; r < t.rows; ++r)
      engine_.PeerCopy(t.dst + r * t.dst_stride, t.src + r * t.src_stride, t.row_bytes);
    return Ok();
  }

 private:
  copy::CopyEngine& engine_;
};

}  // namespace

std::unique_ptr<Transport> NewInProcessTransport(copy::CopyEngine& engine) {
  return std::make_unique<InProcessTransport>(engine);
}

}  // namespace neuronmem::exec
