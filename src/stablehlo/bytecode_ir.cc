// The artifact reader's IR (bytecode_reader.h): regions, blocks and ops with their values (forward
// references patched when defined, scopes of ops isolated from above), and the mapping of vhlo ops onto the
// IR the text parser produces: `vhlo.X_vN` -> `stablehlo.X`, `func_v1` -> a Function, grouped attributes.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "stablehlo/bytecode_reader.h"
#include "stablehlo/parser.h"

namespace neuronmem::stablehlo::bytecode {

const Reader::OpName& Reader::ReadOpName(Cursor* c) {
  const size_t at = c->Offset();
  const uint64_t i = c->VarInt("an op name");
  if (i >= op_names_.size()) {
    FailAt(at, "expected an op name index below " + std::to_string(op_names_.size()) + ", found " + std::to_string(i));
  }
  return op_names_[i];
}

void Reader::UseListOrders(Cursor* c, uint64_t range_size) {
  uint64_t n = 1;
  if (range_size > 1) n = c->Count("a use-list order count");
  for (uint64_t i = 0; i < n; ++i) {
    if (range_size > 1) c->VarInt("a use-list value index");
    bool pairs = false;
    const uint64_t m = c->VarIntWithFlag(&pairs, "a use-list length");
    if (m > c->Left()) c->Truncated("use-list indices");
    for (uint64_t k = 0; k < m; ++k) c->VarInt("a use-list index");
  }
}

void Reader::DefineValue(RegionState* rs, ValueRef ref, const Type* type, size_t offset) {
  Scope& s = scopes_.back();
  if (rs->next_value >= rs->end_value) {
    FailAt(offset, "the region defines more values than the " + std::to_string(rs->end_value) + " its header counts");
  }
  Slot& slot = s.values[rs->next_value];
  slot.defined = true;
  slot.ref = ref;
  slot.type = type;
  const size_t index = rs->next_value++;
  (void)index;
  // Patch the forward references to this value.
  for (uint32_t u = slot.waiting; u != kNoUse; u = s.pending[u].next) {
    ValueRef* use = s.pending[u].use;
    const Location loc = use->loc;
    *use = ref;
    use->loc = loc;
    *s.pending[u].type = *type;
  }
  slot.waiting = kNoUse;
}

// At the end of a region: it defined as many values as its header counts, and no use waits for one.
void Reader::EndRegionValues(Cursor* c, const RegionState& rs, uint64_t num_values) {
  if (rs.next_value != rs.end_value) {
    c->Fail("the region's header counts " + std::to_string(num_values) + " values, but it defines " +
            std::to_string(num_values - (rs.end_value - rs.next_value)));
  }
  Scope& s = scopes_.back();
  const size_t base = rs.end_value - num_values;
  for (size_t i = base; i < rs.end_value; ++i) {
    if (s.values[i].waiting != kNoUse) c->Fail("an operand refers to value #" + std::to_string(i) + ", never defined");
  }
  s.values.resize(base);
  live_values_ -= num_values;
}

void Reader::ReadOp(Cursor* c, RegionState* rs, int depth, bool function_body, RawOp* op, bool* isolated,
                    uint64_t* num_regions) {
  (void)function_body;
  (void)depth;
  op->name = &ReadOpName(c);
  const uint8_t mask = c->Byte("an op's encoding mask");
  if (mask & 0x80) c->Fail("expected an op encoding mask below 0x80");
  {
    const size_t at = c->Offset();
    op->loc = LocAt(c->VarInt("an op's location"), at);
  }
  // The attribute dictionary comes first in the encoding; the IR lists properties first.
  NamedAttrs dict;
  if (mask & kHasAttrs) {
    const size_t at = c->Offset();
    const Attribute& d = Attr(c, "an op's attribute dictionary");
    if (d.kind != Attribute::Kind::kDict) FailAt(at, "expected a dictionary attribute for an op's attributes");
    dict = d.dict;
  }
  std::vector<NamedAttr>& props = op->attrs;  // (cleared: a scratch op)
  if (mask & kHasProperties) {
    if (version_ < kNativePropertiesEncoding) c->Fail("properties need bytecode version 5 or newer");
    const size_t at = c->Offset();
    if (!op->name->registered) {  // an unregistered op keeps its properties as a dictionary attribute
      const Attribute& d = Attr(c, "an op's properties");
      if (d.kind == Attribute::Kind::kDict) props.assign(d.dict.begin(), d.dict.end());
    } else {
      const uint64_t idx = c->VarInt("an op's properties index");
      if (idx >= properties_.size()) {
        FailAt(at, "expected a properties index below " + std::to_string(properties_.size()) + ", found " +
                       std::to_string(idx));
      }
      Cursor p(data_, properties_[idx].first, properties_[idx].first + properties_[idx].second, "property blob");
      const Dialect& d = dialects_[op->name->dialect];
      if (op->name->vhlo) {
        const VhloOp& v = *op->name->vhlo;
        for (int i = 0; i < v.num_attrs; ++i) props.emplace_back(v.attrs[i], Attr(&p, "a property"));
      } else if (d.kind == DialectKind::kBuiltin && op->name->name == "module") {
        for (const char* key : {"sym_name", "sym_visibility"}) {  // optional attributes: index << 1 | present
          bool present = false;
          const size_t kat = p.Offset();
          const uint64_t i = p.VarIntWithFlag(&present, key);
          if (present) props.emplace_back(key, AttrAt(i, kat, key));
        }
      } else {
        FailAt(at, "cannot read the properties of \"" + std::string(op->name->ir_name) +
                       "\" (an op of a dialect other than vhlo and builtin)");
      }
      if (!p.Empty()) p.Fail("expected the end of the properties of " + std::string(op->name->ir_name));
    }
  }
  op->num_props = op->attrs.size();
  op->attrs.insert(op->attrs.end(), dict.begin(), dict.end());
  if (mask & kHasResults) {
    const uint64_t n = c->Count("an op's result count");
    op->result_types.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      const Type& t = TypeRef(c, "a result type");  // in types_, which does not move while the IR is read
      op->result_types.push_back(t);
      op->result_type_refs.push_back(&t);
    }
  }
  if (mask & kHasOperands) {
    const uint64_t n = c->Count("an op's operand count");
    op->operands.resize(n);
    op->operand_types.resize(n);
    op->operand_slots.resize(n);
    Scope& s = scopes_.back();
    for (uint64_t i = 0; i < n; ++i) {
      const size_t at = c->Offset();
      const uint64_t v = c->VarInt("an operand");
      if (v >= s.values.size()) {
        FailAt(at, "expected an operand's value index below " + std::to_string(s.values.size()) + ", found " +
                       std::to_string(v));
      }
      op->operand_slots[i] = v;
      if (s.values[v].defined) {
        op->operands[i] = s.values[v].ref;
        op->operand_types[i] = *s.values[v].type;
      }
      op->operands[i].loc = op->loc;
    }
  }
  if (mask & kHasSuccessors) {
    const uint64_t n = c->Count("an op's successor count");
    for (uint64_t i = 0; i < n; ++i) c->VarInt("a successor");
  }
  if (version_ >= kUseListOrdering && (mask & kHasUseListOrders)) UseListOrders(c, op->result_types.size());
  *num_regions = 0;
  *isolated = false;
  if (mask & kHasInlineRegions) *num_regions = c->VarIntWithFlag(isolated, "an op's region count");
  if (*num_regions > c->Left() + 1) c->Fail("expected a region count the rest of the section can hold");
  // Results become values of the current region.
  if (!op->result_types.empty()) {
    Scope& s = scopes_.back();
    op->result_name = NumberName("", s.next_result++);
    for (size_t i = 0; i < op->result_types.size(); ++i) {
      ValueRef ref;
      ref.name = op->result_name;
      ref.index = static_cast<uint32_t>(i);
      ref.loc = op->loc;
      DefineValue(rs, ref, op->result_type_refs[i], c->Offset());
    }
  }
}

// The regions of an op isolated from above are in a nested IR section (bytecode version 2 on): returns the
// cursor to read them from, `section` or `c` itself.
Cursor* Reader::OpenRegionSection(Cursor* c, bool isolated, Cursor* section, const char* what) {
  if (!isolated || version_ < kLazyLoading) return c;
  const uint8_t id = c->Byte("an IR section holding an isolated op's regions");
  if ((id & 0x7F) != kIR) c->Fail(std::string("expected an IR section holding ") + what);
  const uint64_t len = c->VarInt("the IR section's length");
  if (id & 0x80) c->Align(c->VarInt("the IR section's alignment"));
  *section = c->Sub(len, "a region's IR section", "region's IR section");
  return section;
}

void Reader::ReadOpRegions(Cursor* c, RawOp* op, bool isolated, uint64_t num_regions, int depth, bool top_level_func) {
  if (num_regions == 0) return;
  Cursor section;
  Cursor* rc = OpenRegionSection(c, isolated, &section, "an isolated op's regions");
  if (isolated) {
    scopes_.emplace_back();
    if (!top_level_func && scopes_.size() > 1) {
      // Names continue across a function's nested isolated regions as MLIR prints them only per function;
      // give nested scopes distinct names by continuing the counters.
      scopes_.back().next_result = scopes_[scopes_.size() - 2].next_result;
      scopes_.back().next_arg = scopes_[scopes_.size() - 2].next_arg;
    }
  }
  op->regions.resize(num_regions);
  for (uint64_t i = 0; i < num_regions; ++i) ReadRegion(rc, &op->regions[i], depth + 1, top_level_func, nullptr);
  if (isolated) {
    Scope& s = scopes_.back();
    const uint32_t next_result = s.next_result, next_arg = s.next_arg;
    scopes_.pop_back();
    if (!top_level_func && !scopes_.empty()) {
      scopes_.back().next_result = std::max(scopes_.back().next_result, next_result);
      scopes_.back().next_arg = std::max(scopes_.back().next_arg, next_arg);
    }
    if (rc != c && !rc->Empty()) rc->Fail("expected the end of the isolated region's IR section");
  }
}

// Reserves a region's values in its scope. Each value takes at least a byte to define, so no more can be
// live than the input has bytes: a bound that nested regions each claiming the bytes left cannot exceed.
void Reader::ReserveValues(Cursor* c, Scope* s, uint64_t num_values, RegionState* rs) {
  live_values_ += num_values;
  if (live_values_ > size_) {
    c->Fail("the regions being read declare " + std::to_string(live_values_) + " values, more than the " +
            std::to_string(size_) + " bytes of the input can define");
  }
  rs->next_value = s->values.size();
  rs->end_value = s->values.size() + num_values;
  s->values.resize(rs->end_value);
}

void Reader::ReadRegion(Cursor* c, Region* region, int depth, bool function_body, std::vector<Argument>* entry_args) {
  if (depth > kMaxDepth) c->Fail("regions nest deeper than " + std::to_string(kMaxDepth));
  const uint64_t num_blocks = c->Count("a region's block count");
  if (num_blocks == 0) return;
  const uint64_t num_values = c->Count("a region's value count");
  Scope& s = scopes_.back();
  RegionState rs;
  ReserveValues(c, &s, num_values, &rs);
  // Grown as blocks are read (a count nested regions repeat allocates nothing); reused per depth.
  std::vector<Block>& blocks = ScratchVector(&scratch_blocks_, depth);
  for (uint64_t b = 0; b < num_blocks; ++b) {
    blocks.emplace_back();
    ReadBlock(c, &rs, &blocks.back(), depth, function_body, b == 0 ? entry_args : nullptr);
    if (num_blocks > 1) blocks.back().label = NumberName("bb", static_cast<uint32_t>(b));
  }
  region->blocks = arena_->Copy(blocks);
  EndRegionValues(c, rs, num_values);  // the region's values go out of scope
}

void Reader::ReadBlock(Cursor* c, RegionState* rs, Block* block, int depth, bool function_body,
                       std::vector<Argument>* args_out) {
  bool has_args = false;
  const uint64_t num_ops = c->VarIntWithFlag(&has_args, "a block header");
  if (num_ops > c->Left()) c->Fail("expected a block's op count the rest of the section can hold");
  std::vector<Argument> args;
  if (has_args) {
    const uint64_t n = c->Count("a block's argument count");
    args.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      Argument& a = args[i];
      const size_t at = c->Offset();
      const Type* type_ref = nullptr;  // in types_, which does not move while the IR is read
      if (version_ >= kElideUnknownBlockArgLocation) {
        bool has_loc = false;
        const uint64_t type = c->VarIntWithFlag(&has_loc, "a block argument's type");
        type_ref = &TypeAt(type, at, "a block argument's type");
        if (has_loc) {
          const size_t lat = c->Offset();
          a.loc = LocAt(c->VarInt("a block argument's location"), lat);
        }
      } else {
        type_ref = &TypeRef(c, "a block argument's type");
        const size_t lat = c->Offset();
        a.loc = LocAt(c->VarInt("a block argument's location"), lat);
      }
      a.type = *type_ref;
      a.name = NumberName("arg", scopes_.back().next_arg++);
      ValueRef ref;
      ref.name = a.name;
      ref.loc = a.loc;
      DefineValue(rs, ref, type_ref, at);
    }
    if (version_ >= kUseListOrdering) {
      const uint8_t has_orders = c->Byte("a block's use-list flag");
      if (has_orders) UseListOrders(c, n);
    }
  }
  std::vector<Operation>& ops = ScratchVector(&scratch_ops_, depth);  // (grown as ops are read)
  for (uint64_t i = 0; i < num_ops; ++i) {
    RawOp& raw = ScratchOp(depth);
    bool isolated = false;
    uint64_t num_regions = 0;
    ReadOp(c, rs, depth, function_body, &raw, &isolated, &num_regions);
    ReadOpRegions(c, &raw, isolated, num_regions, depth, false);
    // Copied from a blank op (a copy of known size is vector stores; value-initialising was `rep stos`).
    static const Operation kBlank;
    ops.push_back(kBlank);
    MakeOperation(raw, function_body, &ops.back());
    // Operands that referred to values not yet defined are patched when those are defined.
    Operation& op = ops.back();
    Scope& s = scopes_.back();
    for (size_t k = 0; k < raw.operand_slots.size(); ++k) {
      Slot& slot = s.values[raw.operand_slots[k]];
      if (!slot.defined) {
        s.pending.push_back(
            {const_cast<ValueRef*>(&op.operands[k]), const_cast<Type*>(&op.operand_types[k]), slot.waiting});
        slot.waiting = static_cast<uint32_t>(s.pending.size() - 1);
      }
    }
  }
  block->ops = arena_->Copy(ops);  // the pending uses point into the operands' arena arrays: still valid
  block->args = arena_->Copy(args);
  if (args_out) *args_out = args;
}

namespace {

// The integers of a list attribute (dense or array) or of an integer, as StableHLO prints them.
std::string IntsText(const Attribute& a) {
  std::string s;
  if (a.kind == Attribute::Kind::kInt) return std::to_string(a.i);
  if (a.kind == Attribute::Kind::kArray) {
    for (const Attribute& e : a.array) s += (s.empty() ? "" : ", ") + std::to_string(e.i);
  } else if (a.kind == Attribute::Kind::kDense && a.type.kind == Type::Kind::kTensor && !a.splat) {
    const uint32_t es = ElementByteSize(a.type.element);
    for (size_t i = 0; es && (es == 4 || es == 8) && i + es <= a.dense.size(); i += es) {
      int64_t v = 0;
      if (es == 8) {
        std::memcpy(&v, a.dense.data() + i, 8);
      } else {
        int32_t w;
        std::memcpy(&w, a.dense.data() + i, 4);
        v = w;
      }
      s += (s.empty() ? "" : ", ") + std::to_string(v);
    }
  }
  return "[" + s + "]";
}

}  // namespace

// StableHLO groups some of the flat attributes vhlo has (#stablehlo.scatter<...>, #stablehlo.gather<...>,
// #stablehlo.dot<...>, #stablehlo.conv<...>): the IR keeps them grouped as the text parser does, a dictionary
// of the members (and for convolutions the `raw` text form).
void Reader::GroupAttributes(int group, std::vector<NamedAttr>* attrs) {
  {
    const Group& g = kGroups[group];
    std::vector<NamedAttr> members, rest;
    std::string text =
        std::string("#stablehlo.") + g.mnemonic + "<" + (std::string(g.mnemonic) == "conv" ? "raw " : "");
    for (const char* m : g.members) {
      for (const NamedAttr& kv : *attrs) {
        if (kv.first != m) continue;
        members.push_back(kv);
        text += (members.size() > 1 ? ", " : "") + std::string(m) + " = " + IntsText(kv.second);
      }
    }
    for (const NamedAttr& kv : *attrs) {
      if (std::find(g.members.begin(), g.members.end(), kv.first) == g.members.end()) rest.push_back(kv);
    }
    Attribute group;
    group.kind = Attribute::Kind::kOpaque;
    group.dict = arena_->Copy(members);
    group.text = arena_->CopyString(text + ">");
    group.str = group.text;
    rest.insert(rest.begin(), NamedAttr(g.key, group));
    *attrs = std::move(rest);
    return;
  }
}

void Reader::MakeOperation(RawOp& raw, bool function_body, Operation* out) {
  Operation& op = *out;
  op.name = raw.name->ir_name;
  if (function_body && raw.name->is_return) op.name = "func.return";
  op.num_results = static_cast<uint32_t>(raw.result_types.size());
  op.result_name = raw.result_name;
  op.operands = arena_->Copy(raw.operands);
  op.operand_types = arena_->Copy(raw.operand_types);
  op.result_types = arena_->Copy(raw.result_types);
  op.loc = raw.loc;
  // Callees: func.call's callee, custom_call's call_target_name.
  if (!raw.name->callee_key.empty()) {
    for (const NamedAttr& kv : raw.attrs) {
      if (kv.first == raw.name->callee_key &&
          (kv.second.kind == Attribute::Kind::kString || kv.second.kind == Attribute::Kind::kSymbol)) {
        op.callee = kv.second.str;
      }
    }
  }
  // vhlo ops are what the generic form writes: operands in order, every attribute named.
  op.generic = raw.name->vhlo != nullptr;
  if (raw.name->vhlo) {
    if (raw.name->group >= 0) GroupAttributes(raw.name->group, &raw.attrs);
    // vhlo keeps StableHLO's array<i1: ...> (window_reversal) as a tensor<Nxi1>: back to an array of bools.
    for (size_t i = 0; raw.name->bool_arrays && i < raw.num_props && i < raw.attrs.size(); ++i) {
      Attribute& a = raw.attrs[i].second;
      if (a.kind != Attribute::Kind::kDense || a.type.element != ElementType::kPred || a.type.dims.size() != 1 ||
          raw.attrs[i].first == "value") {
        continue;
      }
      std::vector<Attribute> bools(static_cast<size_t>(std::max<int64_t>(a.type.dims[0], 0)));
      for (size_t k = 0; k < bools.size(); ++k) {
        bools[k].kind = Attribute::Kind::kBool;
        bools[k].b = a.dense.empty() ? false : a.dense[a.splat ? 0 : std::min(k, a.dense.size() - 1)] != 0;
      }
      a = Attribute();
      a.kind = Attribute::Kind::kArray;
      a.array = arena_->Copy(bools);
    }
  }
  op.attributes = arena_->Copy(raw.attrs);
  op.regions = arena_->Copy(raw.regions);
}

Function Reader::MakeFunction(RawOp& raw, size_t offset) {
  Function f;
  f.loc = raw.loc;
  f.visibility = "public";
  const Attribute* arg_attrs = nullptr;
  const Attribute* res_attrs = nullptr;
  const Type* function_type = nullptr;
  std::vector<NamedAttr> other;
  for (size_t i = 0; i < raw.attrs.size(); ++i) {
    const NamedAttr& kv = raw.attrs[i];
    if (i >= raw.num_props) {
      other.push_back(kv);
    } else if (kv.first == "sym_name") {
      if (kv.second.kind != Attribute::Kind::kString) FailAt(offset, "expected a string sym_name for a function");
      f.name = kv.second.str;
    } else if (kv.first == "sym_visibility") {
      if (kv.second.kind == Attribute::Kind::kString && !kv.second.str.empty()) f.visibility = kv.second.str;
    } else if (kv.first == "function_type") {
      if (kv.second.kind != Attribute::Kind::kType || kv.second.type.kind != Type::Kind::kFunction) {
        FailAt(offset, "expected a function type for function @" + std::string(f.name));
      }
      const Type& ft = kv.second.type;
      function_type = &ft;
      f.result_types = Span<Type>(ft.elements.data() + ft.num_inputs, ft.elements.size() - ft.num_inputs);
    } else if (kv.first == "arg_attrs") {
      arg_attrs = &kv.second;
    } else if (kv.first == "res_attrs") {
      res_attrs = &kv.second;
    }
  }
  f.attributes = arena_->Copy(other);
  if (raw.regions.size() != 1) FailAt(offset, "expected one region in function @" + std::string(f.name));
  f.body = raw.regions[0];
  std::vector<Argument> args;
  if (!f.body.blocks.empty()) {
    args.assign(f.body.blocks[0].args.begin(), f.body.blocks[0].args.end());
  } else if (function_type) {
    // A declaration (no body): its arguments are the function type's inputs, unnamed.
    for (size_t i = 0; i < function_type->num_inputs; ++i) {
      Argument a;
      a.type = function_type->elements[i];
      args.push_back(a);
    }
  }
  if (arg_attrs && arg_attrs->kind == Attribute::Kind::kArray) {
    if (arg_attrs->array.size() != args.size() && !arg_attrs->array.empty()) {
      FailAt(offset, "function @" + std::string(f.name) + " has " + std::to_string(args.size()) + " arguments but " +
                         std::to_string(arg_attrs->array.size()) + " argument attributes");
    }
    for (size_t i = 0; i < arg_attrs->array.size(); ++i) {
      if (arg_attrs->array[i].kind == Attribute::Kind::kDict) args[i].attrs = arg_attrs->array[i].dict;
    }
  }
  f.args = arena_->Copy(args);
  if (!f.body.blocks.empty()) {
    // As the text parser has it: the entry block's arguments are the function's, not the block's.
    std::vector<Block> blocks(f.body.blocks.begin(), f.body.blocks.end());
    blocks[0].args = Span<Argument>();
    f.body.blocks = arena_->Copy(blocks);
  }
  if (res_attrs && res_attrs->kind == Attribute::Kind::kArray && !res_attrs->array.empty()) {
    if (res_attrs->array.size() != f.result_types.size()) {
      FailAt(offset, "function @" + std::string(f.name) + " has " + std::to_string(f.result_types.size()) +
                         " results but " + std::to_string(res_attrs->array.size()) + " result attributes");
    }
    std::vector<NamedAttrs> ra;
    for (const Attribute& a : res_attrs->array) ra.push_back(a.kind == Attribute::Kind::kDict ? a.dict : NamedAttrs());
    f.result_attrs = arena_->Copy(ra);
  }
  return f;
}

void Reader::AddTopLevelOp(RawOp& raw, Cursor* c) {
  if (raw.name->vhlo && std::string_view(raw.name->vhlo->name) == "func_v1") {
    out_->functions.push_back(MakeFunction(raw, c->Offset()));
  } else {
    out_->other_ops.emplace_back();
    MakeOperation(raw, false, &out_->other_ops.back());
  }
}

void Reader::ReadIR(Cursor c) {
  // The top level: one block without arguments holding builtin.module.
  scopes_.emplace_back();
  bool has_args = false;
  const uint64_t num_ops = c.VarIntWithFlag(&has_args, "the top-level block header");
  if (has_args) c.Fail("expected a top-level block without arguments");
  if (num_ops != 1) c.Fail("expected one top-level op (builtin.module), found " + std::to_string(num_ops));
  RegionState top;
  RawOp& module = ScratchOp(0);  // (the module's ops use depth 1, their regions' ops 2 and deeper)
  bool isolated = false;
  uint64_t num_regions = 0;
  const size_t module_at = c.Offset();
  ReadOp(&c, &top, 0, false, &module, &isolated, &num_regions);
  if (dialects_[module.name->dialect].kind != DialectKind::kBuiltin || module.name->name != "module") {
    FailAt(module_at, "expected builtin.module at the top level, found " + std::string(module.name->ir_name));
  }
  if (num_regions != 1) FailAt(module_at, "expected builtin.module to have one region");
  out_->loc = module.loc;
  std::vector<NamedAttr> attrs;
  for (size_t i = 0; i < module.attrs.size(); ++i) {
    if (i < module.num_props && module.attrs[i].first == "sym_name") {
      out_->name = module.attrs[i].second.str;
    } else if (i >= module.num_props) {
      attrs.push_back(module.attrs[i]);
    }
  }
  out_->attributes = arena_->Copy(attrs);
  // The module's region: read here so that functions become Functions.
  Cursor section;
  Cursor* rc = OpenRegionSection(&c, isolated, &section, "the module's region");
  if (isolated) scopes_.emplace_back();
  const uint64_t num_blocks = rc->Count("the module's block count");
  if (num_blocks != 1) rc->Fail("expected one block in the module, found " + std::to_string(num_blocks));
  const uint64_t num_values = rc->Count("the module's value count");
  Scope& s = scopes_.back();
  RegionState rs;
  ReserveValues(rc, &s, num_values, &rs);
  bool block_args = false;
  const uint64_t n = rc->VarIntWithFlag(&block_args, "the module's block header");
  if (block_args) rc->Fail("expected the module's block to have no arguments");
  if (n > rc->Left()) rc->Fail("expected a module op count the rest of the section can hold");
  for (uint64_t i = 0; i < n; ++i) {
    RawOp& raw = ScratchOp(1);
    bool iso = false;
    uint64_t nr = 0;
    ReadOp(rc, &rs, 1, false, &raw, &iso, &nr);
    const bool func = raw.name->vhlo && std::string_view(raw.name->vhlo->name) == "func_v1";
    if (func) {
      // Each function is its own naming scope, as MLIR prints it: the names restart (the module's values,
      // if any, stay visible when the function is not isolated).
      Scope& module_scope = scopes_.back();
      const uint32_t saved_result = module_scope.next_result, saved_arg = module_scope.next_arg;
      module_scope.next_result = module_scope.next_arg = 0;
      ReadOpRegions(rc, &raw, iso, nr, 1, true);
      scopes_.back().next_result = saved_result;
      scopes_.back().next_arg = saved_arg;
    } else {
      ReadOpRegions(rc, &raw, iso, nr, 1, false);
    }
    AddTopLevelOp(raw, rc);
  }
  EndRegionValues(rc, rs, num_values);
  if (rc != &c && !rc->Empty()) rc->Fail("expected the end of the module's IR section");
  if (!c.Empty()) c.Fail("expected the end of the IR section after builtin.module");
  saw_module_ = true;
}

}  // namespace neuronmem::stablehlo::bytecode
