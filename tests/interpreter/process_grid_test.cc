// ProcessGrid itself: exchanges matched in call order, send/recv (a send never waits; a waiting recv gets
// one copy), and every way a wait can no longer be satisfied failing with a status instead of hanging.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "grid_util.h"

namespace neuronmem::interp {
namespace {

using testing::CountingTransport;

TensorView View(std::vector<int32_t>& v, const int64_t* dims) {
  TensorView t;
  t.data = v.data();
  t.type = ElementType::kS32;
  t.dims = dims;
  t.rank = 1;
  return t;
}

const int64_t kTwo[1] = {2};

OpSite Site(std::string_view op, int64_t channel) { return OpSite{op, "test.mlir:1:1", channel}; }

bool Has(const Status& s, const std::string& text) { return s && s->message.find(text) != std::string::npos; }

TEST(ProcessGrid, IndexAndNames) {
  ProcessGrid g(2, 3);
  EXPECT_EQ(g.num_processes(), 6u);
  EXPECT_EQ(g.Index(1, 2), 5u);
  EXPECT_EQ(g.Name(4), "(1, 1)");
}

TEST(ProcessGrid, ExchangesMeetInCallOrderPerChannelAndGroup) {
  // Each process makes two exchanges on channel 1 with the same group: the first meets the first.
  ProcessGrid g(2, 1);
  std::vector<std::vector<int32_t>> seen(2);
  auto st = g.Run([&](uint32_t self) -> Status {
    for (int round = 0; round < 2; ++round) {
      std::vector<int32_t> mine = {static_cast<int32_t>(10 * round + self), 0};
      TensorView v = View(mine, kTwo);
      NEURONMEM_RETURN_IF_ERROR(
          g.Exchange(self, Site("op", 1), {0, 1}, &v, 1, [&](const TensorView* const* members) -> Status {
            for (int m = 0; m < 2; ++m) seen[self].push_back(static_cast<const int32_t*>(members[m][0].data)[0]);
            return Status();
          }));
    }
    return Status();
  });
  for (auto& s : st) ASSERT_FALSE(s) << s->message;
  EXPECT_EQ(seen[0], (std::vector<int32_t>{0, 1, 10, 11}));
  EXPECT_EQ(seen[1], (std::vector<int32_t>{0, 1, 10, 11}));
}

TEST(ProcessGrid, ExchangeOfDifferentShapesFailsEveryMember) {
  ProcessGrid g(2, 1);
  auto st = g.Run([&](uint32_t self) -> Status {
    std::vector<int32_t> mine = {1, 2};
    const int64_t one[1] = {1};
    TensorView v = View(mine, self == 0 ? kTwo : one);
    return g.Exchange(self, Site("op", 0), {0, 1}, &v, 1, [](const TensorView* const*) { return Status(); });
  });
  EXPECT_TRUE(Has(st[0], "value 0 is tensor<2xi32> on process (0, 0) but tensor<1xi32> on process (1, 0)"))
      << (st[0] ? st[0]->message : "ok");
}

TEST(ProcessGrid, ExchangeAPeerNeverReachesFailsNamingItInsteadOfHanging) {
  ProcessGrid g(3, 1);
  auto st = g.Run([&](uint32_t self) -> Status {
    if (self == 2) return Status();  // finishes without taking part
    std::vector<int32_t> mine = {1, 2};
    TensorView v = View(mine, kTwo);
    return g.Exchange(self, Site("stablehlo.all_reduce", 7), {0, 1, 2}, &v, 1,
                      [](const TensorView* const*) { return Status(); });
  });
  ASSERT_FALSE(st[2]);
  for (int k = 0; k < 2; ++k) {
    ASSERT_TRUE(st[k]);
    EXPECT_EQ(st[k]->code, NEURONMEM_STATUS_FAILED_PRECONDITION);
    EXPECT_TRUE(Has(st[k], "test.mlir:1:1: 'stablehlo.all_reduce' on channel 7")) << st[k]->message;
    // The other member may have given up first (it then "failed" too).
    EXPECT_TRUE(Has(st[k], "of its group [(0, 0), (1, 0), (2, 0)]: ")) << st[k]->message;
    EXPECT_TRUE(Has(st[k], "(2, 0) finished without reaching it")) << st[k]->message;
  }
}

TEST(ProcessGrid, ExchangeWithAFailedPeerFailsNamingIt) {
  ProcessGrid g(2, 1);
  auto st = g.Run([&](uint32_t self) -> Status {
    if (self == 1) return InvalidArgument("boom");
    std::vector<int32_t> mine = {1, 2};
    TensorView v = View(mine, kTwo);
    return g.Exchange(self, Site("stablehlo.all_gather", 0), {0, 1}, &v, 1,
                      [](const TensorView* const*) { return Status(); });
  });
  EXPECT_TRUE(Has(st[0], "(1, 0) failed without reaching it")) << st[0]->message;
  EXPECT_TRUE(Has(st[1], "boom"));
}

// Processes the embedder never runs (the executor: devices a launch leaves out) end as absent: a wait for one
// fails at once saying it never runs and why, not that it failed; a wait on a finished one keeps its wording.
TEST(ProcessGrid, AWaitForAnAbsentProcessSaysItNeverRuns) {
  ProcessGrid g(4, 1);
  g.Absent(2, "device 2 is not part of this launch");
  g.Absent(3, "device 3 is not part of this launch");
  g.Absent(3, "ignored: it already ended");
  EXPECT_TRUE(g.Ended(2));
  Status st[2];
  std::thread other([&] {
    std::vector<int32_t> out(2);
    TensorView v = View(out, kTwo);
    st[1] = g.Finish(1, g.Recv(1, Site("stablehlo.recv", 4), 3, &v, 1));
  });
  std::vector<int32_t> mine = {1, 2};
  TensorView v = View(mine, kTwo);
  st[0] = g.Finish(0, g.Exchange(0, Site("stablehlo.all_reduce", 0), {0, 1, 2, 3}, &v, 1,
                                 [](const TensorView* const*) { return Status(); }));
  other.join();
  ASSERT_TRUE(st[0]);
  EXPECT_EQ(st[0]->code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  // Process 1 may have ended first (it then "finished without reaching it" too).
  EXPECT_TRUE(Has(st[0], "'stablehlo.all_reduce' on channel 0: process (0, 0) waits for ")) << st[0]->message;
  EXPECT_TRUE(Has(st[0],
                  "(2, 0) never runs (device 2 is not part of this launch); (3, 0) never runs (device 3 is "
                  "not part of this launch)"))
      << st[0]->message;
  EXPECT_FALSE(Has(st[0], "(2, 0) failed")) << st[0]->message;
  EXPECT_TRUE(Has(st[1],
                  "'stablehlo.recv' on channel 4: process (1, 0) waits for data from (3, 0), which never runs "
                  "(device 3 is not part of this launch)"))
      << (st[1] ? st[1]->message : "ok");
  const Status absent = g.FinalStatus(2);
  EXPECT_TRUE(Has(absent, "process (2, 0) never runs: device 2 is not part of this launch"))
      << (absent ? absent->message : "ok");
}

TEST(ProcessGrid, EveryProcessBlockedIsStuckAndFailsEveryWaiter) {
  // Process 0 exchanges on channel 1 then 2, process 1 on channel 2 then 1: neither can proceed.
  ProcessGrid g(2, 1);
  auto st = g.Run([&](uint32_t self) -> Status {
    std::vector<int32_t> mine = {1, 2};
    TensorView v = View(mine, kTwo);
    const int64_t first = self == 0 ? 1 : 2, second = self == 0 ? 2 : 1;
    auto none = [](const TensorView* const*) { return Status(); };
    NEURONMEM_RETURN_IF_ERROR(g.Exchange(self, Site("stablehlo.all_reduce", first), {0, 1}, &v, 1, none));
    return g.Exchange(self, Site("stablehlo.all_reduce", second), {0, 1}, &v, 1, none);
  });
  for (int k = 0; k < 2; ++k) {
    EXPECT_TRUE(Has(st[k], "every running process is blocked")) << (st[k] ? st[k]->message : "ok");
    EXPECT_TRUE(Has(st[k], "on channel " + std::to_string(k == 0 ? 1 : 2)));
  }
}

TEST(ProcessGrid, RecvWithoutSendFailsOnceTheSenderEnds) {
  ProcessGrid g(2, 1);
  auto st = g.Run([&](uint32_t self) -> Status {
    if (self == 0) return Status();
    std::vector<int32_t> out(2);
    TensorView v = View(out, kTwo);
    return g.Recv(self, Site("stablehlo.recv", 5), 0, &v, 1);
  });
  EXPECT_TRUE(Has(st[1],
                  "'stablehlo.recv' on channel 5: process (1, 0) waits for data from (0, 0), which finished "
                  "without sending it"))
      << st[1]->message;
}

TEST(ProcessGrid, RecvFromAnySenderAloneIsStuck) {
  ProcessGrid g(1, 1);
  auto st = g.Run([&](uint32_t self) -> Status {
    std::vector<int32_t> out(2);
    TensorView v = View(out, kTwo);
    return g.Recv(self, Site("stablehlo.recv", 3), -1, &v, 1);
  });
  EXPECT_TRUE(Has(st[0], "waits for data from any sender")) << st[0]->message;
}

TEST(ProcessGrid, ARingOfProcessesThatAllSendFirstCompletes) {
  // Every process sends to its right neighbour, then receives from its left one: sends never wait.
  const uint32_t n = 4;
  ProcessGrid g(n, 1);
  std::vector<std::vector<int32_t>> got(n, std::vector<int32_t>(2));
  auto st = g.Run([&](uint32_t self) -> Status {
    std::vector<int32_t> mine = {static_cast<int32_t>(self), static_cast<int32_t>(100 + self)};
    TensorView v = View(mine, kTwo);
    NEURONMEM_RETURN_IF_ERROR(g.Send(self, Site("stablehlo.send", 1), (self + 1) % n, &v, 1));
    TensorView r = View(got[self], kTwo);
    return g.Recv(self, Site("stablehlo.recv", 1), (self + n - 1) % n, &r, 1);
  });
  for (uint32_t k = 0; k < n; ++k) {
    ASSERT_FALSE(st[k]) << st[k]->message;
    const int32_t left = static_cast<int32_t>((k + n - 1) % n);
    EXPECT_EQ(got[k], (std::vector<int32_t>{left, 100 + left}));
  }
}

TEST(ProcessGrid, MessagesArriveInSendOrder) {
  ProcessGrid g(2, 1);
  std::vector<int32_t> got;
  auto st = g.Run([&](uint32_t self) -> Status {
    for (int32_t i = 0; i < 5; ++i) {
      std::vector<int32_t> buf = {i, -i};
      TensorView v = View(buf, kTwo);
      if (self == 0) {
        NEURONMEM_RETURN_IF_ERROR(g.Send(self, Site("stablehlo.send", 9), 1, &v, 1));
      } else {
        NEURONMEM_RETURN_IF_ERROR(g.Recv(self, Site("stablehlo.recv", 9), 0, &v, 1));
        got.push_back(buf[0]);
      }
    }
    return Status();
  });
  ASSERT_FALSE(st[0]);
  ASSERT_FALSE(st[1]) << st[1]->message;
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 2, 3, 4}));
}

TEST(ProcessGrid, SendsToAnyReceiverArriveInOrderWhoeverWaitsFirst) {
  // Process 0 sends twice before process 1 receives (the grid keeps copies), then once while it waits.
  ProcessGrid g(2, 1);
  std::vector<int32_t> got;
  std::atomic<bool> queued{false};
  std::atomic<int> received{0};
  auto st = g.Run([&](uint32_t self) -> Status {
    std::vector<int32_t> buf = {0, 0};
    TensorView v = View(buf, kTwo);
    if (self == 0) {
      for (int32_t i = 1; i <= 2; ++i) {
        buf = {i, i};
        NEURONMEM_RETURN_IF_ERROR(g.Send(self, Site("stablehlo.send", 2), -1, &v, 1));
      }
      queued = true;
      while (received < 2 || !g.Waiting(1)) std::this_thread::yield();
      buf = {3, 3};
      return g.Send(self, Site("stablehlo.send", 2), -1, &v, 1);
    }
    while (!queued) std::this_thread::yield();
    for (int i = 0; i < 3; ++i) {
      NEURONMEM_RETURN_IF_ERROR(g.Recv(self, Site("stablehlo.recv", 2), -1, &v, 1));
      got.push_back(buf[0]);
      ++received;
    }
    return Status();
  });
  ASSERT_FALSE(st[0]) << st[0]->message;
  ASSERT_FALSE(st[1]) << st[1]->message;
  EXPECT_EQ(got, (std::vector<int32_t>{1, 2, 3}));
}

TEST(ProcessGrid, AWaitingRecvGetsOneCopyStraightFromTheSender) {
  CountingTransport t;
  ProcessGrid g(2, 1, &t);
  std::vector<int32_t> got(2);
  std::vector<int32_t> mine = {7, 8};
  auto st = g.Run([&](uint32_t self) -> Status {
    if (self == 1) {
      TensorView r = View(got, kTwo);
      return g.Recv(self, Site("stablehlo.recv", 2), 0, &r, 1);
    }
    while (!g.Waiting(1)) std::this_thread::yield();  // the receiver waits in the grid
    TensorView v = View(mine, kTwo);
    return g.Send(self, Site("stablehlo.send", 2), 1, &v, 1);
  });
  ASSERT_FALSE(st[0]);
  ASSERT_FALSE(st[1]) << st[1]->message;
  EXPECT_EQ(got, (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(t.copies.load(), 1u);
  EXPECT_EQ((t.bytes[{0, 1}]), 8u);
  EXPECT_EQ(t.last_src, reinterpret_cast<const char*>(mine.data()));  // not a copy the grid kept
}

// A transport that calls every sender's bytes stable (PeerTransfers::Stable): valid until the sender ends.
class LendingTransport : public CountingTransport {
 public:
  bool Stable(uint32_t, const void*, size_t) override { return true; }
};

// The same, recording which thread made the last copy.
class CopierRecordingTransport final : public LendingTransport {
 public:
  Status Copy(const Transfer& t) override {
    copier = std::this_thread::get_id();
    return LendingTransport::Copy(t);
  }
  std::thread::id copier;
};

TEST(ProcessGrid, StableBytesAreLentAndTheReceiveCopiesThemOnce) {
  // Every process sends first (nobody waits yet): the messages borrow the senders' bytes, each receive copies
  // them straight from there.
  LendingTransport t;
  const uint32_t n = 3;
  ProcessGrid g(n, 1, &t);
  std::vector<std::vector<int32_t>> mine(n), got(n, std::vector<int32_t>(2));
  for (uint32_t k = 0; k < n; ++k) mine[k] = {static_cast<int32_t>(k), static_cast<int32_t>(10 * k)};
  std::atomic<uint32_t> received{0};
  auto st = g.Run([&](uint32_t self) -> Status {
    TensorView v = View(mine[self], kTwo);
    NEURONMEM_RETURN_IF_ERROR(g.Send(self, Site("stablehlo.send", 1), (self + 1) % n, &v, 1));
    TensorView r = View(got[self], kTwo);
    Status s = g.Recv(self, Site("stablehlo.recv", 1), (self + n - 1) % n, &r, 1);
    ++received;
    while (received < n) std::this_thread::yield();  // nobody ends (and takes its bytes back) before all read
    return s;
  });
  for (uint32_t k = 0; k < n; ++k) {
    ASSERT_FALSE(st[k]) << st[k]->message;
    EXPECT_EQ(got[k], mine[(k + n - 1) % n]);
  }
  EXPECT_EQ(t.copies.load(), n);  // one copy per message
  bool from_a_sender = false;     // the last one read a sender's bytes, not a copy the grid kept
  for (const auto& m : mine) from_a_sender = from_a_sender || t.last_src == reinterpret_cast<const char*>(m.data());
  EXPECT_TRUE(from_a_sender);
}

TEST(ProcessGrid, AWaitingRecvIsWokenToCopyLentBytesItself) {
  // The receiver waits first; the lending sender does not copy for it (two cores exchanging would then have the
  // later sender copy both messages): the receiver copies, once, straight from the sender's bytes.
  CopierRecordingTransport t;
  ProcessGrid g(2, 1, &t);
  std::vector<int32_t> got(2);
  std::vector<int32_t> mine = {7, 8};
  std::atomic<bool> received{false};
  std::thread::id receiver;
  auto st = g.Run([&](uint32_t self) -> Status {
    if (self == 1) {
      receiver = std::this_thread::get_id();
      TensorView r = View(got, kTwo);
      Status s = g.Recv(self, Site("stablehlo.recv", 2), 0, &r, 1);
      received = true;
      return s;
    }
    while (!g.Waiting(1)) std::this_thread::yield();  // the receiver waits in the grid
    TensorView v = View(mine, kTwo);
    Status s = g.Send(self, Site("stablehlo.send", 2), 1, &v, 1);
    while (!received) std::this_thread::yield();  // keep the bytes lent until it has read them
    return s;
  });
  ASSERT_FALSE(st[0]);
  ASSERT_FALSE(st[1]) << st[1]->message;
  EXPECT_EQ(got, (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(t.copies.load(), 1u);
  EXPECT_EQ(t.last_src, reinterpret_cast<const char*>(mine.data()));
  EXPECT_EQ(t.copier, receiver);
}

// Process 0 sends `mine` (s32[dims[0]]) to process 1 on channel 3 and ends; then `mine` is overwritten (its bytes
// are its own again).
void SendAndEnd(ProcessGrid& g, std::vector<int32_t>& mine, const int64_t* dims = kTwo) {
  TensorView v = View(mine, dims);
  Status s = g.Send(0, Site("stablehlo.send", 3), 1, &v, 1);
  EXPECT_FALSE(g.Finish(0, std::move(s)));
  std::fill(mine.begin(), mine.end(), -1);
}

// Process 1 receives process 0's message on channel 3 into `got` and ends.
void ReceiveAndEnd(ProcessGrid& g, std::vector<int32_t>& got, const int64_t* dims = kTwo) {
  TensorView r = View(got, dims);
  Status s = g.Recv(1, Site("stablehlo.recv", 3), 0, &r, 1);
  EXPECT_FALSE(s) << s->message;
  EXPECT_FALSE(g.Finish(1, std::move(s)));
}

TEST(ProcessGrid, ASenderEndingWhileItsWokenReceiverIsAboutToReadALargeMessageWaitsInsteadOfCopying) {
  // The receiver waits; the sender lends its bytes (256 KiB, waking it) and ends at once, then overwrites them.
  // Its end waits for the woken receiver to read them rather than copying them first (a copy made then was a
  // second copy on the critical path, on a shared CPU before the receiver's own): every read is straight from
  // the sender's bytes, and what arrives is what was sent. Repeated, since which comes first (the end or the
  // read) is the scheduler's choice.
  const int64_t large[1] = {64 << 10};
  std::vector<int32_t> sent(static_cast<size_t>(large[0]));
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<int32_t>(i);
  for (int round = 0; round < 20; ++round) {
    LendingTransport t;
    ProcessGrid g(2, 1, &t);
    std::vector<int32_t> mine = sent, got(sent.size());
    std::thread sender([&] {
      while (!g.Waiting(1)) std::this_thread::yield();
      SendAndEnd(g, mine, large);
    });
    ReceiveAndEnd(g, got, large);
    sender.join();
    EXPECT_EQ(got, sent);
    EXPECT_EQ(t.copies.load(), 1u);
    EXPECT_EQ(t.last_src, reinterpret_cast<const char*>(mine.data())) << "round " << round;
  }
}

TEST(ProcessGrid, LentBytesUnreceivedWhenTheSenderEndsAreCopiedFirst) {
  // Process 0 lends its bytes and ends; only then are they overwritten, and only then does process 1 receive:
  // it gets what was sent.
  LendingTransport t;
  ProcessGrid g(2, 1, &t);
  std::vector<int32_t> mine = {7, 8}, got(2);
  std::atomic<bool> scribbled{false};
  std::thread sender([&] {
    SendAndEnd(g, mine);
    scribbled = true;
  });
  while (!scribbled) std::this_thread::yield();
  ReceiveAndEnd(g, got);
  sender.join();
  EXPECT_EQ(got, (std::vector<int32_t>{7, 8}));
}

// ---- Computed values a program keeps until its run ends (CompileCtx::KeepUntilEnd) -----------------------

// Each process's workspace, owned by the test so that it outlives the process as the executor's does (freed after
// ProcessGrid::Finish): PeerTransfers::Outlives says so for it. Records where each copy read.
class WorkspaceTransport : public CountingTransport {
 public:
  bool Outlives(uint32_t process, const void* data, size_t bytes) override {
    const char* p = static_cast<const char*>(data);
    const std::vector<char>& w = workspaces[process];
    return p >= w.data() && p + bytes <= w.data() + w.size();
  }
  Status Copy(const Transfer& t) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      sources.push_back({t.from, t.src});
    }
    return CountingTransport::Copy(t);
  }
  // Whether `src` lies in process `from`'s workspace.
  bool InWorkspace(uint32_t from, const char* src) const {
    const std::vector<char>& w = workspaces[from];
    return src >= w.data() && src < w.data() + w.size();
  }
  std::vector<std::vector<char>> workspaces;
  std::mutex mu;
  std::vector<std::pair<uint32_t, const char*>> sources;  // per copy: the sender and where it read
};

// Runs `text`'s @main as every process of a grid of n (one thread each) in t's workspaces, process k's argument
// s32[2] {k + 1, k + 1}; before(grid, k) and after(grid, k) run on process k's thread around its program. Returns
// each process's result.
std::vector<std::vector<int32_t>> RunInWorkspaces(const std::string& text, uint32_t n, WorkspaceTransport* t,
                                                  std::vector<Status>* status,
                                                  const std::function<void(ProcessGrid&, uint32_t)>& before = nullptr,
                                                  const std::function<void(ProcessGrid&, uint32_t)>& after = nullptr) {
  testing::Compiled c = testing::CompileText(text);
  EXPECT_FALSE(c.status) << c.status->message;
  if (c.status) return {};
  const Program& prog = *c.program;
  auto aligned = [](std::vector<char>& v) {
    return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
  };
  t->workspaces.assign(n, std::vector<char>(prog.workspace_bytes(0) + 64));
  std::vector<std::vector<std::vector<char>>> spaces(n, std::vector<std::vector<char>>(kMaxSpaces));
  for (uint32_t k = 0; k < n; ++k)
    for (size_t s = 1; s < kMaxSpaces; ++s) spaces[k][s].resize(prog.workspace_bytes(s) + 64);
  std::vector<std::vector<int32_t>> out(n);
  ProcessGrid grid(n, 1, t);
  *status = grid.Run([&](uint32_t k) -> Status {
    if (before) before(grid, k);
    std::vector<int32_t> arg = {static_cast<int32_t>(k + 1), static_cast<int32_t>(k + 1)};
    TensorView v = View(arg, kTwo);
    char* given[kMaxSpaces] = {};
    given[0] = aligned(t->workspaces[k]);
    for (size_t s = 1; s < kMaxSpaces; ++s)
      if (prog.workspace_bytes(s)) given[s] = aligned(spaces[k][s]);
    ProcessContext pc;
    pc.grid = &grid;
    pc.replica_id = k;
    Program::RunOptions o;
    o.process = &pc;
    o.spaces = given;
    HostResultAllocator alloc;
    std::vector<TensorView> results;
    Status s = prog.Run(&v, 1, &alloc, &results, o);
    if (!s) {
      const int32_t* r = static_cast<const int32_t*>(results[0].data);
      out[k].assign(r, r + results[0].Bytes() / sizeof(int32_t));
    }
    if (after) after(grid, k);
    return s;
  });
  return out;
}

// x + x, sent to the peer; later ops ((x + x) * x, doubled) would take its memory after the send unless the
// program keeps it. pairs: the send's and recv's source_target_pairs.
std::string SendComputed(const std::string& pairs) {
  const std::string attrs =
      "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = "
      "dense<" +
      pairs + "> : tensor<" + (pairs.size() > 8 ? "2" : "1") + "x2xi64>";
  return R"(
func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {
  %y = stablehlo.add %x, %x : tensor<2xi32>
  %z = stablehlo.multiply %y, %x : tensor<2xi32>
  %t = stablehlo.after_all : !stablehlo.token
  %s = "stablehlo.send"(%y, %t) {)" +
         attrs + R"(} : (tensor<2xi32>, !stablehlo.token) -> !stablehlo.token
  %w = stablehlo.add %z, %z : tensor<2xi32>
  %r:2 = "stablehlo.recv"(%s) {)" +
         attrs + R"(} : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
  %o = stablehlo.add %r#0, %w : tensor<2xi32>
  return %o : tensor<2xi32>
}
)";
}

TEST(ProcessGrid, AComputedValueSentOnceIsLentAndReadOnceFromTheSendersWorkspace) {
  // Each process sends x + x (x = k + 1) and receives its peer's; nobody ends before both received. Each message
  // is copied once, by its receive, straight from the sender's workspace, which held it unchanged meanwhile.
  WorkspaceTransport t;
  std::vector<Status> st;
  std::atomic<int> ran{0};
  const auto out = RunInWorkspaces(SendComputed("[[0, 1], [1, 0]]"), 2, &t, &st, nullptr, [&](ProcessGrid&, uint32_t) {
    ++ran;
    while (ran < 2) std::this_thread::yield();
  });
  ASSERT_EQ(st.size(), 2u);
  for (uint32_t k = 0; k < 2; ++k) ASSERT_FALSE(st[k]) << st[k]->message;
  // Process 0: 2 * 2 (process 1's x + x) + 4 * 1 * 1; process 1: 2 * 1 + 4 * 2 * 2.
  EXPECT_EQ(out[0], (std::vector<int32_t>{8, 8}));
  EXPECT_EQ(out[1], (std::vector<int32_t>{18, 18}));
  ASSERT_EQ(t.sources.size(), 2u);  // one copy per message
  for (const auto& [from, src] : t.sources) EXPECT_TRUE(t.InWorkspace(from, src)) << "sender " << from;
}

// Process 1 waits until process 0 has ended, then overwrites its workspace (the executor frees it then).
void AfterTheSenderEnded(WorkspaceTransport& t, ProcessGrid& g, uint32_t k) {
  if (k != 1) return;
  while (!g.Ended(0)) std::this_thread::yield();
  std::memset(t.workspaces[0].data(), 0x7f, t.workspaces[0].size());
}

TEST(ProcessGrid, AComputedValueLentByASenderThatEndsFirstIsCopiedBeforeItsWorkspaceGoes) {
  // Process 0 sends x + x (2) and ends; its workspace is then overwritten, and only then does process 1 run and
  // receive: it gets what was sent, from the copy process 0's Finish made.
  WorkspaceTransport t;
  std::vector<Status> st;
  size_t copies_before_end = 1;
  const auto out = RunInWorkspaces(
      SendComputed("[[0, 1]]"), 2, &t, &st, [&](ProcessGrid& g, uint32_t k) { AfterTheSenderEnded(t, g, k); },
      [&](ProcessGrid&, uint32_t k) {
        if (k == 0) copies_before_end = t.copies.load();  // its run is over, its message unreceived
      });
  ASSERT_EQ(st.size(), 2u);
  for (uint32_t k = 0; k < 2; ++k) ASSERT_FALSE(st[k]) << st[k]->message;
  EXPECT_EQ(copies_before_end, 0u);
  EXPECT_EQ(out[0], (std::vector<int32_t>{4, 4}));    // not a target: zeros + 4 * 1 * 1
  EXPECT_EQ(out[1], (std::vector<int32_t>{18, 18}));  // 2 + 4 * 2 * 2
  ASSERT_EQ(t.sources.size(), 1u);
  EXPECT_FALSE(t.InWorkspace(0, t.sources[0].second));
}

TEST(ProcessGrid, AComputedValueSentInALoopDeliversEachIterationsBytes) {
  // A send in a loop's body runs once per iteration and its slot is rewritten by the next one: it is not kept,
  // so each message is copied when sent. Process 0 sends x * 1, x * 2, x * 3 and ends (its workspace then
  // overwritten); process 1 then receives the three and folds them as acc * 10 + r: 123.
  const std::string attrs =
      "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1]]> : "
      "tensor<1x2xi64>";
  const std::string text = R"(
func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {
  %zero = stablehlo.constant dense<0> : tensor<2xi32>
  %one = stablehlo.constant dense<1> : tensor<2xi32>
  %ten = stablehlo.constant dense<10> : tensor<2xi32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %i1 = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<3> : tensor<i32>
  %i, %m, %acc = stablehlo.while(%a = %i0, %b = %one, %s = %zero) : tensor<i32>, tensor<2xi32>, tensor<2xi32>
  cond {
    %c = stablehlo.compare LT, %a, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %y = stablehlo.multiply %x, %b : tensor<2xi32>
    %t = stablehlo.after_all : !stablehlo.token
    %st = "stablehlo.send"(%y, %t) {)" +
                           attrs + R"(} : (tensor<2xi32>, !stablehlo.token) -> !stablehlo.token
    %r:2 = "stablehlo.recv"(%st) {)" +
                           attrs + R"(} : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
    %s10 = stablehlo.multiply %s, %ten : tensor<2xi32>
    %s2 = stablehlo.add %s10, %r#0 : tensor<2xi32>
    %b2 = stablehlo.add %b, %one : tensor<2xi32>
    %a2 = stablehlo.add %a, %i1 : tensor<i32>
    stablehlo.return %a2, %b2, %s2 : tensor<i32>, tensor<2xi32>, tensor<2xi32>
  }
  return %acc : tensor<2xi32>
}
)";
  WorkspaceTransport t;
  std::vector<Status> st;
  const auto out = RunInWorkspaces(text, 2, &t, &st, [&](ProcessGrid& g, uint32_t k) { AfterTheSenderEnded(t, g, k); });
  ASSERT_EQ(st.size(), 2u);
  for (uint32_t k = 0; k < 2; ++k) ASSERT_FALSE(st[k]) << st[k]->message;
  EXPECT_EQ(out[0], (std::vector<int32_t>{0, 0}));  // not a target: zeros each iteration
  EXPECT_EQ(out[1], (std::vector<int32_t>{123, 123}));
  EXPECT_EQ(t.sources.size(), 3u);
  for (const auto& [from, src] : t.sources) EXPECT_FALSE(t.InWorkspace(from, src));
}

TEST(ProcessGrid, LentBytesLeftUnreceivedStillFailTheReceiver) {
  LendingTransport t;
  ProcessGrid g(2, 1, &t);
  std::vector<int32_t> mine = {7, 8};
  std::atomic<bool> sent{false};
  auto st = g.Run([&](uint32_t self) -> Status {
    if (self == 1) {
      while (!sent) std::this_thread::yield();  // end after the data is there
      return Status();
    }
    TensorView v = View(mine, kTwo);
    Status s = g.Send(self, Site("stablehlo.send", 4), 1, &v, 1);
    sent = true;
    return s;
  });
  EXPECT_FALSE(st[0]);
  ASSERT_TRUE(st[1]);
  EXPECT_TRUE(Has(st[1], "process (1, 0) ended without receiving the data process (0, 0) sent on channel 4"))
      << st[1]->message;
}

TEST(ProcessGrid, DataLeftUnreceivedFailsItsReceiverNamingChannelAndSender) {
  ProcessGrid g(2, 1);
  std::atomic<bool> sent{false};
  auto st = g.Run([&](uint32_t self) -> Status {
    if (self == 1) {
      while (!sent) std::this_thread::yield();  // end after the data is there
      return Status();
    }
    std::vector<int32_t> mine = {7, 8};
    TensorView v = View(mine, kTwo);
    Status s = g.Send(self, Site("stablehlo.send", 4), 1, &v, 1);
    sent = true;
    return s;
  });
  EXPECT_FALSE(st[0]);
  ASSERT_TRUE(st[1]);
  EXPECT_TRUE(Has(st[1], "process (1, 0) ended without receiving the data process (0, 0) sent on channel 4"))
      << st[1]->message;
}

TEST(ProcessGrid, DataSentToAFinishedProcessFailsIt) {
  ProcessGrid g(2, 1);
  auto st = g.Run([&](uint32_t self) -> Status {
    if (self == 1) return Status();
    while (!g.Ended(1)) std::this_thread::yield();
    std::vector<int32_t> mine = {7, 8};
    TensorView v = View(mine, kTwo);
    return g.Send(self, Site("stablehlo.send", 4), 1, &v, 1);
  });
  EXPECT_FALSE(st[0]);
  EXPECT_TRUE(Has(st[1], "process (0, 0) sent data to process (1, 0) after it finished")) << st[1]->message;
}

TEST(ProcessGrid, DataToAnyReceiverLeftUnreceivedFailsItsSender) {
  ProcessGrid g(1, 1);
  auto st = g.Run([&](uint32_t self) -> Status {
    std::vector<int32_t> mine = {7, 8};
    TensorView v = View(mine, kTwo);
    return g.Send(self, Site("stablehlo.send", 6), -1, &v, 1);
  });
  EXPECT_TRUE(Has(st[0], "'stablehlo.send' on channel 6: the data process (0, 0) sent was never received"))
      << (st[0] ? st[0]->message : "ok");
}

TEST(ProcessGrid, ReceivingAnotherShapeFailsTheReceiver) {
  ProcessGrid g(2, 1);
  auto st = g.Run([&](uint32_t self) -> Status {
    std::vector<int32_t> buf = {1, 2};
    const int64_t one[1] = {1};
    TensorView v = View(buf, self == 0 ? kTwo : one);
    if (self == 0) return g.Send(self, Site("stablehlo.send", 1), 1, &v, 1);
    return g.Recv(self, Site("stablehlo.recv", 1), 0, &v, 1);
  });
  EXPECT_TRUE(Has(st[1], "receives value 0 as tensor<1xi32> but a tensor<2xi32> was sent")) << st[1]->message;
}

}  // namespace
}  // namespace neuronmem::interp
