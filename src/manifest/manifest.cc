// Manifest derivation from the IR, validation, and the JSON form.
#include "manifest/manifest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "manifest/value_kinds.h"
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
    throw DeriveError{code,
                      opt_.filename + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column) + ": " + msg};
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
      case Type::Kind::kTuple:
        s.element_type = "tuple";
        s.is_tuple = true;
        break;
      case Type::Kind::kToken:
        s.element_type = "token";
        s.is_token = true;
        break;
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
          Error(NEURONMEM_STATUS_INVALID_ARGUMENT, a.loc,
                std::string("mhlo.memory_kind of ") + what + " " + std::to_string(index) + " must be a string");
        }
        if (!MemoryKindFromName(a.str, &v.memory_kind)) {
          Error(NEURONMEM_STATUS_INVALID_ARGUMENT, a.loc,
                std::string("unknown memory kind \"") + std::string(a.str) + "\" on " + what + " " +
                    std::to_string(index) + (name.empty() ? "" : " (" + std::string(name) + ")") +
                    "; expected \"device\", \"pinned_host\" or \"unpinned_host\"");
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
      m_->arguments.push_back(std::move(v));
    }
    bool all_device = true;
    for (const Value& v : m_->arguments) all_device = all_device && v.memory_kind == MemoryKind::kDevice;
    for (size_t i = 0; i < f->result_types.size(); ++i) {
      Value v = MakeValue(static_cast<uint32_t>(i), "", f->result_types[i],
                          i < f->result_attrs.size() ? f->result_attrs[i] : NamedAttrs(), f->loc, "result");
      if (!v.kind_explicit) {
        v.memory_kind =
            (opt_.policy == Policy::kTorchNeuronx && !all_device) ? MemoryKind::kUnpinnedHost : MemoryKind::kDevice;
      }
      m_->results.push_back(std::move(v));
    }
    // Walk the entry function and, at each call, the function called (once each: kinds flow through calls).
    module_ = &module;
    const stablehlo::FunctionIndex functions(module);
    functions_ = &functions;
    if (IsHostCompute(f->attributes)) {
      m_->host_compute.push_back(
          {std::string(f->name), "func.func", std::string(f->name), {f->loc.line, f->loc.column}});
    }
    std::vector<std::string_view> arg_kinds;
    for (const Value& v : m_->arguments) arg_kinds.push_back(MemoryKindName(v.memory_kind));
    WalkFunction(*f, arg_kinds);
    // Functions whose call was too deeply nested to follow at once: walked last, with device arguments.
    while (!deferred_.empty()) {
      const stablehlo::Function* g = deferred_.back();
      deferred_.pop_back();
      WalkFunction(*g, {});
    }
    for (auto& [target, count] : targets_) m_->custom_call_targets.push_back({target, count});
    for (const stablehlo::Warning& w : module.warnings) {
      m_->warnings.push_back(opt_.filename + ":" + std::to_string(w.loc.line) + ":" + std::to_string(w.loc.column) +
                             ": " + w.message);
    }
  }

  using Kinds = std::vector<std::string_view>;

  // Walks `fn` with its arguments in `arg_kinds` (device where absent) and records the kinds its results
  // are returned in. A function is walked once, with the kinds of its first call.
  void WalkFunction(const stablehlo::Function& fn, const Kinds& arg_kinds) {
    walked_[&fn];  // present while walking: a recursive call sees no result kinds (device)
    const size_t mark = kinds_.Mark();
    for (size_t i = 0; i < fn.args.size(); ++i) {
      kinds_.Set({fn.args[i].name}, i < arg_kinds.size() ? arg_kinds[i] : MemoryKindName(MemoryKind::kDevice));
    }
    Kinds returned;
    WalkRegion(fn.body, fn.name, arg_kinds, &returned);
    kinds_.PopTo(mark);
    walked_[&fn] = std::move(returned);
  }

  // Walks a region whose entry block's arguments are in `entry_kinds` (device where absent; other blocks'
  // arguments are device) and merges the kinds its terminators return into *returned.
  void WalkRegion(const stablehlo::Region& r, std::string_view fn, const Kinds& entry_kinds, Kinds* returned) {
    ++depth_;
    const size_t mark = kinds_.Mark();
    bool first_return = true;
    for (size_t b = 0; b < r.blocks.size(); ++b) {
      const stablehlo::Block& block = r.blocks[b];
      for (size_t i = 0; i < block.args.size(); ++i) {
        kinds_.Set({block.args[i].name}, b == 0 && i < entry_kinds.size() ? entry_kinds[i] : kDevice);
      }
      for (const Operation& op : block.ops) {
        if (IsTerminator(op.name)) {
          MergeReturned(op, first_return, returned);
          first_return = false;
        }
        Visit(op, fn);
      }
    }
    kinds_.PopTo(mark);
    --depth_;
  }

  static bool IsTerminator(std::string_view name) {
    constexpr std::string_view kReturn = ".return";
    return name.size() > kReturn.size() && name.substr(name.size() - kReturn.size()) == kReturn;
  }

  // The kinds of a terminator's operands; where several terminators of a region disagree, device.
  void MergeReturned(const Operation& op, bool first, Kinds* returned) {
    if (first) returned->clear();
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const std::string_view k = Kind(op.operands[i]);
      if (first) {
        returned->push_back(k);
      } else if (i < returned->size() && (*returned)[i] != k) {
        (*returned)[i] = kDevice;
      }
    }
  }

  std::string_view Kind(const stablehlo::ValueRef& v) const { return kinds_.Get({v.name, v.index}, kDevice); }
  std::string KindOf(const stablehlo::ValueRef& v) const { return std::string(Kind(v)); }

  void SetResult(const Operation& op, uint32_t index, std::string_view kind) {
    if (!op.result_name.empty()) kinds_.Set({op.result_name, index}, kind);
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

  // Records what `op` says (host compute, moves, kernels, channels, custom-call targets), walks its regions
  // and the functions it calls, and defines the kinds of its results: the kind rule of docs/contract.md
  // (section 2, "Kinds through ops that move no data"); a host-compute op's results are pinned_host.
  void Visit(const Operation& op, std::string_view fn) {
    if (op.skipped) {
      VisitSkipped(op);
      return;
    }
    const bool host = RunsOnHost(*functions_, op);
    if (host) {
      m_->host_compute.push_back(
          {std::string(fn), std::string(op.name), std::string(op.callee), {op.loc.line, op.loc.column}, &op});
    }
    VisitOp(op, fn);
    if (host) {
      for (uint32_t i = 0; i < op.num_results; ++i) SetResult(op, i, MemoryKindName(MemoryKind::kPinnedHost));
    }
  }

  void VisitOp(const Operation& op, std::string_view fn) {
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
                "found \"" +
                    to_kind + "\"");
        }
      } else if (target == "AwsNeuronCustomNativeKernel") {
        m_->kernels.push_back(DecodeKernel(op, fn));
      } else if (IsReannotation(target) && op.operands.size() == op.num_results) {
        for (uint32_t i = 0; i < op.num_results; ++i) SetResult(op, i, Kind(op.operands[i]));
        return;
      }
      if (!to_kind.empty()) {
        if (op.operands.size() != 1) {
          Error(NEURONMEM_STATUS_INVALID_ARGUMENT, op.loc,
                "@" + target + " must have exactly one operand (the value to place), found " +
                    std::to_string(op.operands.size()));
        }
        Move mv;
        mv.function = fn;
        mv.value = Ref(op.operands[0]);
        if (Kind(op.operands[0]) == kSkipped) {
          Error(NEURONMEM_STATUS_UNIMPLEMENTED, op.loc,
                "@" + target + " moves " + mv.value + ", which comes from an op of a dialect the parser does not " +
                    "know and skipped (see the warnings): where it comes from is unknown");
        }
        if (!op.result_name.empty()) mv.result = "%" + std::string(op.result_name);
        mv.type = Spec(!op.operand_types.empty() ? op.operand_types[0]
                                                 : (!op.result_types.empty() ? op.result_types[0] : Type()));
        mv.from_kind = KindOf(op.operands[0]);
        mv.to_kind = to_kind;
        PlacementMemoryKind(mv.from_kind, &mv.from_memory_kind);
        PlacementMemoryKind(mv.to_kind, &mv.to_memory_kind);
        mv.spelling = target;
        mv.loc = {op.loc.line, op.loc.column};
        mv.ir_op = &op;
        m_->moves.push_back(std::move(mv));
        SetResult(op, 0, PlacementKindName(to_kind));
        return;
      }
    }
    if (op.name == "stablehlo.send" || op.name == "stablehlo.recv") m_->channels.push_back(DecodeChannel(op, fn));
    if (op.name == "func.call") {
      VisitCall(op, op.callee);
      return;
    }
    if (op.name == "stablehlo.composite") {  // runs as a call of its decomposition
      m_->composites.push_back(DecodeComposite(op, fn));
      VisitCall(op, m_->composites.back().decomposition);
      return;
    }
    if (!op.regions.empty()) {
      VisitRegions(op, fn);
      return;
    }
    if (KeepsOperandKinds(op.name)) {  // result i is operand i, re-annotated or re-viewed
      for (uint32_t i = 0; i < op.num_results; ++i) {
        SetResult(op, i, i < op.operands.size() ? Kind(op.operands[i]) : kDevice);
      }
      return;
    }
    if (op.name == "stablehlo.tuple") {  // the tuple keeps each element's kind
      for (uint32_t i = 0; i < op.operands.size(); ++i) kinds_.Set({op.result_name, 0, i + 1}, Kind(op.operands[i]));
      SetResult(op, 0, kDevice);
      return;
    }
    if (op.name == "stablehlo.get_tuple_element" && op.operands.size() == 1) {
      const stablehlo::ValueRef& t = op.operands[0];
      const int64_t index = TupleIndex(op);
      const std::string_view whole = Kind(t);
      SetResult(op, 0, index < 0 ? whole : kinds_.Get({t.name, t.index, static_cast<uint32_t>(index) + 1}, whole));
      return;
    }
    // Any other op computes new values on the device.
    for (uint32_t i = 0; i < op.num_results; ++i) SetResult(op, i, kDevice);
  }

  // An op the parser skipped (an unknown dialect's custom form) is harmless unless placement flows through
  // it: a value that is not on the device goes in, or what comes out (of unknown kind) is moved.
  void VisitSkipped(const Operation& op) {
    for (const auto& v : op.operands) {
      const std::string_view k = Kind(v);
      if (k == kDevice) continue;
      Error(NEURONMEM_STATUS_UNIMPLEMENTED, v.loc,
            (k == kSkipped ? std::string("a value of unknown kind (") : "a " + std::string(k) + " value (") + Ref(v) +
                ") flows into '" + std::string(op.name) +
                "', an op of a dialect the parser does not know and skipped; its placement cannot be followed");
    }
    for (uint32_t i = 0; i < op.num_results; ++i) SetResult(op, i, kSkipped);
  }

  static std::string Ref(const stablehlo::ValueRef& v) {
    return "%" + std::string(v.name) + (v.index ? "#" + std::to_string(v.index) : "");
  }

  // Ops that only re-annotate or re-view their operands: Shardy's sharding ops, optimization barriers, and
  // reshapes and bitcasts (the same bytes under another shape or element type).
  static bool KeepsOperandKinds(std::string_view name) {
    return name == "sdy.sharding_constraint" || name == "sdy.reshard" || name == "sdy.propagation_barrier" ||
           name == "stablehlo.optimization_barrier" || name == "stablehlo.reshape" ||
           name == "stablehlo.bitcast_convert";
  }

  // Custom calls that re-annotate their operands for the SPMD partitioner (GSPMD's, and Shardy's round trip).
  static bool IsReannotation(std::string_view target) {
    return target == "Sharding" || target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape" ||
           target == "xla.sdy.FuncResultSharding" || target == "xla.sdy.GlobalToLocalShape" ||
           target == "xla.sdy.LocalToGlobalShape" || target == "xla.sdy.PropagationBarrier";
  }

  // get_tuple_element's index (the parser decodes the pretty form's `%t[N]` into it too); -1 if absent.
  static int64_t TupleIndex(const Operation& op) {
    const Attribute* a = Find(op.attributes, "index");
    return a && a->kind == Attribute::Kind::kInt ? a->i : -1;
  }

  // A call: the callee is walked with the kinds of the operands (at its first call) and its results come
  // back in the kinds it returns them in. Calls nested deeper than the parser's limit are walked last.
  // The composite's name (generic `name = "..."` or the pretty form's leading string), decomposition, version
  // and composite_attributes.
  static Composite DecodeComposite(const Operation& op, std::string_view fn) {
    Composite c;
    c.function = fn;
    if (const Attribute* n = Find(op.attributes, "name")) {
      c.name = n->str;
    } else {
      for (const auto& [key, a] : op.attributes)
        if (key.empty() && a.kind == Attribute::Kind::kString) {
          c.name = a.str;
          break;
        }
    }
    if (const Attribute* d = Find(op.attributes, "decomposition")) c.decomposition = d->str;
    if (const Attribute* v = Find(op.attributes, "version")) c.version = v->i;
    if (const Attribute* a = Find(op.attributes, "composite_attributes"))
      for (const auto& [key, value] : a->dict) c.attributes.emplace_back(key, AttrText(value));
    c.loc = {op.loc.line, op.loc.column};
    return c;
  }

  void VisitCall(const Operation& op, std::string_view callee) {
    const stablehlo::Function* g = callee.empty() ? nullptr : functions_->Find(callee);
    if (g && !walked_.count(g)) {
      if (depth_ < stablehlo::kMaxDepth) {
        Kinds operand_kinds;
        for (const auto& v : op.operands) operand_kinds.push_back(Kind(v));
        WalkFunction(*g, operand_kinds);
      } else {
        walked_[g];
        deferred_.push_back(g);
      }
    }
    const Kinds* returned = g ? &walked_[g] : nullptr;
    for (uint32_t i = 0; i < op.num_results; ++i) {
      SetResult(op, i, returned && i < returned->size() ? (*returned)[i] : kDevice);
    }
  }

  // An op with regions. Where the regions' entry arguments are the operands (while's loop values, Shardy's
  // manual_computation and named_computation), they get the operands' kinds. Results: a while loop's are its
  // operands'; if, case and Shardy's region ops return what their regions return; other ops (reduce, sort,
  // map, ...) compute on the device.
  void VisitRegions(const Operation& op, std::string_view fn) {
    const bool is_while = op.name == "stablehlo.while";
    const bool sdy = op.name == "sdy.manual_computation" || op.name == "sdy.named_computation";
    const bool branches = op.name == "stablehlo.if" || op.name == "stablehlo.case";
    Kinds operand_kinds;
    if (is_while || sdy) {
      for (const auto& v : op.operands) operand_kinds.push_back(Kind(v));
    }
    Kinds merged, returned;
    bool first = true;
    for (const stablehlo::Region& r : op.regions) {
      returned.clear();
      WalkRegion(r, fn, operand_kinds, &returned);
      if (!branches && !sdy) continue;
      if (first) {
        merged = returned;
      } else {
        for (size_t i = 0; i < merged.size(); ++i) {
          if (i >= returned.size() || returned[i] != merged[i]) merged[i] = kDevice;
        }
      }
      first = false;
    }
    const Kinds& results = is_while ? operand_kinds : merged;
    for (uint32_t i = 0; i < op.num_results; ++i) SetResult(op, i, i < results.size() ? results[i] : kDevice);
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
    k.ir_op = &op;
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
    // The schema, field by field: INVALID_ARGUMENT naming the field, never a JSON library exception.
    const auto bad = [&](const std::string& field, const nlohmann::json& v, const char* want) {
      std::string shown = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
      Error(NEURONMEM_STATUS_INVALID_ARGUMENT, op.loc,
            "AwsNeuronCustomNativeKernel backend_config: " + field + " is " + shown + ", not " + want);
    };
    const auto it = j.find("func_name");
    if (it == j.end())
      Error(NEURONMEM_STATUS_INVALID_ARGUMENT, op.loc, "AwsNeuronCustomNativeKernel backend_config has no func_name");
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) bad("func_name", *it, "a non-empty string");
    k.func_name = it->get<std::string>();
    if (j.contains("grid")) {
      const auto& grid = j["grid"];
      if (!grid.is_array()) bad("grid", grid, "an array of positive integers");
      for (size_t i = 0; i < grid.size(); ++i) {
        const auto& g = grid[i];
        // is_number_integer: never a float (1e300, 2.0), a string or an array; a value above INT64_MAX is
        // unsigned and refused by its range.
        const bool positive = g.is_number_unsigned()
                                  ? g.get<uint64_t>() >= 1 && g.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)
                                  : g.is_number_integer() && g.get<int64_t>() >= 1;
        if (!positive) bad("grid[" + std::to_string(i) + "]", g, "a positive integer");
        k.grid.push_back(g.get<int64_t>());
      }
    }
    if (j.contains("klir_binary")) {
      const auto& kb = j["klir_binary"];
      if (!kb.is_object()) bad("klir_binary", kb, "an object");
      if (kb.contains("binary")) {
        if (!kb["binary"].is_string()) bad("klir_binary.binary", kb["binary"], "a string");
        k.binary = kb["binary"].get<std::string>();
      }
      for (const char* key : {"input_names", "output_names"}) {
        if (!kb.contains(key)) continue;
        const auto& names = kb[key];
        const std::string field = std::string("klir_binary.") + key;
        if (!names.is_array()) bad(field, names, "an array of strings");
        for (size_t i = 0; i < names.size(); ++i) {
          if (!names[i].is_string()) bad(field + "[" + std::to_string(i) + "]", names[i], "a string");
          (std::string(key) == "input_names" ? k.input_names : k.output_names).push_back(names[i]);
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
    c.ir_op = &op;
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
    if (c.type == 2 && (!send || !c.is_host_transfer))
      problem = "a device-to-host channel (type 2) must be a send with is_host_transfer = true";
    if (c.type == 3 && (send || !c.is_host_transfer))
      problem = "a host-to-device channel (type 3) must be a recv with is_host_transfer = true";
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
  static constexpr std::string_view kDevice = "device";
  static constexpr std::string_view kSkipped = "unknown";  // the results of a skipped op
  const stablehlo::Module* module_ = nullptr;
  const stablehlo::FunctionIndex* functions_ = nullptr;  // module_'s, while Derive runs
  ValueKinds kinds_;
  std::map<const stablehlo::Function*, Kinds> walked_;  // the kinds each walked function returns
  std::vector<const stablehlo::Function*> deferred_;
  int depth_ = 0;  // regions and calls being walked
  std::map<std::string, uint64_t> targets_;
};

}  // namespace

const char* PolicyName(Policy p) { return p == Policy::kTorchNeuronx ? "torch-neuronx" : "device"; }

bool IsHostCompute(const stablehlo::NamedAttrs& attributes) {
  const Attribute* fa = Find(attributes, "mhlo.frontend_attributes");
  const Attribute* ct = fa ? fa->Get("_xla_compute_type") : nullptr;
  return ct && ct->kind == Attribute::Kind::kString && ct->str == "host";
}

bool RunsOnHost(const stablehlo::Module& module, const stablehlo::Operation& op) {
  if (IsHostCompute(op.attributes)) return true;
  if (op.name != "func.call" || op.callee.empty()) return false;  // the parser reads a generic form's callee too
  const stablehlo::Function* callee = module.FindFunction(op.callee);
  return callee && IsHostCompute(callee->attributes);
}

bool RunsOnHost(const stablehlo::FunctionIndex& functions, const stablehlo::Operation& op) {
  if (IsHostCompute(op.attributes)) return true;
  if (op.name != "func.call" || op.callee.empty()) return false;
  const stablehlo::Function* callee = functions.Find(op.callee);
  return callee && IsHostCompute(callee->attributes);
}

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
    if (mod.FindFunction(options.entry))
      return Derive(std::make_shared<const stablehlo::Module>(std::move(mod)), options, out);
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
