// Offset-only TLSF. Sizes are kept in granules (min_alignment bytes). First level = floor(log2(granules)),
// second level = the next 4 bits (16 classes per power of two). Insertion files a block under the class
// of its size (rounded down); a search rounds the request up to the next class boundary so that any block
// found in a class at or above it fits. Two bitmaps find the first non-empty class in O(1).
#include "memory/tlsf.h"

#include <algorithm>
#include <cassert>
#include <vector>

namespace neuronmem::memory {
namespace {

constexpr int kSlBits = 4;
constexpr int kSlCount = 1 << kSlBits;
constexpr int kFlCount = 64;
constexpr uint32_t kNone = UINT32_MAX;

inline int Msb(uint64_t v) { return 63 - __builtin_clzll(v); }

// Class of a size in granules (rounded down).
inline void Mapping(uint64_t n, int* fl, int* sl) {
  *fl = Msb(n);
  *sl = *fl >= kSlBits ? static_cast<int>((n >> (*fl - kSlBits)) & (kSlCount - 1))
                       : static_cast<int>((n << (kSlBits - *fl)) & (kSlCount - 1));
}

// Offset -> block index, open addressing with linear probing (no allocation per insert, unlike
// std::unordered_map: that node allocation was a third of a device alloc+free pair).
class OffsetMap {
 public:
  OffsetMap() { Rehash(64); }
  void Insert(uint64_t key, uint32_t value) {
    if ((used_ + 1) * 4 >= keys_.size() * 3) Rehash(size_ * 4 >= keys_.size() ? keys_.size() * 2 : keys_.size());
    size_t i = Slot(key);
    while (keys_[i] != kEmpty && keys_[i] != kTomb) i = (i + 1) & mask_;
    if (keys_[i] == kEmpty) ++used_;
    keys_[i] = key;
    values_[i] = value;
    ++size_;
  }
  // Returns the index of key's slot or SIZE_MAX.
  size_t Find(uint64_t key) const {
    for (size_t i = Slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return i;
      if (keys_[i] == kEmpty) return SIZE_MAX;
    }
  }
  uint32_t ValueAt(size_t slot) const { return values_[slot]; }
  void EraseAt(size_t slot) {
    keys_[slot] = kTomb;
    --size_;
  }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  static constexpr uint64_t kTomb = ~0ull - 1;
  size_t Slot(uint64_t key) const { return static_cast<size_t>(((key >> 6) * 0x9E3779B97F4A7C15ull) >> shift_); }
  void Rehash(size_t cap) {
    std::vector<uint64_t> old_keys = std::move(keys_);
    std::vector<uint32_t> old_values = std::move(values_);
    keys_.assign(cap, kEmpty);
    values_.assign(cap, 0);
    mask_ = cap - 1;
    shift_ = 64 - __builtin_ctzll(cap);
    size_ = used_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] != kEmpty && old_keys[i] != kTomb) Insert(old_keys[i], old_values[i]);
    }
  }
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;
  size_t mask_ = 0;
  int shift_ = 0;
  size_t size_ = 0;  // live keys
  size_t used_ = 0;  // live keys + tombstones
};

}  // namespace

struct Tlsf::Impl {
  struct Block {
    uint64_t offset;     // granules
    uint64_t size;       // granules
    uint64_t requested;  // bytes asked for (live blocks)
    uint32_t prev_phys, next_phys;
    uint32_t prev_free, next_free;
    bool free;
  };

  uint64_t capacity_bytes;
  uint64_t granule;
  int granule_shift;
  std::vector<Block> blocks;
  std::vector<uint32_t> spare;  // recycled block records
  uint64_t fl_bitmap = 0;
  uint32_t sl_bitmap[kFlCount] = {};
  uint32_t heads[kFlCount][kSlCount];
  OffsetMap live;  // byte offset -> block of each live allocation
  ArenaStats stats;

  uint32_t NewBlock(const Block& b) {
    if (!spare.empty()) {
      uint32_t i = spare.back();
      spare.pop_back();
      blocks[i] = b;
      return i;
    }
    blocks.push_back(b);
    return static_cast<uint32_t>(blocks.size() - 1);
  }

  void InsertFree(uint32_t i) {
    Block& b = blocks[i];
    int fl, sl;
    Mapping(b.size, &fl, &sl);
    b.free = true;
    b.prev_free = kNone;
    b.next_free = heads[fl][sl];
    if (b.next_free != kNone) blocks[b.next_free].prev_free = i;
    heads[fl][sl] = i;
    fl_bitmap |= 1ull << fl;
    sl_bitmap[fl] |= 1u << sl;
  }

  void RemoveFree(uint32_t i) {
    Block& b = blocks[i];
    int fl, sl;
    Mapping(b.size, &fl, &sl);
    if (b.prev_free != kNone)
      blocks[b.prev_free].next_free = b.next_free;
    else
      heads[fl][sl] = b.next_free;
    if (b.next_free != kNone) blocks[b.next_free].prev_free = b.prev_free;
    if (heads[fl][sl] == kNone) {
      sl_bitmap[fl] &= ~(1u << sl);
      if (!sl_bitmap[fl]) fl_bitmap &= ~(1ull << fl);
    }
    b.free = false;
  }

  // First free block of a class that guarantees size >= n granules, or kNone.
  uint32_t FindFit(uint64_t n) const {
    int fl = Msb(n);
    uint64_t rounded = n;
    if (fl >= kSlBits) {
      rounded = n + (1ull << (fl - kSlBits)) - 1;
      if (rounded < n) return kNone;  // overflow
    }
    int sl;
    Mapping(rounded, &fl, &sl);
    uint32_t sl_map = sl_bitmap[fl] & (~0u << sl);
    if (!sl_map) {
      uint64_t fl_map = fl + 1 < kFlCount ? fl_bitmap & (~0ull << (fl + 1)) : 0;
      if (!fl_map) return kNone;
      fl = __builtin_ctzll(fl_map);
      sl_map = sl_bitmap[fl];
    }
    sl = __builtin_ctz(sl_map);
    return heads[fl][sl];
  }

  // Splits `size` granules off the front of block i (which must be larger); the rest becomes a new
  // block after it, returned (not yet in any free list).
  uint32_t SplitFront(uint32_t i, uint64_t size) {
    Block rest{};
    rest.offset = blocks[i].offset + size;
    rest.size = blocks[i].size - size;
    rest.prev_phys = i;
    rest.next_phys = blocks[i].next_phys;
    rest.prev_free = rest.next_free = kNone;
    rest.free = false;
    uint32_t r = NewBlock(rest);  // may reallocate `blocks`
    if (blocks[r].next_phys != kNone) blocks[blocks[r].next_phys].prev_phys = r;
    blocks[i].next_phys = r;
    blocks[i].size = size;
    return r;
  }

  // Merges block b (free, not in a list) into its physical predecessor a (removed from its list).
  void MergeInto(uint32_t a, uint32_t b) {
    blocks[a].size += blocks[b].size;
    blocks[a].next_phys = blocks[b].next_phys;
    if (blocks[b].next_phys != kNone) blocks[blocks[b].next_phys].prev_phys = a;
    spare.push_back(b);
  }
};

Tlsf::Tlsf(uint64_t capacity, uint64_t min_alignment) : impl_(new Impl) {
  if (min_alignment < 64 || (min_alignment & (min_alignment - 1))) min_alignment = 64;
  Impl& s = *impl_;
  s.granule = min_alignment;
  s.granule_shift = Msb(min_alignment);
  for (auto& row : s.heads) std::fill(std::begin(row), std::end(row), kNone);
  const uint64_t granules = capacity >> s.granule_shift;
  s.capacity_bytes = granules << s.granule_shift;
  s.stats.capacity = s.capacity_bytes;
  if (granules) {
    uint32_t i = s.NewBlock({0, granules, 0, kNone, kNone, kNone, kNone, false});
    s.InsertFree(i);
  }
}

Tlsf::~Tlsf() = default;

bool Tlsf::Allocate(uint64_t size, uint64_t alignment, uint64_t* offset) {
  Impl& s = *impl_;
  if (size == 0 || size > s.capacity_bytes) return false;
  if (alignment & (alignment - 1)) return false;
  if (alignment < s.granule) alignment = s.granule;
  if (alignment > s.capacity_bytes) return false;
  const uint64_t n = (size + s.granule - 1) >> s.granule_shift;
  const uint64_t align_g = alignment >> s.granule_shift;
  const uint64_t search = n + align_g - 1;  // room to align inside any block found
  uint32_t i = s.FindFit(search);
  if (i == kNone && align_g > 1) {
    // A block of at least n granules may still happen to be aligned: try the exact class once.
    uint32_t j = s.FindFit(n);
    if (j != kNone && (s.blocks[j].offset % align_g) == 0) i = j;
  }
  if (i == kNone) return false;
  s.RemoveFree(i);
  // Leading padding for alignment becomes a free block of its own.
  const uint64_t off = s.blocks[i].offset;
  const uint64_t aligned = (off + align_g - 1) / align_g * align_g;
  if (aligned != off) {
    uint32_t r = s.SplitFront(i, aligned - off);
    s.InsertFree(i);
    i = r;
  }
  if (s.blocks[i].size > n) {
    uint32_t r = s.SplitFront(i, n);
    s.InsertFree(r);
  }
  Impl::Block& b = s.blocks[i];
  b.free = false;
  b.requested = size;
  const uint64_t byte_off = b.offset << s.granule_shift;
  s.live.Insert(byte_off, i);
  s.stats.bytes_in_use += size;
  s.stats.peak_bytes_in_use = std::max(s.stats.peak_bytes_in_use, s.stats.bytes_in_use);
  ++s.stats.live_allocations;
  ++s.stats.total_allocations;
  *offset = byte_off;
  return true;
}

bool Tlsf::Free(uint64_t offset, uint64_t* size) {
  Impl& s = *impl_;
  const size_t slot = s.live.Find(offset);
  if (slot == SIZE_MAX) return false;
  uint32_t i = s.live.ValueAt(slot);
  s.live.EraseAt(slot);
  const uint64_t requested = s.blocks[i].requested;
  s.stats.bytes_in_use -= requested;
  --s.stats.live_allocations;
  if (size) *size = requested;
  s.blocks[i].requested = 0;
  uint32_t next = s.blocks[i].next_phys;
  if (next != kNone && s.blocks[next].free) {
    s.RemoveFree(next);
    s.MergeInto(i, next);
  }
  uint32_t prev = s.blocks[i].prev_phys;
  if (prev != kNone && s.blocks[prev].free) {
    s.RemoveFree(prev);
    s.MergeInto(prev, i);
    i = prev;
  }
  s.InsertFree(i);
  return true;
}

uint64_t Tlsf::AllocationSize(uint64_t offset) const {
  const size_t slot = impl_->live.Find(offset);
  return slot == SIZE_MAX ? 0 : impl_->blocks[impl_->live.ValueAt(slot)].requested;
}

uint64_t Tlsf::LargestFreeBlock() const {
  const Impl& s = *impl_;
  if (!s.fl_bitmap) return 0;
  const int fl = Msb(s.fl_bitmap);
  const int sl = Msb(s.sl_bitmap[fl]);
  uint64_t best = 0;
  for (uint32_t i = s.heads[fl][sl]; i != kNone; i = s.blocks[i].next_free) {
    best = std::max(best, s.blocks[i].size);
  }
  // Allocate looks only in the classes at or above the one its request rounds up to (good fit), so a request
  // of `best` granules fails when it rounds past the top class: report the largest request that succeeds now,
  // the largest n with FindFit(n) (which only fails more as n grows; n = 1 finds any free block).
  uint64_t lo = 1, hi = best;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo + 1) / 2;
    if (s.FindFit(mid) != kNone)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo << s.granule_shift;
}

uint64_t Tlsf::capacity() const { return impl_->capacity_bytes; }

ArenaStats Tlsf::Stats() const {
  ArenaStats st = impl_->stats;
  st.largest_free_block = LargestFreeBlock();
  return st;
}

}  // namespace neuronmem::memory
