// Messages between 2 processes over dist::Fabric, beside the provider's own floor measured in the same run
// (issue 24, "Performance"; docs/performance.md, "Between processes").
//
//   floor        a minimal libfabric ping-pong of its own: the same hints as dist::Fabric (FI_EP_RDM, tagged,
//                the provider libfabric picks, FI_PROVIDER honoured, bound to 127.0.0.1), buffers posted
//                once; run twice, both processes spinning on their completion queue, then both blocking in
//                fi_cq_sread: the floor of a size is the better of the two (spinning wins small messages,
//                and on 2 busy vCPUs it can lose large ones by 10-100x to the kernel work it starves);
//   fabric       dist::Fabric Send then Recv on process 0, Recv then Send on process 1 (Send: buffered, the bytes
//                copied into the Fabric's buffer);
//   owned        the same with SendOwned (buffered too, without the copy from 16 KiB: posted straight from the
//                caller's buffer, which the Fabric holds until delivered; smaller ones copied): what a launch across
//                processes sends its messages with;
//   all_reduce   dist::Fabric::AllReduce (f32 sum) over both processes;
//   launch       a launch across the 2 processes (a client of 1 core in each, one job through a directory store)
//                of collective_permute with pairs [[0, 1], [1, 0]]: each device sends its tensor to the other
//                process and receives the other's (the runtime's whole path: descriptor, one copy into the message,
//                SendOwned, the receive, the copy into the result);
//   in-process   a 2-core launch (one process, cores as threads) of a program that does send + recv with
//                pairs [[0, 1], [1, 0]] (both directions at once), and of collective_permute with the same
//                pairs: the in-process transport, for comparison.
//
// Ping-pong latency is half a round trip (p50 and p99 over the iterations, measured on process 0), bandwidth
// the message bytes over that half round trip. all_reduce: time per call on process 0, algbw = bytes / time,
// busbw = algbw * 2 (n - 1) / n (NCCL's definitions; n = 2). Ratios compare with the floor's figure of the same
// size from this run. Usage: bench_dist [--quick] [--max-mib N] [--chunk-kib N] [--no-inprocess] [--launch-only]
// (--launch-only: only the launch across processes; its ratios then have no floor)
#include <neuronmem/neuronmem.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <sys/mman.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <memory>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "dist/fabric.h"
#include "dist/store.h"
#include "latency.h"
#include "peer_programs.h"

namespace {

using neuronmem::bench::Clock;
using neuronmem::bench::Ns;
using neuronmem::bench::Percentiles;
using neuronmem::bench::Summarize;

constexpr int kMaxSizes = 16;

// What the measuring process hands back to the parent (a shared anonymous mapping, made before fork).
struct Row {
  double p50_ns, p99_ns;
};
struct Results {
  char provider[64];
  Row spin[kMaxSizes], block[kMaxSizes], fabric[kMaxSizes], owned[kMaxSizes], all_reduce[kMaxSizes];
  Row launch[kMaxSizes];  // a launch across the 2 processes (LaunchProcess)
  // The floor of a size: the better p50 of the spinning and the blocking ping-pong.
  Row floor(int k) const { return spin[k].p50_ns <= block[k].p50_ns ? spin[k] : block[k]; }
};

std::vector<size_t> g_sizes;
int g_scale = 1;        // iterations are divided by this (--quick)
long g_chunk_kib = -1;  // --chunk-kib: FabricOptions::chunk_bytes in KiB (0: whole messages); -1: the default

int Iterations(size_t bytes) {
  int it = bytes <= (64u << 10) ? 2000 : bytes <= (1u << 20) ? 200 : bytes <= (16u << 20) ? 20 : 8;
  return std::max(3, it / g_scale);
}
int Warmup(size_t bytes) { return std::max(2, Iterations(bytes) / 10); }

#define FI_CHECK(expr)                                                                 \
  do {                                                                                 \
    int _rc = static_cast<int>(expr);                                                  \
    if (_rc != 0) {                                                                    \
      fprintf(stderr, "%s: %s (%d)\n", #expr, fi_strerror(_rc < 0 ? -_rc : _rc), _rc); \
      _exit(10);                                                                       \
    }                                                                                  \
  } while (0)

// ---- The floor: a minimal libfabric ping-pong -----------------------------------------------------------

struct RawEndpoint {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_cq* cq = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;
  fi_addr_t peer = 0;
  bool block = false;  // wait in fi_cq_sread instead of spinning

  void Open() {
    fi_info* hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = 0;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->av_type = FI_AV_TABLE;
    int rc = fi_getinfo(FI_VERSION(1, 9), "127.0.0.1", nullptr, FI_SOURCE, hints, &info);
    if (rc == -FI_ENODATA) rc = fi_getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &info);
    if (rc == 0 && info->addr_format == FI_ADDR_STR) {
      // shm takes the node as its endpoint's name, the same in both processes (the second fails to bind): let it
      // name its endpoints itself, as dist::Fabric does.
      fi_freeinfo(info);
      info = nullptr;
      rc = fi_getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &info);
    }
    FI_CHECK(rc);
    fi_freeinfo(hints);
    FI_CHECK(fi_fabric(info->fabric_attr, &fabric, nullptr));
    FI_CHECK(fi_domain(fabric, info, &domain, nullptr));
    fi_cq_attr cq_attr = {};
    cq_attr.format = FI_CQ_FORMAT_TAGGED;
    cq_attr.wait_obj = block ? FI_WAIT_UNSPEC : FI_WAIT_NONE;
    FI_CHECK(fi_cq_open(domain, &cq_attr, &cq, nullptr));
    fi_av_attr av_attr = {};
    av_attr.type = FI_AV_TABLE;
    FI_CHECK(fi_av_open(domain, &av_attr, &av, nullptr));
    FI_CHECK(fi_endpoint(domain, info, &ep, nullptr));
    FI_CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    FI_CHECK(fi_ep_bind(ep, &av->fid, 0));
    FI_CHECK(fi_enable(ep));
  }
  // Swaps endpoint names with the other process over `sock`.
  void Connect(int sock) {
    char name[256];
    size_t len = sizeof name;
    FI_CHECK(fi_getname(&ep->fid, name, &len));
    if (write(sock, &len, sizeof len) != sizeof len || write(sock, name, len) != static_cast<ssize_t>(len)) _exit(11);
    size_t peer_len = 0;
    char peer_name[256];
    if (read(sock, &peer_len, sizeof peer_len) != sizeof peer_len || peer_len > sizeof peer_name ||
        read(sock, peer_name, peer_len) != static_cast<ssize_t>(peer_len)) {
      _exit(12);
    }
    if (fi_av_insert(av, peer_name, 1, &peer, 0, nullptr) != 1) _exit(13);
  }
  void WaitOne() {
    fi_cq_tagged_entry e;
    for (;;) {
      ssize_t n = block ? fi_cq_sread(cq, &e, 1, nullptr, 1000) : fi_cq_read(cq, &e, 1);
      if (n == 1) return;
      if (n == -FI_EAVAIL) {
        fi_cq_err_entry err = {};
        fi_cq_readerr(cq, &err, 0);
        fprintf(stderr, "floor: completion error %s\n", fi_strerror(err.err));
        _exit(14);
      }
    }
  }
  void Send(const void* buf, size_t len, fi_context2* ctx) {
    for (;;) {
      ssize_t rc = fi_tsend(ep, buf, len, nullptr, peer, 1, ctx);
      if (rc == 0) break;
      if (rc != -FI_EAGAIN) FI_CHECK(rc);
      fi_cq_read(cq, nullptr, 0);
    }
    WaitOne();
  }
  void PostRecv(void* buf, size_t len, fi_context2* ctx) {
    for (;;) {
      ssize_t rc = fi_trecv(ep, buf, len, nullptr, peer, 1, 0, ctx);
      if (rc == 0) return;
      if (rc != -FI_EAGAIN) FI_CHECK(rc);
      fi_cq_read(cq, nullptr, 0);
    }
  }
  void Close() {
    fi_close(&ep->fid);
    fi_close(&av->fid);
    fi_close(&cq->fid);
    fi_close(&domain->fid);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
  }
};

int FloorProcess(int i, int sock, bool block, Results* out) {
  RawEndpoint e;
  e.block = block;
  e.Open();
  e.Connect(sock);
  if (i == 0) snprintf(out->provider, sizeof out->provider, "%s", e.info->fabric_attr->prov_name);
  const size_t max = g_sizes.back();
  std::vector<char> sbuf(max, static_cast<char>(i + 1)), rbuf(max, 0);
  fi_context2 sctx, rctx;
  for (size_t k = 0; k < g_sizes.size(); ++k) {
    const size_t bytes = g_sizes[k];
    const int warm = Warmup(bytes), iters = Iterations(bytes);
    std::vector<double> half;
    for (int it = 0; it < warm + iters; ++it) {
      e.PostRecv(rbuf.data(), bytes, &rctx);
      const auto t0 = Clock::now();
      if (i == 0) {
        e.Send(sbuf.data(), bytes, &sctx);
        e.WaitOne();
      } else {
        e.WaitOne();
        e.Send(sbuf.data(), bytes, &sctx);
      }
      if (it >= warm) half.push_back(Ns(t0, Clock::now()) / 2);
    }
    if (i == 0) {
      const Percentiles p = Summarize(half);
      (block ? out->block : out->spin)[k] = {p.p50, p.p99};
    }
  }
  // A last exchange so neither closes while the other still waits for a completion.
  char byte = 0;
  if (write(sock, &byte, 1) != 1 || read(sock, &byte, 1) != 1) return 15;
  e.Close();
  return 0;
}

// ---- dist::Fabric ---------------------------------------------------------------------------------------

int FabricProcess(int i, const std::string& dir, Results* out) {
  using neuronmem::dist::Fabric;
  std::unique_ptr<neuronmem::dist::KvStore> store;
  std::unique_ptr<Fabric> fabric;
  auto check = [](neuronmem::Status s, const char* what) {
    if (s) {
      fprintf(stderr, "%s: %s\n", what, s->message.c_str());
      _exit(20);
    }
  };
  check(neuronmem::dist::NewDirectoryStore(dir, &store), "store");
  neuronmem::dist::FabricOptions o;
  o.process_index = static_cast<uint32_t>(i);
  o.num_processes = 2;
  o.store = store.get();
  if (g_chunk_kib >= 0) o.chunk_bytes = static_cast<size_t>(g_chunk_kib) << 10;
  check(Fabric::Create(o, &fabric), "fabric");
  const uint32_t peer = 1 - i;
  const size_t max = g_sizes.back();
  std::vector<char> sbuf(max, static_cast<char>(i + 1)), rbuf(max, 0);
  // SendOwned's payload: the Fabric holds a reference until each message is delivered (it is never changed).
  const auto owned_buf = std::make_shared<const std::vector<char>>(max, static_cast<char>(i + 1));
  for (size_t k = 0; k < g_sizes.size(); ++k) {
    const size_t bytes = g_sizes[k];
    const int warm = Warmup(bytes), iters = Iterations(bytes);
    std::vector<double> half, owned, reduce;
    for (int it = 0; it < warm + iters; ++it) {
      const auto t0 = Clock::now();
      if (i == 0) {
        check(fabric->Send(peer, k, sbuf.data(), bytes), "send");
        check(fabric->Recv(peer, k, rbuf.data(), bytes), "recv");
      } else {
        check(fabric->Recv(peer, k, rbuf.data(), bytes), "recv");
        check(fabric->Send(peer, k, sbuf.data(), bytes), "send");
      }
      if (it >= warm) half.push_back(Ns(t0, Clock::now()) / 2);
    }
    if (rbuf[bytes - 1] != static_cast<char>(peer + 1)) {
      fprintf(stderr, "fabric: wrong bytes received\n");
      return 21;
    }
    std::fill(rbuf.begin(), rbuf.begin() + static_cast<std::ptrdiff_t>(bytes), 0);
    for (int it = 0; it < warm + iters; ++it) {
      const auto t0 = Clock::now();
      if (i == 0) {
        check(fabric->SendOwned(peer, 1000 + k, owned_buf->data(), bytes, owned_buf), "send_owned");
        check(fabric->Recv(peer, 1000 + k, rbuf.data(), bytes), "recv");
      } else {
        check(fabric->Recv(peer, 1000 + k, rbuf.data(), bytes), "recv");
        check(fabric->SendOwned(peer, 1000 + k, owned_buf->data(), bytes, owned_buf), "send_owned");
      }
      if (it >= warm) owned.push_back(Ns(t0, Clock::now()) / 2);
    }
    if (rbuf[bytes - 1] != static_cast<char>(peer + 1)) {
      fprintf(stderr, "fabric: wrong bytes received (owned)\n");
      return 22;
    }
    for (int it = 0; it < warm + iters; ++it) {
      const auto t0 = Clock::now();
      check(fabric->AllReduce(neuronmem::dist::ReduceKind::kSum, neuronmem::dist::ReduceType::kF32, rbuf.data(),
                              bytes / sizeof(float)),
            "all_reduce");
      if (it >= warm) reduce.push_back(Ns(t0, Clock::now()));
    }
    if (i == 0) {
      Percentiles p = Summarize(half);
      out->fabric[k] = {p.p50, p.p99};
      p = Summarize(owned);
      out->owned[k] = {p.p50, p.p99};
      p = Summarize(reduce);
      out->all_reduce[k] = {p.p50, p.p99};
    }
  }
  return 0;
}

// ---- A launch across the 2 processes, through the C API ------------------------------------------------

Row InProcess(neuronmem_client_t* client, const std::string& text, size_t bytes, uint32_t devices);

int LaunchProcess(int i, const std::string& dir, Results* out) {
  neuronmem_client_options_t o{};
  o.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
  o.num_cores = 1;
  o.device_bytes_per_core = 3 * (g_sizes.back() + (16u << 20));
  o.pinned_host_bytes = 32u << 20;
  o.mlock_mode = NEURONMEM_MLOCK_DISABLED;
  o.process_index = static_cast<uint32_t>(i);
  o.num_processes = 2;
  o.kv_get = neuronmem_directory_store_get;
  o.kv_put = neuronmem_directory_store_put;
  o.kv_user_data = const_cast<char*>(dir.c_str());
  neuronmem_client_t* client = nullptr;
  neuronmem::bench::Check(neuronmem_client_create(&o, &client));
  for (size_t k = 0; k < g_sizes.size(); ++k) {
    const Row row = InProcess(client, neuronmem::bench::PermuteText(g_sizes[k] / sizeof(float)), g_sizes[k], 1);
    if (i == 0) out->launch[k] = row;
  }
  neuronmem_client_destroy(client);
  return 0;
}

// Runs body(i) in 2 forked processes; false if either failed.
bool RunTwo(const std::function<int(int)>& body) {
  fflush(stdout);
  fflush(stderr);
  pid_t pids[2];
  for (int i = 0; i < 2; ++i) {
    pids[i] = fork();
    if (pids[i] == 0) _exit(body(i));
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "a benchmark process failed (status %d)\n", st);
      ok = false;
    }
  }
  return ok;
}

// ---- In-process: a 2-core launch through the C API ------------------------------------------------------

using neuronmem::bench::Check;
using neuronmem::bench::PermuteText;
using neuronmem::bench::SendRecvText;

// Times launches of `text` (2 replicas) on the client's first `devices` devices (2: both cores of one client; 1: this
// process's device of a job of 2 processes), each given a tensor of `bytes` bytes.
Row InProcess(neuronmem_client_t* client, const std::string& text, size_t bytes, uint32_t devices) {
  neuronmem_compile_options_t co{};
  co.struct_size = sizeof co;
  co.filename = "bench.mlir";
  co.num_replicas = 2;
  neuronmem_executable_t* exe = nullptr;
  Check(neuronmem_executable_compile_text(client, text.data(), text.size(), &co, &exe));
  neuronmem_device_t* const* all = nullptr;
  size_t count = 0;
  Check(neuronmem_client_devices(client, &all, &count));
  if (count < devices) return {0, 0};
  std::vector<neuronmem_device_t*> device(all, all + devices);
  std::vector<neuronmem_buffer_t*> args(devices);
  const std::vector<float> host(bytes / sizeof(float), 1.0f);
  for (uint32_t d = 0; d < devices; ++d) {
    neuronmem_memory_t* mem = nullptr;
    Check(neuronmem_device_memory_of_kind(device[d], NEURONMEM_MEMORY_KIND_DEVICE, &mem));
    const int64_t dims[1] = {static_cast<int64_t>(host.size())};
    neuronmem_buffer_from_host_args_t a{};
    a.struct_size = sizeof a;
    a.data = host.data();
    a.element_type = NEURONMEM_ELEMENT_TYPE_F32;
    a.dims = dims;
    a.num_dims = 1;
    a.memory = mem;
    Check(neuronmem_buffer_from_host(client, &a, &args[d], nullptr, nullptr));
  }
  std::vector<double> samples;
  const int warm = Warmup(bytes), iters = Iterations(bytes);
  for (int it = 0; it < warm + iters; ++it) {
    neuronmem_buffer_t* results[2] = {};
    neuronmem_event_t* done[2] = {};
    neuronmem_execute_devices_args_t a{};
    a.struct_size = NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE;
    a.executable = exe;
    a.devices = device.data();
    a.num_devices = devices;
    a.arguments = args.data();
    a.num_arguments = 1;
    const auto t0 = Clock::now();
    Check(neuronmem_executable_execute_devices(&a, results, done, nullptr));
    for (uint32_t d = 0; d < devices; ++d) Check(neuronmem_event_wait(done[d], -1));
    if (it >= warm) samples.push_back(Ns(t0, Clock::now()));
    for (uint32_t d = 0; d < devices; ++d) {
      neuronmem_event_destroy(done[d]);
      neuronmem_buffer_destroy(results[d]);
    }
  }
  for (neuronmem_buffer_t* b : args) neuronmem_buffer_destroy(b);
  neuronmem_executable_destroy(exe);
  const Percentiles p = Summarize(samples);
  return {p.p50, p.p99};
}

std::string Size(size_t b) {
  if (b >= (1u << 20)) return std::to_string(b >> 20) + " MiB";
  if (b >= 1024) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

std::string Time(double ns) {
  char s[32];
  if (ns >= 1e6) {
    snprintf(s, sizeof s, "%.2f ms", ns / 1e6);
  } else if (ns >= 1e3) {
    snprintf(s, sizeof s, "%.1f us", ns / 1e3);
  } else {
    snprintf(s, sizeof s, "%.0f ns", ns);
  }
  return s;
}

double GBps(size_t bytes, double ns) { return ns > 0 ? bytes / ns : 0; }

}  // namespace

int main(int argc, char** argv) {
  size_t max_mib = 64;
  bool in_process = true, launch_only = false;
  for (int a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "--quick") == 0) {
      g_scale = 4;
    } else if (strcmp(argv[a], "--max-mib") == 0 && a + 1 < argc) {
      max_mib = strtoul(argv[++a], nullptr, 10);
    } else if (strcmp(argv[a], "--chunk-kib") == 0 && a + 1 < argc) {
      g_chunk_kib = strtol(argv[++a], nullptr, 10);
    } else if (strcmp(argv[a], "--launch-only") == 0) {
      launch_only = true;
      in_process = false;
    } else if (strcmp(argv[a], "--no-inprocess") == 0) {
      in_process = false;
    } else {
      fprintf(stderr, "usage: %s [--quick] [--max-mib N] [--chunk-kib N] [--no-inprocess] [--launch-only]\n", argv[0]);
      return 2;
    }
  }
  for (size_t b = 256; b <= (max_mib << 20) && g_sizes.size() < kMaxSizes; b *= (b < (1u << 20) ? 16 : 4)) {
    g_sizes.push_back(b);
  }
  auto* r =
      static_cast<Results*>(mmap(nullptr, sizeof(Results), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (r == MAP_FAILED) return 3;
  memset(r, 0, sizeof *r);

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 3;
  if (!launch_only && !RunTwo([&](int i) { return FloorProcess(i, sv[i], /*block=*/false, r); })) return 4;
  if (!launch_only && !RunTwo([&](int i) { return FloorProcess(i, sv[i], /*block=*/true, r); })) return 4;

  std::string tmpl = (getenv("TMPDIR") != nullptr ? std::string(getenv("TMPDIR")) : "/tmp") + "/nm-bench-dist-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return 3;
  const bool fabric_ok = launch_only || RunTwo([&](int i) { return FabricProcess(i, tmpl, r); });
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  if (!fabric_ok) return 5;
  std::string job = tmpl.substr(0, tmpl.size() - 6) + "XXXXXX";
  if (mkdtemp(job.data()) == nullptr) return 3;
  const bool launch_ok = RunTwo([&](int i) { return LaunchProcess(i, job, r); });
  std::filesystem::remove_all(job, ec);
  if (!launch_ok) return 5;

  std::vector<Row> sendrecv(g_sizes.size()), permute(g_sizes.size());
  if (in_process) {
    neuronmem_client_t* client = neuronmem::bench::CreateClient(2, 3 * (g_sizes.back() + (16u << 20)), 64ull << 20);
    for (size_t k = 0; k < g_sizes.size(); ++k) {
      sendrecv[k] = InProcess(client, SendRecvText(g_sizes[k] / sizeof(float)), g_sizes[k], 2);
      permute[k] = InProcess(client, PermuteText(g_sizes[k] / sizeof(float)), g_sizes[k], 2);
    }
    neuronmem_client_destroy(client);
  }

  printf("provider: %s (FI_PROVIDER=%s)\n\n", r->provider, getenv("FI_PROVIDER") ? getenv("FI_PROVIDER") : "unset");
  if (!launch_only) {
    printf("floor ping-pong p50, spinning / blocking in fi_cq_sread (the floor below is the better one)\n");
    for (size_t k = 0; k < g_sizes.size(); ++k) {
      printf("%-8s | %9s / %-9s\n", Size(g_sizes[k]).c_str(), Time(r->spin[k].p50_ns).c_str(),
             Time(r->block[k].p50_ns).c_str());
    }
    const auto ping_pong = [&](const char* title, const Row* rows) {
      printf("\nping-pong, one way (half a round trip), %s, p50 / p99; bandwidth GB/s at p50; ratio = fabric / floor\n",
             title);
      printf("%-8s | %-21s %-7s | %-21s %-7s | %-10s %-10s\n", "size", "floor p50 / p99", "GB/s", "fabric p50 / p99",
             "GB/s", "lat ratio", "bw ratio");
      for (size_t k = 0; k < g_sizes.size(); ++k) {
        const size_t b = g_sizes[k];
        const Row f = r->floor(k), d = rows[k];
        printf("%-8s | %9s / %-9s %7.3f | %9s / %-9s %7.3f | %9.2fx %9.2fx\n", Size(b).c_str(), Time(f.p50_ns).c_str(),
               Time(f.p99_ns).c_str(), GBps(b, f.p50_ns), Time(d.p50_ns).c_str(), Time(d.p99_ns).c_str(),
               GBps(b, d.p50_ns), d.p50_ns / f.p50_ns, GBps(b, d.p50_ns) / GBps(b, f.p50_ns));
      }
    };
    ping_pong("Send (buffered: a staging copy)", r->fabric);
    ping_pong("SendOwned (buffered, from 16 KiB without the copy: what launches use)", r->owned);
    printf(
        "\nall_reduce (f32 sum, ring, 2 processes), time per call; algbw = bytes / time, busbw = algbw * 2(n-1)/n\n");
    printf("%-8s | %-21s | %-8s %-8s | %-14s\n", "size", "p50 / p99", "algbw", "busbw", "busbw / floor bw");
    for (size_t k = 0; k < g_sizes.size(); ++k) {
      const size_t b = g_sizes[k];
      const Row a = r->all_reduce[k];
      const double alg = GBps(b, a.p50_ns), bus = alg * 2 * (2 - 1) / 2;
      printf("%-8s | %9s / %-9s | %8.3f %8.3f | %13.2fx\n", Size(b).c_str(), Time(a.p50_ns).c_str(),
             Time(a.p99_ns).c_str(), alg, bus, bus / GBps(b, r->floor(k).p50_ns));
    }
  }
  printf(
      "\nlaunch across the 2 processes (collective_permute [[0, 1], [1, 0]], a client of 1 core in each), p50 / p99 "
      "per launch; ratio = launch / floor one way\n");
  printf("%-8s | %-21s | %-10s\n", "size", "launch p50 / p99", "ratio");
  for (size_t k = 0; k < g_sizes.size(); ++k) {
    printf("%-8s | %9s / %-9s | ", Size(g_sizes[k]).c_str(), Time(r->launch[k].p50_ns).c_str(),
           Time(r->launch[k].p99_ns).c_str());
    if (launch_only) {
      printf("%10s\n", "-");
    } else {
      printf("%9.2fx\n", r->launch[k].p50_ns / r->floor(k).p50_ns);
    }
  }
  if (in_process) {
    printf("\nin-process transport: a 2-core launch exchanging the tensor both ways, p50 / p99 per launch\n");
    printf("%-8s | %-21s | %-21s | %-18s | %-s\n", "size", "send/recv", "collective_permute", "send/recv / permute",
           "send/recv / fabric one-way");
    for (size_t k = 0; k < g_sizes.size(); ++k) {
      printf("%-8s | %9s / %-9s | %9s / %-9s | %17.2fx | %9.2fx\n", Size(g_sizes[k]).c_str(),
             Time(sendrecv[k].p50_ns).c_str(), Time(sendrecv[k].p99_ns).c_str(), Time(permute[k].p50_ns).c_str(),
             Time(permute[k].p99_ns).c_str(), sendrecv[k].p50_ns / permute[k].p50_ns,
             sendrecv[k].p50_ns / r->fabric[k].p50_ns);
    }
  }
  return 0;
}
