#include "controlplane/port_map.h"

#include <algorithm>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/read_file.h"
#include "controlplane/netfilter.h"
#include "google/protobuf/util/json_util.h"
#include "leash/v1/state.pb.h"

namespace leash::controlplane {
namespace {

constexpr uint32_t kFormat = 1;

absl::Status Corrupt(const std::string& path, absl::string_view problem) {
  // The parser's message may run over several lines (with a caret): keep its first.
  problem = problem.substr(0, problem.find('\n'));
  return absl::FailedPreconditionError(absl::StrCat(
      "port map ", path, " is corrupt (", problem,
      "); restore it from backup, or stop leash, remove it and restart (every agent then gets "
      "a new port)"));
}

}  // namespace

absl::StatusOr<PortMap> PortMap::Load(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (absl::IsNotFound(text.status())) return PortMap();
  if (!text.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("port map unreadable: ", text.status().message()));
  }
  return Parse(*text, path);
}

absl::StatusOr<PortMap> PortMap::Parse(absl::string_view json, const std::string& path) {
  leash::v1::PortMapFile file;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parsed =
      google::protobuf::util::JsonStringToMessage(std::string(json), &file, options);
  if (!parsed.ok()) return Corrupt(path, parsed.message().as_string());
  if (file.format() != kFormat) {
    return Corrupt(path, absl::StrCat("format ", file.format(), " is not ", kFormat));
  }
  PortMap map;
  std::set<uint32_t> ports;
  for (const auto& [account, assignment] : file.accounts()) {
    if (account.empty()) return Corrupt(path, "an entry has an empty account name");
    for (char c : account) {
      if (c == '/' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
        return Corrupt(path, absl::StrCat("'", absl::CEscape(account), "' is not an account name"));
      }
    }
    const uint32_t port = assignment.port();
    if (port < kProxyPortFirst || port > kProxyPortLast) {
      return Corrupt(path, absl::StrCat(account, " has port ", port, ", outside ",
                                        kProxyPortFirst, "-", kProxyPortLast));
    }
    if (port == kSingleSubjectPort) {
      return Corrupt(path, absl::StrCat(account, " has port ", port,
                                        ", the single-agent listener's, which is never handed out"));
    }
    if (!ports.insert(port).second) {
      return Corrupt(path, absl::StrCat("port ", port, " is assigned twice"));
    }
    map.by_account_[account] = Assignment{account, assignment.uid(), static_cast<uint16_t>(port)};
    map.highest_port_ = std::max<uint16_t>(map.highest_port_, static_cast<uint16_t>(port));
  }
  return map;
}

absl::StatusOr<uint16_t> PortMap::NextPort(const std::string& account,
                                           const std::function<bool(uint16_t)>& usable) {
  // Ports are never reused: the next port is past the highest ever handed out.
  uint32_t next = std::max<uint32_t>(kProxyPortFirst, highest_port_ + 1u);
  uint32_t unusable = 0;
  while (next <= kProxyPortLast) {
    if (next != kSingleSubjectPort) {
      if (!usable || usable(static_cast<uint16_t>(next))) break;
      ++unusable;
    }
    ++next;
  }
  if (next > kProxyPortLast && unusable > 0) {
    // Not recorded as handed out: once another process lets go, a later pass finds them.
    return absl::ResourceExhaustedError(absl::StrCat(
        "no proxy port left for ", account, ": the ", unusable, " port(s) of ", kProxyPortFirst,
        "-", kProxyPortLast, " never handed out are held by another process"));
  }
  if (next > kProxyPortLast) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "no proxy port left for ", account, ": every port in ", kProxyPortFirst, "-",
        kProxyPortLast, " has been handed out once and ports are never reused"));
  }
  highest_port_ = static_cast<uint16_t>(next);
  dirty_ = true;
  return static_cast<uint16_t>(next);
}

absl::StatusOr<uint16_t> PortMap::Assign(const Account& account,
                                         const std::function<bool(uint16_t)>& usable) {
  auto it = by_account_.find(account.name);
  if (it != by_account_.end()) {
    if (it->second.uid != account.uid) {
      it->second.uid = account.uid;
      dirty_ = true;
    }
    if (!usable || usable(it->second.port)) return it->second.port;
    // Its port cannot carry its traffic (another process holds it): a fresh one. The old one is
    // past the highest ever handed out, so it is never handed to anyone again.
    absl::StatusOr<uint16_t> moved = NextPort(account.name, usable);
    // None left: it keeps its own, which the proxy cannot listen on, so it is denied and its
    // chain resets its TCP (an error here would leave it without a chain at all).
    if (!moved.ok()) return it->second.port;
    it->second.port = *moved;
    return *moved;
  }
  absl::StatusOr<uint16_t> next = NextPort(account.name, usable);
  if (!next.ok()) return next.status();
  by_account_[account.name] = Assignment{account.name, account.uid, *next};
  return *next;
}

std::optional<uint16_t> PortMap::PortOf(absl::string_view account) const {
  auto it = by_account_.find(account);
  if (it == by_account_.end()) return std::nullopt;
  return it->second.port;
}

std::vector<PortMap::Assignment> PortMap::All() const {
  std::vector<Assignment> all;
  for (const auto& [name, assignment] : by_account_) all.push_back(assignment);
  std::sort(all.begin(), all.end(),
            [](const Assignment& a, const Assignment& b) { return a.account < b.account; });
  return all;
}

std::string PortMap::Serialize() const {
  leash::v1::PortMapFile file;
  file.set_format(kFormat);
  for (const auto& [name, assignment] : by_account_) {
    leash::v1::PortAssignment& out = (*file.mutable_accounts())[name];
    out.set_uid(assignment.uid);
    out.set_port(assignment.port);
  }
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(file, &json, options);
  return json;
}

absl::Status PortMap::Save(const std::string& path) {
  absl::Status saved = base::WriteFileAtomically(path, Serialize(), 0644);
  if (saved.ok()) dirty_ = false;
  return saved;
}

}  // namespace leash::controlplane
