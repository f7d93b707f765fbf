#include "exec/cross_process.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace neuronmem::exec {

namespace {

constexpr uint64_t kMagic = 0x48434e55414c4d4eull;  // "NMLAUNCH"
// Payload bytes carried by the first message (with the descriptor); the rest follows in a second one. Small
// values take one message, and the first message's size never depends on the shapes, so a receive whose
// shapes differ from the sender's learns it from the descriptor instead of missing the message.
constexpr size_t kInline = 4000;

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0x100000001b3ull;
}

uint64_t ShapeHash(const interp::TensorView* v, size_t n) {
  uint64_t h = Mix(0xcbf29ce484222325ull, n);
  for (size_t i = 0; i < n; ++i) {
    h = Mix(h, static_cast<uint64_t>(v[i].type));
    h = Mix(h, v[i].rank);
    for (size_t d = 0; d < v[i].rank; ++d) h = Mix(h, static_cast<uint64_t>(v[i].dims[d]));
  }
  return h;
}

size_t TotalBytes(const interp::TensorView* v, size_t n) {
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += v[i].Bytes();
  return total;
}

constexpr size_t kOpName = 40;  // Descriptor::op

std::string OpName(std::string_view op) { return std::string(op.substr(0, kOpName - 1)); }

}  // namespace

// What every message starts with.
struct CrossProcessLaunch::Descriptor {
  uint64_t magic;
  uint64_t sequence;  // the client's launch across processes, and the message's number in it (the whole of
  uint64_t number;    // what the fabric tag carries only the low bits of)
  uint64_t launch_id;
  uint64_t fingerprint;
  int64_t channel;
  uint64_t shape_hash;  // the count, element types and dims of the values
  uint64_t bytes;       // payload bytes
  uint32_t from, to;    // global device ids
  uint32_t n;
  int32_t failure;   // non-zero: the sender failed the op with this status code; the payload is its message
  char op[kOpName];  // the op's name, NUL-terminated (truncated)
};

char* CrossProcessLaunch::Message::payload() const { return data.get() + sizeof(Descriptor); }

std::unique_ptr<CrossProcessLaunch> Job::NewLaunch(uint64_t fingerprint, uint64_t launch_id) {
  return std::make_unique<CrossProcessLaunch>(*this, fingerprint, launch_id);
}

uint64_t CrossProcessLaunch::Tag(uint32_t from, uint32_t to, uint64_t k, int part) const {
  // 13 bits of launch sequence, 8 + 8 of local core ids (kMaxCores is 64), 17 of message count, 1 of part: 47 bits,
  // the fabric's user tags. The counts wrap: only messages that far apart could meet, and never within a launch's
  // window of unreceived messages between one pair.
  const uint64_t c = job_.cores();
  return ((sequence_ & 0x1fff) << 34) | ((from % c & 0xff) << 26) | ((to % c & 0xff) << 18) | ((k & 0x1ffff) << 1) |
         static_cast<uint64_t>(part);
}

uint64_t CrossProcessLaunch::Next(std::map<std::pair<uint32_t, uint32_t>, uint64_t>& counts, uint32_t from,
                                  uint32_t to) {
  std::lock_guard<std::mutex> lock(mu_);
  return counts[{from, to}]++;
}

CrossProcessLaunch::Message CrossProcessLaunch::NewMessage(size_t bytes) const {
  Message m;
  m.bytes = bytes;
  // Not zero-filled (a large message is written once, by the caller); the first message's bytes past the payload are.
  m.data = job_.buffers().Take(sizeof(Descriptor) + std::max(bytes, kInline));
  if (m.data && bytes < kInline) std::memset(m.payload() + bytes, 0, kInline - bytes);
  return m;
}

Status CrossProcessLaunch::Post(const interp::OpSite& site, uint32_t from, uint32_t to, Descriptor& d, Message m) {
  d.magic = kMagic;
  d.launch_id = launch_id_;
  d.fingerprint = fingerprint_;
  d.channel = site.channel;
  d.from = from;
  d.to = to;
  const std::string op = OpName(site.op);
  std::memcpy(d.op, op.c_str(), op.size() + 1);
  const uint32_t peer = to / job_.cores();
  const uint64_t k = Next(sent_, from, to);
  d.sequence = sequence_;
  d.number = k;
  std::memcpy(m.data.get(), &d, sizeof d);
  NEURONMEM_RETURN_IF_ERROR(job_.fabric().Send(peer, Tag(from, to, k, 0), m.data.get(), sizeof d + kInline, site.op));
  if (m.bytes <= kInline) return Ok();
  // The rest is sent from the message itself: the fabric holds it until the provider is done (buffered, no second
  // copy), so the launch goes on and may end before the receiver takes it.
  const char* rest = m.payload() + kInline;
  return job_.fabric().SendOwned(peer, Tag(from, to, k, 1), rest, m.bytes - kInline,
                                 std::shared_ptr<const void>(std::move(m.data)), site.op);
}

Status CrossProcessLaunch::Send(const interp::OpSite& site, uint32_t from, uint32_t to, const interp::TensorView* data,
                                size_t n) {
  const size_t bytes = TotalBytes(data, n);
  // The values are copied once, into the message (buffered: they may change once this returns).
  Message m = NewMessage(bytes);
  if (!m.data)
    return ResourceExhausted("device %u: no memory for a message of %zu bytes to device %u", from, bytes, to);
  char* at = m.payload();
  for (size_t i = 0; i < n; ++i) {
    const size_t b = data[i].Bytes();
    if (b) std::memcpy(at, data[i].data, b);
    at += b;
  }
  Descriptor d = {};
  d.shape_hash = ShapeHash(data, n);
  d.bytes = bytes;
  d.n = static_cast<uint32_t>(n);
  NEURONMEM_RETURN_IF_ERROR(Post(site, from, to, d, std::move(m)));
  bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
  return Ok();
}

Status CrossProcessLaunch::SendFailure(const interp::OpSite& site, uint32_t from, uint32_t to,
                                       const neuronmem_status_t& why) {
  // The failure's text rides in the first message (no second one, whatever the values' size).
  const std::string text = why.message.substr(0, kInline - 1);
  Descriptor d = {};
  d.failure = static_cast<int32_t>(why.code);
  Message m = NewMessage(text.size() + 1);
  if (!m.data) return ResourceExhausted("device %u: no memory for a message to device %u", from, to);
  std::memcpy(m.payload(), text.c_str(), text.size() + 1);
  return Post(site, from, to, d, std::move(m));
}

Status CrossProcessLaunch::Recv(const interp::OpSite& site, uint32_t from, uint32_t to,
                                const interp::TensorView* results, size_t n, uint32_t patience) {
  const size_t bytes = TotalBytes(results, n);
  const uint32_t peer = from / job_.cores();
  const uint64_t k = Next(received_, from, to);
  // The descriptor and first bytes land in a buffer the job keeps (no allocation or zero-fill per message).
  const BufferLease message = job_.buffers().Take(sizeof(Descriptor) + kInline);
  if (!message) return ResourceExhausted("device %u: no memory for a message from device %u", to, from);
  NEURONMEM_RETURN_IF_ERROR(job_.fabric().Recv(peer, Tag(from, to, k, 0), message.get(), sizeof(Descriptor) + kInline,
                                               site.op, interrupts_[to], patience));
  Descriptor d;
  std::memcpy(&d, message.get(), sizeof d);
  d.op[sizeof d.op - 1] = '\0';
  if (d.magic != kMagic || d.from != from || d.to != to)
    return FailedPrecondition(
        "device %u: a message from process %u is not the launch message expected from its device %u", to, peer, from);
  // The rest of a message this receive refuses is taken off the fabric too: left there, a later receive whose
  // tag wraps onto it would meet it.
  const auto refuse = [&](Status s) {
    if (d.bytes > kInline && d.bytes - kInline <= (size_t{1} << 30)) {
      std::vector<char> rest(d.bytes - kInline);
      job_.fabric().Recv(peer, Tag(from, to, k, 1), rest.data(), rest.size(), site.op).IgnoreError();
    }
    return s;
  };
  if (d.sequence != sequence_ || d.number != k)
    return refuse(FailedPrecondition(
        "device %u: the message from device %u (process %u) is message %" PRIu64 " of its launch %" PRIu64
        " across processes, this device expects message %" PRIu64 " of launch %" PRIu64
        " (a launch that failed part-way left it behind, or the processes submit their launches in another order)",
        to, from, peer, d.number, d.sequence, k, sequence_));
  if (d.failure != 0) {
    std::string text(message.get() + sizeof d, kInline);
    text.resize(std::strlen(text.c_str()));
    return MakeStatus(static_cast<neuronmem_status_code_t>(d.failure),
                      "device " + std::to_string(from) + " (process " + std::to_string(peer) +
                          ") failed it before it could pass this device its share: " + text);
  }
  if (d.fingerprint != fingerprint_ || d.launch_id != launch_id_)
    return refuse(FailedPrecondition(
        "device %u (process %u) runs %s (launch id %" PRIu64 ", program fingerprint %016" PRIx64
        ") than device %u of this process (launch id %" PRIu64 ", fingerprint %016" PRIx64
        "): every process of a job must launch the same program with the same launch id, in the same order",
        from, peer, d.fingerprint != fingerprint_ ? "another program" : "another launch", d.launch_id, d.fingerprint,
        to, launch_id_, fingerprint_));
  // A collective's members meet at the same op; a recv meets its sender's send.
  const std::string_view expected = site.op == "stablehlo.recv" ? std::string_view("stablehlo.send") : site.op;
  if (OpName(expected) != d.op || d.channel != site.channel)
    return refuse(FailedPrecondition(
        "device %u waits for device %u (process %u), which reached '%s' on channel %" PRId64 " instead", to, from, peer,
        d.op, d.channel));
  if (d.n != n || d.shape_hash != ShapeHash(results, n) || d.bytes != bytes)
    return refuse(FailedPrecondition("device %u (process %u) sends %u value(s) of %" PRIu64
                                     " bytes, device %u expects %zu value(s) of %zu bytes of other shapes",
                                     from, peer, d.n, d.bytes, to, n, bytes));
  // The payload: its first kInline bytes came with the descriptor; the rest lands in the value itself when there is
  // one (the fabric receives a large message in place), else in a buffer scattered into the values.
  const char* inline_part = message.get() + sizeof d;
  if (n == 1) {
    char* out = static_cast<char*>(results[0].data);
    if (bytes) std::memcpy(out, inline_part, std::min(bytes, kInline));
    if (bytes > kInline)
      NEURONMEM_RETURN_IF_ERROR(
          job_.fabric().Recv(peer, Tag(from, to, k, 1), out + kInline, bytes - kInline, site.op, interrupts_[to]));
  } else {
    BufferLease whole;
    const char* at = inline_part;
    if (bytes > kInline) {
      whole = job_.buffers().Take(bytes);
      if (!whole) return ResourceExhausted("device %u: no memory to hold %zu bytes from process %u", to, bytes, peer);
      std::memcpy(whole.get(), inline_part, kInline);
      NEURONMEM_RETURN_IF_ERROR(job_.fabric().Recv(peer, Tag(from, to, k, 1), whole.get() + kInline, bytes - kInline,
                                                   site.op, interrupts_[to]));
      at = whole.get();
    }
    for (size_t i = 0; i < n; ++i) {
      const size_t b = results[i].Bytes();
      if (b) std::memcpy(results[i].data, at, b);
      at += b;
    }
  }
  bytes_received_.fetch_add(bytes, std::memory_order_relaxed);
  return Ok();
}

}  // namespace neuronmem::exec
