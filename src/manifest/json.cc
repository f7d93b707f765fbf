// The manifest's JSON form (docs/contract.md, section 6): the writer, and a reader that accepts exactly
// what the writer (from any manifest the text loader can derive) produces: every field present with its
// type, integers written as integers and in range, indices equal to positions, kinds and spellings from
// their tables. Unknown fields are ignored (a minor version may add fields).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "manifest/manifest.h"

namespace neuronmem::manifest {
namespace {

using json = nlohmann::json;

// ---- writing ----------------------------------------------------------------------------------------

nlohmann::json LocJson(const Location& l) { return {{"line", l.line}, {"column", l.column}}; }
nlohmann::json SpecJson(const TensorSpec& s) { return {{"element_type", s.element_type}, {"dims", s.dims}}; }

json ValueJson(const Value& v, bool argument) {
  json j = {{"index", v.index},
            {"name", v.name},
            {"element_type", v.type.element_type},
            {"dims", v.type.dims},
            {"memory_kind", MemoryKindName(v.memory_kind)},
            {"kind_explicit", v.kind_explicit},
            {"location", LocJson(v.loc)}};
  if (argument) {
    j["aliasing_output"] = v.aliasing_output >= 0 ? json(v.aliasing_output) : json(nullptr);
    j["buffer_donor"] = v.buffer_donor;
  }
  json attrs = json::array();
  for (const auto& [k, val] : v.attributes) attrs.push_back({k, val});
  j["attributes"] = attrs;
  return j;
}

// ---- reading ----------------------------------------------------------------------------------------

struct JsonError {
  std::string message;
};

[[noreturn]] void Bad(const std::string& where, const std::string& what) { throw JsonError{where + ": " + what}; }

std::string At(const std::string& where, const char* key) { return where.empty() ? key : where + "." + key; }
std::string At(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

const json& Field(const json& obj, const char* key, const std::string& where) {
  if (!obj.is_object()) Bad(where.empty() ? "the document" : where, "must be an object");
  const auto it = obj.find(key);
  if (it == obj.end()) Bad(At(where, key), "missing");
  return *it;
}

// An integer written as one (not 1.0, not 1e3) within [min, max].
int64_t Int(const json& j, const std::string& where, int64_t min, int64_t max) {
  int64_t v = 0;
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) Bad(where, std::to_string(u) + " is above " + std::to_string(max));
    v = static_cast<int64_t>(u);
  } else if (j.is_number_integer()) {
    v = j.get<int64_t>();
  } else {
    Bad(where, j.is_number_float() ? "must be an integer, found a number with a fraction or an exponent"
                                   : std::string("must be an integer, found ") + j.type_name());
  }
  if (v < min || v > max) {
    Bad(where, std::to_string(v) + " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

int64_t IntField(const json& obj, const char* key, const std::string& where, int64_t min, int64_t max) {
  return Int(Field(obj, key, where), At(where, key), min, max);
}

std::string StringField(const json& obj, const char* key, const std::string& where) {
  const json& j = Field(obj, key, where);
  if (!j.is_string()) Bad(At(where, key), std::string("must be a string, found ") + j.type_name());
  return j.get<std::string>();
}

bool BoolField(const json& obj, const char* key, const std::string& where) {
  const json& j = Field(obj, key, where);
  if (!j.is_boolean()) Bad(At(where, key), std::string("must be true or false, found ") + j.type_name());
  return j.get<bool>();
}

const json& ArrayField(const json& obj, const char* key, const std::string& where) {
  const json& j = Field(obj, key, where);
  if (!j.is_array()) Bad(At(where, key), std::string("must be an array, found ") + j.type_name());
  return j;
}

constexpr int64_t kU32Max = std::numeric_limits<uint32_t>::max();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

Location ReadLocation(const json& obj, const std::string& where) {
  const json& l = Field(obj, "location", where);
  const std::string at = At(where, "location");
  return Location{static_cast<uint32_t>(IntField(l, "line", at, 0, kU32Max)),
                  static_cast<uint32_t>(IntField(l, "column", at, 0, kU32Max))};
}

std::vector<int64_t> ReadInts(const json& arr, const std::string& where, int64_t min) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < arr.size(); ++i) out.push_back(Int(arr[i], At(where, i), min, kI64Max));
  return out;
}

std::vector<std::string> ReadStrings(const json& arr, const std::string& where) {
  std::vector<std::string> out;
  for (size_t i = 0; i < arr.size(); ++i) {
    if (!arr[i].is_string()) Bad(At(where, i), "must be a string");
    out.push_back(arr[i].get<std::string>());
  }
  return out;
}

// element_type and dims (-1 = dynamic; no other negative dimension).
TensorSpec ReadSpec(const json& obj, const std::string& where) {
  TensorSpec s;
  s.element_type = StringField(obj, "element_type", where);
  if (s.element_type.empty()) Bad(At(where, "element_type"), "must not be empty");
  s.is_tuple = s.element_type == "tuple";
  s.is_token = s.element_type == "token";
  s.element = ParseElementTypeName(s.element_type);
  if (s.element == ElementType::kOther) s.element = ElementType::kInvalid;  // as the text loader: written out
  s.dims = ReadInts(ArrayField(obj, "dims", where), At(where, "dims"), -1);
  return s;
}

MemoryKind ReadMemoryKind(const json& obj, const std::string& where) {
  const std::string k = StringField(obj, "memory_kind", where);
  MemoryKind kind;
  if (!MemoryKindFromName(k, &kind)) {
    Bad(At(where, "memory_kind"), "unknown memory_kind \"" + k + "\" (device, pinned_host or unpinned_host)");
  }
  return kind;
}

// The field "attributes": [[key, value], ...] with string keys and values.
std::vector<std::pair<std::string, std::string>> ReadAttributes(const json& e, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  const json& attrs = ArrayField(e, "attributes", where);
  for (size_t i = 0; i < attrs.size(); ++i) {
    const json& kv = attrs[i];
    if (!kv.is_array() || kv.size() != 2 || !kv[0].is_string() || !kv[1].is_string()) {
      Bad(At(At(where, "attributes"), i), "must be a pair of strings [key, value]");
    }
    out.emplace_back(kv[0].get<std::string>(), kv[1].get<std::string>());
  }
  return out;
}

Value ReadValue(const json& e, size_t position, bool argument, const std::string& where) {
  Value v;
  v.index = static_cast<uint32_t>(IntField(e, "index", where, 0, kU32Max));
  if (v.index != position) {
    Bad(At(where, "index"), std::to_string(v.index) + " must equal the position " + std::to_string(position) +
                                " (one entry per value, in order)");
  }
  v.name = StringField(e, "name", where);
  v.type = ReadSpec(e, where);
  v.memory_kind = ReadMemoryKind(e, where);
  v.kind_explicit = BoolField(e, "kind_explicit", where);
  v.loc = ReadLocation(e, where);
  if (argument) {
    const json& alias = Field(e, "aliasing_output", where);
    v.aliasing_output = alias.is_null() ? -1 : Int(alias, At(where, "aliasing_output"), 0, kI64Max);
    v.buffer_donor = BoolField(e, "buffer_donor", where);
  }
  v.attributes = ReadAttributes(e, where);
  return v;
}

std::string ReadPlacementKind(const json& e, const char* key, const std::string& where, MemoryKind* kind) {
  const std::string k = StringField(e, key, where);
  if (!PlacementMemoryKind(k, kind)) Bad(At(where, key), "unknown kind \"" + k + "\"");
  return k;
}

Move ReadMove(const json& e, const std::string& where) {
  static const std::set<std::string, std::less<>> kSpellings = {"annotate_device_placement", "MoveToHost",
                                                                "MoveToDevice", "AwsNeuronMemoryPlacement"};
  Move mv;
  mv.type = ReadSpec(e, where);
  mv.function = StringField(e, "function", where);
  mv.value = StringField(e, "value", where);
  mv.result = StringField(e, "result", where);
  mv.from_kind = ReadPlacementKind(e, "from_kind", where, &mv.from_memory_kind);
  mv.to_kind = ReadPlacementKind(e, "to_kind", where, &mv.to_memory_kind);
  mv.spelling = StringField(e, "spelling", where);
  if (!kSpellings.count(mv.spelling)) Bad(At(where, "spelling"), "unknown move spelling \"" + mv.spelling + "\"");
  mv.loc = ReadLocation(e, where);
  return mv;
}

Kernel ReadKernel(const json& e, const std::string& where) {
  Kernel k;
  k.function = StringField(e, "function", where);
  k.func_name = StringField(e, "func_name", where);
  k.grid = ReadInts(ArrayField(e, "grid", where), At(where, "grid"), kI64Min);
  k.input_names = ReadStrings(ArrayField(e, "input_names", where), At(where, "input_names"));
  k.output_names = ReadStrings(ArrayField(e, "output_names", where), At(where, "output_names"));
  k.binary = StringField(e, "binary", where);
  k.num_operands = static_cast<uint32_t>(IntField(e, "num_operands", where, 0, kU32Max));
  k.num_results = static_cast<uint32_t>(IntField(e, "num_results", where, 0, kU32Max));
  k.loc = ReadLocation(e, where);
  return k;
}

// The same rules as the text loader: pairs of two cores, no source or target twice (the core count is not
// part of the JSON form, so it is checked when the manifest is derived, not here).
Channel ReadChannel(const json& e, const std::string& where) {
  Channel c;
  c.function = StringField(e, "function", where);
  c.op = StringField(e, "op", where);
  if (c.op != "send" && c.op != "recv") Bad(At(where, "op"), "must be \"send\" or \"recv\"");
  c.handle = IntField(e, "handle", where, kI64Min, kI64Max);
  c.type = IntField(e, "type", where, 0, 3);
  c.is_host_transfer = BoolField(e, "is_host_transfer", where);
  const json& pairs = ArrayField(e, "source_target_pairs", where);
  std::set<int64_t> sources, targets;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::string at = At(At(where, "source_target_pairs"), i);
    if (!pairs[i].is_array() || pairs[i].size() != 2) Bad(at, "must be a pair [source, target]");
    const int64_t s = Int(pairs[i][0], at + "[0]", 0, kI64Max);
    const int64_t d = Int(pairs[i][1], at + "[1]", 0, kI64Max);
    if (!sources.insert(s).second) Bad(at, "repeats source " + std::to_string(s));
    if (!targets.insert(d).second) Bad(at, "repeats target " + std::to_string(d));
    c.source_target_pairs.emplace_back(s, d);
  }
  const json& payload = ArrayField(e, "payload", where);
  for (size_t i = 0; i < payload.size(); ++i) c.payload.push_back(ReadSpec(payload[i], At(At(where, "payload"), i)));
  c.loc = ReadLocation(e, where);
  return c;
}

// Calls read(element, "key[i]") for each element of the array field `key`.
template <typename Read>
void ForEach(const json& doc, const char* key, Read&& read) {
  const json& arr = ArrayField(doc, key, "");
  for (size_t i = 0; i < arr.size(); ++i) read(arr[i], i, At(std::string(key), i));
}

Manifest ReadManifest(const json& j) {
  Manifest m;
  const json& version = Field(j, "schema_version", "");
  if (!version.is_number_integer()) {
    Bad("schema_version",
        std::string("must be an integer, found ") + (version.is_number_float() ? version.dump() : version.type_name()));
  }
  if (version != json(kSchemaVersion)) {
    throw JsonError{"manifest schema_version " + version.dump() + " is not supported (this library reads version " +
                    std::to_string(kSchemaVersion) + ")"};
  }
  m.schema_version = kSchemaVersion;
  m.module = StringField(j, "module", "");
  m.entry = StringField(j, "entry", "");
  m.policy = StringField(j, "policy", "");
  if (m.policy != PolicyName(Policy::kDevice) && m.policy != PolicyName(Policy::kTorchNeuronx)) {
    Bad("policy", "must be \"device\" or \"torch-neuronx\"");
  }
  ForEach(j, "arguments",
          [&](const json& e, size_t i, const std::string& at) { m.arguments.push_back(ReadValue(e, i, true, at)); });
  ForEach(j, "results",
          [&](const json& e, size_t i, const std::string& at) { m.results.push_back(ReadValue(e, i, false, at)); });
  ForEach(j, "moves", [&](const json& e, size_t, const std::string& at) { m.moves.push_back(ReadMove(e, at)); });
  ForEach(j, "host_compute", [&](const json& e, size_t, const std::string& at) {
    m.host_compute.push_back(
        {StringField(e, "function", at), StringField(e, "op", at), StringField(e, "callee", at), ReadLocation(e, at)});
  });
  ForEach(j, "kernels", [&](const json& e, size_t, const std::string& at) { m.kernels.push_back(ReadKernel(e, at)); });
  std::set<std::string> targets;
  ForEach(j, "custom_call_targets", [&](const json& e, size_t, const std::string& at) {
    CustomCallTarget t{StringField(e, "target", at), static_cast<uint64_t>(IntField(e, "count", at, 1, kI64Max))};
    if (!targets.insert(t.target).second) Bad(At(at, "target"), "\"" + t.target + "\" is listed twice");
    m.custom_call_targets.push_back(std::move(t));
  });
  ForEach(j, "channels",
          [&](const json& e, size_t, const std::string& at) { m.channels.push_back(ReadChannel(e, at)); });
  if (j.contains("composites")) {  // added in 0.2 (issue 26): optional
    ForEach(j, "composites", [&](const json& e, size_t, const std::string& at) {
      Composite c;
      c.function = StringField(e, "function", at);
      c.name = StringField(e, "name", at);
      c.decomposition = StringField(e, "decomposition", at);
      c.version = IntField(e, "version", at, kI64Min, kI64Max);
      c.attributes = ReadAttributes(e, at);
      c.loc = ReadLocation(e, at);
      m.composites.push_back(std::move(c));
    });
  }
  if (j.contains("warnings")) {  // added in 0.1 after the first writers: optional
    ForEach(j, "warnings", [&](const json& e, size_t, const std::string& at) {
      if (!e.is_string()) Bad(at, "must be a string");
      m.warnings.push_back(e.get<std::string>());
    });
  }
  return m;
}

}  // namespace

std::string ToJson(const Manifest& m, int indent) {
  json j;
  j["schema_version"] = m.schema_version;
  j["module"] = m.module;
  j["entry"] = m.entry;
  j["policy"] = m.policy;
  j["arguments"] = json::array();
  for (const auto& v : m.arguments) j["arguments"].push_back(ValueJson(v, true));
  j["results"] = json::array();
  for (const auto& v : m.results) j["results"].push_back(ValueJson(v, false));
  j["moves"] = json::array();
  for (const auto& mv : m.moves) {
    json e = SpecJson(mv.type);
    e["function"] = mv.function;
    e["value"] = mv.value;
    e["result"] = mv.result;
    e["from_kind"] = mv.from_kind;
    e["to_kind"] = mv.to_kind;
    e["spelling"] = mv.spelling;
    e["location"] = LocJson(mv.loc);
    j["moves"].push_back(e);
  }
  j["host_compute"] = json::array();
  for (const auto& h : m.host_compute) {
    j["host_compute"].push_back(
        {{"function", h.function}, {"op", h.op}, {"callee", h.callee}, {"location", LocJson(h.loc)}});
  }
  j["kernels"] = json::array();
  for (const auto& k : m.kernels) {
    j["kernels"].push_back({{"function", k.function},
                            {"func_name", k.func_name},
                            {"grid", k.grid},
                            {"input_names", k.input_names},
                            {"output_names", k.output_names},
                            {"binary", k.binary},
                            {"num_operands", k.num_operands},
                            {"num_results", k.num_results},
                            {"location", LocJson(k.loc)}});
  }
  j["composites"] = json::array();
  for (const auto& c : m.composites) {
    json attrs = json::array();
    for (const auto& [k, v] : c.attributes) attrs.push_back({k, v});
    j["composites"].push_back({{"function", c.function},
                               {"name", c.name},
                               {"decomposition", c.decomposition},
                               {"version", c.version},
                               {"attributes", attrs},
                               {"location", LocJson(c.loc)}});
  }
  j["custom_call_targets"] = json::array();
  for (const auto& t : m.custom_call_targets)
    j["custom_call_targets"].push_back({{"target", t.target}, {"count", t.count}});
  j["channels"] = json::array();
  for (const auto& c : m.channels) {
    json pairs = json::array();
    for (const auto& [s, d] : c.source_target_pairs) pairs.push_back({s, d});
    json payload = json::array();
    for (const auto& p : c.payload) payload.push_back(SpecJson(p));
    j["channels"].push_back({{"function", c.function},
                             {"op", c.op},
                             {"handle", c.handle},
                             {"type", c.type},
                             {"is_host_transfer", c.is_host_transfer},
                             {"source_target_pairs", pairs},
                             {"payload", payload},
                             {"location", LocJson(c.loc)}});
  }
  j["warnings"] = m.warnings;
  // Strings from the source are bytes; invalid UTF-8 is replaced (U+FFFD) rather than failing.
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

Status FromJson(std::string_view text, Manifest* out) {
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("the manifest JSON is not a JSON object");
  try {
    *out = ReadManifest(j);
  } catch (const JsonError& e) {
    return InvalidArgument("the manifest JSON does not follow schema version %d: %s", kSchemaVersion,
                           e.message.c_str());
  } catch (const json::exception& e) {
    return InvalidArgument("the manifest JSON does not follow schema version %d: %s", kSchemaVersion, e.what());
  }
  return Ok();
}

}  // namespace neuronmem::manifest
