// Processes of one job on this machine, forked by each test, talking over libfabric (FI_PROVIDER=tcp, and shm, from
// meson) and bootstrapping through a directory store. A child reports through its exit code (0: as expected)
// and prints what went wrong on stderr.
#include "dist/fabric.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <thread>

#include "dist/store.h"
#include "dist_test_util.h"
#include "provider_offered.h"
#include "shm_check.h"

namespace neuronmem::dist {
namespace {

const auto* const kProviderOffered = ::testing::AddGlobalTestEnvironment(new neuronmem::dist::testing::ProviderOffered);

using std::chrono::milliseconds;
using testing::RunProcesses;
using testing::TempDir;

// Prints a failed status and returns from the child with `code`.
#define CHILD_OK(expr, code)                                                      \
  do {                                                                            \
    Status _s = (expr);                                                           \
    if (_s) {                                                                     \
      fprintf(stderr, "line %d: %s: %s\n", __LINE__, #expr, _s->message.c_str()); \
      return code;                                                                \
    }                                                                             \
  } while (0)

struct Job {
  std::unique_ptr<KvStore> store;
  std::unique_ptr<Fabric> fabric;
};

// Creates process i's fabric of an n-process job on the store in `dir`.
Status Join(const std::string& dir, uint32_t i, uint32_t n, Job* job, milliseconds peer_timeout = milliseconds(60000),
            milliseconds bootstrap_timeout = milliseconds(60000), size_t chunk_bytes = FabricOptions().chunk_bytes,
            bool register_memory = false) {
  NEURONMEM_RETURN_IF_ERROR(NewDirectoryStore(dir, &job->store));
  FabricOptions o;
  o.process_index = i;
  o.num_processes = n;
  o.store = job->store.get();
  o.local_cores = 2;
  o.peer_timeout = peer_timeout;
  o.bootstrap_timeout = bootstrap_timeout;
  o.chunk_bytes = chunk_bytes;
  o.register_memory = register_memory;
  return Fabric::Create(o, &job->fabric);
}

// The bytes process `p` contributes in the tests: a pattern that differs per process and per byte.
std::vector<uint8_t> Pattern(uint32_t p, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  for (size_t k = 0; k < bytes; ++k) v[k] = static_cast<uint8_t>(k * 131 + p * 17 + (k >> 12));
  return v;
}

TEST(Fabric, SendRecvBetweenTwoProcesses) {
  TempDir dir;
  const std::vector<size_t> sizes = {0, 1, 256, 65536, 1 << 20, 5 << 20};
  auto codes = RunProcesses(2, [&](int i) {
    Job job;
    CHILD_OK(Join(dir.path(), i, 2, &job), 1);
    CHILD_CHECK(!job.fabric->provider().empty(), 2);
    if (i == 0) fprintf(stderr, "libfabric provider: %s\n", job.fabric->provider().c_str());
    const uint32_t peer = 1 - i;
    for (size_t t = 0; t < sizes.size(); ++t) {
      if (i == 0) {
        auto data = Pattern(0, sizes[t]);
        CHILD_OK(job.fabric->Send(peer, t, data.data(), data.size()), 3);
      } else {
        std::vector<uint8_t> got(sizes[t], 0xEE);
        CHILD_OK(job.fabric->Recv(peer, t, got.data(), got.size()), 4);
        CHILD_CHECK(got == Pattern(0, sizes[t]), 5);
      }
    }
    // And back, with the tags in the other order: messages match by tag, not by arrival.
    if (i == 1) {
      for (size_t t = 0; t < 3; ++t) {
        auto data = Pattern(10 + t, 1000);
        CHILD_OK(job.fabric->Send(peer, 100 + t, data.data(), data.size()), 6);
      }
    } else {
      for (size_t t = 3; t-- > 0;) {
        std::vector<uint8_t> got(1000);
        CHILD_OK(job.fabric->Recv(peer, 100 + t, got.data(), got.size()), 7);
        CHILD_CHECK(got == Pattern(10 + t, 1000), 8);
      }
    }
    // A message of the job shorter than the receive expects (the processes disagree on the program): named
    // at once, and the two go on talking. (A longer one is truncated by the provider, its header unverifiable:
    // it is dropped like a foreign message, and the receive's timeout names the drop.)
    if (i == 0) {
      auto small = Pattern(0, 10), ok = Pattern(0, 64);
      CHILD_OK(job.fabric->Send(peer, 41, small.data(), small.size()), 21);
      CHILD_OK(job.fabric->Send(peer, 42, ok.data(), ok.size()), 22);
    } else {
      std::vector<uint8_t> got(64, 0xEE);
      Status s = job.fabric->Recv(peer, 41, got.data(), got.size(), "recv of 64 bytes");
      CHILD_CHECK(s && s->code == NEURONMEM_STATUS_FAILED_PRECONDITION, 26);
      CHILD_CHECK(s->message.find("process 0 sent 10 bytes") != std::string::npos, 27);
      CHILD_CHECK(got == std::vector<uint8_t>(64, 0xEE), 25);
      CHILD_OK(job.fabric->Recv(peer, 42, got.data(), got.size()), 28);
      CHILD_CHECK(got == Pattern(0, 64), 29);
    }
    // Bad input: a reserved tag, the process itself, a process outside the job.
    char byte = 0;
    Status bad = job.fabric->Send(peer, 1ull << 47, &byte, 1);
    CHILD_CHECK(bad && bad->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 11);
    bad = job.fabric->Recv(i, 1, &byte, 1);
    CHILD_CHECK(bad && bad->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 12);
    bad = job.fabric->Send(7, 1, &byte, 1);
    CHILD_CHECK(bad && bad->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 13);
    FabricStats st = job.fabric->stats();
    CHILD_CHECK(st.messages_dropped == 0, 9);
    CHILD_CHECK(i == 0 ? st.messages_sent == sizes.size() + 2 : st.messages_received == sizes.size() + 1, 10);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// Every process sends (8 MiB, more than a socket holds) before it receives: buffered sends let it complete.
TEST(Fabric, RingWhereEveryProcessSendsFirst) {
  TempDir dir;
  const uint32_t n = 3;
  const size_t bytes = 8 << 20;
  auto codes = RunProcesses(n, [&](int i) {
    Job job;
    CHILD_OK(Join(dir.path(), i, n, &job), 1);
    auto mine = Pattern(i, bytes);
    CHILD_OK(job.fabric->Send((i + 1) % n, 5, mine.data(), bytes, "ring send"), 2);
    mine.assign(bytes, 0);  // the send copied what it needs
    std::vector<uint8_t> got(bytes);
    CHILD_OK(job.fabric->Recv((i + n - 1) % n, 5, got.data(), bytes, "ring recv"), 3);
    CHILD_CHECK(got == Pattern((i + n - 1) % n, bytes), 4);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>(n, 0)));
}

// collective_permute as one process computes it (StableHLO: target gets source's operand, others zeros).
std::vector<uint8_t> PermuteReference(const std::vector<std::pair<uint32_t, uint32_t>>& pairs, uint32_t me,
                                      size_t bytes) {
  for (const auto& [s, t] : pairs) {
    if (t == me) return Pattern(s, bytes);
  }
  return std::vector<uint8_t>(bytes, 0);
}

TEST(Fabric, CollectivePermuteMatchesTheSingleProcessResult) {
  TempDir dir;
  const std::vector<std::vector<std::pair<uint32_t, uint32_t>>> cases = {
      {{0, 1}, {1, 0}},  // swap
      {{0, 1}},          // process 0 gets zeros
      {{1, 1}, {0, 0}},  // each to itself
      {},                // nobody: zeros everywhere
  };
  const size_t bytes = 3 << 20;
  auto codes = RunProcesses(2, [&](int i) {
    Job job;
    CHILD_OK(Join(dir.path(), i, 2, &job), 1);
    for (const auto& pairs : cases) {
      auto in = Pattern(i, bytes);
      std::vector<uint8_t> out(bytes, 0xEE);
      CHILD_OK(job.fabric->CollectivePermute(pairs, in.data(), out.data(), bytes), 2);
      CHILD_CHECK(out == PermuteReference(pairs, i, bytes), 3);
      // In place.
      CHILD_OK(job.fabric->CollectivePermute(pairs, in.data(), in.data(), bytes), 4);
      CHILD_CHECK(in == PermuteReference(pairs, i, bytes), 5);
    }
    Status bad = job.fabric->CollectivePermute({{0, 1}, {1, 1}}, nullptr, nullptr, 0);
    CHILD_CHECK(bad && bad->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 6);
    bad = job.fabric->CollectivePermute({{0, 2}}, nullptr, nullptr, 0);
    CHILD_CHECK(bad && bad->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 7);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// all_reduce as a ring, against the reduction one process computes. Values are small integers, so every
// order of float additions gives the same bits. chunk_bytes: FabricOptions::chunk_bytes (0: whole messages).
void RunAllReduce(uint32_t n, size_t chunk_bytes = 0) {
  TempDir dir;
  const size_t c = chunk_bytes / sizeof(float);  // elements per chunk
  const std::vector<size_t> counts =
      chunk_bytes == 0
          ? std::vector<size_t>{1, 2, 1001, 1 << 20}
          : std::vector<size_t>{1, n * c - 1, n * c, n * c + 1, 3 * n * c + 5, n * 16384 + 3, (1 << 20) + 13};
  auto value = [](uint32_t p, size_t k) { return static_cast<float>((k * 7 + p * 3) % 101) - 50.0f; };
  auto codes = RunProcesses(n, [&](int i) {
    Job job;
    CHILD_OK(Join(dir.path(), i, n, &job, milliseconds(60000), milliseconds(60000), chunk_bytes), 1);
    for (size_t count : counts) {
      std::vector<float> data(count), want(count, 0.0f);
      for (size_t k = 0; k < count; ++k) {
        data[k] = value(i, k);
        for (uint32_t p = 0; p < n; ++p) want[k] += value(p, k);
      }
      CHILD_OK(job.fabric->AllReduce(ReduceKind::kSum, ReduceType::kF32, data.data(), count), 2);
      CHILD_CHECK(data == want, 3);
    }
    std::vector<int64_t> m(chunk_bytes == 0 ? 777 : 3 * n * chunk_bytes / sizeof(int64_t) + 1);
    for (size_t k = 0; k < m.size(); ++k) m[k] = static_cast<int64_t>((k * 31 + i * 1000003) % 4099) - 2000;
    CHILD_OK(job.fabric->AllReduce(ReduceKind::kMax, ReduceType::kS64, m.data(), m.size()), 4);
    for (size_t k = 0; k < m.size(); ++k) {
      int64_t want = INT64_MIN;
      for (uint32_t p = 0; p < n; ++p)
        want = std::max(want, static_cast<int64_t>((k * 31 + p * 1000003) % 4099) - 2000);
      CHILD_CHECK(m[k] == want, 5);
    }
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>(n, 0)));
}

TEST(Fabric, AllReduceRingOfTwo) { RunAllReduce(2); }
TEST(Fabric, AllReduceRingOfThree) { RunAllReduce(3); }

TEST(Fabric, APeerThatNeverJoinsTimesTheBootstrapOut) {
  TempDir dir;
  auto codes = RunProcesses(1, [&](int) {
    Job job;
    Status s = Join(dir.path(), 0, 2, &job, milliseconds(60000), milliseconds(1500));
    CHILD_CHECK(s, 1);
    fprintf(stderr, "as expected: %s\n", s->message.c_str());
    CHILD_CHECK(s->code == NEURONMEM_STATUS_DEADLINE_EXCEEDED, 2);
    CHILD_CHECK(s->message.find("process(es) 1 did not publish") != std::string::npos, 3);
    CHILD_CHECK(job.fabric == nullptr, 4);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0}));
}

TEST(Fabric, BadOptionsAndAStaleStoreAreRefused) {
  TempDir dir;
  auto codes = RunProcesses(1, [&](int) {
    Job job;
    Status s = Join(dir.path(), 2, 2, &job);
    CHILD_CHECK(s && s->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 1);
    CHILD_CHECK(s->message.find("process_index 2") != std::string::npos, 2);
    FabricOptions o;  // no store
    std::unique_ptr<Fabric> f;
    s = Fabric::Create(o, &f);
    CHILD_CHECK(s && s->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 3);
    // Process 1's record left by another job (another token): process 0 refuses it.
    std::unique_ptr<KvStore> store;
    CHILD_OK(NewDirectoryStore(dir.path(), &store), 4);
    CHILD_OK(store->Put("neuronmem/ep/1",
                        "v1 token=00112233445566778899aabbccddeeff nonce=1 cores=2 provider=tcp "
                        "addr=00"),
             5);
    s = Join(dir.path(), 0, 2, &job);
    CHILD_CHECK(s && s->code == NEURONMEM_STATUS_FAILED_PRECONDITION, 6);
    CHILD_CHECK(s->message.find("another job's token") != std::string::npos, 7);
    // Garbage in the store.
    CHILD_OK(store->Put("neuronmem/ep/1", "\x01garbage"), 8);
    s = Join(dir.path(), 0, 2, &job);
    CHILD_CHECK(s && s->code == NEURONMEM_STATUS_FAILED_PRECONDITION, 9);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0}));
}

// Two processes started for jobs of different sizes: both refuse the other's record, naming the sizes.
TEST(Fabric, ProcessesThatDisagreeOnTheJobSizeAreRefused) {
  TempDir dir;
  auto codes = RunProcesses(2, [&](int i) {
    Job job;
    Status s = Join(dir.path(), i, i == 0 ? 2 : 3, &job, milliseconds(60000), milliseconds(20000));
    CHILD_CHECK(s && s->code == NEURONMEM_STATUS_FAILED_PRECONDITION, 1);
    fprintf(stderr, "as expected: %s\n", s->message.c_str());
    CHILD_CHECK(s->message.find(i == 0 ? "job of 3 processes" : "job of 2 processes") != std::string::npos, 2);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// Process 1 dies (SIGKILL) in the middle of a run of all_reduces: process 0 fails within its peer timeout
// with a status naming process 1 and the op, and a later op that needs process 1 fails at once.
TEST(Fabric, APeerKilledMidCollectiveFailsTheSurvivor) {
  TempDir dir;
  auto codes = RunProcesses(2, [&](int i) {
    Job job;
    CHILD_OK(Join(dir.path(), i, 2, &job, milliseconds(4000)), 1);
    std::vector<float> data(1 << 16, 1.0f);
    CHILD_OK(job.fabric->AllReduce(ReduceKind::kSum, ReduceType::kF32, data.data(), data.size()), 2);
    // Sends are buffered: process 1 must not die before its last message of that all_reduce has reached process
    // 0, so process 0 says it has finished (tag 3) before process 1 goes on.
    char done = 1;
    if (i == 0) CHILD_OK(job.fabric->Send(1, 3, &done, 1), 9);
    if (i == 1) {
      CHILD_OK(job.fabric->Recv(0, 3, &done, 1), 10);
      // Half of the next all_reduce: its reduce-scatter message goes out, then the process dies.
      CHILD_OK(job.fabric->Send(0, 1, data.data(), 16), 3);
      raise(SIGKILL);
    }
    Status s = job.fabric->AllReduce(ReduceKind::kSum, ReduceType::kF32, data.data(), data.size());
    CHILD_CHECK(s, 4);
    fprintf(stderr, "as expected: %s\n", s->message.c_str());
    CHILD_CHECK(s->code == NEURONMEM_STATUS_UNAVAILABLE, 5);
    CHILD_CHECK(s->message.find("process 1") != std::string::npos, 6);
    CHILD_CHECK(s->message.find("all_reduce") != std::string::npos, 7);
    s = job.fabric->Send(1, 2, data.data(), 16);
    CHILD_CHECK(s && s->code == NEURONMEM_STATUS_UNAVAILABLE && s->message.find("lost") != std::string::npos, 8);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 128 + SIGKILL}));
}

// Of three processes, process 2 dies: each survivor's wait on it fails naming it, and the survivors go on
// talking to each other.
TEST(Fabric, SurvivorsOfALostPeerGoOnTogether) {
  TempDir dir;
  auto codes = RunProcesses(3, [&](int i) {
    Job job;
    CHILD_OK(Join(dir.path(), i, 3, &job, milliseconds(4000)), 1);
    std::vector<int32_t> data(999, i + 1);
    CHILD_OK(job.fabric->AllReduce(ReduceKind::kSum, ReduceType::kS32, data.data(), data.size()), 2);
    CHILD_CHECK(data == std::vector<int32_t>(999, 6), 3);
    // Sends are buffered: process 2 dies only once both survivors say their all_reduce is done (tag 5), so its
    // last messages of it cannot die unsent with it.
    char done = 1;
    if (i != 2) CHILD_OK(job.fabric->Send(2, 5, &done, 1), 11);
    if (i == 2) {
      CHILD_OK(job.fabric->Recv(0, 5, &done, 1), 12);
      CHILD_OK(job.fabric->Recv(1, 5, &done, 1), 13);
      raise(SIGKILL);
    }
    int32_t word = 0;
    Status s = job.fabric->Recv(2, 3, &word, sizeof word, "the test's recv");
    CHILD_CHECK(s && s->code == NEURONMEM_STATUS_UNAVAILABLE, 4);
    CHILD_CHECK(s->message.find("process 2") != std::string::npos, 5);
    CHILD_CHECK(s->message.find("the test's recv") != std::string::npos, 6);
    const uint32_t peer = 1 - i;
    word = 100 + i;
    CHILD_OK(job.fabric->Send(peer, 4, &word, sizeof word), 7);
    CHILD_OK(job.fabric->Recv(peer, 4, &word, sizeof word), 8);
    CHILD_CHECK(word == static_cast<int32_t>(100 + peer), 9);
    // A collective over the whole job needs process 2: it fails at once, naming it (process 1, whose ring
    // successor is process 2; process 0's first step would talk to process 1, which may be gone by then).
    if (i == 0) return 0;
    s = job.fabric->AllReduce(ReduceKind::kSum, ReduceType::kS32, data.data(), data.size());
    CHILD_CHECK(s && s->code == NEURONMEM_STATUS_UNAVAILABLE && s->message.find("process 2") != std::string::npos, 10);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 128 + SIGKILL}));
}

// Of three processes, process 1 dies between two all_reduces. Process 2 (its right neighbour in the ring) waits
// for it and names it; process 0 waits for process 2, which is alive but stuck behind process 1: it must name
// process 1 too (process 2 passes its failure on), not take process 2 for lost, and go on talking to it.
TEST(Fabric, AllReduceBehindALostPeerNamesItNotALiveOne) {
  TempDir dir;
  auto codes = RunProcesses(3, [&](int i) {
    Job job;
    CHILD_OK(Join(dir.path(), i, 3, &job, milliseconds(2000)), 1);
    for (size_t count : {size_t{999}, size_t{1} << 16}) {  // bounce buffers, and receives in place
      std::vector<int32_t> data(count, i + 1);
      CHILD_OK(job.fabric->AllReduce(ReduceKind::kSum, ReduceType::kS32, data.data(), data.size()), 2);
      CHILD_CHECK(data == std::vector<int32_t>(count, 6), 3);
    }
    // One more small all_reduce before process 1 dies: once it completes there, its peers have taken process 1's
    // large messages above (they are behind it in each ring), and its last message is small. On shm a receiver reads
    // a large message out of its sender's memory, so one still unread when the sender is killed fails with EIO.
    int32_t one = 1;
    CHILD_OK(job.fabric->AllReduce(ReduceKind::kSum, ReduceType::kS32, &one, 1), 12);
    if (i == 1) raise(SIGKILL);
    for (size_t count : {size_t{999}, size_t{1} << 16}) {
      std::vector<int32_t> data(count, i + 1);
      const auto begun = std::chrono::steady_clock::now();
      Status s = job.fabric->AllReduce(ReduceKind::kSum, ReduceType::kS32, data.data(), data.size());
      const auto took = std::chrono::steady_clock::now() - begun;
      CHILD_CHECK(s && s->code == NEURONMEM_STATUS_UNAVAILABLE, 4);
      fprintf(stderr, "process %d, as expected (%lld ms): %s\n", i,
              static_cast<long long>(std::chrono::duration_cast<milliseconds>(took).count()), s->message.c_str());
      CHILD_CHECK(s->message.find("process 1") != std::string::npos, 5);
      CHILD_CHECK(s->message.find("process 2, which is lost") == std::string::npos, 6);
      CHILD_CHECK(s->message.find("process 0, which is lost") == std::string::npos, 7);
      // Bounded: at most the ring's 2(n-1) steps' peer timeouts.
      CHILD_CHECK(took < std::chrono::seconds(9), 8);
    }
    // The survivors still talk to each other: neither took the other for lost.
    const uint32_t peer = 2 - i;
    int32_t word = 100 + i;
    CHILD_OK(job.fabric->Send(peer, 4, &word, sizeof word), 9);
    CHILD_OK(job.fabric->Recv(peer, 4, &word, sizeof word), 10);
    CHILD_CHECK(word == static_cast<int32_t>(100 + peer), 11);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 128 + SIGKILL, 0}));
}

// Two threads of one process share its fabric: one waits for a large (rendezvous) message that comes last, blocked on
// the completion queue, while the other makes 50 round trips with the same peer. The round trips are not held up
// by the waiting receive (a thread that needs the fabric wakes it), and every message lands where it belongs.
TEST(Fabric, ThreadsShareAFabricWhileOneWaits) {
  TempDir dir;
  constexpr int kRounds = 50;
  const size_t big = 256 * 1024;
  auto codes = RunProcesses(2, [&](int i) {
    Job job;
    CHILD_OK(Join(dir.path(), i, 2, &job), 1);
    if (i == 1) {
      for (int k = 0; k < kRounds; ++k) {
        uint64_t word = 0;
        CHILD_OK(job.fabric->Recv(0, 2 + k, &word, sizeof word), 2);
        word += 1000;
        CHILD_OK(job.fabric->Send(0, 1000 + k, &word, sizeof word), 3);
      }
      std::vector<uint8_t> data = Pattern(1, big);
      CHILD_OK(job.fabric->Send(0, 1, data.data(), data.size()), 4);
      return 0;
    }
    std::vector<uint8_t> got(big);
    Status waited;
    std::thread waiter([&] { waited = job.fabric->Recv(1, 1, got.data(), got.size(), "the waiting recv"); });
    std::this_thread::sleep_for(milliseconds(20));  // the waiter is blocked by now, most likely on the queue
    const auto begun = std::chrono::steady_clock::now();
    for (int k = 0; k < kRounds; ++k) {
      uint64_t word = k;
      CHILD_OK(job.fabric->Send(1, 2 + k, &word, sizeof word), 5);
      CHILD_OK(job.fabric->Recv(1, 1000 + k, &word, sizeof word), 6);
      CHILD_CHECK(word == static_cast<uint64_t>(k) + 1000, 7);
    }
    const auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - begun);
    waiter.join();
    fprintf(stderr, "%d round trips beside a waiting receive: %lld ms\n", kRounds,
            static_cast<long long>(took.count()));
    CHILD_OK(std::move(waited), 8);
    CHILD_CHECK(got == Pattern(1, big), 9);
    CHILD_CHECK(took < std::chrono::seconds(5), 10);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// A process of another job that learned process 0's address sends it a message with the tag process 0 waits
// for: it is dropped and counted, and never lands in the receive buffer.
TEST(Fabric, MessagesFromOutsideTheJobAreDroppedAndCounted) {
  TempDir dir;
  const std::string a = dir.Sub("job-a"), b = dir.Sub("job-b");
  auto codes = RunProcesses(3, [&](int i) {
    if (i == 2) {
      // The intruder: process 1 of job B, whose store claims job A's process 0 is B's process 0.
      std::unique_ptr<KvStore> sa, sb;
      CHILD_OK(NewDirectoryStore(a, &sa), 1);
      CHILD_OK(NewDirectoryStore(b, &sb), 1);
      std::string rec;
      CHILD_OK(sa->Get("neuronmem/ep/0", milliseconds(60000), &rec), 2);
      const std::string fake = "ffeeddccbbaa99887766554433221100";
      size_t at = rec.find("token=");
      CHILD_CHECK(at != std::string::npos, 3);
      rec.replace(at + 6, fake.size(), fake);
      CHILD_OK(sb->Put("neuronmem/token", fake), 4);
      CHILD_OK(sb->Put("neuronmem/ep/0", rec), 4);
      Job job;
      CHILD_OK(Join(b, 1, 2, &job), 5);
      CHILD_OK(sa->Get("neuronmem/victim-waiting", milliseconds(60000), &rec), 6);
      std::vector<uint8_t> evil(64, 0x66);
      CHILD_OK(job.fabric->Send(0, 7, evil.data(), evil.size()), 7);
      return 0;  // the Fabric's destructor waits until the message is out
    }
    Job job;
    CHILD_OK(Join(a, i, 2, &job, milliseconds(8000)), 10);
    if (i == 1) {
      std::string done;
      CHILD_OK(job.store->Get("neuronmem/victim-done", milliseconds(120000), &done), 11);
      return 0;
    }
    CHILD_OK(job.store->Put("neuronmem/victim-waiting", "1"), 12);
    std::vector<uint8_t> buf(64, 0);
    Status s = job.fabric->Recv(1, 7, buf.data(), buf.size());  // process 1 never sends it
    CHILD_OK(job.store->Put("neuronmem/victim-done", "1"), 13);
    CHILD_CHECK(s && s->code == NEURONMEM_STATUS_UNAVAILABLE, 14);
    fprintf(stderr, "as expected: %s\n", s->message.c_str());
    CHILD_CHECK(job.fabric->stats().messages_dropped == 1, 15);
    CHILD_CHECK(s->message.find("1 message(s) with its tag were dropped") != std::string::npos, 16);
    CHILD_CHECK(buf == std::vector<uint8_t>(64, 0), 17);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0}));
}

// The registered path (what efa requires), forced on the tcp provider: regions registered once, receives of
// at least 64 KiB into them land in place with their descriptor, receives elsewhere go through the Fabric's
// registered buffers; every byte arrives either way.
TEST(Fabric, RegisteredMemoryCarriesMessagesInPlace) {
  TempDir dir;
  const std::vector<size_t> sizes = {256, 65536, 1 << 20, 5 << 20};
  auto codes = RunProcesses(2, [&](int i) {
    std::unique_ptr<KvStore> store;
    CHILD_OK(NewDirectoryStore(dir.path(), &store), 1);
    FabricOptions o;
    o.process_index = i;
    o.num_processes = 2;
    o.store = store.get();
    o.register_memory = true;
    std::unique_ptr<Fabric> fabric;
    CHILD_OK(Fabric::Create(o, &fabric), 2);
    CHILD_CHECK(fabric->registers_memory(), 3);
    std::vector<uint8_t> region(8 << 20, 0xEE);
    CHILD_OK(fabric->RegisterMemory(region.data(), region.size()), 4);
    CHILD_CHECK(fabric->stats().registered_bytes >= region.size(), 5);
    // Bad input: an empty region, an overlapping one, unregistering what is not registered.
    Status bad = fabric->RegisterMemory(region.data() + 4096, 4096);
    CHILD_CHECK(bad && bad->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 6);
    bad = fabric->RegisterMemory(region.data(), 0);
    CHILD_CHECK(bad && bad->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 6);
    bad = fabric->UnregisterMemory(region.data() + 1);
    CHILD_CHECK(bad && bad->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 6);
    const uint32_t peer = 1 - i;
    size_t large = 0;
    for (size_t t = 0; t < sizes.size(); ++t) {
      const size_t n = sizes[t];
      if (i == 0) {
        auto data = Pattern(t, n);
        memcpy(region.data() + 64, data.data(), n);  // sent from registered memory
        CHILD_OK(fabric->Send(peer, t, region.data() + 64, n), 7);
        CHILD_OK(fabric->Send(peer, 100 + t, data.data(), n), 7);  // and from ordinary memory
      } else {
        CHILD_OK(fabric->Recv(peer, t, region.data() + 128, n), 8);  // into registered memory
        CHILD_CHECK(memcmp(region.data() + 128, Pattern(t, n).data(), n) == 0, 9);
        std::vector<uint8_t> got(n, 0);
        CHILD_OK(fabric->Recv(peer, 100 + t, got.data(), n), 10);  // into memory outside every region
        CHILD_CHECK(got == Pattern(t, n), 11);
        if (n >= 65536) ++large;
      }
    }
    if (i == 1) {
      // Only the receives into the region landed in place.
      CHILD_CHECK(fabric->stats().receives_in_place == large, 12);
    }
    // Both are done before either unregisters (a receive may still be posted into the region otherwise).
    char byte = 1;
    CHILD_OK(fabric->Send(peer, 999, &byte, 1), 13);
    CHILD_OK(fabric->Recv(peer, 999, &byte, 1), 13);
    CHILD_OK(fabric->UnregisterMemory(region.data()), 14);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// Messages above FabricOptions::chunk_bytes travel in chunks (4 KiB here, so that every case is small): sizes of one
// byte, around the chunk's boundaries and not a multiple of it, through the copied path (under 64 KiB) and in place
// (at least 64 KiB, where every chunk's receive is posted at once), registered or not; each arrives whole, both ways.
void RunChunkedSendRecv(bool register_memory) {
  TempDir dir;
  constexpr size_t kChunk = 4096;
  const std::vector<size_t> sizes = {1,         kChunk - 1, kChunk,    kChunk + 1,   2 * kChunk, 3 * kChunk + 7,
                                     65536 - 1, 65536,      65536 + 1, (1 << 20) + 3};
  auto codes = RunProcesses(2, [&](int i) {
    Job job;
    CHILD_OK(Join(dir.path(), i, 2, &job, milliseconds(60000), milliseconds(60000), kChunk, register_memory), 1);
    const uint32_t peer = 1 - i;
    std::vector<uint8_t> region(2 << 20, 0xEE);
    if (register_memory) CHILD_OK(job.fabric->RegisterMemory(region.data(), region.size()), 2);
    for (size_t t = 0; t < sizes.size(); ++t) {
      const size_t n = sizes[t];
      // Process 0 sends first, then receives; process 1 the other way round: every size goes both ways.
      for (int turn = 0; turn < 2; ++turn) {
        if ((turn == 0) == (i == 0)) {
          auto data = Pattern(i * 100 + t, n);
          CHILD_OK(job.fabric->Send(peer, t, data.data(), n), 3);
        } else {
          uint8_t* got = register_memory ? region.data() + 64 : nullptr;
          std::vector<uint8_t> buf;
          if (got == nullptr) {
            buf.assign(n, 0xEE);
            got = buf.data();
          }
          CHILD_OK(job.fabric->Recv(peer, t, got, n), 4);
          CHILD_CHECK(memcmp(got, Pattern(peer * 100 + t, n).data(), n) == 0, 5);
        }
      }
    }
    const FabricStats st = job.fabric->stats();
    CHILD_CHECK(st.messages_sent == sizes.size() && st.messages_received == sizes.size(), 6);
    CHILD_CHECK(st.messages_dropped == 0, 7);
    // A receive of another size than sent fails naming both sizes (here the sender's message is 3 chunks).
    if (i == 0) {
      auto data = Pattern(7, 3 * kChunk);
      CHILD_OK(job.fabric->Send(peer, 500, data.data(), data.size()), 8);
    } else {
      std::vector<uint8_t> got(2 * kChunk);
      Status s = job.fabric->Recv(peer, 500, got.data(), got.size());
      CHILD_CHECK(s && s->code == NEURONMEM_STATUS_FAILED_PRECONDITION, 9);
      CHILD_CHECK(s->message.find(std::to_string(3 * kChunk) + " bytes") != std::string::npos, 10);
    }
    // The refused message's later chunks were taken off the fabric: the next message of that tag arrives intact.
    if (i == 0) {
      auto data = Pattern(8, 2 * kChunk);
      CHILD_OK(job.fabric->Send(peer, 500, data.data(), data.size()), 11);
    } else {
      std::vector<uint8_t> got(2 * kChunk);
      CHILD_OK(job.fabric->Recv(peer, 500, got.data(), got.size()), 12);
      CHILD_CHECK(got == Pattern(8, 2 * kChunk), 13);
    }
    // Both are done before either unregisters or leaves.
    char byte = 1;
    CHILD_OK(job.fabric->Send(peer, 999, &byte, 1), 14);
    CHILD_OK(job.fabric->Recv(peer, 999, &byte, 1), 14);
    // And no send is left waiting for a receiver (on shm a send completes only once received; the Fabric's end
    // would wait its peer timeout, 60 s, for one).
    const auto begun = std::chrono::steady_clock::now();
    job.fabric.reset();
    CHILD_CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(20), 15);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(Fabric, ChunkedMessagesArriveWhole) { RunChunkedSendRecv(false); }
TEST(Fabric, ChunkedMessagesArriveWholeInRegisteredMemory) { RunChunkedSendRecv(true); }

// The same with the ring's messages in chunks (4 KiB), reduced chunk by chunk as they land: counts of one element,
// around the chunk's boundaries per ring step, and not a multiple of anything, over 2 and 4 processes.
TEST(Fabric, ChunkedAllReduceOfTwo) { RunAllReduce(2, 4096); }
TEST(Fabric, ChunkedAllReduceOfFour) { RunAllReduce(4, 4096); }

// Processes whose chunk sizes differ cannot talk (a message's chunks would not meet its receives): refused at the
// bootstrap, naming both sizes. And a chunk size that is not a multiple of 64 of at least 4096 is bad input.
TEST(Fabric, ProcessesThatDisagreeOnTheChunkSizeAreRefused) {
  TempDir dir;
  auto codes = RunProcesses(2, [&](int i) {
    Job job;
    Status s = Join(dir.path(), i, 2, &job, milliseconds(60000), milliseconds(20000), i == 0 ? 4096 : 8192);
    CHILD_CHECK(s && s->code == NEURONMEM_STATUS_FAILED_PRECONDITION, 1);
    CHILD_CHECK(s->message.find("chunks") != std::string::npos, 2);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
  TempDir other;
  Job job;
  for (size_t bad : {size_t{1}, size_t{4095}, size_t{4100}}) {
    Status s = Join(other.path(), 0, 1, &job, milliseconds(1000), milliseconds(1000), bad);
    EXPECT_TRUE(s && s->code == NEURONMEM_STATUS_INVALID_ARGUMENT) << bad;
  }
}

// A payload of SendOwned: the pattern of `t`, and a deleter that scribbles over it before freeing it, so a fabric that
// dropped it before the provider was done would deliver the scribble (and ASan would see the freed memory read).
std::shared_ptr<std::vector<uint8_t>> OwnedPayload(size_t t, size_t n) {
  return std::shared_ptr<std::vector<uint8_t>>(new std::vector<uint8_t>(Pattern(t, n)), [](std::vector<uint8_t>* v) {
    std::fill(v->begin(), v->end(), 0xDD);
    delete v;
  });
}

// SendOwned: sizes copied (1 B, 4 KiB) and posted from the caller's memory (64 KiB, 1 MiB + 3, 16 MiB) arrive intact
// though the caller dropped its reference as soon as the call returned; both processes send every message before
// receiving any (buffered: no deadlock); each payload is released once delivered, and none is held after the fabric
// is gone.
void RunOwnedSends(bool register_memory, size_t chunk_bytes = 0) {
  TempDir dir;
  const std::vector<size_t> sizes = {1, 4096, 64 << 10, (1 << 20) + 3, 16 << 20};
  auto codes = RunProcesses(2, [&](int i) {
    std::vector<std::weak_ptr<std::vector<uint8_t>>> sent;
    {
      Job job;
      CHILD_OK(Join(dir.path(), i, 2, &job, milliseconds(60000), milliseconds(60000), chunk_bytes, register_memory), 1);
      const uint32_t peer = 1 - i;
      std::vector<std::shared_ptr<std::vector<uint8_t>>> region_owner;
      for (size_t t = 0; t < sizes.size(); ++t) {
        auto payload = OwnedPayload(t + 10 * i, sizes[t]);
        // Where memory is registered, only a registered payload goes in place (the others are copied).
        if (register_memory) CHILD_OK(job.fabric->RegisterMemory(payload->data(), payload->size()), 2);
        sent.push_back(payload);
        if (register_memory) region_owner.push_back(payload);  // unregistered below, before it may go
        const void* data = payload->data();
        CHILD_OK(job.fabric->SendOwned(peer, t, data, sizes[t], std::move(payload), "owned send"), 3);
      }
      for (size_t t = 0; t < sizes.size(); ++t) {
        std::vector<uint8_t> got(sizes[t], 0);
        CHILD_OK(job.fabric->Recv(peer, t, got.data(), got.size()), 4);
        CHILD_CHECK(got == Pattern(t + 10 * peer, sizes[t]), 5);
      }
      // The three sizes of at least 16 KiB went from the payloads themselves, the two smaller ones were copied.
      CHILD_CHECK(job.fabric->stats().sends_in_place == 3, 6);
      CHILD_CHECK(job.fabric->stats().messages_sent == sizes.size(), 7);
      // The copied payloads were dropped by SendOwned itself; the others once delivered: both processes have every
      // message once this exchange ends (the provider completes a send before the receiver's next message comes).
      char byte = 1;
      CHILD_OK(job.fabric->Send(peer, 999, &byte, 1), 8);
      CHILD_OK(job.fabric->Recv(peer, 999, &byte, 1), 8);
      CHILD_OK(job.fabric->Send(peer, 998, &byte, 1), 8);
      CHILD_OK(job.fabric->Recv(peer, 998, &byte, 1), 8);
      if (!register_memory) {
        for (size_t t = 0; t < sizes.size(); ++t) CHILD_CHECK(sent[t].expired(), 9);
      }
      // Bad input: a reserved tag, the process itself, a process out of range; the payload is not kept.
      auto bad_payload = OwnedPayload(0, 1 << 20);
      std::weak_ptr<std::vector<uint8_t>> bad_sent = bad_payload;
      Status bad = job.fabric->SendOwned(peer, 1ull << 47, bad_payload->data(), 1 << 20, bad_payload);
      CHILD_CHECK(bad && bad->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 10);
      bad = job.fabric->SendOwned(i, 1, bad_payload->data(), 1 << 20, bad_payload);
      CHILD_CHECK(bad && bad->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 11);
      bad = job.fabric->SendOwned(7, 1, bad_payload->data(), 1 << 20, bad_payload);
      CHILD_CHECK(bad && bad->code == NEURONMEM_STATUS_INVALID_ARGUMENT, 12);
      bad_payload.reset();
      CHILD_CHECK(bad_sent.expired(), 13);
      for (const auto& p : region_owner) CHILD_OK(job.fabric->UnregisterMemory(const_cast<uint8_t*>(p->data())), 14);
    }
    for (const auto& w : sent) CHILD_CHECK(w.expired(), 15);  // nothing held once the fabric is gone
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(Fabric, OwnedSendsArriveIntactAndAreReleasedOnceDelivered) { RunOwnedSends(false); }
TEST(Fabric, OwnedSendsArriveIntactFromRegisteredMemory) { RunOwnedSends(true); }
TEST(Fabric, OwnedSendsArriveIntactInChunks) { RunOwnedSends(false, 64 << 10); }

// Where memory is registered, an owned send from memory outside every region is copied (the provider may need a
// descriptor for it): the payload is dropped when the call returns, and the message still arrives intact.
TEST(Fabric, OwnedSendFromUnregisteredMemoryIsCopied) {
  TempDir dir;
  auto codes = RunProcesses(2, [&](int i) {
    Job job;
    CHILD_OK(Join(dir.path(), i, 2, &job, milliseconds(60000), milliseconds(60000), 0, /*register_memory=*/true), 1);
    const size_t n = 1 << 20;
    if (i == 0) {
      auto payload = OwnedPayload(3, n);
      std::weak_ptr<std::vector<uint8_t>> sent = payload;
      const void* data = payload->data();
      CHILD_OK(job.fabric->SendOwned(1, 5, data, n, std::move(payload)), 2);
      CHILD_CHECK(job.fabric->stats().sends_in_place == 0, 3);
      CHILD_CHECK(sent.expired(), 4);  // copied: not held
    } else {
      std::vector<uint8_t> got(n);
      CHILD_OK(job.fabric->Recv(0, 5, got.data(), n), 5);
      CHILD_CHECK(got == Pattern(3, n), 6);
    }
    char byte = 1;
    CHILD_OK(job.fabric->Send(1 - i, 999, &byte, 1), 7);
    CHILD_OK(job.fabric->Recv(1 - i, 999, &byte, 1), 7);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// Many owned sends in flight at once, to a receiver that takes them in the reverse order: all arrive intact, each
// payload held until its message is delivered (the deleter scribbles it) and none after the exchange ends.
TEST(Fabric, ManyOwnedSendsInFlightAtOnce) {
  TempDir dir;
  constexpr size_t kCount = 24, kBytes = 256 << 10;
  auto codes = RunProcesses(2, [&](int i) {
    Job job;
    CHILD_OK(Join(dir.path(), i, 2, &job), 1);
    std::vector<std::weak_ptr<std::vector<uint8_t>>> sent;
    if (i == 0) {
      for (size_t t = 0; t < kCount; ++t) {
        auto payload = OwnedPayload(t, kBytes);
        sent.push_back(payload);
        const void* data = payload->data();
        CHILD_OK(job.fabric->SendOwned(1, t, data, kBytes, std::move(payload)), 2);
      }
      CHILD_CHECK(job.fabric->stats().sends_in_place == kCount, 3);
    } else {
      std::vector<uint8_t> got(kBytes);
      for (size_t t = kCount; t-- > 0;) {
        CHILD_OK(job.fabric->Recv(0, t, got.data(), kBytes), 4);
        CHILD_CHECK(got == Pattern(t, kBytes), 5);
      }
    }
    char byte = 1;
    CHILD_OK(job.fabric->Send(1 - i, 999, &byte, 1), 6);
    CHILD_OK(job.fabric->Recv(1 - i, 999, &byte, 1), 6);
    CHILD_OK(job.fabric->Send(1 - i, 998, &byte, 1), 6);
    CHILD_OK(job.fabric->Recv(1 - i, 998, &byte, 1), 6);
    for (const auto& w : sent) CHILD_CHECK(w.expired(), 7);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// The receiver dies before it takes an owned send of 16 MiB: the sender's call returned at once (buffered), a later
// receive from the dead peer fails naming it within the peer timeout, and the payload is released by the time the
// fabric is gone (no leak, no hang).
TEST(Fabric, AnOwnedSendToAKilledPeerIsReleased) {
  TempDir dir;
  constexpr auto kPeerTimeout = milliseconds(3000);
  auto codes = RunProcesses(2, [&](int i) {
    std::weak_ptr<std::vector<uint8_t>> sent;
    {
      Job job;
      CHILD_OK(Join(dir.path(), i, 2, &job, kPeerTimeout), 1);
      char byte = 1;
      if (i == 1) {
        CHILD_OK(job.fabric->Recv(0, 2, &byte, 1), 2);
        raise(SIGKILL);
      }
      auto payload = OwnedPayload(0, 16 << 20);
      sent = payload;
      const void* data = payload->data();
      CHILD_OK(job.fabric->SendOwned(1, 1, data, 16 << 20, std::move(payload), "owned send"), 3);
      CHILD_OK(job.fabric->Send(1, 2, &byte, 1), 4);
      const auto start = std::chrono::steady_clock::now();
      Status s = job.fabric->Recv(1, 3, &byte, 1, "answer");
      CHILD_CHECK(s && s->code == NEURONMEM_STATUS_UNAVAILABLE, 5);
      CHILD_CHECK(s->message.find("process 1") != std::string::npos, 6);
      CHILD_CHECK(std::chrono::steady_clock::now() - start < kPeerTimeout + milliseconds(2000), 7);
      // The peer is lost for later sends at once; their payload is not kept.
      auto again = OwnedPayload(1, 1 << 20);
      std::weak_ptr<std::vector<uint8_t>> again_sent = again;
      s = job.fabric->SendOwned(1, 4, again->data(), 1 << 20, again);
      CHILD_CHECK(s && s->code == NEURONMEM_STATUS_UNAVAILABLE, 8);
      again.reset();
      CHILD_CHECK(again_sent.expired(), 9);
    }
    CHILD_CHECK(sent.expired(), 10);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 128 + SIGKILL}));
}

// A process that sends and then makes no call of the Fabric (it computes, or waits outside the library) still
// delivers: its progress thread posts the sends the provider refused at first (tcp connects on the first message to a
// peer) and drives the large ones, copied and owned, that move only as the sender's provider is progressed. The
// receiver gives up on a peer after 2 s; the sender stays silent until the receiver says, through the store, that it
// has everything (at most 60 s): a send that waited for the sender's next call would make the receiver fail.
TEST(Fabric, SendsLeaveAProcessThatMakesNoFurtherCall) {
  TempDir dir;
  const std::vector<size_t> sizes = {256, 4 << 20, 16 << 20};
  auto codes = RunProcesses(2, [&](int i) {
    std::weak_ptr<std::vector<uint8_t>> sent;
    {
      Job job;
      CHILD_OK(Join(dir.path(), i, 2, &job, milliseconds(2000)), 1);
      if (i == 0) {
        for (size_t t = 0; t + 1 < sizes.size(); ++t) {
          auto data = Pattern(t, sizes[t]);
          CHILD_OK(job.fabric->Send(1, t, data.data(), data.size()), 2);
        }
        auto payload = OwnedPayload(sizes.size() - 1, sizes.back());
        sent = payload;
        const void* data = payload->data();
        CHILD_OK(job.fabric->SendOwned(1, sizes.size() - 1, data, sizes.back(), std::move(payload)), 3);
        std::string word;
        CHILD_OK(job.store->Get("received", milliseconds(60000), &word), 4);
        CHILD_CHECK(word == "all", 9);
        // The progress thread also reads the owned send's completion and releases the payload, without a call (it
        // may see the completion after the receiver has the bytes: wait for it, at most 30 s).
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!sent.expired() && std::chrono::steady_clock::now() < until) {
          std::this_thread::sleep_for(milliseconds(5));
        }
        CHILD_CHECK(sent.expired(), 5);
        return 0;
      }
      const int code = [&] {
        for (size_t t = 0; t < sizes.size(); ++t) {
          std::vector<uint8_t> got(sizes[t], 0);
          CHILD_OK(job.fabric->Recv(0, t, got.data(), got.size()), 6);
          CHILD_CHECK(got == Pattern(t, sizes[t]), 7);
        }
        return 0;
      }();
      CHILD_OK(job.store->Put("received", code == 0 ? "all" : "not all"), 8);  // the sender may go either way
      return code;
    }
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

}  // namespace
}  // namespace neuronmem::dist
