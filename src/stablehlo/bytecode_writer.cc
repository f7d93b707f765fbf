// IR -> StableHLO portable artifact (bytecode.h's WriteBytecode): the container and the IR. The layout is
// what MLIR's BytecodeWriter.cpp emits at bytecode version 6 and StableHLO 1.x artifacts have: header, then
// the dialect, attribute/type offset, attribute/type, IR, resource offset, resource, string and properties
// sections in that order; vhlo ops keep every attribute in their properties, sorted by name.
#include <algorithm>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <unordered_set>
#include <vector>

#include "stablehlo/bytecode_writer.h"
#include "stablehlo/parser.h"

namespace neuronmem::stablehlo {
namespace bytecode {

void Emitter::VarInt(uint64_t v) {
  if ((v >> 7) == 0) {
    Byte(static_cast<uint8_t>(v << 1 | 1));
    return;
  }
  for (unsigned n = 2; n < 9; ++n) {
    if ((v >> (7 * n)) == 0) {
      const uint64_t enc = (v << 1 | 1) << (n - 1);
      for (unsigned i = 0; i < n; ++i) Byte(static_cast<uint8_t>(enc >> (8 * i)));
      return;
    }
  }
  Byte(0);
  for (unsigned i = 0; i < 8; ++i) Byte(static_cast<uint8_t>(v >> (8 * i)));
}

std::string EntryBytes::Key(bool is_type) const {
  std::string k;
  k.push_back(is_type ? 'T' : 'A');
  k.push_back(static_cast<char>(dialect));
  for (const Piece& p : pieces) {
    if (p.ref) {
      k.push_back(p.ref == 1 ? '\x01' : '\x02');
      k.append(reinterpret_cast<const char*>(&p.id), sizeof p.id);
    } else {
      const uint64_t n = p.raw.size();
      k.push_back('\x00');
      k.append(reinterpret_cast<const char*>(&n), sizeof n);
      k += p.raw;
    }
  }
  return k;
}

Writer::Writer(const Module& m, const BytecodeWriteOptions& options) : m_(m), options_(options) {
  std::memcpy(version_, options.target, sizeof version_);
}

uint32_t Writer::StringId(std::string_view s) {
  auto it = string_ids_.find(std::string(s));
  if (it != string_ids_.end()) return it->second;
  if (final_) Refuse("internal: a string first met in the second pass");
  const uint32_t id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  string_ids_.emplace(std::string(s), id);
  return id;
}

uint32_t Writer::Intern(EntryBytes&& e, bool is_type) {
  const int t = is_type ? 1 : 0;
  const std::string key = e.Key(is_type);
  auto it = entry_ids_[t].find(key);
  if (it != entry_ids_[t].end()) return it->second;
  if (final_) Refuse("internal: an attribute or type first met in the second pass");
  const uint32_t id = static_cast<uint32_t>(entries_[t].size());
  entries_[t].push_back(std::move(e));
  entry_ids_[t].emplace(key, id);
  return id;
}

uint32_t Writer::FinalId(bool is_type, uint32_t provisional) const {
  return final_ ? final_ids_[is_type ? 1 : 0][provisional] : provisional;
}

uint32_t Writer::OpNameId(uint8_t dialect, std::string_view name) {
  const std::string key = std::string(1, static_cast<char>(dialect)) + std::string(name);
  auto it = op_name_ids_.find(key);
  if (it != op_name_ids_.end()) return final_ ? op_name_final_[it->second] : it->second;
  if (final_) Refuse("internal: an op name first met in the second pass");
  const uint32_t id = static_cast<uint32_t>(op_names_.size());
  op_names_.push_back({dialect, StringId(name)});
  op_name_ids_.emplace(key, id);
  return id;
}

uint32_t Writer::PropertiesId(const std::string& blob) {
  auto it = property_ids_.find(blob);
  if (it != property_ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(properties_.size());
  properties_.push_back(blob);
  property_ids_.emplace(blob, id);
  return id;
}

// The vhlo op for an IR op at the target version: the newest version of its name that exists there.
const VhloOp& Writer::VhloFor(std::string_view ir_name) const {
  std::string_view base;
  if (ir_name == "func.return" || ir_name == "stablehlo.return") {
    base = "return";
  } else if (ir_name == "func.call") {
    base = "call";
  } else if (ir_name.substr(0, 10) == "stablehlo.") {
    base = ir_name.substr(10);
  } else {
    Refuse("the op " + std::string(ir_name) + " has no vhlo form (only stablehlo and func ops are written)");
  }
  const VhloOp* best = nullptr;
  bool any = false;
  Version target;
  std::memcpy(target.v, version_, sizeof target.v);
  for (const VhloOp& v : VhloOps()) {
    const size_t us = v.name.rfind("_v");
    if (us == std::string_view::npos || v.name.substr(0, us) != base) continue;
    any = true;
    if (target.Compare(v.min) < 0 || (v.max[0] != 99 && target.Compare(v.max) > 0)) continue;
    best = &v;  // the table is sorted by name: a later version comes later
  }
  if (!best) {
    Refuse("the op " + std::string(ir_name) +
           (any ? " does not exist in StableHLO " + target.ToString() : std::string(" has no vhlo form")));
  }
  return *best;
}

namespace {

// The names the pretty form gives attributes (`stablehlo.broadcast_in_dim %x, dims = [0]`), by op: the
// generic names vhlo has.
std::string_view GenericName(std::string_view op, std::string_view name) {
  struct Alias {
    const char* op;
    const char* pretty;
    const char* generic;
  };
  static const Alias kAliases[] = {
      {"stablehlo.broadcast_in_dim", "dims", "broadcast_dimensions"},
      {"stablehlo.dynamic_broadcast_in_dim", "dims", "broadcast_dimensions"},
      {"stablehlo.concatenate", "dim", "dimension"},
      {"stablehlo.get_dimension_size", "dim", "dimension"},
      {"stablehlo.set_dimension_size", "dim", "dimension"},
      {"stablehlo.iota", "dim", "iota_dimension"},
      {"stablehlo.dynamic_iota", "dim", "iota_dimension"},
      {"stablehlo.transpose", "dims", "permutation"},
      {"stablehlo.reverse", "dims", "dimensions"},
      {"stablehlo.reduce", "dims", "dimensions"},
      {"stablehlo.pad", "low", "edge_padding_low"},
      {"stablehlo.pad", "high", "edge_padding_high"},
      {"stablehlo.pad", "interior", "interior_padding"},
      {"stablehlo.fft", "type", "fft_type"},
      {"stablehlo.fft", "length", "fft_length"},
      {"stablehlo.dynamic_slice", "sizes", "slice_sizes"},
      {"stablehlo.sort", "dim", "dimension"},
      {"stablehlo.dot_general", "precision", "precision_config"},
      {"stablehlo.dot", "precision", "precision_config"},
      {"stablehlo.convolution", "precision", "precision_config"},
  };
  for (const Alias& a : kAliases) {
    if (op == a.op && name == a.pretty) return a.generic;
  }
  return name;
}

}  // namespace

// --- The IR -------------------------------------------------------------------------------------------------

uint64_t Writer::ValueOf(const ValueRef& v) {
  auto it = values_.find(v.name);
  if (it == values_.end()) Refuse("the value %" + std::string(v.name) + " is used but never defined");
  auto p = pending_.find(v.name);
  if (p != pending_.end() && p->second > 0)
    Refuse("the value %" + std::string(v.name) + " is used before its definition");
  if (v.index >= it->second.count) {
    Refuse("the value %" + std::string(v.name) + "#" + std::to_string(v.index) + " is used, but %" +
           std::string(v.name) + " names " + std::to_string(it->second.count) + " value(s)");
  }
  return it->second.id + v.index;
}

void Writer::WriteRegion(const Region& r, Span<Argument> entry_args, bool isolated, Emitter* out) {
  if (++depth_ > kMaxDepth) Refuse("regions nest deeper than " + std::to_string(kMaxDepth));
  if (r.blocks.empty()) {
    out->VarInt(0);
    --depth_;
    return;
  }
  if (r.blocks.size() > 1) Refuse("a region with several blocks (successors are not written)");
  const Block& b = r.blocks[0];
  if (isolated && !b.args.empty() && b.args.size() != entry_args.size()) {
    Refuse("a function's entry block has " + std::to_string(b.args.size()) + " arguments, the function " +
           std::to_string(entry_args.size()));
  }
  const Span<Argument> args = entry_args.empty() ? b.args : entry_args;
  const uint64_t saved_next = next_value_;
  if (isolated) next_value_ = 0;
  const size_t undo_mark = undo_.size();
  std::unordered_set<std::string_view> here;  // names this block defines: each once
  auto define = [&](std::string_view name, uint64_t id, uint64_t count) {
    if (!here.insert(name).second) Refuse("the value %" + std::string(name) + " is defined twice");
    auto it = values_.find(name);
    undo_.emplace_back(name, it == values_.end() ? Named{} : it->second);
    values_[name] = Named{id, count};
  };
  // This region's values: its arguments, then its ops' results (nested regions number after them).
  const uint64_t base = next_value_;
  uint64_t n = base;
  for (const Argument& a : args) define(a.name, n++, 1);
  // An op's results are pending until it is written (a use before then is refused: the reader resolves names
  // in order).
  auto results = [](const Operation& op, const std::function<void(std::string_view)>& fn) {
    if (op.num_results == 0) return;
    if (!op.result_names.empty()) {
      for (std::string_view name : op.result_names) fn(name);
    } else {
      fn(op.result_name);
    }
  };
  for (const Operation& op : b.ops) {
    if (op.num_results == 0) continue;
    if (!op.result_names.empty()) {
      for (std::string_view name : op.result_names) define(name, n++, 1);
    } else {
      define(op.result_name, n, op.num_results);
      n += op.num_results;
    }
    results(op, [&](std::string_view name) { ++pending_[name]; });
  }
  next_value_ = n;
  out->VarInt(1);
  out->VarInt(n - base);
  out->VarIntWithFlag(b.ops.size(), !args.empty());
  if (!args.empty()) {
    out->VarInt(args.size());
    for (const Argument& a : args) {
      const bool has_loc = a.loc.line != 0;
      out->VarIntWithFlag(FinalId(true, TypeId(a.type)), has_loc);
      if (has_loc) out->VarInt(FinalId(false, LocationId(a.loc)));
    }
    out->Byte(0);  // no use-list orders
  }
  for (const Operation& op : b.ops) {
    // vhlo has one return op: which one it was follows from where it is (read back as func.return in a
    // function's body, stablehlo.return in an op's region), so the other one there could not read back.
    if (op.name == (isolated ? "stablehlo.return" : "func.return")) {
      Refuse("the op " + std::string(op.name) + " at line " + std::to_string(op.loc.line) + " is in " +
             (isolated ? "a function's body" : "an op's region") + ", where it cannot be written");
    }
    WriteOp(op, false, out);
    results(op, [&](std::string_view name) { --pending_[name]; });
  }
  for (size_t i = undo_.size(); i > undo_mark; --i) {
    const auto& u = undo_[i - 1];
    if (u.second.count == 0) {
      values_.erase(u.first);
    } else {
      values_[u.first] = u.second;
    }
  }
  undo_.resize(undo_mark);
  next_value_ = saved_next;
  --depth_;
}

void Writer::WriteOp(const Operation& op, bool function_body, Emitter* out) {
  (void)function_body;
  if (op.skipped) Refuse("the op " + std::string(op.name) + " was skipped by the parser (its form is unknown)");
  const VhloOp& v = VhloFor(op.name);
  if (op.result_types.size() != op.num_results) {
    Refuse("the op " + std::string(op.name) + " lacks the types of its results");
  }
  const std::string where = std::string(op.name) + " at line " + std::to_string(op.loc.line);
  // Properties: every attribute of the vhlo op, in its order; the rest is the discardable dictionary.
  Emitter props;
  std::vector<NamedAttr> discardable;
  std::vector<bool> used(op.attributes.size(), false);
  const VhloOpInfo& info = InfoOf(v);
  const Group* group = info.group >= 0 ? &kGroups[static_cast<size_t>(info.group)] : nullptr;
  const Attribute* grouped = group ? Find(op.attributes, group->key) : nullptr;
  // Attributes vhlo flattens: a group's members, a channel handle's id and type, a dot algorithm's members.
  bool has_channel = false;
  for (int k = 0; k < v.num_attrs; ++k) has_channel |= v.attrs[k] == "channel_id";
  for (size_t i = 0; i < op.attributes.size(); ++i) {
    const std::string_view n = op.attributes[i].first;
    used[i] = (group && n == group->key) || (has_channel && n == "channel_handle") ||
              (n == "algorithm" && info.ir_name == "stablehlo.dot_general");
  }
  for (int k = 0; k < v.num_attrs; ++k) {
    const std::string_view name = v.attrs[k];
    const Attribute* a = nullptr;
    for (size_t i = 0; i < op.attributes.size(); ++i) {
      if (GenericName(op.name, op.attributes[i].first) == name) {
        a = &op.attributes[i].second;
        used[i] = true;
        break;
      }
    }
    if (!a && grouped && group &&
        std::find(group->members.begin(), group->members.end(), name) != group->members.end()) {
      a = grouped->Get(name);
    }
    Attribute scratch;
    if (!a && !info.callee_key.empty() && name == info.callee_key && !op.callee.empty()) {
      scratch.kind = Attribute::Kind::kString;
      scratch.str = op.callee;
      a = &scratch;
    }
    if (!a) {
      if (!DefaultAttr(v, name, &op, &scratch)) {
        std::string has;
        for (const NamedAttr& kv : op.attributes) has += (has.empty() ? "" : ", ") + std::string(kv.first);
        Refuse(where + ": vhlo." + std::string(v.name) + " requires the attribute " + std::string(name) +
               ", which the op does not have (it has: " + (has.empty() ? "none" : has) + ") and which has no default");
      }
      a = &scratch;
    }
    props.VarInt(FinalId(false, AttrId(*a, name, op.name)));
  }
  // A grouped member the target's version lacks (gather's batching dimensions before 1.1.0) must be empty.
  for (size_t m = 0; grouped && m < grouped->dict.size(); ++m) {
    const NamedAttr& kv = grouped->dict[m];
    bool known = false;
    for (int k = 0; k < v.num_attrs; ++k) known |= v.attrs[k] == kv.first;
    const bool empty = kv.second.kind == Attribute::Kind::kArray   ? kv.second.array.empty()
                       : kv.second.kind == Attribute::Kind::kDense ? kv.second.dense.empty()
                                                                   : false;
    if (!known && !empty) {
      Refuse(where + ": " + std::string(kv.first) + " does not exist in vhlo." + std::string(v.name) +
             ", the version of the op at StableHLO " + std::to_string(version_[0]) + "." + std::to_string(version_[1]) +
             "." + std::to_string(version_[2]));
    }
  }
  // Attributes of other versions of the op are refused unless they hold the default the target implies.
  for (size_t i = 0; i < op.attributes.size(); ++i) {
    if (used[i]) continue;
    const std::string_view name = op.attributes[i].first;
    bool other_version = false;
    for (const VhloOp& o : VhloOps()) {
      if (&o == &v || InfoOf(o).ir_name != info.ir_name) continue;
      for (int k = 0; k < o.num_attrs; ++k) other_version |= o.attrs[k] == name;
    }
    if (other_version) {
      Refuse(where + ": the attribute " + std::string(name) + " does not exist in vhlo." + std::string(v.name) +
             ", the version of the op at StableHLO " + std::to_string(version_[0]) + "." + std::to_string(version_[1]) +
             "." + std::to_string(version_[2]));
    }
    discardable.push_back(op.attributes[i]);
  }
  uint8_t mask = kHasProperties;
  Emitter body;
  if (!discardable.empty()) {
    mask |= kHasAttrs;
    body.VarInt(FinalId(false, DiscardableDictId(Span<NamedAttr>(discardable.data(), discardable.size()), op.name)));
  }
  body.VarInt(PropertiesId(props.str()));
  if (op.num_results) {
    mask |= kHasResults;
    body.VarInt(op.result_types.size());
    for (const Type& t : op.result_types) body.VarInt(FinalId(true, TypeId(t)));
  }
  if (!op.operands.empty()) {
    mask |= kHasOperands;
    body.VarInt(op.operands.size());
    for (const ValueRef& r : op.operands) body.VarInt(ValueOf(r));
  }
  Emitter regions;
  if (!op.regions.empty()) {
    mask |= kHasInlineRegions;
    regions.VarIntWithFlag(op.regions.size(), false);
    for (const Region& r : op.regions) WriteRegion(r, Span<Argument>(), false, &regions);
  }
  out->VarInt(OpNameId(kVhloDialect, v.name));
  out->Byte(mask);
  out->VarInt(FinalId(false, LocationId(op.loc)));
  out->str() += body.str();
  out->str() += regions.str();
}

void Writer::WriteFunction(const Function& f, Emitter* out) {
  const VhloOp& v = VhloFor("stablehlo.func");
  Emitter props;
  for (int k = 0; k < v.num_attrs; ++k) {
    const std::string_view name = v.attrs[k];
    Attribute a;
    if (name == "arg_attrs" || name == "res_attrs") {
      const bool args = name == "arg_attrs";
      const size_t n = args ? f.args.size() : f.result_attrs.size();
      bool any = false;
      for (size_t i = 0; i < n; ++i) any |= !(args ? f.args[i].attrs : f.result_attrs[i]).empty();
      std::vector<Attribute> dicts;
      for (size_t i = 0; any && i < n; ++i) {
        Attribute d;
        d.kind = Attribute::Kind::kDict;
        d.dict = args ? f.args[i].attrs : f.result_attrs[i];
        dicts.push_back(d);
      }
      a.kind = Attribute::Kind::kArray;
      a.array = scratch_->Copy(dicts);
    } else if (name == "function_type") {
      std::vector<Type> io;
      for (const Argument& arg : f.args) io.push_back(arg.type);
      io.insert(io.end(), f.result_types.begin(), f.result_types.end());
      a.kind = Attribute::Kind::kType;
      a.type.kind = Type::Kind::kFunction;
      a.type.num_inputs = f.args.size();
      a.type.elements = scratch_->Copy(io);
    } else if (name == "sym_name") {
      a.kind = Attribute::Kind::kString;
      a.str = f.name;
    } else if (name == "sym_visibility") {
      a.kind = Attribute::Kind::kString;
      a.str = f.visibility == "public" ? std::string_view() : f.visibility;
    } else {
      Refuse("function @" + std::string(f.name) + ": vhlo." + std::string(v.name) + " has an attribute " +
             std::string(name) + " this writer does not know");
    }
    props.VarInt(FinalId(false, AttrId(a, name, "func.func")));
  }
  uint8_t mask = kHasProperties | kHasInlineRegions;
  Emitter body;
  if (!f.attributes.empty()) {
    mask |= kHasAttrs;
    body.VarInt(FinalId(false, DiscardableDictId(f.attributes, "func.func")));
  }
  body.VarInt(PropertiesId(props.str()));
  body.VarIntWithFlag(1, true);  // one region, isolated from above: in a nested IR section
  Emitter region;
  WriteRegion(f.body, f.args, true, &region);
  body.Section(kIR, region.str());
  out->VarInt(OpNameId(kVhloDialect, v.name));
  out->Byte(mask);
  out->VarInt(FinalId(false, LocationId(f.loc)));
  out->str() += body.str();
}

void Writer::WriteModule(Emitter* ir) {
  if (!m_.other_ops.empty()) {
    Refuse("the module has a top-level op " + std::string(m_.other_ops[0].name) + " that is not a function");
  }
  // The top block: one op, builtin.module, with its optional sym_name and sym_visibility properties.
  ir->VarIntWithFlag(1, false);
  ir->VarInt(OpNameId(kBuiltinDialect, "module"));
  uint8_t mask = kHasProperties | kHasInlineRegions;
  Emitter body;
  if (!m_.attributes.empty()) {
    mask |= kHasAttrs;
    body.VarInt(FinalId(false, DiscardableDictId(m_.attributes, "builtin.module")));
  }
  Emitter props;
  if (m_.name.empty()) {
    props.VarIntWithFlag(0, false);
  } else {
    props.VarIntWithFlag(FinalId(false, StringAttrId(m_.name, true)), true);
  }
  props.VarIntWithFlag(0, false);
  body.VarInt(PropertiesId(props.str()));
  body.VarIntWithFlag(1, true);
  Emitter region;
  region.VarInt(1);  // one block
  region.VarInt(0);  // no values
  region.VarIntWithFlag(m_.functions.size(), false);
  for (const Function& f : m_.functions) WriteFunction(f, &region);
  body.Section(kIR, region.str());
  ir->Byte(mask);
  ir->VarInt(FinalId(false, LocationId(m_.loc)));
  ir->str() += body.str();
}

// Orders the tables as MLIR does (op names and attributes/types grouped by dialect) and fixes the ids.
void Writer::Finalize() {
  std::vector<uint32_t> order(op_names_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return op_names_[a].dialect < op_names_[b].dialect; });
  op_name_final_.assign(order.size(), 0);
  std::vector<OpName> names;
  for (uint32_t i = 0; i < order.size(); ++i) {
    op_name_final_[order[i]] = i;
    names.push_back(op_names_[order[i]]);
  }
  op_names_ = names;
  for (int t = 0; t < 2; ++t) {
    std::vector<uint32_t>& o = order_[t];
    o.resize(entries_[t].size());
    for (uint32_t i = 0; i < o.size(); ++i) o[i] = i;
    std::stable_sort(o.begin(), o.end(),
                     [&](uint32_t a, uint32_t b) { return entries_[t][a].dialect < entries_[t][b].dialect; });
    final_ids_[t].assign(o.size(), 0);
    for (uint32_t i = 0; i < o.size(); ++i) final_ids_[t][o[i]] = i;
  }
  properties_.clear();
  property_ids_.clear();
  final_ = true;
}

std::string Writer::Write() {
  Version target;
  std::memcpy(target.v, version_, sizeof target.v);
  if (target.Compare(kBytecodeNewestVersion) > 0 || target.Compare(kBytecodeOldestVersion) < 0) {
    Refuse("the target StableHLO " + target.ToString() + " is outside the versions this writer knows, " +
           VersionString(kBytecodeOldestVersion) + " to " + VersionString(kBytecodeNewestVersion));
  }
  // The dialects, as the reader and MLIR expect them: builtin first, then vhlo.
  StringId("builtin");
  StringId("vhlo");
  Emitter ir;
  WriteModule(&ir);  // the first pass: collects the tables
  Finalize();
  ir = Emitter();
  WriteModule(&ir);  // the second pass: the IR with final ids

  Emitter dialects;
  dialects.VarInt(2);
  dialects.VarIntWithFlag(StringId("builtin"), false);
  dialects.VarIntWithFlag(StringId("vhlo"), false);
  dialects.VarInt(op_names_.size());
  for (size_t i = 0; i < op_names_.size();) {
    size_t j = i;
    while (j < op_names_.size() && op_names_[j].dialect == op_names_[i].dialect) ++j;
    dialects.VarInt(op_names_[i].dialect);
    dialects.VarInt(j - i);
    for (size_t k = i; k < j; ++k) dialects.VarIntWithFlag(op_names_[k].name, true);
    i = j;
  }

  Emitter attr_types, offsets;
  offsets.VarInt(entries_[0].size());
  offsets.VarInt(entries_[1].size());
  for (int t = 0; t < 2; ++t) {
    const std::vector<uint32_t>& o = order_[t];
    for (size_t i = 0; i < o.size();) {
      size_t j = i;
      const uint8_t d = entries_[t][o[i]].dialect;
      while (j < o.size() && entries_[t][o[j]].dialect == d) ++j;
      offsets.VarInt(d);
      offsets.VarInt(j - i);
      for (size_t k = i; k < j; ++k) {
        Emitter e;
        for (const EntryBytes::Piece& p : entries_[t][o[k]].pieces) {
          if (p.ref) {
            e.VarInt(FinalId(p.ref == 2, p.id));
          } else {
            e.str() += p.raw;
          }
        }
        offsets.VarIntWithFlag(e.str().size(), true);
        attr_types.str() += e.str();
      }
      i = j;
    }
  }

  Emitter strings;
  strings.VarInt(strings_.size());
  for (size_t i = strings_.size(); i > 0; --i) strings.VarInt(strings_[i - 1].size() + 1);
  for (const std::string& s : strings_) strings.Bytes(s.c_str(), s.size() + 1);

  Emitter props;
  props.VarInt(properties_.size());
  for (const std::string& p : properties_) {
    props.VarInt(p.size());
    props.str() += p;
  }

  Emitter file;
  file.Bytes("ML\xefR", 4);
  file.VarInt(kMaxBytecodeVersion);
  const std::string producer = "StableHLO_v" + target.ToString();
  file.Bytes(producer.c_str(), producer.size() + 1);
  file.Section(kDialect, dialects.str());
  file.Section(kAttrTypeOffset, offsets.str());
  file.Section(kAttrType, attr_types.str());
  file.Section(kIR, ir.str());
  Emitter no_resources;
  no_resources.VarInt(0);  // no external resource groups
  file.Section(kResourceOffset, no_resources.str());
  file.Section(kResource, std::string());
  file.Section(kString, strings.str());
  file.Section(kProperties, props.str());
  return std::move(file.str());
}

}  // namespace bytecode

Status ParseBytecodeTarget(std::string_view version, int (&target)[3]) {
  int v[3] = {0, 0, 0};
  std::string_view s = version;
  for (int i = 0; i < 3; ++i) {
    size_t n = 0;
    long value = 0;
    while (n < s.size() && s[n] >= '0' && s[n] <= '9' && value < 100000) value = value * 10 + (s[n++] - '0');
    if (n == 0 || (i < 2 && (n >= s.size() || s[n] != '.')) || (i == 2 && n != s.size())) {
      return InvalidArgument("expected a StableHLO version major.minor.patch (%s to %s), found \"%.*s\"",
                             bytecode::VersionString(kBytecodeOldestVersion).c_str(),
                             bytecode::VersionString(kBytecodeNewestVersion).c_str(), static_cast<int>(version.size()),
                             version.data());
    }
    v[i] = static_cast<int>(value);
    s.remove_prefix(std::min(s.size(), n + (i < 2 ? 1 : 0)));
  }
  bytecode::Version ver;
  std::memcpy(ver.v, v, sizeof v);
  if (ver.Compare(kBytecodeNewestVersion) > 0 || ver.Compare(kBytecodeOldestVersion) < 0) {
    return InvalidArgument("the StableHLO version %s is outside the versions written, %s to %s", ver.ToString().c_str(),
                           bytecode::VersionString(kBytecodeOldestVersion).c_str(),
                           bytecode::VersionString(kBytecodeNewestVersion).c_str());
  }
  std::memcpy(target, v, sizeof v);
  return Ok();
}

Status WriteBytecode(const Module& m, const BytecodeWriteOptions& options, std::string* out) {
  try {
    bytecode::Writer w(m, options);
    *out = w.Write();
    return Ok();
  } catch (const bytecode::WriteError& e) {
    return InvalidArgument("cannot write the module as a StableHLO artifact: %s", e.message.c_str());
  } catch (const std::bad_alloc&) {
    return Status(OutOfMemoryStatus());
  }
}

}  // namespace neuronmem::stablehlo
