#include "grid_util.h"

namespace neuronmem::interp::testing {

GridResult RunGrid(const std::string& text, uint32_t replicas, uint32_t partitions,
                   const std::vector<std::string>& entries, std::vector<std::vector<Arg>> args,
                   PeerTransfers* transport, HostTransfers* host) {
  GridResult out;
  const uint32_t n = replicas * partitions;
  std::map<std::string, Compiled> programs;
  for (const std::string& e : entries) {
    if (programs.count(e)) continue;
    Compiled c = CompileText(text, e);
    if (c.status) {
      out.status.push_back(std::move(c.status));
      return out;
    }
    programs.emplace(e, std::move(c));
  }
  args.resize(n);
  out.outputs.resize(n);
  ProcessGrid grid(replicas, partitions, transport);
  out.status = grid.Run([&](uint32_t k) {
    const Program& prog = *programs.at(entries[k]).program;
    std::vector<TensorView> views;
    for (Arg& a : args[k]) views.push_back(a.View());
    ProcessContext pc;
    pc.grid = &grid;
    pc.replica_id = k / partitions;
    pc.partition_id = k % partitions;
    pc.host = host;
    Program::RunOptions o;
    o.process = &pc;
    HostResultAllocator alloc;
    std::vector<TensorView> results;
    NEURONMEM_RETURN_IF_ERROR(prog.Run(views.data(), views.size(), &alloc, &results, o));
    for (const TensorView& v : results) {
      const char* p = static_cast<const char*>(v.data);
      out.outputs[k].emplace_back(p, p + v.Bytes());
    }
    return Status();
  });
  return out;
}

Status CountingTransport::Copy(const Transfer& t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    bytes[{t.from, t.to}] += t.bytes();
    last_src = t.src;
  }
  ++copies;
  return PeerTransfers::Memcpy()->Copy(t);
}

}  // namespace neuronmem::interp::testing
