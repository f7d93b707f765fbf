// Manifest derivation from the IR, validation, and the JSON form.
#include "manifest/manifest.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <map>
#include <set>
#include <algorithm>

#include "stablehlo/parser.h"

namespace neuronmem::manifest {
namespace {

using stablehlo::Attribute;
using stablehlo::Find;
using stablehlo::NamedAttrs;
using stablehlo::Operation;
using stablehlo::Type;

// The kinds a move may name as written (what XLA's _xla_buffer_placement accepts): the three memory kinds
// (base/memory_kind.h) and two device-side ones. The strings are static: the value table stores views.
constexpr std::string_view kDeviceSideKinds[] = {"vmem", "pinned_device"};

// The static spelling of a placement kind, or an empty view if `kind` is none.
std::string_view PlacementKindName(std::string_view kind) {
  MemoryKind k;
  if (MemoryKindFromName(kind, &k)) return MemoryKindName(k);
  for (std::string_view d : kDeviceSideKinds) {
    if (kind == d) return d;
  }
  return {};
}

// SSA value name -> memory kind, for every value the walk has defined. One lookup or insert per op, so it
// is an open-addressing table of views into the IR's names (which outlive the derivation) and views of
// static kind strings: no allocation per value, unlike a node-based map of copied strings.
class ValueKinds {
 public:
  void Reserve(size_t n) { Rehash(std::max<size_t>(16, NextPow2(n * 2))); }
  // Sets the kind of `name` (insert_or_assign), or keeps an existing one when `overwrite` is false.
  void Set(std::string_view name, std::string_view kind, bool overwrite = true) {
    if ((size_ + 1) * 2 > slots_.size()) Rehash(std::max<size_t>(16, slots_.size() * 2));
    Slot& s = Probe(name);
    if (s.used) {
      if (overwrite) s.kind = kind;
      return;
    }
    s = Slot{name, kind, true};
    ++size_;
  }
  std::string_view Get(std::string_view name, std::string_view fallback) const {
    if (slots_.empty()) return fallback;
    const Slot& s = slots_[IndexOf(name)];
    return s.used ? s.kind : fallback;
  }

 private:
  struct Slot {
    std::string_view name;
    std::string_view kind;
    bool used = false;
  };
  static size_t NextPow2(size_t v) {
    size_t p = 1;
    while (p < v) p <<= 1;
    return p;
  }
  static uint64_t Hash(std::string_view s) {  // FNV-1a, enough for short SSA names
    uint64_t h = 1469598103934665603ull;
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h ^ (h >> 29);
  }
  // The slot holding `name`, or the free slot where it would go (the table is never full).
  size_t IndexOf(std::string_view name) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(name) & mask;; i = (i + 1) & mask) {
      if (!slots_[i].used || slots_[i].name == name) return i;
    }
  }
  Slot& Probe(std::string_view name) { return slots_[IndexOf(name)]; }
  void Rehash(size_t n) {
    if (n <= slots_.size()) return;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    for (const Slot& s : old) {
      if (s.used) Probe(s.name) = s;
    }
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

// How to choose an entry among `names` (the public functions): the tail of a NOT_FOUND message.
std::string EntryChoices(const std::vector<std::string>& names) {
  if (names.empty()) return "it has no public function to use as the entry";
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "@" : ", @") + n;
  return "its public functions are " + list +
         "; choose the entry by name (neuronmem_manifest_options_t.entry, the CLI's --entry NAME), or print "
         "every one with the CLI's --all";
}

class Deriver {
 public:
  Deriver(const Options& o, Manifest* m) : opt_(o), m_(m) {}

  [[noreturn]] void Error(neuronmem_status_code_t code, stablehlo::Location loc, const std::string& msg) {
    throw DeriveError{code, opt_.filename + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column) +
                                ": " + msg};
  }

  struct DeriveError {
    neuronmem_status_code_t code;
    std::string message;
  };

  static TensorSpec Spec(const Type& t) {
    TensorSpec s;
    switch (t.kind) {
      case Type::Kind::kTensor:
      case Type::Kind::kScalar:
        s.element_type = stablehlo::ElementTypeName(t.element);
        s.element = t.element;
        if (t.element == stablehlo::ElementType::kOther || t.quant) {
          s.element_type = stablehlo::TypeToString(t);
          s.element = ElementType::kInvalid;
        }
        s.dims = t.dims;
        break;
      case Type::Kind::kTuple: s.element_type = "tuple"; s.is_tuple = true; break;
      case Type::Kind::kToken: s.element_type = "token"; s.is_token = true; break;
      default: s.element_type = stablehlo::TypeToString(t);
    }
    return s;
  }

  static std::string AttrText(const Attribute& a) {
    if (a.kind == Attribute::Kind::kString) return std::string(a.str);
    if (a.kind == Attribute::Kind::kUnit) return "";
    return std::string(a.text);
  }

  Value MakeValue(uint32_t index, std::string_view name, const Type& type, const NamedAttrs& attrs,
                  stablehlo::Location loc, const char* what) {
    Value v;
    v.index = index;
    v.name = name;
    v.type = Spec(type);
    v.loc = {loc.line, loc.column};
    for (const auto& [key, a] : attrs) {
      if (key == "mhlo.memory_kind") {
        if (a.kind != Attribute::Kind::kString) {
          Error(NEURONMEM_STATUS_INVALID_ARGUMENT, a.loc, std::string("mhlo.memory_kind of ") + what + " " +
                                                              std::to_string(index) + " must be a string");
        }
        if (!MemoryKindFromName(a.str, &v.memory_kind)) {
          Error(NEURONMEM_STATUS_INVALID_ARGUMENT, a.loc,
                std::string("unknown memory kind \"") + std::string(a.str) + "\" on " + what + " " + std::to_string(index) +
                    (name.empty() ? "" : " (" + std::string(name) + ")") + "; expected \"device\", \"pinned_host\" or \"unpinned_host\"");
        }
        if (type.IsTuple()) {
          Error(NEURONMEM_STATUS_UNIMPLEMENTED, a.loc,
                std::string("a tuple-typed ") + what + " (" + std::to_string(index) +
                    ") cannot carry a memory kind; give each tuple element its own argument");
        }
        v.kind_explicit = true;
      } else if (key == "tf.aliasing_output") {
        v.aliasing_output = a.i;
      } else if (key == "jax.buffer_donor") {
        v.buffer_donor = a.kind == Attribute::Kind::kUnit || (a.kind == Attribute::Kind::kBool && a.b);
      } else {
        if (key == "jax.result_info" && a.kind == Attribute::Kind::kString && !a.str.empty()) v.name = a.str;
        v.attributes.emplace_back(key, AttrText(a));
      }
    }
    return v;
  }

  void Run(const stablehlo::Module& module) {
    const stablehlo::Function* f = module.FindFunction(opt_.entry);
    if (f && !f->body.blocks.empty()) kinds_.Reserve(f->body.blocks[0].ops.size() + f->args.size());
    if (!f) {
      Error(NEURONMEM_STATUS_NOT_FOUND, module.loc,
            "no function @" + opt_.entry + " in the module; " + EntryChoices(PublicFunctions({module})));
    }
    m_->module = module.name;
    m_->entry = f->name;
    m_->policy = PolicyName(opt_.policy);
    for (size_t i = 0; i < f->args.size(); ++i) {
      const auto& a = f->args[i];
      Value v = MakeValue(static_cast<uint32_t>(i), a.name, a.type, a.attrs, a.loc, "argument");
      if (!v.kind_explicit) v.memory_kind = MemoryKind::kDevice;
      kinds_.Set(a.name, MemoryKindName(v.memory_kind));
      m_->arguments.push_back(std::move(v));
    }
    bool all_device = true;
    for (const Value& v : m_->arguments) all_device = all_device && v.memory_kind == MemoryKind::kDevice;
    for (size_t i = 0; i < f->result_types.size(); ++i) {
      Value v = MakeValue(static_cast<uint32_t>(i), "", f->result_types[i],
                          i < f->result_attrs.size() ? f->result_attrs[i] : NamedAttrs(), f->loc, "result");
      if (!v.kind_explicit) {
        v.memory_kind = (opt_.policy == Policy::kTorchNeuronx && !all_device) ? MemoryKind::kUnpinnedHost
                                                                               : MemoryKind::kDevice;
      }
      m_->results.push_back(std::move(v));
    }
    // Walk the entry function and every function it can reach (calls), once each.
    std::vector<const stablehlo::Function*> work = {f};
    std::set<std::string_view> seen = {f->name};
    while (!work.empty()) {
      const stablehlo::Function* fn = work.back();
      work.pop_back();
      if (fn != f) {
        for (const auto& a : fn->args) kinds_.Set(a.name, "device", /*overwrite=*/false);
      }
      WalkRegion(fn->body, fn->name, 0, [&](std::string_view callee) {
        if (const stablehlo::Function* g = module.FindFunction(callee); g && seen.insert(callee).second) {
          work.push_back(g);
        }
      });
    }
    for (auto& [target, count] : targets_) m_->custom_call_targets.push_back({target, count});
  }

  template <typename OnCall>
  void WalkRegion(const stablehlo::Region& r, std::string_view fn, int depth, OnCall&& on_call) {
    for (const auto& b : r.blocks) {
      for (const auto& a : b.args) kinds_.Set(a.name, "device", /*overwrite=*/false);
      for (const Operation& op : b.ops) {
        Visit(op, fn, on_call);
        for (const auto& sub : op.regions) WalkRegion(sub, fn, depth + 1, on_call);
      }
    }
  }

  std::string KindOf(const stablehlo::ValueRef& v) {
    return std::string(kinds_.Get(v.name, "device"));
  }

  static const Attribute* FrontendAttr(const Operation& op, const char* key) {
    const Attribute* fa = Find(op.attributes, "mhlo.frontend_attributes");
    return fa ? fa->Get(key) : nullptr;
  }

  static std::string BackendConfigString(const Operation& op) {
    for (const char* key : {"backend_config", "mhlo.backend_config"}) {
      if (const Attribute* a = Find(op.attributes, key)) {
        if (a->kind == Attribute::Kind::kString) return std::string(a->str);
        if (a->kind == Attribute::Kind::kDict) {
          if (const Attribute* k = a->Get("kind")) return std::string(k->str);
          return std::string(a->text);
        }
        return std::string(a->text);
      }
    }
    return "";
  }

  template <typename OnCall>
  void Visit(const Operation& op, std::string_view fn, OnCall&& on_call) {
    if (const Attribute* ct = FrontendAttr(op, "_xla_compute_type"); ct && ct->str == "host") {
      m_->host_compute.push_back(
          {std::string(fn), std::string(op.name), std::string(op.callee), {op.loc.line, op.loc.column}});
    }
    if (op.name == "func.call" && !op.callee.empty()) on_call(op.callee);
    if (op.name == "stablehlo.custom_call") {
      const std::string target(op.callee);
      if (target.empty()) Error(NEURONMEM_STATUS_INVALID_ARGUMENT, op.loc, "custom_call without a call target");
      ++targets_[target];
      std::string to_kind;
      if (target == "annotate_device_placement") {
        const Attribute* p = FrontendAttr(op, "_xla_buffer_placement");
        if (!p) {
          Error(NEURONMEM_STATUS_INVALID_ARGUMENT, op.loc,
                "annotate_device_placement without mhlo.frontend_attributes = {_xla_buffer_placement = \"<kind>\"}");
        }
        if (PlacementKindName(p->str).empty()) {
          Error(NEURONMEM_STATUS_INVALID_ARGUMENT, p->loc,
                "unknown _xla_buffer_placement \"" + std::string(p->str) +
                    "\"; expected device, pinned_host, unpinned_host, vmem or pinned_device");
        }
        to_kind = p->str;
      } else if (target == "MoveToHost") {
        to_kind = "pinned_host";
      } else if (target == "MoveToDevice") {
        to_kind = "device";
      } else if (target == "AwsNeuronMemoryPlacement") {
        to_kind = BackendConfigString(op);
        MemoryKind k;
        if (!MemoryKindFromName(to_kind, &k)) {
          Error(NEURONMEM_STATUS_INVALID_ARGUMENT, op.loc,
                "AwsNeuronMemoryPlacement needs backend_config = \"device\", \"pinned_host\" or \"unpinned_host\", "
                "found \"" + to_kind + "\"");
        }
      } else if (target == "AwsNeuronCustomNativeKernel") {
        m_->kernels.push_back(DecodeKernel(op, fn));
      }
      if (!to_kind.empty()) {
        if (op.operands.size() != 1) {
          Error(NEURONMEM_STATUS_INVALID_ARGUMENT, op.loc,
                "@" + target + " must have exactly one operand (the value to place), found " +
                    std::to_string(op.operands.size()));
        }
        Move mv;
        mv.function = fn;
        mv.value = "%" + std::string(op.operands[0].name) + (op.operands[0].index ? "#" + std::to_string(op.operands[0].index) : "");
        if (!op.result_name.empty()) mv.result = "%" + std::string(op.result_name);
        mv.type = Spec(!op.operand_types.empty() ? op.operand_types[0]
                                                 : (!op.result_types.empty() ? op.result_types[0] : Type()));
        mv.from_kind = KindOf(op.operands[0]);
        mv.to_kind = to_kind;
        PlacementMemoryKind(mv.from_kind, &mv.from_memory_kind);
        PlacementMemoryKind(mv.to_kind, &mv.to_memory_kind);
        mv.spelling = target;
        mv.loc = {op.loc.line, op.loc.column};
        m_->moves.push_back(std::move(mv));
        if (!op.result_name.empty()) kinds_.Set(op.result_name, PlacementKindName(to_kind));
        return;
      }
    }
    if (op.name == "stablehlo.send" || op.name == "stablehlo.recv") m_->channels.push_back(DecodeChannel(op, fn));
    // Any other op produces device values; a value computed on the host stays where its operands were.
    if (!op.result_name.empty()) kinds_.Set(op.result_name, "device");
  }

  static std::string Base64Decode(const std::string& in, bool* ok) {
    static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    uint32_t buf = 0;
    int bits = 0;
    *ok = true;
    for (char c : in) {
      if (c == '=' || c == '\n' || c == '\r' || c == ' ') continue;
      const size_t v = c == '-' ? 62 : c == '_' ? 63 : chars.find(c);
      if (v == std::string::npos) {
        *ok = false;
        return "";
      }
      buf = (buf << 6) | static_cast<uint32_t>(v);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out.push_back(static_cast<char>((buf >> bits) & 0xff));
      }
    }
    return out;
  }

  Kernel DecodeKernel(const Operation& op, std::string_view fn) {
    Kernel k;
    k.function = fn;
    k.loc = {op.loc.line, op.loc.column};
    k.num_operands = static_cast<uint32_t>(op.operands.size());
    k.num_results = static_cast<uint32_t>(op.result_types.size());
    const std::string config = BackendConfigString(op);
    bool ok = false;
    std::string json_text = config.size() && config[0] == '{' ? config : Base64Decode(config, &ok);
    nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      Error(NEURONMEM_STATUS_INVALID_ARGUMENT, op.loc,
            "AwsNeuronCustomNativeKernel backend_config is not base64 of a JSON object");
    }
    k.func_name = j.value("func_name", "");
    if (j.contains("grid") && j["grid"].is_array()) {
      for (const auto& g : j["grid"]) {
        if (g.is_number_integer()) k.grid.push_back(g.get<int64_t>());
      }
    }
    if (j.contains("klir_binary") && j["klir_binary"].is_object()) {
      const auto& kb = j["klir_binary"];
      k.binary = kb.value("binary", "");
      for (const char* key : {"input_names", "output_names"}) {
        if (kb.contains(key) && kb[key].is_array()) {
          for (const auto& n : kb[key]) {
            if (n.is_string()) (std::string(key) == "input_names" ? k.input_names : k.output_names).push_back(n);
          }
        }
      }
    }
    return k;
  }

  Channel DecodeChannel(const Operation& op, std::string_view fn) {
    Channel c;
    c.function = fn;
    c.op = op.name == "stablehlo.send" ? "send" : "recv";
    c.loc = {op.loc.line, op.loc.column};
    if (const Attribute* h = Find(op.attributes, "channel_handle")) {
      if (const Attribute* v = h->Get("handle")) c.handle = v->i;
      if (const Attribute* v = h->Get("type")) c.type = v->i;
    }
    if (const Attribute* h = Find(op.attributes, "is_host_transfer")) c.is_host_transfer = h->b;
    if (const Attribute* p = Find(op.attributes, "source_target_pairs")) {
      const Type& t = p->type;
      if (p->kind != Attribute::Kind::kDense || t.dims.size() != 2 || t.dims[1] != 2 ||
          t.element != stablehlo::ElementType::kS64) {
        Error(NEURONMEM_STATUS_INVALID_ARGUMENT, p->loc, "source_target_pairs must be a dense tensor<Nx2xi64>");
      }
      const size_t n = static_cast<size_t>(t.dims[0]);
      std::set<int64_t> sources, targets;
      for (size_t i = 0; i < n; ++i) {
        int64_t s = 0, d = 0;
        const size_t si = p->splat ? 0 : 2 * i, di = p->splat ? 1 : 2 * i + 1;
        std::memcpy(&s, p->dense.data() + 8 * si, 8);
        std::memcpy(&d, p->dense.data() + 8 * di, 8);
        for (int64_t id : {s, d}) {
          if (id < 0 || id >= static_cast<int64_t>(opt_.num_cores)) {
            Error(NEURONMEM_STATUS_INVALID_ARGUMENT, p->loc,
                  "source_target_pairs names core " + std::to_string(id) + ", outside [0, " +
                      std::to_string(opt_.num_cores) + ")");
          }
        }
        if (!sources.insert(s).second) {
          Error(NEURONMEM_STATUS_INVALID_ARGUMENT, p->loc, "source_target_pairs repeats source " + std::to_string(s));
        }
        if (!targets.insert(d).second) {
          Error(NEURONMEM_STATUS_INVALID_ARGUMENT, p->loc, "source_target_pairs repeats target " + std::to_string(d));
        }
        c.source_target_pairs.emplace_back(s, d);
      }
    }
    const bool send = c.op == "send";
    std::string problem;
    if (c.type == 0 && Find(op.attributes, "channel_handle")) problem = "channel type 0 is invalid";
    if (c.type == 1 && c.is_host_transfer) problem = "a device-to-device channel (type 1) cannot be a host transfer";
    if (c.type == 2 && (!send || !c.is_host_transfer)) problem = "a device-to-host channel (type 2) must be a send with is_host_transfer = true";
    if (c.type == 3 && (send || !c.is_host_transfer)) problem = "a host-to-device channel (type 3) must be a recv with is_host_transfer = true";
    if (c.type > 3 || c.type < 0) problem = "unknown channel type " + std::to_string(c.type);
    if (!problem.empty()) Error(NEURONMEM_STATUS_INVALID_ARGUMENT, op.loc, "stablehlo." + c.op + ": " + problem);
    const auto& types = send ? op.operand_types : op.result_types;
    for (const Type& t : types) {
      if (t.kind != Type::Kind::kToken) c.payload.push_back(Spec(t));
    }
    return c;
  }

 private:
  const Options& opt_;
  Manifest* m_;
  ValueKinds kinds_;
  std::map<std::string, uint64_t> targets_;
};

}  // namespace

const char* PolicyName(Policy p) { return p == Policy::kTorchNeuronx ? "torch-neuronx" : "device"; }

bool PlacementMemoryKind(std::string_view kind, MemoryKind* out) {
  if (MemoryKindFromName(kind, out)) return true;
  if (PlacementKindName(kind).empty()) return false;
  *out = MemoryKind::kDevice;  // vmem, pinned_device: device-side memories
  return true;
}

Status Derive(std::shared_ptr<const stablehlo::Module> module, const Options& options, Manifest* out) {
  if (options.num_cores < 1 || options.num_cores > kMaxCores) {
    return InvalidArgument("num_cores is %u; a manifest is derived for 1 to %u cores", options.num_cores, kMaxCores);
  }
  Manifest m;
  Deriver d(options, &m);
  try {
    d.Run(*module);
  } catch (const Deriver::DeriveError& e) {
    return MakeStatus(e.code, e.message);
  }
  m.ir = std::move(module);
  *out = std::move(m);
  return Ok();
}

Status Derive(const stablehlo::Module& module, const Options& options, Manifest* out) {
  return Derive(std::make_shared<const stablehlo::Module>(module), options, out);
}

Status LoadFromText(std::string_view text, const Options& options, Manifest* out) {
  std::vector<stablehlo::Module> modules;
  NEURONMEM_RETURN_IF_ERROR(stablehlo::ParseModules(text, options.filename, &modules));
  for (auto& mod : modules) {
    if (mod.FindFunction(options.entry)) return Derive(std::make_shared<const stablehlo::Module>(std::move(mod)), options, out);
  }
  return NotFound("%s: no function @%s in the input (%zu module(s)); %s", options.filename.c_str(),
                  options.entry.c_str(), modules.size(), EntryChoices(PublicFunctions(modules)).c_str());
}

std::vector<std::string> PublicFunctions(const std::vector<stablehlo::Module>& modules) {
  std::vector<std::string> names;
  std::set<std::string_view> seen;
  for (const stablehlo::Module& m : modules) {
    for (const stablehlo::Function& f : m.functions) {
      if (f.visibility == "public" && seen.insert(f.name).second) names.emplace_back(f.name);
    }
  }
  return names;
}

Status ListPublicFunctions(std::string_view text, const std::string& filename, std::vector<std::string>* out) {
  out->clear();
  std::vector<stablehlo::Module> modules;
  NEURONMEM_RETURN_IF_ERROR(stablehlo::ParseModules(text, filename, &modules));
  *out = PublicFunctions(modules);
  return Ok();
}

}  // namespace neuronmem::manifest
