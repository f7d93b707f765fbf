#include "dist/fabric.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
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

// One posted send or receive; its fi_context2 is what libfabric hands back in the completion.
struct Op {
  fi_context2 ctx;  // first: the completion's op_context points here
  bool is_send = false;
  bool done = false;
  int err = 0;  // positive FI_E* of an error completion
  size_t len = 0;
  uint32_t peer = 0;
  std::vector<char> buf;  // header + payload
  // A send the provider did not accept yet (its peer makes no progress: connecting needs both sides): posted
  // later, in order, by Progress; lost with its peer when still refused after peer_timeout.
  uint64_t ftag = 0;
  Clock::time_point since{};
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
  void Close();

  Status Send(uint32_t to, uint64_t tag, const void* data, size_t bytes, std::string_view op);
  // `lock` (nullable, held on mu): released while the receive waits (Wait). interrupt: Fabric::Recv's.
  Status Recv(uint32_t from, uint64_t tag, void* data, size_t bytes, std::string_view op,
              std::unique_lock<std::mutex>* lock = nullptr, const std::atomic<int>* interrupt = nullptr);
  Status CheckPeer(uint32_t peer, std::string_view op) const;
  // Reads every completion available now (after posting the sends waiting for their peer). Returns false if there
  // was none.
  bool Progress();
  // Posts the sends the provider refused so far (EAGAIN), each peer's in order.
  void PostUnposted();
  // Progress with a growing pause between empty polls (no busy core while waiting). With `lock` (held on mu),
  // the pause runs unlocked, so other threads' calls (a launch's cores) go on while this one waits.
  void Wait(int* idle, std::unique_lock<std::mutex>* lock = nullptr);

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
  std::vector<fi_addr_t> peers;            // fi_addr of each process (self's unused)
  std::vector<std::string> lost;           // why each process is lost ("" = alive)
  std::map<Op*, std::unique_ptr<Op>> ops;  // posted and not yet completed (or cancelled and never completed)
  std::deque<Op*> unposted;                // sends in `ops` the provider has not accepted yet, in send order
  FabricStats stats;
  uint64_t collective_seq = 0;
  mutable std::mutex mu;
};

Status Fabric::Impl::Open() {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) return ResourceExhausted("libfabric: fi_allocinfo failed");
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = 0;  // payloads live in ordinary memory: no provider needing local registration
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->domain_attr->av_type = FI_AV_TABLE;
  if (!opts.provider.empty()) hints->fabric_attr->prov_name = strdup(opts.provider.c_str());
  const char* node = opts.node.empty() ? nullptr : opts.node.c_str();
  int rc = fi_getinfo(FI_VERSION(1, 9), node, nullptr, node != nullptr ? FI_SOURCE : 0, hints, &info);
  if (rc == -FI_ENODATA && node != nullptr) {
    // Providers without IP addressing (shm) do not match a node: take their own address.
    rc = fi_getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &info);
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
  if ((rc = fi_fabric(info->fabric_attr, &fabric, nullptr)) != 0) {
    return Unavailable("libfabric %s: fi_fabric: %s", provider_name.c_str(), FiError(rc).c_str());
  }
  if ((rc = fi_domain(fabric, info, &domain, nullptr)) != 0) {
    return Unavailable("libfabric %s: fi_domain: %s", provider_name.c_str(), FiError(rc).c_str());
  }
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
                           " addr=" + Hex(my_addr.data(), my_addr.size());
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

void Fabric::Impl::PostUnposted() {
  std::vector<bool> blocked(opts.num_processes);  // a peer whose earlier send is still refused: later ones wait
  for (auto it = unposted.begin(); it != unposted.end();) {
    Op* op = *it;
    if (blocked[op->peer]) {
      ++it;
      continue;
    }
    ssize_t rc = lost[op->peer].empty()
                     ? fi_tsend(ep, op->buf.data(), op->buf.size(), nullptr, peers[op->peer], op->ftag, &op->ctx)
                     : -FI_ECANCELED;
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
    if (rc != 0) ops.erase(op);  // dropped with its lost peer
    it = unposted.erase(it);
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
      for (ssize_t i = 0; i < n; ++i) {
        Op* op = reinterpret_cast<Op*>(entries[i].op_context);
        if (op->is_send) {
          ops.erase(op);
        } else {
          op->done = true;
          op->len = entries[i].len;
        }
      }
      continue;
    }
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err = {};
      if (fi_cq_readerr(cq, &err, 0) <= 0) return any;
      any = true;
      Op* op = reinterpret_cast<Op*>(err.op_context);
      if (op == nullptr) continue;
      if (op->is_send) {
        if (err.err != FI_ECANCELED && lost[op->peer].empty()) {
          lost[op->peer] = "the provider could not deliver to it (" + FiError(err.err) + ")";
        }
        ops.erase(op);
      } else {
        op->done = true;
        op->err = err.err;
        op->len = err.len;
      }
      continue;
    }
    return any;
  }
}

void Fabric::Impl::Wait(int* idle, std::unique_lock<std::mutex>* lock) {
  if (Progress()) {
    *idle = 0;
    return;
  }
  ++*idle;
  if (lock != nullptr) lock->unlock();
  if (*idle < 64) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(std::min(1000, 20 * (*idle - 63))));
  }
  if (lock != nullptr) lock->lock();
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

Status Fabric::Impl::Send(uint32_t to, uint64_t tag, const void* data, size_t bytes, std::string_view op_name) {
  NEURONMEM_RETURN_IF_ERROR(CheckPeer(to, op_name));
  auto op = std::make_unique<Op>();
  op->is_send = true;
  op->peer = to;
  op->buf.resize(sizeof(Header) + bytes);
  Header h = {kMagic, {}, opts.process_index, to, tag, bytes};
  memcpy(h.token, token, kTokenBytes);
  memcpy(op->buf.data(), &h, sizeof h);
  if (bytes > 0) memcpy(op->buf.data() + sizeof h, data, bytes);
  Op* raw = op.get();
  raw->ftag = (static_cast<uint64_t>(opts.process_index) << 48) | tag;
  raw->since = Clock::now();
  ops.emplace(raw, std::move(op));
  // Buffered even when the provider cannot take it yet (the peer is not progressing, e.g. computing): then it
  // waits in `unposted` behind this peer's earlier sends, and Progress posts it.
  const bool behind = std::any_of(unposted.begin(), unposted.end(), [to](const Op* o) { return o->peer == to; });
  ssize_t rc =
      behind ? -FI_EAGAIN : fi_tsend(ep, raw->buf.data(), raw->buf.size(), nullptr, peers[to], raw->ftag, &raw->ctx);
  if (rc == -FI_EAGAIN) {
    unposted.push_back(raw);
  } else if (rc != 0) {
    ops.erase(raw);
    return Unavailable("%.*s: sending %zu bytes to process %u: %s", static_cast<int>(op_name.size()), op_name.data(),
                       bytes, to, FiError(static_cast<int>(rc)).c_str());
  }
  stats.messages_sent++;
  stats.bytes_sent += bytes;
  Progress();
  return Ok();
}

Status Fabric::Impl::Recv(uint32_t from, uint64_t tag, void* data, size_t bytes, std::string_view op_name,
                          std::unique_lock<std::mutex>* lock, const std::atomic<int>* interrupt) {
  const auto stopped = [interrupt] { return interrupt ? interrupt->load(std::memory_order_acquire) : 0; };
  NEURONMEM_RETURN_IF_ERROR(CheckPeer(from, op_name));
  const uint64_t ftag = (static_cast<uint64_t>(from) << 48) | tag;
  const auto deadline = Clock::now() + opts.peer_timeout;
  uint64_t dropped_here = 0;
  for (;;) {
    auto owned = std::make_unique<Op>();
    Op* op = owned.get();
    op->peer = from;
    op->buf.resize(sizeof(Header) + bytes);
    ops.emplace(op, std::move(owned));
    int idle = 0;
    for (;;) {
      ssize_t rc = fi_trecv(ep, op->buf.data(), op->buf.size(), nullptr, FI_ADDR_UNSPEC, ftag, 0, &op->ctx);
      if (rc == 0) break;
      if (rc != -FI_EAGAIN) {
        ops.erase(op);
        return Unavailable("%.*s: posting a receive from process %u: %s", static_cast<int>(op_name.size()),
                           op_name.data(), from, FiError(static_cast<int>(rc)).c_str());
      }
      Wait(&idle, lock);
    }
    while (!op->done && lost[from].empty() && Clock::now() < deadline && !stopped()) Wait(&idle, lock);
    if (!op->done) {
      // Give the buffer back before failing: cancel, and wait (briefly) for the cancellation's completion. A
      // receive the provider never returns stays in `ops` until the endpoint is closed.
      fi_cancel(&ep->fid, &op->ctx);
      const auto cancel_deadline = Clock::now() + std::chrono::seconds(2);
      while (!op->done && Clock::now() < cancel_deadline) Wait(&idle, lock);
      if (op->done) ops.erase(op);
      if (const int code = stopped(); code && lost[from].empty()) {
        return MakeStatus(static_cast<neuronmem_status_code_t>(code),
                          std::string(op_name) + " (tag " + std::to_string(tag & kUserTagMask) +
                              "): stopped while it waited for process " + std::to_string(from));
      }
      if (lost[from].empty()) {
        lost[from] = "no message from it within " + std::to_string(opts.peer_timeout.count()) + " ms";
      }
      std::string extra =
          dropped_here > 0 ? " (" + std::to_string(dropped_here) + " message(s) with its tag were dropped)" : "";
      return Unavailable("%.*s (tag %llu) waited for process %u, which is lost: %s%s", static_cast<int>(op_name.size()),
                         op_name.data(), static_cast<unsigned long long>(tag & kUserTagMask), from, lost[from].c_str(),
                         extra.c_str());
    }
    Header h;
    const bool ok = op->err == 0 && op->len == op->buf.size() && (memcpy(&h, op->buf.data(), sizeof h), true) &&
                    h.magic == kMagic && memcmp(h.token, token, kTokenBytes) == 0 && h.from == from &&
                    h.to == opts.process_index && h.tag == tag && h.bytes == bytes;
    if (ok) {
      if (bytes > 0) memcpy(data, op->buf.data() + sizeof(Header), bytes);
      ops.erase(op);
      stats.messages_received++;
      stats.bytes_received += bytes;
      return Ok();
    }
    // A message of this job from `from` with the right tag but fewer bytes than expected: the processes
    // disagree on the program, not a lost or foreign peer. (A longer one is truncated by the provider, which
    // need not deliver its header: it cannot be told from a foreign message and is dropped below.)
    if (op->err == 0 && op->len >= sizeof(Header) && (memcpy(&h, op->buf.data(), sizeof h), true) &&
        h.magic == kMagic && memcmp(h.token, token, kTokenBytes) == 0 && h.from == from && h.to == opts.process_index &&
        h.tag == tag && h.bytes != bytes) {
      ops.erase(op);
      return FailedPrecondition(
          "%.*s (tag %llu): process %u sent %llu bytes, this process %u expects %zu (do the "
          "processes run the same program?)",
          static_cast<int>(op_name.size()), op_name.data(), static_cast<unsigned long long>(tag & kUserTagMask), from,
          static_cast<unsigned long long>(h.bytes), opts.process_index, bytes);
    }
    if (op->err != 0 && op->err != FI_ETRUNC) {
      int err = op->err;
      ops.erase(op);
      return Unavailable("%.*s: receiving from process %u: %s", static_cast<int>(op_name.size()), op_name.data(), from,
                         FiError(err).c_str());
    }
    // Not a message of this job (or not the one expected): drop it, count it, and wait again.
    ops.erase(op);
    stats.messages_dropped++;
    dropped_here++;
  }
}

void Fabric::Impl::Close() {
  if (ep != nullptr) {
    // Let buffered sends reach their (live) receivers.
    const auto deadline = Clock::now() + opts.peer_timeout;
    int idle = 0;
    for (;;) {
      bool pending = false;
      for (const auto& [raw, op] : ops) {
        if (op->is_send && lost[op->peer].empty()) pending = true;
      }
      if (!pending || Clock::now() >= deadline) break;
      Wait(&idle);
    }
    fi_close(&ep->fid);
    ep = nullptr;
  }
  if (av != nullptr) fi_close(&av->fid);
  if (cq != nullptr) fi_close(&cq->fid);
  if (domain != nullptr) fi_close(&domain->fid);
  if (fabric != nullptr) fi_close(&fabric->fid);
  av = nullptr, cq = nullptr, domain = nullptr, fabric = nullptr;
  if (info != nullptr) fi_freeinfo(info);
  info = nullptr;
  unposted.clear();
  ops.clear();
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
  auto impl = std::make_unique<Impl>(options);
  NEURONMEM_RETURN_IF_ERROR(impl->Open());
  NEURONMEM_RETURN_IF_ERROR(impl->Bootstrap());
  out->reset(new Fabric(std::move(impl)));
  return Ok();
}

uint32_t Fabric::process_index() const { return impl_->opts.process_index; }
uint32_t Fabric::num_processes() const { return impl_->opts.num_processes; }
const std::string& Fabric::provider() const { return impl_->provider_name; }
FabricStats Fabric::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
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
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Send(to, tag, data, bytes, op);
}

Status Fabric::Recv(uint32_t from, uint64_t tag, void* data, size_t bytes, std::string_view op,
                    const std::atomic<int>* interrupt) {
  NEURONMEM_RETURN_IF_ERROR(CheckPointToPoint(tag, from, impl_->opts.process_index, op));
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->Recv(from, tag, data, bytes, op, &lock, interrupt);
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
  std::lock_guard<std::mutex> lock(impl_->mu);
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
  std::lock_guard<std::mutex> lock(impl_->mu);
  const uint64_t base = kCollectiveBit | ((impl_->collective_seq++ & ((1ull << 27) - 1)) << 20);
  if (n == 1) return Ok();
  char* bytes = static_cast<char*>(data);
  auto start = [&](uint32_t c) { return count * c / n; };
  auto chunk_len = [&](uint32_t c) { return start(c + 1) - start(c); };
  const uint32_t right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<char> tmp((count / n + 1) * es);
  // Reduce-scatter: after n-1 steps process r holds the whole reduction of chunk (r+1) % n.
  for (uint32_t s = 0; s + 1 < n; ++s) {
    const uint32_t send_c = (me + n - s) % n, recv_c = (me + 2 * n - s - 1) % n;
    NEURONMEM_RETURN_IF_ERROR(
        impl_->Send(right, base | s, bytes + start(send_c) * es, chunk_len(send_c) * es, "all_reduce"));
    NEURONMEM_RETURN_IF_ERROR(impl_->Recv(left, base | s, tmp.data(), chunk_len(recv_c) * es, "all_reduce"));
    ReduceInto(kind, type, bytes + start(recv_c) * es, tmp.data(), chunk_len(recv_c));
  }
  // All-gather the reduced chunks around the ring.
  for (uint32_t s = 0; s + 1 < n; ++s) {
    const uint32_t send_c = (me + 1 + n - s) % n, recv_c = (me + n - s) % n;
    const uint64_t tag = base | (n - 1 + s);
    NEURONMEM_RETURN_IF_ERROR(
        impl_->Send(right, tag, bytes + start(send_c) * es, chunk_len(send_c) * es, "all_reduce"));
    NEURONMEM_RETURN_IF_ERROR(impl_->Recv(left, tag, bytes + start(recv_c) * es, chunk_len(recv_c) * es, "all_reduce"));
  }
  return Ok();
}

}  // namespace neuronmem::dist
