#include "dist/fabric.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <new>
#include <random>
#include <thread>

namespace neuronmem::dist {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kMagic = 0x4349524241464d4eull;  // "NMFABRIC"
constexpr uint64_t kCollectiveBit = 1ull << 47;
constexpr uint64_t kUserTagMask = kCollectiveBit - 1;
constexpr size_t kTokenBytes = 16;

// Every message starts with this header; the receiver checks all of it before delivering the payload.
struct Header {
  uint64_t magic;
  uint8_t token[kTokenBytes];
  uint32_t from, to;
  uint64_t tag;
  uint64_t bytes;
  int32_t failure;  // non-zero: the sender failed the collective with this status code; the payload is its text
  uint32_t chunk;   // which chunk of the message this is (Fabric::Impl::Send); `bytes` is the whole message's
};

std::string Hex(const void* data, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<const unsigned char*>(data)[i];
    s.push_back(kDigits[c >> 4]);
    s.push_back(kDigits[c & 15]);
  }
  return s;
}

bool Unhex(const std::string& s, std::vector<uint8_t>* out) {
  if (s.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    int v = 0;
    for (size_t k = 0; k < 2; ++k) {
      char c = s[i + k];
      int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (d < 0) return false;
      v = v * 16 + d;
    }
    out->push_back(static_cast<uint8_t>(v));
  }
  return true;
}

// "key=value" fields of a space-separated endpoint record.
std::string Field(const std::string& record, const std::string& name) {
  size_t at = 0;
  while (at < record.size()) {
    size_t end = record.find(' ', at);
    if (end == std::string::npos) end = record.size();
    std::string item = record.substr(at, end - at);
    if (item.size() > name.size() && item.compare(0, name.size(), name) == 0 && item[name.size()] == '=') {
      return item.substr(name.size() + 1);
    }
    at = end + 1;
  }
  return "";
}

std::string FiError(int rc) { return std::string(fi_strerror(rc < 0 ? -rc : rc)); }

// Receives of at least this many bytes land in the caller's buffer (a directed receive: only the peer's own
// endpoint can match it); smaller ones land in the op's buffer and are copied out once checked.
constexpr size_t kDirectRecvBytes = 64 * 1024;
// Wait polls the completion queue this long before it sleeps: a large message's protocol steps each waited a sleep
// after 200 us (shm 1 MiB: 1.1-2 ms against the floor's 0.09 in half the runs).
constexpr auto kSpin = std::chrono::milliseconds(2);
// SendOwned posts messages of at least this many bytes from the caller's memory; smaller ones are copied (a copy of
// a few KiB costs less than the gathered send's second iovec entry).
constexpr size_t kInPlaceSendBytes = 16 * 1024;
// Completed ops keep their buffers for the next message, up to this many bytes in all.
constexpr size_t kPoolBytes = 256u << 20;

// One posted send or receive; its fi_context2 is what libfabric hands back in the completion. Ops (and their
// buffers, never zero-filled) are reused.
struct Op {
  fi_context2 ctx;  // first: the completion's op_context points here
  bool is_send = false;
  bool done = false;
  int err = 0;  // positive FI_E* of an error completion
  size_t len = 0;
  uint32_t peer = 0;
  Header header;                // where a direct receive's header lands
  std::unique_ptr<char[]> buf;  // header + payload (uninitialised)
  size_t capacity = 0;          // of buf
  size_t size = 0;              // bytes of buf in use
  fid_mr* mr = nullptr;         // buf's registration, where memory is registered
  // An owned send (SendOwned): buf holds only the header, the payload is the caller's [ext, ext + ext_len) (with
  // its descriptor ext_desc where memory is registered), kept valid by `keep` until the op is released.
  const char* ext = nullptr;
  size_t ext_len = 0;
  void* ext_desc = nullptr;
  std::shared_ptr<const void> keep;
  size_t moving = 0;       // payload bytes of a large transfer this op carries (counted in Impl::moving)
  size_t slot = SIZE_MAX;  // its index in Impl::ops while tracked
  // A send the provider did not accept yet (its peer makes no progress: connecting needs both sides): posted
  // later, in order, by Progress; lost with its peer when still refused after peer_timeout.
  uint64_t ftag = 0;
  Clock::time_point since{};
  Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;
  ~Op() {
    if (mr != nullptr) fi_close(&mr->fid);
  }
  char* data() { return buf.get(); }
  void* desc() const { return mr != nullptr ? fi_mr_desc(mr) : nullptr; }
};

// A region registered once (RegisterMemory).
struct Region {
  char* base;
  size_t bytes;
  fid_mr* mr;
};

// Where Wait is between polls: spinning since `since`, then blocking.
struct Backoff {
  Clock::time_point since{};
  int empty_polls = 0;
  int yield_every = 8;  // while spinning, yield the core every this many empty polls
  int sleeps = 0;       // pauses slept since the last completion
};

template <typename T>
void Reduce(ReduceKind kind, T* acc, const T* in, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    switch (kind) {
      case ReduceKind::kSum: acc[i] = static_cast<T>(acc[i] + in[i]); break;
      case ReduceKind::kProduct: acc[i] = static_cast<T>(acc[i] * in[i]); break;
      case ReduceKind::kMin: acc[i] = std::min(acc[i], in[i]); break;
      case ReduceKind::kMax: acc[i] = std::max(acc[i], in[i]); break;
    }
  }
}

size_t ElementBytes(ReduceType t) {
  switch (t) {
    case ReduceType::kF32:
    case ReduceType::kS32:
    case ReduceType::kU32: return 4;
    default: return 8;
  }
}

void ReduceInto(ReduceKind kind, ReduceType type, void* acc, const void* in, size_t n) {
  switch (type) {
    case ReduceType::kF32: Reduce(kind, static_cast<float*>(acc), static_cast<const float*>(in), n); break;
    case ReduceType::kF64: Reduce(kind, static_cast<double*>(acc), static_cast<const double*>(in), n); break;
    case ReduceType::kS32: Reduce(kind, static_cast<int32_t*>(acc), static_cast<const int32_t*>(in), n); break;
    case ReduceType::kS64: Reduce(kind, static_cast<int64_t*>(acc), static_cast<const int64_t*>(in), n); break;
    case ReduceType::kU32: Reduce(kind, static_cast<uint32_t*>(acc), static_cast<const uint32_t*>(in), n); break;
    case ReduceType::kU64: Reduce(kind, static_cast<uint64_t*>(acc), static_cast<const uint64_t*>(in), n); break;
  }
}

}  // namespace

class Fabric::Impl {
 public:
  explicit Impl(const FabricOptions& o) : opts(o) {}
  ~Impl() { Close(); }

  Status Open();
  Status Bootstrap();
  // Stops the progress thread, waits (at most peer_timeout) for buffered sends to reach live peers, closes.
  void Close();

  // A public call's hold on the Fabric: mu, and a count in `calls` while it is inside (the progress thread leaves the
  // polling to it meanwhile).
  struct Call {
    explicit Call(Impl* f) : fabric(f) {
      fabric->calls.fetch_add(1, std::memory_order_relaxed);
      fabric->calls_entered.fetch_add(1, std::memory_order_relaxed);
      lock = std::unique_lock<std::mutex>(fabric->mu);
    }
    ~Call() {
      lock.unlock();
      fabric->calls.fetch_sub(1, std::memory_order_release);
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    Impl* const fabric;
    std::unique_lock<std::mutex> lock;  // on fabric->mu: passed to the waits that let other calls run
  };

  // The progress thread: while a buffered send of this process is not done (refused by the provider so far, or
  // moving, or waiting for its completion) and the process has made no call since the thread last looked (1 ms
  // before), it polls the queue, sleeping 20 us..1 ms between polls as Wait does; parked (no wake-ups at all) once
  // nothing has been in flight for a while. Without it, a process that sent and then made no call (it computes, or
  // waits outside the library) left its last sends undelivered and its peers took it for lost. Started by Create,
  // stopped by Close.
  void StartProgress();
  void ProgressLoop();
  // Wakes the progress thread if it is parked (with mu held, after a send op was queued).
  void WakeProgress();
  // Whether a send op to a live peer is not done yet (with mu held).
  bool SendsInFlight() const;

  // failure (non-zero): the message says the sender failed the op with this status code, the payload being its
  // text; the Recv that meets it fails with it (a collective's later members fail at once, not after a timeout).
  // keep (non-null): a SendOwned's; the payload is posted from `data`, every op of it holding *keep until done.
  Status Send(uint32_t to, uint64_t tag, const void* data, size_t bytes, std::string_view op, int32_t failure = 0,
              const std::shared_ptr<const void>* keep = nullptr);
  // Posts a send op (fi_tsend of its buffer, or fi_tsendv of its header and the caller's payload).
  ssize_t PostSend(Op* op);
  // Sends `why` in place of the message of `bytes` bytes the receiver waits for (its text cut to fit).
  void SendFailure(uint32_t to, uint64_t tag, const Status& why, size_t bytes, std::string_view op);
  // `lock` (nullable, held on mu): released while the receive waits (Wait). interrupt: Fabric::Recv's.
  // on_chunk (nullable): called with (offset, length) as each chunk of the message is in `data`, in order (AllReduce
  // reduces them while the later chunks move).
  Status Recv(uint32_t from, uint64_t tag, void* data, size_t bytes, std::string_view op,
              std::unique_lock<std::mutex>* lock = nullptr, const std::atomic<int>* interrupt = nullptr,
              uint32_t patience = 1, const std::function<void(size_t, size_t)>& on_chunk = nullptr);
  // Cancels the receives of op[0..n) not yet done (null entries are skipped), waits (at most 2 s) for their
  // completions and releases those that came.
  void Cancel(Op* const* op, size_t n, Backoff* backoff, std::unique_lock<std::mutex>* lock);
  // Receives and discards the next n chunks (at most chunk_bytes each) from `from` with fabric tag ftag: the rest of
  // a message refused at its first chunk. Waits at most 2 s (or the peer timeout) for each.
  void Drain(uint32_t from, uint64_t ftag, size_t n, Backoff* backoff, std::unique_lock<std::mutex>* lock);
  // How many chunks a message of `bytes` bytes travels as (at least 1).
  size_t Chunks(size_t bytes) const {
    return chunk_bytes == 0 || bytes <= chunk_bytes ? 1 : (bytes + chunk_bytes - 1) / chunk_bytes;
  }
  Status CheckPeer(uint32_t peer, std::string_view op) const;
  // Reads every completion available now (after posting the sends waiting for their peer). Returns false if there
  // was none.
  bool Progress();
  // Posts the sends the provider refused so far (EAGAIN), each peer's in order.
  void PostUnposted();
  // Applies completions read from the queue (entries) or its error entry.
  void Complete(const fi_cq_tagged_entry* entries, ssize_t n);
  bool CompleteError();
  // Progress; spins (yielding) kSpin after the last completion, then sleeps a growing pause: no busy core while
  // waiting. With `lock` (held on mu), every yield and pause runs unlocked, so other threads' calls (a launch's cores)
  // go on while this one waits.
  void Wait(Backoff* b, std::unique_lock<std::mutex>* lock = nullptr);
  // An op with a buffer of at least `size` bytes from the pool (or a new one), tracked in `ops`.
  Op* Acquire(size_t size);
  // Untracks a completed op and keeps it (and its buffer) for reuse.
  void Release(Op* op);

  FabricOptions opts;
  std::string provider_name;
  uint8_t token[kTokenBytes] = {};
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_cq* cq = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;
  std::vector<uint8_t> my_addr;
  std::vector<fi_addr_t> peers;   // fi_addr of each process (self's unused)
  std::vector<std::string> lost;  // why each process is lost ("" = alive)
  // Posted and not yet completed (or cancelled and never completed), each at its Op::slot: tracked and untracked
  // without an allocation per message (a map allocated a node for every op).
  std::vector<std::unique_ptr<Op>> ops;
  std::deque<Op*> unposted;               // sends in `ops` the provider has not accepted yet, in send order
  std::vector<std::unique_ptr<Op>> pool;  // completed ops kept for reuse
  size_t pool_bytes = 0;
  bool direct_recv = false;         // the endpoint does directed receives into two-entry iovecs
  Clock::duration pure_spin{};      // how long a wait polls before it starts yielding (Wait)
  size_t moving = 0;                // payload bytes of the large sends and receives in flight (Op::moving)
  size_t chunk_bytes = 0;           // messages above this travel in chunks (0: whole; the provider keeps no order)
  bool registering = false;         // memory is registered and descriptors passed (FI_MR_LOCAL or register_memory)
  std::vector<Region> regions;      // sorted by base
  std::unique_ptr<char[]> scratch;  // AllReduce's receive buffer, kept between calls
  size_t scratch_bytes = 0;
  char* Scratch(size_t bytes) {
    if (bytes > scratch_bytes) {
      scratch.reset(new (std::nothrow) char[bytes]);
      scratch_bytes = scratch ? bytes : 0;
    }
    return scratch.get();
  }
  uint64_t next_mr_key = 1;
  Status last_register_error;  // why Acquire could not register a message buffer
  // Registers [base, base + bytes) for sends and receives.
  Status Register(void* base, size_t bytes, fid_mr** mr);
  // The descriptor of registered memory holding [p, p + bytes); false if none does.
  bool DescriptorOf(const void* p, size_t bytes, void** desc) const;
  FabricStats stats;
  uint64_t collective_seq = 0;
  bool gather_send = false;  // the endpoint sends two-entry iovecs (SendOwned posts without a copy)
  mutable std::mutex mu;
  std::unique_lock<std::mutex> Lock() const { return std::unique_lock<std::mutex>(mu); }

  size_t send_ops = 0;                     // send ops in `ops` (posted or unposted), under mu
  std::atomic<int> calls{0};               // public calls inside the Fabric now (Call)
  std::atomic<uint64_t> calls_entered{0};  // public calls made so far (Call)
  std::thread progress_thread;             // ProgressLoop
  std::mutex park_mu;                      // guards the two flags below; taken after mu, never before it
  std::condition_variable park_cv;
  bool stop_progress = false;       // Close: the progress thread ends
  bool wake_progress = false;       // a send was queued while the thread was parked
  std::atomic<bool> parked{false};  // the progress thread is parked, or about to be
};

Status Fabric::Impl::Open() {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) return ResourceExhausted("libfabric: fi_allocinfo failed");
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED | FI_DIRECTED_RECV;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  // Registration where the provider needs it (efa: FI_MR_LOCAL and the rest); no RMA, so virtual addresses,
  // provider keys and allocated-only registrations cost nothing. Messages use FI_MR_LOCAL's descriptors.
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->domain_attr->av_type = FI_AV_TABLE;
  if (!opts.provider.empty()) hints->fabric_attr->prov_name = strdup(opts.provider.c_str());
  const char* node = opts.node.empty() ? nullptr : opts.node.c_str();
  // A peer's messages in the order sent (FI_ORDER_SAS): a large message's chunks are received in order (Send); a
  // provider without it gets every message whole.
  hints->tx_attr->msg_order = hints->rx_attr->msg_order = FI_ORDER_SAS;
  const auto get_info = [&] {
    int r = fi_getinfo(FI_VERSION(1, 9), node, nullptr, node != nullptr ? FI_SOURCE : 0, hints, &info);
    if (r == -FI_ENODATA && node != nullptr) {
      // Providers without IP addressing (shm) do not match a node: take their own address.
      r = fi_getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &info);
    }
    return r;
  };
  int rc = get_info();
  if (rc == -FI_ENODATA) {
    hints->tx_attr->msg_order = hints->rx_attr->msg_order = 0;
    rc = get_info();
  }
  if (rc == -FI_ENODATA) {
    // A provider without directed receives: every receive lands in a buffer of the op and is copied out.
    hints->caps = FI_TAGGED;
    rc = get_info();
  }
  if (rc == 0 && info != nullptr && node != nullptr && info->addr_format == FI_ADDR_STR) {
    // A provider whose addresses are names (shm) takes the node as its endpoint's name, the same in every process
    // of the host (the second fails to bind, EBUSY): let it name its endpoint itself.
    fi_freeinfo(info);
    info = nullptr;
    rc = fi_getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &info);
  }
  fi_freeinfo(hints);
  if (rc != 0 || info == nullptr) {
    const char* env = getenv("FI_PROVIDER");
    return Unavailable("libfabric offers no reliable-datagram (FI_EP_RDM) tagged provider%s%s%s%s: %s",
                       opts.provider.empty() ? "" : " named ", opts.provider.c_str(),
                       env != nullptr ? " with FI_PROVIDER=" : "", env != nullptr ? env : "", FiError(rc).c_str());
  }
  provider_name = info->fabric_attr->prov_name != nullptr ? info->fabric_attr->prov_name : "?";
  direct_recv = (info->caps & FI_DIRECTED_RECV) != 0 && info->rx_attr->iov_limit >= 2;
  if (provider_name == "shm") pure_spin = std::chrono::microseconds(5);
  gather_send = info->tx_attr->iov_limit >= 2;
  const bool ordered = (info->tx_attr->msg_order & FI_ORDER_SAS) != 0 && (info->rx_attr->msg_order & FI_ORDER_SAS) != 0;
  chunk_bytes = ordered ? opts.chunk_bytes : 0;
  registering =
      opts.register_memory || (info->domain_attr->mr_mode & FI_MR_LOCAL) != 0 || (info->mode & FI_LOCAL_MR) != 0;
  if ((rc = fi_fabric(info->fabric_attr, &fabric, nullptr)) != 0) {
    return Unavailable("libfabric %s: fi_fabric: %s", provider_name.c_str(), FiError(rc).c_str());
  }
  if ((rc = fi_domain(fabric, info, &domain, nullptr)) != 0) {
    return Unavailable("libfabric %s: fi_domain: %s", provider_name.c_str(), FiError(rc).c_str());
  }
  // No wait object: where the queue has one, the provider signals it at every completion (on tcp;ofi_rxm a write to
  // its signalling socket, then an epoll and a read at the next poll: 256 B one way 9.6 -> 8.4 us without it), and
  // shm's fi_cq_sread (libfabric 1.17) never returns once the peer is gone. Wait polls, then sleeps.
  fi_cq_attr cq_attr = {};
  cq_attr.format = FI_CQ_FORMAT_TAGGED;
  cq_attr.wait_obj = FI_WAIT_NONE;
  if ((rc = fi_cq_open(domain, &cq_attr, &cq, nullptr)) != 0) {
    return Unavailable("libfabric %s: fi_cq_open: %s", provider_name.c_str(), FiError(rc).c_str());
  }
  fi_av_attr av_attr = {};
  av_attr.type = FI_AV_TABLE;
  if ((rc = fi_av_open(domain, &av_attr, &av, nullptr)) != 0) {
    return Unavailable("libfabric %s: fi_av_open: %s", provider_name.c_str(), FiError(rc).c_str());
  }
  if ((rc = fi_endpoint(domain, info, &ep, nullptr)) != 0) {
    return Unavailable("libfabric %s: fi_endpoint: %s", provider_name.c_str(), FiError(rc).c_str());
  }
  if (info->addr_format == FI_ADDR_STR) {
    // A provider whose addresses are names (shm) names its endpoint after the process id by default, a file in
    // /dev/shm that a killed process leaves behind: a later process given the same id then fails to bind it
    // (EBUSY). A random name cannot meet a stale one.
    std::random_device rd;
    char name[64];
    snprintf(name, sizeof name, "neuronmem_%d_%08x%08x", static_cast<int>(getpid()), rd(), rd());
    if ((rc = fi_setname(&ep->fid, name, strlen(name) + 1)) != 0) {
      return Unavailable("libfabric %s: naming the endpoint: %s", provider_name.c_str(), FiError(rc).c_str());
    }
  }
  if ((rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) != 0 || (rc = fi_ep_bind(ep, &av->fid, 0)) != 0 ||
      (rc = fi_enable(ep)) != 0) {
    return Unavailable("libfabric %s: binding the endpoint: %s", provider_name.c_str(), FiError(rc).c_str());
  }
  size_t len = 0;
  fi_getname(&ep->fid, nullptr, &len);
  if (len == 0 || len > 4096) return Unavailable("libfabric %s: bad address length %zu", provider_name.c_str(), len);
  my_addr.resize(len);
  if ((rc = fi_getname(&ep->fid, my_addr.data(), &len)) != 0) {
    return Unavailable("libfabric %s: fi_getname: %s", provider_name.c_str(), FiError(rc).c_str());
  }
  my_addr.resize(len);
  return Ok();
}

Status Fabric::Impl::Bootstrap() {
  const uint32_t n = opts.num_processes, me = opts.process_index;
  const std::string& p = opts.key_prefix;
  const auto deadline = Clock::now() + opts.bootstrap_timeout;
  auto remaining = [&] {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  };
  std::random_device rd;
  std::string token_hex;
  if (me == 0) {
    for (size_t i = 0; i < kTokenBytes; i += 4) {
      uint32_t r = rd();
      memcpy(token + i, &r, 4);
    }
    token_hex = Hex(token, kTokenBytes);
    NEURONMEM_RETURN_IF_ERROR(Annotate(opts.store->Put(p + "token", token_hex), "bootstrap: publishing the job token"));
  } else {
    Status s = opts.store->Get(p + "token", remaining(), &token_hex);
    if (s) {
      if (s->code == NEURONMEM_STATUS_DEADLINE_EXCEEDED) {
        return DeadlineExceeded(
            "bootstrap: process 0 did not publish the job token in the store within %lld ms "
            "(this is process %u of %u)",
            static_cast<long long>(opts.bootstrap_timeout.count()), me, n);
      }
      return Annotate(std::move(s), "bootstrap: reading the job token");
    }
    std::vector<uint8_t> t;
    if (!Unhex(token_hex, &t) || t.size() != kTokenBytes) {
      return FailedPrecondition("bootstrap: the store's job token '%.64s' is not %zu hex bytes", token_hex.c_str(),
                                kTokenBytes);
    }
    memcpy(token, t.data(), kTokenBytes);
  }
  const std::string nonce = std::to_string(rd()) + "-" + std::to_string(getpid());
  const std::string mine = "v1 token=" + token_hex + " nonce=" + nonce + " processes=" + std::to_string(n) +
                           " cores=" + std::to_string(opts.local_cores) + " provider=" + provider_name +
                           " chunk=" + std::to_string(chunk_bytes) + " addr=" + Hex(my_addr.data(), my_addr.size());
  NEURONMEM_RETURN_IF_ERROR(
      Annotate(opts.store->Put(p + "ep/" + std::to_string(me), mine), "bootstrap: publishing the endpoint"));

  peers.assign(n, FI_ADDR_NOTAVAIL);
  lost.assign(n, "");
  std::string missing;
  for (uint32_t j = 0; j < n; ++j) {
    if (j == me) continue;
    std::string rec;
    Status s = opts.store->Get(p + "ep/" + std::to_string(j), remaining(), &rec);
    if (s) {
      if (s->code != NEURONMEM_STATUS_DEADLINE_EXCEEDED) {
        return Annotate(std::move(s), "bootstrap: reading process " + std::to_string(j) + "'s endpoint");
      }
      missing += (missing.empty() ? "" : ", ") + std::to_string(j);
      continue;
    }
    if (rec.compare(0, 3, "v1 ") != 0) {
      return FailedPrecondition("bootstrap: process %u's endpoint record in the store is not one of ours: '%.80s'", j,
                                rec.c_str());
    }
    if (Field(rec, "token") != token_hex) {
      return FailedPrecondition(
          "bootstrap: process %u published an endpoint with another job's token (a store "
          "left over from an earlier job? use a fresh store per job)",
          j);
    }
    if (Field(rec, "processes") != std::to_string(n)) {
      return FailedPrecondition("bootstrap: process %u was started for a job of %s processes, this process %u for %u",
                                j, Field(rec, "processes").c_str(), me, n);
    }
    if (Field(rec, "cores") != std::to_string(opts.local_cores)) {
      return FailedPrecondition(
          "bootstrap: process %u has %s cores, this process %u has %u (every process of a job "
          "has the same number)",
          j, Field(rec, "cores").c_str(), me, opts.local_cores);
    }
    if (Field(rec, "provider") != provider_name) {
      return FailedPrecondition("bootstrap: process %u uses libfabric provider '%s', this process '%s'", j,
                                Field(rec, "provider").c_str(), provider_name.c_str());
    }
    if (Field(rec, "chunk") != std::to_string(chunk_bytes)) {
      return FailedPrecondition("bootstrap: process %u sends messages in chunks of %s bytes, this process %u of %zu", j,
                                Field(rec, "chunk").c_str(), me, chunk_bytes);
    }
    std::vector<uint8_t> addr;
    if (!Unhex(Field(rec, "addr"), &addr) || addr.empty()) {
      return FailedPrecondition("bootstrap: process %u's endpoint address is not hex", j);
    }
    int rc = fi_av_insert(av, addr.data(), 1, &peers[j], 0, nullptr);
    if (rc != 1) {
      return FailedPrecondition("bootstrap: process %u's endpoint address is not valid for provider %s: %s", j,
                                provider_name.c_str(), FiError(rc).c_str());
    }
  }
  if (!missing.empty()) {
    return DeadlineExceeded(
        "bootstrap: process(es) %s did not publish an endpoint in the store within %lld ms "
        "(this is process %u of %u)",
        missing.c_str(), static_cast<long long>(opts.bootstrap_timeout.count()), me, n);
  }
  std::string again;
  NEURONMEM_RETURN_IF_ERROR(opts.store->Get(p + "ep/" + std::to_string(me), remaining(), &again));
  if (Field(again, "nonce") != nonce) {
    return FailedPrecondition(
        "bootstrap: two processes claim process index %u (another one replaced this "
        "process's endpoint in the store)",
        me);
  }
  return Ok();
}

void Fabric::Impl::Complete(const fi_cq_tagged_entry* entries, ssize_t n) {
  for (ssize_t i = 0; i < n; ++i) {
    Op* op = reinterpret_cast<Op*>(entries[i].op_context);
    if (op->is_send) {
      Release(op);
    } else {
      op->done = true;
      op->len = entries[i].len;
    }
  }
}

bool Fabric::Impl::CompleteError() {
  fi_cq_err_entry err = {};
  if (fi_cq_readerr(cq, &err, 0) <= 0) return false;
  Op* op = reinterpret_cast<Op*>(err.op_context);
  if (op == nullptr) return true;
  if (op->is_send) {
    if (err.err != FI_ECANCELED && lost[op->peer].empty()) {
      lost[op->peer] = "the provider could not deliver to it (" + FiError(err.err) + ")";
    }
    Release(op);
  } else {
    op->done = true;
    op->err = err.err;
    op->len = err.len;
  }
  return true;
}

void Fabric::Impl::PostUnposted() {
  std::vector<bool> blocked(opts.num_processes);  // a peer whose earlier send is still refused: later ones wait
  for (auto it = unposted.begin(); it != unposted.end();) {
    Op* op = *it;
    if (blocked[op->peer]) {
      ++it;
      continue;
    }
    ssize_t rc = lost[op->peer].empty() ? PostSend(op) : -FI_ECANCELED;
    if (rc == -FI_EAGAIN && Clock::now() - op->since < opts.peer_timeout) {
      blocked[op->peer] = true;
      ++it;
      continue;
    }
    if (rc == -FI_EAGAIN) {
      lost[op->peer] = "its endpoint accepted nothing for " + std::to_string(opts.peer_timeout.count()) + " ms";
    } else if (rc != 0 && lost[op->peer].empty()) {
      lost[op->peer] = "the provider could not send to it (" + FiError(static_cast<int>(rc)) + ")";
    }
    it = unposted.erase(it);
    if (rc != 0) Release(op);  // dropped with its lost peer
  }
}

bool Fabric::Impl::Progress() {
  if (!unposted.empty()) PostUnposted();
  fi_cq_tagged_entry entries[16];
  bool any = false;
  for (;;) {
    ssize_t n = fi_cq_read(cq, entries, 16);
    if (n > 0) {
      any = true;
      Complete(entries, n);
      continue;
    }
    if (n == -FI_EAVAIL) {
      if (!CompleteError()) return any;
      any = true;
      continue;
    }
    return any;
  }
}

void Fabric::Impl::Wait(Backoff* b, std::unique_lock<std::mutex>* lock) {
  if (Progress()) {
    b->since = Clock::time_point{};
    b->empty_polls = b->sleeps = 0;
    return;
  }
  const auto now = Clock::now();
  if (b->since == Clock::time_point{}) b->since = now;
  ++b->empty_polls;
  // While large transfers of this process are in flight, the provider moves their bytes only as it is polled (manual
  // progress, and no wait object to sleep on): poll on for as long as they could take at 1 GB/s. Sleeping after 2 ms
  // stalled a 16 MiB message between pauses (0.67x the floor's bandwidth, 64 MiB worse).
  if (now - b->since < std::max<Clock::duration>(kSpin, std::chrono::nanoseconds(moving))) {
    // Between polls the peer process (on 2 vCPUs, often the one that must answer) may have the core:
    // spinning without yielding starved it (256 B: 76 us against 16-18 us with a yield every other poll). A yield
    // every 8th poll: 1 MiB one way 246-457 us (median 280) against 347-1810 (median 490) every other poll, for
    // 18.5-19 us against 17 at 256 B (docs/performance.md, "Between processes: the waiting receive").
    // On shm a message is a copy through shared memory, no kernel work: the first microseconds of a wait poll without
    // yielding (256 B one way 0.59 -> 0.40 us against the floor's 0.26-0.35). On tcp the yields are what let the
    // kernel's loopback work and the peer run (pure spinning first: 8.3 -> 9.2-10.2 us).
    if (now - b->since >= pure_spin && b->empty_polls % b->yield_every == 0) {
      if (lock != nullptr) lock->unlock();
      std::this_thread::yield();
      if (lock != nullptr) lock->lock();
    }
    return;
  }
  // The pause grows with the sleeps of this wait, not its polls: counting the polls of the spin before it made the
  // first sleep 1 ms, so on shm (which never blocks) a 1 MiB message took 1.1-1.4 ms against the floor's 0.09.
  const int slept = b->sleeps++;
  if (lock != nullptr) lock->unlock();
  std::this_thread::sleep_for(std::chrono::microseconds(std::min(1000, 20 * (1 + slept / 16))));
  if (lock != nullptr) lock->lock();
}

Op* Fabric::Impl::Acquire(size_t size) {
  // The smallest pooled buffer that fits, else a new one.
  size_t best = pool.size();
  for (size_t i = 0; i < pool.size(); ++i) {
    if (pool[i]->capacity >= size && (best == pool.size() || pool[i]->capacity < pool[best]->capacity)) best = i;
  }
  std::unique_ptr<Op> op;
  if (best < pool.size()) {
    op = std::move(pool[best]);
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(best));
    pool_bytes -= op->capacity;
    fi_context2 clean = {};
    op->ctx = clean;
    op->is_send = op->done = false;
    op->err = 0;
    op->len = 0;
    op->ext = nullptr;
    op->ext_len = 0;
    op->ext_desc = nullptr;
  } else {
    op = std::make_unique<Op>();
    op->capacity = std::max<size_t>(size, 4096);
    op->buf.reset(new char[op->capacity]);
    if (registering) {
      if ((last_register_error = Register(op->data(), op->capacity, &op->mr))) return nullptr;
      stats.registered_bytes += op->capacity;
    }
  }
  op->size = size;
  Op* raw = op.get();
  raw->slot = ops.size();
  ops.push_back(std::move(op));
  return raw;
}

void Fabric::Impl::Release(Op* op) {
  if (op->slot >= ops.size() || ops[op->slot].get() != op) return;  // not tracked
  std::unique_ptr<Op> owned = std::move(ops[op->slot]);
  if (op->slot + 1 < ops.size()) {
    ops[op->slot] = std::move(ops.back());
    ops[op->slot]->slot = op->slot;
  }
  ops.pop_back();
  owned->slot = SIZE_MAX;
  if (owned->is_send) --send_ops;
  owned->keep.reset();
  moving -= owned->moving;
  owned->moving = 0;
  // Keep it unless the pool is full: then drop the smallest of the pool and this one until it fits.
  while (!pool.empty() && pool_bytes + owned->capacity > kPoolBytes) {
    auto smallest = std::min_element(pool.begin(), pool.end(),
                                     [](const auto& a, const auto& b) { return a->capacity < b->capacity; });
    if ((*smallest)->capacity >= owned->capacity) break;  // this one is the smallest: free it
    pool_bytes -= (*smallest)->capacity;
    if ((*smallest)->mr != nullptr) stats.registered_bytes -= (*smallest)->capacity;
    pool.erase(smallest);
  }
  if (pool_bytes + owned->capacity > kPoolBytes) {
    if (owned->mr != nullptr) stats.registered_bytes -= owned->capacity;
    return;
  }
  pool_bytes += owned->capacity;
  pool.push_back(std::move(owned));
}

Status Fabric::Impl::CheckPeer(uint32_t peer, std::string_view op) const {
  if (peer >= opts.num_processes) {
    return InvalidArgument("%.*s: process %u out of range (the job has %u)", static_cast<int>(op.size()), op.data(),
                           peer, opts.num_processes);
  }
  if (!lost[peer].empty()) {
    return Unavailable("%.*s: process %u of the job is lost: %s", static_cast<int>(op.size()), op.data(), peer,
                       lost[peer].c_str());
  }
  return Ok();
}

ssize_t Fabric::Impl::PostSend(Op* op) {
  // A large message goes as two entries, header and payload, even from the op's buffer: one entry of 1 MiB took
  // 262 us one way on tcp;ofi_rxm, two 215 us (the floor's one entry: 186-231 us).
  const bool large = op->size >= sizeof(Header) + kDirectRecvBytes;
  if (op->ext == nullptr && (!large || !gather_send)) {
    return fi_tsend(ep, op->data(), op->size, op->desc(), peers[op->peer], op->ftag, &op->ctx);
  }
  const bool own = op->ext == nullptr;
  iovec iov[2] = {
      {op->data(), sizeof(Header)},
      {own ? op->data() + sizeof(Header) : const_cast<char*>(op->ext), own ? op->size - sizeof(Header) : op->ext_len}};
  void* desc[2] = {op->desc(), own ? op->desc() : op->ext_desc};
  return fi_tsendv(ep, iov, desc, 2, peers[op->peer], op->ftag, &op->ctx);
}

Status Fabric::Impl::Send(uint32_t to, uint64_t tag, const void* data, size_t bytes, std::string_view op_name,
                          int32_t failure, const std::shared_ptr<const void>* keep) {
  NEURONMEM_RETURN_IF_ERROR(CheckPeer(to, op_name));
  const bool external = keep != nullptr;  // the payload is posted from `data`
  // Buffered: the message is copied into buffers of the Fabric's pool (an owned send's payload is held by `keep`
  // instead), so the caller's bytes are free as soon as this returns. A large message goes as chunks of chunk_bytes,
  // each its own tagged message with a header, posted as soon as it is copied: the provider moves chunk k (and the
  // receiver takes it) while chunk k + 1 is copied, where one whole-message copy made the receiver wait for all of it
  // (and above the provider's eager limit, a rendezvous).
  const size_t chunks = Chunks(bytes);
  const char* src = static_cast<const char*>(data);
  const uint64_t ftag = (static_cast<uint64_t>(opts.process_index) << 48) | tag;
  for (size_t k = 0; k < chunks; ++k) {
    const size_t off = k * chunk_bytes, len = chunks == 1 ? bytes : std::min(chunk_bytes, bytes - off);
    // An owned send's op holds only the header; its payload is posted from the caller's memory.
    Op* op = Acquire(sizeof(Header) + (external ? 0 : len));
    if (op == nullptr) {
      Status st = Unavailable("%.*s: a %zu-byte message buffer: %s", static_cast<int>(op_name.size()), op_name.data(),
                              sizeof(Header) + len, last_register_error->message.c_str());
      return st;  // the chunks posted go on; the receiver, missing the rest, fails after its wait
    }
    op->is_send = true;
    ++send_ops;
    op->peer = to;
    Header h = {kMagic, {}, opts.process_index, to, tag, bytes, failure, static_cast<uint32_t>(k)};
    memcpy(h.token, token, kTokenBytes);
    memcpy(op->data(), &h, sizeof h);
    if (external) {
      op->ext = src + off;
      op->ext_len = len;
      DescriptorOf(op->ext, len, &op->ext_desc);  // SendOwned copies instead where it finds none
      op->keep = *keep;
    } else if (len > 0) {
      memcpy(op->data() + sizeof h, src + off, len);
    }
    op->ftag = ftag;
    if (len >= kDirectRecvBytes) moving += (op->moving = len);
    // Buffered even when the provider cannot take it yet (the peer is not progressing, e.g. computing): then it
    // waits in `unposted` behind this peer's earlier sends, and Progress posts it.
    const bool behind = std::any_of(unposted.begin(), unposted.end(), [to](const Op* o) { return o->peer == to; });
    ssize_t rc = behind ? -FI_EAGAIN : PostSend(op);
    if (rc == -FI_EAGAIN) {
      op->since = Clock::now();
      unposted.push_back(op);
    } else if (rc != 0) {
      Status st = Unavailable("%.*s: sending %zu bytes to process %u: %s", static_cast<int>(op_name.size()),
                              op_name.data(), bytes, to, FiError(static_cast<int>(rc)).c_str());
      Release(op);
      return st;  // chunks already posted go on; the receiver, missing the rest, fails after its wait
    }
    // A large message (a rendezvous on tcp;ofi_rxm) moves only as the provider is progressed: start it now. A small
    // one went out in fi_tsend; its completion is read by the next wait (a poll less per message).
    if (len >= kDirectRecvBytes || !unposted.empty()) Progress();
  }
  // The caller may make no further call: the progress thread finishes what is in flight.
  if (send_ops > 0) WakeProgress();
  stats.messages_sent++;
  stats.bytes_sent += bytes;
  return Ok();
}

void Fabric::Impl::SendFailure(uint32_t to, uint64_t tag, const Status& why, size_t bytes, std::string_view op) {
  if (!why || to >= opts.num_processes || !lost[to].empty()) return;
  // At most one chunk: it meets the receive of the message's first chunk.
  const std::string text = why->message.substr(0, chunk_bytes == 0 ? bytes : std::min(bytes, chunk_bytes));
  // Best effort: the receiver fails either way (with this status, or after its own wait).
  Send(to, tag, text.data(), text.size(), op, static_cast<int32_t>(why->code)).IgnoreError();
}

void Fabric::Impl::Drain(uint32_t from, uint64_t ftag, size_t n, Backoff* backoff, std::unique_lock<std::mutex>* lock) {
  for (size_t k = 0; k < n && lost[from].empty(); ++k) {
    Op* op = Acquire(sizeof(Header) + chunk_bytes);
    if (op == nullptr) return;
    op->peer = from;
    ssize_t rc;
    while ((rc = fi_trecv(ep, op->data(), op->size, op->desc(), direct_recv ? peers[from] : FI_ADDR_UNSPEC, ftag, 0,
                          &op->ctx)) == -FI_EAGAIN) {
      Wait(backoff, lock);
    }
    if (rc != 0) {
      Release(op);
      return;
    }
    const auto deadline = Clock::now() + std::min<Clock::duration>(opts.peer_timeout, std::chrono::seconds(2));
    while (!op->done && lost[from].empty() && Clock::now() < deadline) Wait(backoff, lock);
    if (!op->done) {
      Cancel(&op, 1, backoff, lock);
      return;
    }
    Release(op);
  }
}

void Fabric::Impl::Cancel(Op* const* op, size_t n, Backoff* backoff, std::unique_lock<std::mutex>* lock) {
  for (size_t i = 0; i < n; ++i) {
    if (op[i] != nullptr && !op[i]->done) fi_cancel(&ep->fid, &op[i]->ctx);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  const auto pending = [&] { return std::any_of(op, op + n, [](const Op* o) { return o != nullptr && !o->done; }); };
  while (pending() && Clock::now() < deadline) Wait(backoff, lock);
  for (size_t i = 0; i < n; ++i) {
    if (op[i] != nullptr && op[i]->done) Release(op[i]);
  }
}

Status Fabric::Impl::Recv(uint32_t from, uint64_t tag, void* data, size_t bytes, std::string_view op_name,
                          std::unique_lock<std::mutex>* lock, const std::atomic<int>* interrupt, uint32_t patience,
                          const std::function<void(size_t, size_t)>& on_chunk) {
  const auto stopped = [interrupt] { return interrupt ? interrupt->load(std::memory_order_acquire) : 0; };
  NEURONMEM_RETURN_IF_ERROR(CheckPeer(from, op_name));
  const uint64_t ftag = (static_cast<uint64_t>(from) << 48) | tag;
  const auto waits = opts.peer_timeout * std::max<uint32_t>(patience, 1);
  const auto deadline = Clock::now() + waits;
  // A large message lands in place: each chunk's header in its op, its payload in `data`. The receives are directed
  // to the peer's endpoint (from the store), so no other endpoint's message can match them, and every chunk's receive
  // is posted at once (the provider keeps a peer's sends in order): the sender's chunks land as they come. Otherwise
  // each chunk lands in an op's buffer and is copied out once checked, one receive posted at a time (a foreign
  // message may match it and is dropped; the receive is then posted again).
  void* data_desc = nullptr;
  const bool direct =
      direct_recv && bytes >= kDirectRecvBytes && (!registering || DescriptorOf(data, bytes, &data_desc));
  const size_t chunks = Chunks(bytes), window = direct ? chunks : 1;
  const auto chunk_len = [&](size_t k) { return chunks == 1 ? bytes : std::min(chunk_bytes, bytes - k * chunk_bytes); };
  char* dst = static_cast<char*>(data);
  // The receives posted, per chunk (a message of one chunk, the common case, needs no allocation for it).
  Op* one_posted = nullptr;
  std::vector<Op*> many_posted(chunks > 1 ? chunks : 0, nullptr);
  Op** const posted = chunks > 1 ? many_posted.data() : &one_posted;
  size_t next = 0, end = 0;  // chunks [next, end) have receives posted; those before next are in `data`
  uint64_t dropped_here = 0;
  Backoff backoff;
  // A small message is a round trip's answer: on 2 busy vCPUs its sender often shares this core, so yield at every
  // empty poll; a large one comes in protocol steps this process must drive, so poll 8 times between yields.
  backoff.yield_every = direct ? 8 : 1;
  // Fails the receive: the receives still posted are cancelled first.
  const auto fail = [&](Status why) {
    Cancel(posted + next, end - next, &backoff, lock);
    return why;
  };
  while (next < chunks) {
    while (end < std::min(chunks, next + window)) {
      const size_t len = chunk_len(end);
      Op* op = Acquire(direct ? 0 : sizeof(Header) + len);
      if (op == nullptr) {
        return fail(Unavailable("%.*s: a %zu-byte message buffer: %s", static_cast<int>(op_name.size()), op_name.data(),
                                sizeof(Header) + len, last_register_error->message.c_str()));
      }
      op->peer = from;
      for (;;) {
        ssize_t rc;
        if (direct) {
          iovec iov[2] = {{&op->header, sizeof(Header)}, {dst + end * chunk_bytes, len}};
          void* desc[2] = {op->desc(), data_desc};
          rc = fi_trecvv(ep, iov, desc, 2, peers[from], ftag, 0, &op->ctx);
        } else {
          rc = fi_trecv(ep, op->data(), op->size, op->desc(), FI_ADDR_UNSPEC, ftag, 0, &op->ctx);
        }
        if (rc == 0) break;
        if (rc != -FI_EAGAIN) {
          Release(op);
          return fail(Unavailable("%.*s: posting a receive from process %u: %s", static_cast<int>(op_name.size()),
                                  op_name.data(), from, FiError(static_cast<int>(rc)).c_str()));
        }
        Wait(&backoff, lock);
      }
      if (direct && len >= kDirectRecvBytes) moving += (op->moving = len);
      posted[end++] = op;
    }
    Op* op = posted[next];
    while (!op->done && lost[from].empty() && Clock::now() < deadline && !stopped()) Wait(&backoff, lock);
    if (!op->done) {
      // Give the buffers back before failing: cancel, and wait (briefly) for the cancellations' completions. A
      // receive the provider never returns stays in `ops` until the endpoint is closed.
      Cancel(posted + next, end - next, &backoff, lock);
      if (const int code = stopped(); code && lost[from].empty()) {
        return MakeStatus(static_cast<neuronmem_status_code_t>(code),
                          std::string(op_name) + " (tag " + std::to_string(tag & kUserTagMask) +
                              "): stopped while it waited for process " + std::to_string(from));
      }
      if (lost[from].empty()) {
        lost[from] = "no message from it within " + std::to_string(waits.count()) + " ms";
      }
      std::string extra =
          dropped_here > 0 ? " (" + std::to_string(dropped_here) + " message(s) with its tag were dropped)" : "";
      return Unavailable("%.*s (tag %llu) waited for process %u, which is lost: %s%s", static_cast<int>(op_name.size()),
                         op_name.data(), static_cast<unsigned long long>(tag & kUserTagMask), from, lost[from].c_str(),
                         extra.c_str());
    }
    const size_t len = chunk_len(next);
    Header h;
    const bool has_header = op->err == 0 && op->len >= sizeof(Header);
    if (has_header) memcpy(&h, direct ? static_cast<const void*>(&op->header) : op->data(), sizeof h);
    const bool of_job = has_header && h.magic == kMagic && memcmp(h.token, token, kTokenBytes) == 0 && h.from == from &&
                        h.to == opts.process_index && h.tag == tag;
    if (of_job && h.failure != 0 && h.bytes <= len && op->len == sizeof(Header) + h.bytes) {
      // The sender failed the collective before it could send this message: fail with its status, naming it.
      const char* text = direct ? dst + next * chunk_bytes : op->data() + sizeof(Header);
      std::string why(text, static_cast<size_t>(h.bytes));
      Release(op);
      ++next;
      return fail(MakeStatus(static_cast<neuronmem_status_code_t>(h.failure),
                             std::string(op_name) + " (tag " + std::to_string(tag & kUserTagMask) + "): process " +
                                 std::to_string(from) + " failed it before it could pass this process its share: " +
                                 (why.empty() ? std::string("(no message)") : why)));
    }
    if (of_job && h.failure == 0 && h.bytes == bytes && h.chunk == next && op->len == sizeof(Header) + len) {
      if (len > 0 && !direct) memcpy(dst + next * chunk_bytes, op->data() + sizeof(Header), len);
      Release(op);
      if (on_chunk) on_chunk(next * chunk_bytes, len);
      ++next;
      continue;
    }
    // A message of this job from `from` with the right tag but another size than expected: the processes disagree
    // on the program, not a lost or foreign peer. (One longer than the receive is truncated by the provider, which
    // need not deliver its header: it cannot be told from a foreign message and is dropped below.) A direct
    // receive's buffer then holds the other message's bytes.
    if (of_job && h.failure == 0 && (h.bytes != bytes || h.chunk != next)) {
      const uint64_t sent = h.bytes;
      const bool first = h.chunk == 0;
      Release(op);
      ++next;
      Cancel(posted + next, end - next, &backoff, lock);
      next = end;
      // The rest of the sender's message is taken off the fabric too: left there, its chunks would meet later
      // receives of this tag (and on shm, whose sends complete only once received, hold the sender's end).
      if (first) Drain(from, ftag, Chunks(sent) - 1, &backoff, lock);
      return fail(FailedPrecondition(
          "%.*s (tag %llu): process %u sent %llu bytes, this process %u expects %zu (do the "
          "processes run the same program?)",
          static_cast<int>(op_name.size()), op_name.data(), static_cast<unsigned long long>(tag & kUserTagMask), from,
          static_cast<unsigned long long>(h.bytes), opts.process_index, bytes));
    }
    if (op->err != 0 && op->err != FI_ETRUNC) {
      int err = op->err;
      Release(op);
      ++next;
      return fail(Unavailable("%.*s: receiving from process %u: %s", static_cast<int>(op_name.size()), op_name.data(),
                              from, FiError(err).c_str()));
    }
    // Not a message of this job (or not the one expected): drop it, count it, and receive this chunk again (the
    // later chunks' receives, where posted, are cancelled and posted again after it, to keep them in order).
    Release(op);
    posted[next] = nullptr;
    Cancel(posted + next + 1, end - next - 1, &backoff, lock);
    end = next;
    stats.messages_dropped++;
    dropped_here++;
  }
  if (direct) stats.receives_in_place++;
  stats.messages_received++;
  stats.bytes_received += bytes;
  return Ok();
}

bool Fabric::Impl::SendsInFlight() const {
  if (send_ops == 0) return false;
  if (!unposted.empty()) return true;
  return std::any_of(ops.begin(), ops.end(), [this](const auto& op) { return op->is_send && lost[op->peer].empty(); });
}

void Fabric::Impl::WakeProgress() {
  if (!parked.load(std::memory_order_seq_cst)) return;  // awake: it sees the send at its next check
  {
    std::lock_guard<std::mutex> p(park_mu);
    wake_progress = true;
  }
  park_cv.notify_one();
}

void Fabric::Impl::StartProgress() {
  progress_thread = std::thread([this] { ProgressLoop(); });
}

void Fabric::Impl::ProgressLoop() {
  // Checks in a row that found nothing in flight: the thread parks after kQuietChecks of them (about 50 ms at the
  // longest pause), so a stream of messages (where a send is in flight only until the next wait reads its completion)
  // does not park and wake it at every message.
  constexpr int kQuietChecks = 50;
  int quiet = 0;
  int empty = 0;         // polls in a row that completed nothing (the pause grows with them)
  bool moved = false;    // large transfers were in flight at the last poll
  bool polling = false;  // the caller was away at the last look: the thread polls
  uint64_t seen = calls_entered.load(std::memory_order_relaxed);  // calls entered by the last look
  std::unique_lock<std::mutex> p(park_mu);
  while (!stop_progress) {
    if (quiet >= kQuietChecks) {
      // Parked is set before the check under mu, and a send reads it (under mu) after queuing its op: either this
      // check sees the op, or that send wakes the thread.
      parked.store(true, std::memory_order_seq_cst);
      p.unlock();
      bool in_flight;
      {
        std::lock_guard<std::mutex> l(mu);
        in_flight = SendsInFlight();
      }
      p.lock();
      if (!in_flight) park_cv.wait(p, [this] { return stop_progress || wake_progress; });
      wake_progress = false;
      parked.store(false, std::memory_order_relaxed);
      quiet = empty = 0;
      polling = false;
      continue;
    }
    // While the caller polls (a call is inside, or one was made since the last look), the thread only looks again
    // 1 ms later: a first version that polled between a launch's calls took the lock and the vCPUs from them (a
    // launch of 4 KiB between two processes, three runs: 30-86 us without the thread, 62-168 with it). Once the
    // caller is away: large transfers move only as the provider is polled, so poll again soon; else the pause grows
    // as Wait's.
    const int us = !polling ? 1000 : moved ? 20 : std::min(1000, 20 * (1 + empty / 16));
    if (park_cv.wait_for(p, std::chrono::microseconds(us), [this] { return stop_progress; })) break;
    const uint64_t entered = calls_entered.load(std::memory_order_relaxed);
    polling = entered == seen && calls.load(std::memory_order_acquire) == 0;
    seen = entered;
    if (!polling) continue;
    p.unlock();
    ++empty;
    std::unique_lock<std::mutex> l(mu, std::try_to_lock);
    if (l.owns_lock()) {
      if (Progress()) empty = 0;
      moved = moving > 0;
      quiet = SendsInFlight() ? 0 : quiet + 1;
      l.unlock();
    }
    p.lock();
  }
}

void Fabric::Impl::Close() {
  if (progress_thread.joinable()) {
    {
      std::lock_guard<std::mutex> p(park_mu);
      stop_progress = true;
    }
    park_cv.notify_one();
    progress_thread.join();
  }
  if (ep != nullptr) {
    // Let buffered sends reach their (live) receivers.
    const auto deadline = Clock::now() + opts.peer_timeout;
    Backoff backoff;
    for (;;) {
      if (!SendsInFlight() || Clock::now() >= deadline) break;
      Wait(&backoff);
    }
    fi_close(&ep->fid);
    ep = nullptr;
  }
  // Registrations go before the domain closes.
  unposted.clear();
  ops.clear();
  send_ops = 0;
  pool.clear();
  pool_bytes = 0;
  for (const Region& r : regions) fi_close(&r.mr->fid);
  regions.clear();
  if (av != nullptr) fi_close(&av->fid);
  if (cq != nullptr) fi_close(&cq->fid);
  if (domain != nullptr) fi_close(&domain->fid);
  if (fabric != nullptr) fi_close(&fabric->fid);
  av = nullptr, cq = nullptr, domain = nullptr, fabric = nullptr;
  if (info != nullptr) fi_freeinfo(info);
  info = nullptr;
}

Status Fabric::Impl::Register(void* base, size_t bytes, fid_mr** mr) {
  // A key of its own for each registration (providers without FI_MR_PROV_KEY refuse a key twice).
  int rc = fi_mr_reg(domain, base, bytes, FI_SEND | FI_RECV, 0, next_mr_key++, 0, mr, nullptr);
  if (rc != 0) {
    *mr = nullptr;
    return Unavailable("libfabric %s: registering %zu bytes at %p: %s", provider_name.c_str(), bytes, base,
                       FiError(rc).c_str());
  }
  return Ok();
}

bool Fabric::Impl::DescriptorOf(const void* p, size_t bytes, void** desc) const {
  const char* c = static_cast<const char*>(p);
  // The last region starting at or before p.
  auto it =
      std::upper_bound(regions.begin(), regions.end(), c, [](const char* x, const Region& r) { return x < r.base; });
  if (it == regions.begin()) return false;
  --it;
  if (static_cast<size_t>(c - it->base) > it->bytes || bytes > it->bytes - static_cast<size_t>(c - it->base)) {
    return false;
  }
  *desc = fi_mr_desc(it->mr);
  return true;
}

Fabric::Fabric(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Fabric::~Fabric() = default;

Status Fabric::Create(const FabricOptions& options, std::unique_ptr<Fabric>* out) {
  out->reset();
  if (options.store == nullptr) return InvalidArgument("fabric: no key-value store to bootstrap through");
  if (options.num_processes == 0 || options.num_processes > 65535) {
    return InvalidArgument("fabric: num_processes %u is not in 1..65535", options.num_processes);
  }
  if (options.process_index >= options.num_processes) {
    return InvalidArgument("fabric: process_index %u is out of range (num_processes %u)", options.process_index,
                           options.num_processes);
  }
  if (options.peer_timeout.count() <= 0 || options.bootstrap_timeout.count() < 0) {
    return InvalidArgument("fabric: peer_timeout must be positive and bootstrap_timeout not negative");
  }
  if (options.chunk_bytes != 0 && (options.chunk_bytes < 4096 || options.chunk_bytes % 64 != 0)) {
    return InvalidArgument("fabric: chunk_bytes %zu is not a multiple of 64 of at least 4096 (0 = never chunk)",
                           options.chunk_bytes);
  }
  auto impl = std::make_unique<Impl>(options);
  NEURONMEM_RETURN_IF_ERROR(impl->Open());
  NEURONMEM_RETURN_IF_ERROR(impl->Bootstrap());
  impl->StartProgress();
  out->reset(new Fabric(std::move(impl)));
  return Ok();
}

uint32_t Fabric::process_index() const { return impl_->opts.process_index; }
uint32_t Fabric::num_processes() const { return impl_->opts.num_processes; }
const std::string& Fabric::provider() const { return impl_->provider_name; }
FabricStats Fabric::stats() const {
  auto lock = impl_->Lock();
  return impl_->stats;
}

bool Fabric::registers_memory() const { return impl_->registering; }

Status Fabric::RegisterMemory(void* base, size_t bytes) {
  if (base == nullptr || bytes == 0) return InvalidArgument("fabric: registering an empty region");
  auto lock = impl_->Lock();
  if (!impl_->registering) return Ok();
  char* b = static_cast<char*>(base);
  auto& regions = impl_->regions;
  auto it = std::lower_bound(regions.begin(), regions.end(), b, [](const Region& r, char* x) { return r.base < x; });
  const bool overlaps_next = it != regions.end() && static_cast<size_t>(it->base - b) < bytes;
  const bool overlaps_prev =
      it != regions.begin() && static_cast<size_t>(b - std::prev(it)->base) < std::prev(it)->bytes;
  if (overlaps_next || overlaps_prev) {
    return InvalidArgument("fabric: the region of %zu bytes at %p overlaps a registered one", bytes, base);
  }
  fid_mr* mr = nullptr;
  NEURONMEM_RETURN_IF_ERROR(impl_->Register(base, bytes, &mr));
  regions.insert(it, Region{b, bytes, mr});
  impl_->stats.registered_bytes += bytes;
  return Ok();
}

Status Fabric::UnregisterMemory(void* base) {
  auto lock = impl_->Lock();
  auto& regions = impl_->regions;
  auto it = std::find_if(regions.begin(), regions.end(), [&](const Region& r) { return r.base == base; });
  if (it == regions.end()) {
    if (!impl_->registering) return Ok();
    return InvalidArgument("fabric: no region is registered at %p", base);
  }
  fi_close(&it->mr->fid);
  impl_->stats.registered_bytes -= it->bytes;
  regions.erase(it);
  return Ok();
}

namespace {
// A point-to-point call's own checks: a user tag, and a peer other than the caller.
Status CheckPointToPoint(uint64_t tag, uint32_t peer, uint32_t self, std::string_view op) {
  if (tag >= kCollectiveBit) {
    return InvalidArgument("%.*s: tag %llu is reserved", static_cast<int>(op.size()), op.data(),
                           static_cast<unsigned long long>(tag));
  }
  if (peer == self) return InvalidArgument("%.*s: the peer is this process", static_cast<int>(op.size()), op.data());
  return Ok();
}
}  // namespace

Status Fabric::Send(uint32_t to, uint64_t tag, const void* data, size_t bytes, std::string_view op) {
  NEURONMEM_RETURN_IF_ERROR(CheckPointToPoint(tag, to, impl_->opts.process_index, op));
  Impl::Call call(impl_.get());
  return impl_->Send(to, tag, data, bytes, op);
}

Status Fabric::SendOwned(uint32_t to, uint64_t tag, const void* data, size_t bytes, std::shared_ptr<const void> keep,
                         std::string_view op) {
  NEURONMEM_RETURN_IF_ERROR(CheckPointToPoint(tag, to, impl_->opts.process_index, op));
  Impl::Call call(impl_.get());
  Impl& f = *impl_;
  void* desc = nullptr;
  const bool in_place =
      f.gather_send && bytes >= kInPlaceSendBytes && (!f.registering || f.DescriptorOf(data, bytes, &desc));
  // Copied (small, or the provider cannot post it from there): `keep` goes when this returns.
  if (!in_place) return f.Send(to, tag, data, bytes, op);
  NEURONMEM_RETURN_IF_ERROR(f.Send(to, tag, data, bytes, op, 0, &keep));
  f.stats.sends_in_place++;
  return Ok();
}

Status Fabric::Recv(uint32_t from, uint64_t tag, void* data, size_t bytes, std::string_view op,
                    const std::atomic<int>* interrupt, uint32_t patience) {
  NEURONMEM_RETURN_IF_ERROR(CheckPointToPoint(tag, from, impl_->opts.process_index, op));
  Impl::Call call(impl_.get());
  return impl_->Recv(from, tag, data, bytes, op, &call.lock, interrupt, patience);
}

Status Fabric::CollectivePermute(const std::vector<std::pair<uint32_t, uint32_t>>& pairs, const void* in, void* out,
                                 size_t bytes) {
  const uint32_t n = impl_->opts.num_processes, me = impl_->opts.process_index;
  std::vector<bool> is_source(n), is_target(n);
  for (const auto& [s, t] : pairs) {
    if (s >= n || t >= n) {
      return InvalidArgument("collective_permute: pair (%u, %u) names a process outside 0..%u", s, t, n - 1);
    }
    if (is_source[s] || is_target[t]) {
      return InvalidArgument("collective_permute: process %u appears twice as a %s", is_source[s] ? s : t,
                             is_source[s] ? "source" : "target");
    }
    is_source[s] = is_target[t] = true;
  }
  Impl::Call call(impl_.get());
  const uint64_t tag = kCollectiveBit | ((impl_->collective_seq++ & ((1ull << 27) - 1)) << 20);
  std::vector<char> self_copy;
  int64_t from = -1;
  for (const auto& [s, t] : pairs) {
    if (t == me) from = s;
    if (s != me) continue;
    if (t == me) {
      self_copy.assign(static_cast<const char*>(in), static_cast<const char*>(in) + bytes);
    } else {
      NEURONMEM_RETURN_IF_ERROR(impl_->Send(t, tag, in, bytes, "collective_permute"));
    }
  }
  if (from < 0) {
    if (bytes > 0) memset(out, 0, bytes);
  } else if (static_cast<uint32_t>(from) == me) {
    if (bytes > 0) memcpy(out, self_copy.data(), bytes);
  } else {
    NEURONMEM_RETURN_IF_ERROR(impl_->Recv(static_cast<uint32_t>(from), tag, out, bytes, "collective_permute"));
  }
  return Ok();
}

Status Fabric::AllReduce(ReduceKind kind, ReduceType type, void* data, size_t count) {
  const uint32_t n = impl_->opts.num_processes, me = impl_->opts.process_index;
  const size_t es = ElementBytes(type);
  if (count > SIZE_MAX / es) return InvalidArgument("all_reduce: %zu elements overflow", count);
  Impl::Call call(impl_.get());
  const uint64_t base = kCollectiveBit | ((impl_->collective_seq++ & ((1ull << 27) - 1)) << 20);
  if (n == 1) return Ok();
  char* bytes = static_cast<char*>(data);
  auto start = [&](uint32_t c) { return count * c / n; };
  auto chunk_len = [&](uint32_t c) { return start(c + 1) - start(c); };
  const uint32_t right = (me + 1) % n, left = (me + n - 1) % n;
  // The chunk received each step lands in scratch kept between calls (not zero-filled: a fresh vector of half
  // the data per call cost a fill and its page faults; 64 MiB: 32 MiB of them).
  char* tmp = impl_->Scratch((count / n + 1) * es);
  if (tmp == nullptr) return ResourceExhausted("all_reduce: no memory for %zu bytes of scratch", (count / n + 1) * es);
  // 2(n-1) steps: n-1 of reduce-scatter (after them process r holds the whole reduction of chunk (r+1) % n), then
  // n-1 of all-gather passing the reduced chunks around the ring. Step t sends one chunk right and receives one
  // from the left.
  const uint32_t steps = 2 * (n - 1);
  const auto send_chunk = [&](uint32_t t) { return t + 1 < n ? (me + n - t) % n : (me + 2 * n - t) % n; };
  const auto recv_chunk = [&](uint32_t t) { return (me + 2 * n - t - 1) % n; };
  for (uint32_t t = 0; t < steps; ++t) {
    const bool scatter = t + 1 < n;
    const uint32_t sc = send_chunk(t), rc = recv_chunk(t);
    NEURONMEM_RETURN_IF_ERROR(impl_->Send(right, base | t, bytes + start(sc) * es, chunk_len(sc) * es, "all_reduce"));
    // Step t's message comes only after the left neighbour received its own step t - 1, and so on around the ring:
    // it may take t + 1 peer timeouts (a process t steps up the ring waits that long for a lost one) before the left
    // neighbour is taken for lost. Sooner, a neighbour that failed passes its failure on in place of its message.
    // A reduce-scatter step reduces each chunk of its message as it lands, while the later ones move.
    char* acc = bytes + start(rc) * es;
    const auto reduce = [&](size_t off, size_t len) { ReduceInto(kind, type, acc + off, tmp + off, len / es); };
    if (Status st = impl_->Recv(left, base | t, scatter ? tmp : acc, chunk_len(rc) * es, "all_reduce", nullptr, nullptr,
                                t + 1, scatter ? std::function<void(size_t, size_t)>(reduce) : nullptr)) {
      // The right neighbour waits for step t + 1's message from this process: it gets this failure instead.
      if (t + 1 < steps) impl_->SendFailure(right, base | (t + 1), st, chunk_len(send_chunk(t + 1)) * es, "all_reduce");
      return st;
    }
  }
  return Ok();
}

}  // namespace neuronmem::dist
