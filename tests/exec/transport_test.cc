// The transport between the cores of a launch is one internal interface (src/exec/transport.h): a
// runtime given another exec::Transport moves every peer byte through it with the executor unchanged, and a
// failure of the transport fails the op that moved the bytes, naming it, without hanging the launch. Links the
// internal libraries to hand the client's runtime a transport of the test's. Threaded: also in 'concurrency'.
#include <atomic>
#include <memory>
#include <mutex>

#include "api/handles.h"
#include "exec/exec_test_util.h"
#include "exec/runtime.h"
#include "exec/transport.h"

namespace neuronmem_test {
namespace {

// Counts what it is asked to move, then lets the in-process transport move it, or fails when told to.
class CountingTransport final : public neuronmem::exec::Transport {
 public:
  explicit CountingTransport(std::unique_ptr<neuronmem::exec::Transport> inner) : inner_(std::move(inner)) {}
  const char* name() const override { return "counting"; }
  neuronmem::Status Copy(const neuronmem::interp::Transfer& t) override {
    copies.fetch_add(1);
    bytes.fetch_add(t.bytes());
    if (fail.load()) return neuronmem::Unavailable("the fabric is down");
    return inner_->Copy(t);
  }
  std::atomic<int> copies{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> fail{false};

 private:
  std::unique_ptr<neuronmem::exec::Transport> inner_;
};

// Each of two cores sends its f32[2] to the other.
const char kSwap[] = R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}
      : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
)";

class TransportTest : public ExecTest {
 protected:
  // Two cores; the client's runtime made here, with the counting transport, before anything else makes one.
  void SetUp() override {
    ASSERT_OK(MakeClient(16u << 20, 2, &client_));
    std::unique_ptr<neuronmem::exec::Transport> owned =
        std::make_unique<CountingTransport>(neuronmem::exec::NewInProcessTransport(client_->engine()));
    transport_ = static_cast<CountingTransport*>(owned.get());
    ASSERT_FALSE(client_->session->UseTransport(owned));
    ASSERT_EQ(owned, nullptr);
  }

  // One launch of `e` on both cores: each device's status, result (when it succeeded) and peer bytes.
  struct Outcome {
    std::vector<Result> status;
    std::vector<std::vector<float>> results;
    std::vector<uint64_t> peer_bytes;
  };
  Outcome Run(neuronmem_executable_t* e, const std::vector<std::vector<neuronmem_buffer_t*>>& args) {
    Outcome out;
    std::vector<std::vector<neuronmem_buffer_t*>> results;
    std::vector<neuronmem_event_t*> done;
    std::vector<neuronmem_execution_t*> runs;
    EXPECT_OK(Launch(e, {0, 1}, args, &results, &done, &runs));
    for (size_t d = 0; d < done.size() && done[d]; ++d) {
      out.status.push_back(Take(neuronmem_event_wait(done[d], -1)));
      out.results.push_back(out.status.back().code == NEURONMEM_STATUS_OK ? Read(results[d][0], 2)
                                                                          : std::vector<float>{});
      out.peer_bytes.push_back(Stats(runs[d]).peer_bytes);
      neuronmem_event_destroy(done[d]);
      neuronmem_execution_destroy(runs[d]);
    }
    return out;
  }

  CountingTransport* transport_ = nullptr;
};

TEST_F(TransportTest, PeerBytesGoThroughTheRuntimesTransport) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileReplicas(kSwap, "swap.mlir", 2, &e));
  std::vector<std::vector<neuronmem_buffer_t*>> args;
  for (size_t d = 0; d < 2; ++d) {
    const float b = 10.0f * static_cast<float>(d);
    args.push_back({Upload({b + 1, b + 2}, {2}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, d))});
  }
  const Outcome ok = Run(e, args);
  ASSERT_EQ(ok.status.size(), 2u);
  EXPECT_EQ(ok.status[0].code, NEURONMEM_STATUS_OK) << ok.status[0].message;
  EXPECT_EQ(ok.status[1].code, NEURONMEM_STATUS_OK) << ok.status[1].message;
  EXPECT_EQ(ok.results[0], (std::vector<float>{11, 12}));
  EXPECT_EQ(ok.results[1], (std::vector<float>{1, 2}));
  // Both messages went through the transport, and the executor still counted them as peer transfers.
  EXPECT_EQ(transport_->copies.load(), 2);
  EXPECT_EQ(transport_->bytes.load(), 16u);
  EXPECT_EQ(ok.peer_bytes, (std::vector<uint64_t>{8, 8}));

  // A failing transport fails the op that moved the bytes on each receiving device, naming it and the
  // transport's error; nothing hangs.
  transport_->fail = true;
  const Outcome failed = Run(e, args);
  ASSERT_EQ(failed.status.size(), 2u);
  for (const Result& r : failed.status) {
    EXPECT_EQ(r.code, NEURONMEM_STATUS_UNAVAILABLE) << r.message;
    EXPECT_EQ(r.message, "swap.mlir:3:3: 'stablehlo.collective_permute' on channel 0: the fabric is down");
  }
  // The client goes on once the transport does.
  transport_->fail = false;
  const Outcome again = Run(e, args);
  ASSERT_EQ(again.status.size(), 2u);
  EXPECT_EQ(again.status[1].code, NEURONMEM_STATUS_OK) << again.status[1].message;
  EXPECT_EQ(again.results[1], (std::vector<float>{1, 2}));
}

// send / recv: device 0 sends to device 1. The bytes move when both have arrived (the sender copies into the
// waiting receiver, or the receiver copies the message the grid held): a failing transport fails the recv,
// naming it, and the send when it was the send that copied.
const char kSendRecv[] = R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.after_all : !stablehlo.token
  %s = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 4, type = 1>,
      source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  %r:2 = "stablehlo.recv"(%s) {channel_handle = #stablehlo.channel_handle<handle = 4, type = 1>,
      source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  return %r#0 : tensor<2xf32>
}
)";

TEST_F(TransportTest, AFailingTransportFailsTheRecvNamingIt) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileReplicas(kSendRecv, "pair.mlir", 2, &e));
  std::vector<std::vector<neuronmem_buffer_t*>> args;
  for (size_t d = 0; d < 2; ++d) args.push_back({Upload({5, 6}, {2}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, d))});
  transport_->fail = true;
  const Outcome failed = Run(e, args);
  ASSERT_EQ(failed.status.size(), 2u);
  EXPECT_EQ(transport_->copies.load(), 1);
  EXPECT_EQ(failed.status[1].code, NEURONMEM_STATUS_UNAVAILABLE) << failed.status[1].message;
  EXPECT_EQ(failed.status[1].message, "pair.mlir:6:3: 'stablehlo.recv' on channel 4: the fabric is down");
  if (failed.status[0].code != NEURONMEM_STATUS_OK) {  // the send made the copy
    EXPECT_EQ(failed.status[0].code, NEURONMEM_STATUS_UNAVAILABLE) << failed.status[0].message;
    EXPECT_EQ(failed.status[0].message, "pair.mlir:4:3: 'stablehlo.send' on channel 4: the fabric is down");
  }
  transport_->fail = false;
  const Outcome ok = Run(e, args);
  ASSERT_EQ(ok.status.size(), 2u);
  EXPECT_EQ(ok.status[1].code, NEURONMEM_STATUS_OK) << ok.status[1].message;
  EXPECT_EQ(ok.results[1], (std::vector<float>{5, 6}));
  EXPECT_EQ(transport_->copies.load(), 2);
}

}  // namespace
}  // namespace neuronmem_test
