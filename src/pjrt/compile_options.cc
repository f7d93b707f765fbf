#include "pjrt/compile_options.h"

namespace neuronmem::pjrt {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

class Reader {
 public:
  Reader(std::string_view bytes, const char* what) : p_(bytes.data()), end_(bytes.data() + bytes.size()), what_(what) {}
  bool done() const { return p_ == end_; }

  bool Varint(uint64_t* out, std::string* error) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return Fail("a varint is truncated", error);
      const auto b = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *out = v;
        return true;
      }
    }
    return Fail("a varint is longer than 10 bytes", error);
  }

  bool Tag(uint32_t* field, uint32_t* wire, std::string* error) {
    uint64_t t = 0;
    if (!Varint(&t, error)) return false;
    *field = static_cast<uint32_t>(t >> 3);
    *wire = static_cast<uint32_t>(t & 7);
    if (*field == 0) return Fail("field number 0", error);
    return true;
  }

  bool Bytes(std::string_view* out, std::string* error) {
    uint64_t n = 0;
    if (!Varint(&n, error)) return false;
    if (n > static_cast<uint64_t>(end_ - p_)) return Fail("a length-delimited field runs past the end", error);
    *out = std::string_view(p_, static_cast<size_t>(n));
    p_ += n;
    return true;
  }

  bool Skip(uint32_t wire, std::string* error) {
    uint64_t v = 0;
    std::string_view s;
    switch (wire) {
      case kVarint: return Varint(&v, error);
      case kFixed64: return Advance(8, error);
      case kLen: return Bytes(&s, error);
      case kFixed32: return Advance(4, error);
      default: return Fail("a group or an invalid wire type", error);
    }
  }

  bool Fail(const char* why, std::string* error) const {
    *error = std::string(what_) + ": " + why;
    return false;
  }

 private:
  bool Advance(size_t n, std::string* error) {
    if (n > static_cast<size_t>(end_ - p_)) return Fail("a fixed-size field is truncated", error);
    p_ += n;
    return true;
  }
  const char* p_;
  const char* end_;
  const char* what_;
};

bool WantWire(Reader& r, uint32_t wire, uint32_t want, const char* field, std::string* error) {
  if (wire == want) return true;
  std::string why = std::string(field) + " has wire type " + std::to_string(wire);
  return r.Fail(why.c_str(), error);
}

bool DecodeComputationDevice(std::string_view bytes, std::vector<int64_t>* out, std::string* error) {
  Reader r(bytes, "DeviceAssignmentProto.ComputationDevice");
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    if (!r.Tag(&field, &wire, error)) return false;
    if (field == 1 && wire == kVarint) {
      uint64_t v = 0;
      if (!r.Varint(&v, error)) return false;
      out->push_back(static_cast<int64_t>(v));
    } else if (field == 1 && wire == kLen) {  // packed
      std::string_view packed;
      if (!r.Bytes(&packed, error)) return false;
      Reader p(packed, "DeviceAssignmentProto.ComputationDevice.replica_device_ids");
      while (!p.done()) {
        uint64_t v = 0;
        if (!p.Varint(&v, error)) return false;
        out->push_back(static_cast<int64_t>(v));
      }
    } else if (field == 1) {
      return WantWire(r, wire, kVarint, "replica_device_ids", error);
    } else if (!r.Skip(wire, error)) {
      return false;
    }
  }
  return true;
}

bool DecodeDeviceAssignment(std::string_view bytes, CompileOptions* out, std::string* error) {
  Reader r(bytes, "DeviceAssignmentProto");
  out->has_device_assignment = true;
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    if (!r.Tag(&field, &wire, error)) return false;
    uint64_t v = 0;
    std::string_view s;
    if (field == 1 || field == 2) {
      if (!WantWire(r, wire, kVarint, field == 1 ? "replica_count" : "computation_count", error)) return false;
      if (!r.Varint(&v, error)) return false;
      (field == 1 ? out->replica_count : out->computation_count) = static_cast<int32_t>(v);
    } else if (field == 3) {
      if (!WantWire(r, wire, kLen, "computation_devices", error) || !r.Bytes(&s, error)) return false;
      out->computation_devices.emplace_back();
      if (!DecodeComputationDevice(s, &out->computation_devices.back(), error)) return false;
    } else if (!r.Skip(wire, error)) {
      return false;
    }
  }
  return true;
}

bool DecodeBuildOptions(std::string_view bytes, CompileOptions* out, std::string* error) {
  Reader r(bytes, "ExecutableBuildOptionsProto");
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    if (!r.Tag(&field, &wire, error)) return false;
    uint64_t v = 0;
    std::string_view s;
    if (field == 4 || field == 5) {
      if (!WantWire(r, wire, kVarint, field == 4 ? "num_replicas" : "num_partitions", error)) return false;
      if (!r.Varint(&v, error)) return false;
      (field == 4 ? out->num_replicas : out->num_partitions) = static_cast<int64_t>(v);
    } else if (field == 9) {
      if (!WantWire(r, wire, kLen, "device_assignment", error) || !r.Bytes(&s, error)) return false;
      if (!DecodeDeviceAssignment(s, out, error)) return false;
    } else if (!r.Skip(wire, error)) {
      return false;
    }
  }
  return true;
}

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutLen(uint32_t field, const std::string& bytes, std::string* out) {
  PutVarint((field << 3) | kLen, out);
  PutVarint(bytes.size(), out);
  *out += bytes;
}

}  // namespace

std::string EncodeDeviceAssignment(int64_t replica_count, int64_t computation_count,
                                   const std::vector<std::vector<int64_t>>& computation_devices) {
  std::string out;
  PutVarint((1 << 3) | kVarint, &out);
  PutVarint(static_cast<uint64_t>(replica_count), &out);
  PutVarint((2 << 3) | kVarint, &out);
  PutVarint(static_cast<uint64_t>(computation_count), &out);
  for (const std::vector<int64_t>& ids : computation_devices) {
    std::string packed;
    for (int64_t id : ids) PutVarint(static_cast<uint64_t>(id), &packed);
    std::string device;
    PutLen(1, packed, &device);
    PutLen(3, device, &out);
  }
  return out;
}

bool DecodeCompileOptions(std::string_view bytes, CompileOptions* out, std::string* error) {
  *out = CompileOptions();
  Reader r(bytes, "CompileOptionsProto");
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    if (!r.Tag(&field, &wire, error)) return false;
    std::string_view s;
    if (field == 3) {
      if (!WantWire(r, wire, kLen, "executable_build_options", error) || !r.Bytes(&s, error)) return false;
      if (!DecodeBuildOptions(s, out, error)) return false;
    } else if (!r.Skip(wire, error)) {
      return false;
    }
  }
  return true;
}

}  // namespace neuronmem::pjrt
