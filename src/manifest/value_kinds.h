// The memory kind of every SSA value the manifest's walk has defined, with MLIR's scoping: a region opens a
// scope, a value defined inside it shadows an outer one of the same name (regions isolated from above, like
// Shardy's manual_computation, number their values afresh), and leaving the region forgets what it defined.
//
// One lookup and one definition per op, so it is an open-addressing table of views: value names point into
// the IR (which outlives the derivation) and kinds are static strings. Each slot keeps the latest definition
// of its key; definitions form a stack whose entries remember the definition they shadow.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

namespace neuronmem::manifest {

class ValueKinds {
 public:
  // A value: its SSA name without '%', the result index (%0#1 -> 1) and, for a tuple's elements, the
  // element number plus one (0 = the value itself).
  struct Key {
    std::string_view name;
    uint32_t index = 0;
    uint32_t element = 0;
    bool operator==(const Key& o) const { return index == o.index && element == o.element && name == o.name; }
  };

  void Reserve(size_t n) {
    Rehash(std::max<size_t>(16, NextPow2(n * 2)));
    defs_.reserve(n);
  }

  // Defines `key` as `kind` (a static string) in the innermost scope.
  void Set(const Key& key, std::string_view kind) {
    if ((size_ + 1) * 2 > slots_.size()) Rehash(std::max<size_t>(16, slots_.size() * 2));
    Slot& s = slots_[IndexOf(key)];
    if (!s.used) {
      s.key = key;
      s.used = true;
      ++size_;
    }
    defs_.push_back(Def{key, kind, s.latest});
    s.latest = static_cast<int64_t>(defs_.size()) - 1;
  }

  // The kind of `key`, or `fallback` if no scope in force defines it.
  std::string_view Get(const Key& key, std::string_view fallback) const {
    if (slots_.empty()) return fallback;
    const Slot& s = slots_[IndexOf(key)];
    return s.used && s.latest >= 0 ? defs_[static_cast<size_t>(s.latest)].kind : fallback;
  }

  // Scopes: Mark() when entering one, PopTo(mark) when leaving it.
  size_t Mark() const { return defs_.size(); }
  void PopTo(size_t mark) {
    while (defs_.size() > mark) {
      const Def& d = defs_.back();
      slots_[IndexOf(d.key)].latest = d.shadowed;
      defs_.pop_back();
    }
  }

 private:
  struct Slot {
    Key key;
    int64_t latest = -1;  // index into defs_, -1 when no scope in force defines the key
    bool used = false;
  };
  struct Def {
    Key key;
    std::string_view kind;
    int64_t shadowed;  // the definition this one hides, or -1
  };
  static size_t NextPow2(size_t v) {
    size_t p = 1;
    while (p < v) p <<= 1;
    return p;
  }
  static uint64_t Hash(const Key& k) {  // FNV-1a, enough for short SSA names
    uint64_t h = 1469598103934665603ull;
    for (char c : k.name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    h = (h ^ k.index) * 1099511628211ull;
    h = (h ^ k.element) * 1099511628211ull;
    return h ^ (h >> 29);
  }
  // The slot holding `key`, or the free slot where it would go (the table is never full).
  size_t IndexOf(const Key& key) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(key) & mask;; i = (i + 1) & mask) {
      if (!slots_[i].used || slots_[i].key == key) return i;
    }
  }
  void Rehash(size_t n) {
    if (n <= slots_.size()) return;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    for (const Slot& s : old) {
      if (s.used) slots_[IndexOf(s.key)] = s;
    }
  }
  std::vector<Slot> slots_;
  std::vector<Def> defs_;
  size_t size_ = 0;
};

}  // namespace neuronmem::manifest
