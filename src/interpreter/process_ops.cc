// The ops of one process of the grid (collective.h): its ids (replica_id, partition_id), its messages to one
// peer (send, recv) and its transfers with the host (send / recv with is_host_transfer, infeed, outfeed).
#include <cinttypes>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "interpreter/collective.h"
#include "interpreter/manual_devices.h"
#include "interpreter/run_state.h"

namespace neuronmem::interp::collective {
namespace {

// ---- replica_id / partition_id ------------------------------------------------------------------------

template <bool kReplica>
class IdKernel final : public Kernel {
 public:
  // `ids`: per partition, the id it reports (empty: its own).
  IdKernel(uint32_t out, std::vector<uint32_t> ids) : out_(out), ids_(std::move(ids)) {}
  Status Run(Frame& f) const override {
    const ProcessContext& p = f.run->process;
    uint32_t id = kReplica ? p.replica_id : p.partition_id;
    if (id < ids_.size()) id = ids_[id];
    std::memcpy(f.slots[out_], &id, sizeof id);
    return Status();
  }

 private:
  uint32_t out_;
  std::vector<uint32_t> ids_;
};

template <bool kReplica>
Status CompileId(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 0 || cx.num_outputs() != 1) return cx.Invalid("takes no operands and has one result");
  const Slot& o = cx.out_slot(0);
  if (!o.dims.empty() || o.type != ElementType::kU32 || o.quant) return cx.Invalid("the result must be a tensor<ui32>");
  // In a manual computation's body, partition_id is the device at the process's manual coordinates
  // (manual_devices.h).
  const ManualDevices* devices = cx.manual_devices();
  *k = std::make_unique<IdKernel<kReplica>>(cx.out(0),
                                            !kReplica && devices ? devices->partition_ids() : std::vector<uint32_t>());
  return Ok();
}

// ---- send / recv ------------------------------------------------------------------------------------------

// What send and recv share: channel, host transfer or not, and the pairs. Pairs name partitions of the
// sender's replica, or replicas when the grid has one partition (docs/process-grid.md).
struct Channel {
  Site site;
  bool host = false;
  bool has_pairs = false;
  std::vector<std::pair<int64_t, int64_t>> pairs;

  Line LineOf(const ProcessGrid& grid) const {
    Line l;
    l.replicas = grid.num_partitions() == 1;
    return l;
  }
};

Status ReadSendRecv(CompileCtx& cx, bool send, Channel* c) {
  int64_t channel, type;
  NEURONMEM_RETURN_IF_ERROR(ReadChannel(cx, &channel, &type));
  cx.Bool("is_host_transfer", &c->host);
  const int64_t host_type = send ? 2 : 3;
  if (type == (send ? 3 : 2)) return cx.Invalid("channel type %" PRId64 " cannot %s", type, send ? "send" : "receive");
  if (type != 0 && (type == host_type) != c->host)
    return cx.Invalid("channel type %" PRId64 " disagrees with is_host_transfer = %s (C5)", type,
                      c->host ? "true" : "false");
  NEURONMEM_RETURN_IF_ERROR(ReadPairs(cx, &c->pairs, &c->has_pairs, /*frontend=*/true));
  // In a manual computation's body (a grid of several partitions) the pairs name its devices.
  if (const ManualDevices* devices = cx.manual_devices(); devices && c->has_pairs && !c->host)
    NEURONMEM_RETURN_IF_ERROR(devices->MapPairs(cx, &c->pairs));
  c->site = MakeSite(cx, channel);
  return Ok();
}

HostTransfers* HostOf(Frame& f) {
  static HostTransfers none;  // fails every transfer, naming it
  return f.run->process.host ? f.run->process.host : &none;
}

class SendKernel final : public Kernel {
 public:
  // kept: every operand stays unchanged until the run ends (CompileCtx::KeepUntilEnd).
  SendKernel(Channel c, std::vector<uint32_t> ins, std::vector<Shape> shapes, bool kept)
      : c_(std::move(c)), ins_(std::move(ins)), shapes_(std::move(shapes)), kept_(kept) {}
  Status Run(Frame& f) const override {
    ProcessGrid& grid = f.run->grid();
    const uint32_t self = f.run->self();
    const std::vector<TensorView> data = Views(f, ins_, shapes_);
    if (c_.host) return HostOf(f)->Send(HostCall{c_.site.Get(), self, {}}, data.data(), data.size());
    int64_t target = -1;
    if (c_.has_pairs) {
      const Line line = c_.LineOf(grid);
      NEURONMEM_RETURN_IF_ERROR(CheckPairs(c_.site, grid, line, c_.pairs));
      const int64_t id = line.Id(grid, self);
      for (const auto& p : c_.pairs)
        if (p.first == id) target = line.Process(grid, self, p.second);
      if (target < 0) return Status();  // not a source: nothing to send
    }
    return grid.Send(self, c_.site.Get(), target, data.data(), data.size(), kept_);
  }

 private:
  Channel c_;
  std::vector<uint32_t> ins_;
  std::vector<Shape> shapes_;
  bool kept_;
};

class RecvKernel final : public Kernel {
 public:
  RecvKernel(Channel c, std::vector<uint32_t> outs, std::vector<uint32_t> zeros, std::vector<Shape> shapes)
      : c_(std::move(c)), outs_(std::move(outs)), zeros_(std::move(zeros)), shapes_(std::move(shapes)) {}
  Status Run(Frame& f) const override {
    ProcessGrid& grid = f.run->grid();
    const uint32_t self = f.run->self();
    const std::vector<TensorView> results = Views(f, outs_, shapes_);
    if (c_.host) return HostOf(f)->Recv(HostCall{c_.site.Get(), self, {}}, results.data(), results.size());
    int64_t source = -1;
    if (c_.has_pairs) {
      const Line line = c_.LineOf(grid);
      NEURONMEM_RETURN_IF_ERROR(CheckPairs(c_.site, grid, line, c_.pairs));
      const int64_t id = line.Id(grid, self);
      for (const auto& p : c_.pairs)
        if (p.second == id) source = line.Process(grid, self, p.first);
      if (source < 0) {  // not a target: zeros, as collective_permute gives
        for (size_t k = 0; k < outs_.size(); ++k) std::memcpy(f.slots[outs_[k]], f.slots[zeros_[k]], shapes_[k].bytes);
        return Status();
      }
    }
    return grid.Recv(self, c_.site.Get(), source, results.data(), results.size());
  }

 private:
  Channel c_;
  std::vector<uint32_t> outs_, zeros_;
  std::vector<Shape> shapes_;
};

Status CompileSend(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  Channel c;
  NEURONMEM_RETURN_IF_ERROR(ReadSendRecv(cx, true, &c));
  std::vector<uint32_t> ins;
  std::vector<Shape> shapes;
  NEURONMEM_RETURN_IF_ERROR(DataSlots(cx, true, &ins, &shapes));
  // A computed value sent once per run stays as it is until the run ends, so the grid may lend it (one copy, by
  // the receiver) like an argument the program only reads; a host transfer is a call, it lends nothing.
  bool kept = !c.host;
  for (uint32_t s : ins) kept = cx.KeepUntilEnd(s) && kept;
  *k = std::make_unique<SendKernel>(std::move(c), std::move(ins), std::move(shapes), kept);
  return Ok();
}

Status CompileRecv(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  Channel c;
  NEURONMEM_RETURN_IF_ERROR(ReadSendRecv(cx, false, &c));
  std::vector<uint32_t> outs, zeros;
  std::vector<Shape> shapes;
  NEURONMEM_RETURN_IF_ERROR(DataSlots(cx, false, &outs, &shapes));
  if (c.has_pairs)
    for (uint32_t o : outs) zeros.push_back(ZeroOf(cx, cx.slot(o)));
  *k = std::make_unique<RecvKernel>(std::move(c), std::move(outs), std::move(zeros), std::move(shapes));
  return Ok();
}

// ---- infeed / outfeed -------------------------------------------------------------------------------------

template <bool kInfeed>
class FeedKernel final : public Kernel {
 public:
  FeedKernel(Site site, std::string config, std::vector<uint32_t> slots, std::vector<Shape> shapes)
      : site_(std::move(site)), config_(std::move(config)), slots_(std::move(slots)), shapes_(std::move(shapes)) {}
  Status Run(Frame& f) const override {
    const std::vector<TensorView> v = Views(f, slots_, shapes_);
    const HostCall call{site_.Get(), f.run->self(), config_};
    return kInfeed ? HostOf(f)->Infeed(call, v.data(), v.size()) : HostOf(f)->Outfeed(call, v.data(), v.size());
  }

 private:
  Site site_;
  std::string config_;
  std::vector<uint32_t> slots_;
  std::vector<Shape> shapes_;
};

template <bool kInfeed>
Status CompileFeed(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::vector<uint32_t> slots;
  std::vector<Shape> shapes;
  NEURONMEM_RETURN_IF_ERROR(DataSlots(cx, !kInfeed, &slots, &shapes));
  std::string config;
  if (const stablehlo::Attribute* a = cx.Attr(kInfeed ? "infeed_config" : "outfeed_config"))
    config = std::string(a->str);
  *k = std::make_unique<FeedKernel<kInfeed>>(MakeSite(cx, 0), std::move(config), std::move(slots), std::move(shapes));
  return Ok();
}

}  // namespace

void RegisterProcessOps(OpTable* r) {
  auto& m = *r;
  m["stablehlo.replica_id"] = CompileId<true>;
  m["stablehlo.partition_id"] = CompileId<false>;
  m["stablehlo.send"] = CompileSend;
  m["stablehlo.recv"] = CompileRecv;
  m["stablehlo.infeed"] = CompileFeed<true>;
  m["stablehlo.outfeed"] = CompileFeed<false>;
}

}  // namespace neuronmem::interp::collective
