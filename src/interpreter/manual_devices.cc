// The devices of a manual computation's body that communicates (manual_devices.h).
#include "interpreter/manual_devices.h"

#include <string>
#include <utility>
#include <vector>

namespace neuronmem::interp {
namespace {

std::string Text(const std::vector<int64_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

constexpr const char* kRule =
    "the body runs once per combination of the manual axes' coordinates, for the devices at every coordinate of "
    "the other axes at once";

}  // namespace

ManualDevices::ManualDevices(std::string mesh, std::vector<Axis> axes, std::vector<int64_t> device_ids)
    : mesh_(std::move(mesh)), axes_(std::move(axes)) {
  key_ = "@" + mesh_ + "<";
  for (const Axis& a : axes_) {
    devices_ *= a.size;
    (a.manual ? processes_ : frees_) *= a.size;
    key_ += a.name + "=" + std::to_string(a.size) + (a.manual ? " manual," : ",");
  }
  key_ += ">";
  for (int64_t id : device_ids) key_ += std::to_string(id) + ",";
  const size_t n = static_cast<size_t>(devices_);
  process_of_.resize(n);
  free_of_.resize(n);
  position_of_.resize(n);
  id_at_.resize(n);
  for (int64_t pos = 0; pos < devices_; ++pos) {
    const int64_t id = device_ids.size() == n ? device_ids[static_cast<size_t>(pos)] : pos;
    std::vector<int64_t> coord(axes_.size());
    for (size_t a = axes_.size(), rest = static_cast<size_t>(pos); a-- > 0;) {
      coord[a] = static_cast<int64_t>(rest % static_cast<size_t>(axes_[a].size));
      rest /= static_cast<size_t>(axes_[a].size);
    }
    int64_t p = 0, f = 0;
    for (size_t a = 0; a < axes_.size(); ++a) {
      int64_t& at = axes_[a].manual ? p : f;
      at = at * axes_[a].size + coord[a];
    }
    process_of_[static_cast<size_t>(id)] = p;
    free_of_[static_cast<size_t>(id)] = f;
    position_of_[static_cast<size_t>(id)] = pos;
    id_at_[static_cast<size_t>(p * frees_ + f)] = id;
  }
  for (int64_t p = 0; p < processes_; ++p) partition_ids_.push_back(static_cast<uint32_t>(IdAt(p, 0)));
}

std::string ManualDevices::Describe(int64_t id) const {
  std::string s = "device " + std::to_string(id) + " (";
  size_t rest = static_cast<size_t>(position_of_[static_cast<size_t>(id)]);
  std::vector<int64_t> coord(axes_.size());
  for (size_t a = axes_.size(); a-- > 0;) {
    coord[a] = static_cast<int64_t>(rest % static_cast<size_t>(axes_[a].size));
    rest /= static_cast<size_t>(axes_[a].size);
  }
  for (size_t a = 0; a < axes_.size(); ++a) s += (a ? ", " : "") + axes_[a].name + "=" + std::to_string(coord[a]);
  return s + ")";
}

Status ManualDevices::CheckIds(const CompileCtx& cx, const char* what, const std::vector<int64_t>& ids) const {
  for (int64_t id : ids)
    if (id < 0 || id >= devices_)
      return cx.Invalid("%s names device %lld, which is not a device of mesh @%s (%lld devices)", what,
                        static_cast<long long>(id), mesh_.c_str(), static_cast<long long>(devices_));
  return Ok();
}

Status ManualDevices::MapGroups(const CompileCtx& cx, const char* what, bool all,
                                std::vector<std::vector<int64_t>>* rows) const {
  std::vector<std::vector<int64_t>> given;
  if (all) {
    given.emplace_back();
    for (int64_t id = 0; id < devices_; ++id) given.back().push_back(id);
  } else {
    for (std::vector<int64_t>& r : *rows)
      if (!r.empty()) given.push_back(std::move(r));
  }
  std::vector<int64_t> row_of(static_cast<size_t>(devices_), -1);
  for (size_t r = 0; r < given.size(); ++r) {
    NEURONMEM_RETURN_IF_ERROR(CheckIds(cx, what, given[r]));
    for (int64_t id : given[r]) row_of[static_cast<size_t>(id)] = static_cast<int64_t>(r);
  }
  const auto processes = [&](const std::vector<int64_t>& row) {
    std::vector<int64_t> p;
    for (int64_t id : row) p.push_back(process_of_[static_cast<size_t>(id)]);
    return p;
  };
  for (const std::vector<int64_t>& row : given)
    for (int64_t id : row)
      if (free_of_[static_cast<size_t>(id)] != free_of_[static_cast<size_t>(row[0])])
        return cx.Invalid(
            "%s groups %s with %s, which is at other coordinates of the mesh axes that are not manual: %s, so a "
            "group may join only devices at the same coordinates of those axes",
            what, Describe(row[0]).c_str(), Describe(id).c_str(), kRule);
  // Each group and its counterparts at the other free coordinates: the same processes in the same order.
  for (const std::vector<int64_t>& row : given) {
    const std::vector<int64_t> mine = processes(row);
    for (int64_t f = 0; f < frees_; ++f) {
      const int64_t other = IdAt(mine[0], f);
      const int64_t r = row_of[static_cast<size_t>(other)];
      if (r >= 0 && processes(given[static_cast<size_t>(r)]) == mine) continue;
      return cx.Invalid(
          "%s puts %s in group %s and %s in %s: %s, so the groups at every coordinate of the mesh axes that are not "
          "manual must be the same groups of manual coordinates, in the same order",
          what, Describe(row[0]).c_str(), Text(row).c_str(), Describe(other).c_str(),
          r < 0 ? "none" : ("group " + Text(given[static_cast<size_t>(r)])).c_str(), kRule);
    }
  }
  rows->clear();
  for (const std::vector<int64_t>& row : given)
    if (free_of_[static_cast<size_t>(row[0])] == 0) rows->push_back(processes(row));
  return Ok();
}

Status ManualDevices::MapPairs(const CompileCtx& cx, std::vector<std::pair<int64_t, int64_t>>* pairs) const {
  std::vector<int64_t> target_of(static_cast<size_t>(devices_), -1);
  for (const auto& p : *pairs) {
    NEURONMEM_RETURN_IF_ERROR(CheckIds(cx, "source_target_pairs", {p.first, p.second}));
    target_of[static_cast<size_t>(p.first)] = p.second;
  }
  for (const auto& p : *pairs) {
    const size_t s = static_cast<size_t>(p.first), t = static_cast<size_t>(p.second);
    if (free_of_[s] != free_of_[t])
      return cx.Invalid(
          "source_target_pairs pairs %s with %s, which is at other coordinates of the mesh axes that are not "
          "manual: %s, so a pair may join only devices at the same coordinates of those axes",
          Describe(p.first).c_str(), Describe(p.second).c_str(), kRule);
    for (int64_t f = 0; f < frees_; ++f) {
      const int64_t cs = IdAt(process_of_[s], f), ct = IdAt(process_of_[t], f);
      if (target_of[static_cast<size_t>(cs)] == ct) continue;
      return cx.Invalid(
          "source_target_pairs has [%lld, %lld] (%s to %s) but not [%lld, %lld] (%s to %s): %s, so the pairs at "
          "every coordinate of the mesh axes that are not manual must be the same pairs of manual coordinates",
          static_cast<long long>(p.first), static_cast<long long>(p.second), Describe(p.first).c_str(),
          Describe(p.second).c_str(), static_cast<long long>(cs), static_cast<long long>(ct), Describe(cs).c_str(),
          Describe(ct).c_str(), kRule);
    }
  }
  std::vector<std::pair<int64_t, int64_t>> mapped;
  for (const auto& p : *pairs)
    if (free_of_[static_cast<size_t>(p.first)] == 0)
      mapped.emplace_back(process_of_[static_cast<size_t>(p.first)], process_of_[static_cast<size_t>(p.second)]);
  *pairs = std::move(mapped);
  return Ok();
}

}  // namespace neuronmem::interp
