#include "cli/suggest_observations.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cli/suggest_log_line.h"
#include "engine/compiled_policy.h"
#include "engine/decision.h"
#include "engine/ip_address.h"
#include "engine/network_entry.h"

namespace leash::cli {
namespace {

// The writers' timestamp form (engine::MakeDecisionRecord).
constexpr char kTsFormat[] = "%Y-%m-%dT%H:%M:%E6SZ";

std::string FormatBound(absl::Time time) {
  if (time == absl::InfinitePast() || time == absl::InfiniteFuture()) return "";
  return absl::FormatTime(kTsFormat, time, absl::UTCTimeZone());
}

// What the record judged, as the key of its surface's map.
std::string KeyOf(leash::v1::Surface surface, const leash::v1::Subject& subject) {
  switch (surface) {
    case leash::v1::SURFACE_NETWORK:
      return ExactNetworkEntry(subject);
    case leash::v1::SURFACE_FILESYSTEM:
      return subject.path();
    case leash::v1::SURFACE_COMMANDS:
      return subject.binary();
    case leash::v1::SURFACE_TOOLS:
      return subject.name();
    default:
      return "";
  }
}

void Note(Seen& seen, const leash::v1::DecisionRecord& record, bool audited) {
  if (seen.count++ == 0) {
    seen.example_ref = record.ref();
    seen.reason = record.reason();
  }
  if (audited) ++seen.audited;
}

}  // namespace

std::string ExactNetworkEntry(const leash::v1::Subject& subject) {
  const std::string port = subject.port() == 0 ? "" : absl::StrCat(subject.port());
  // The proxy names a connection by its HTTP Host or TLS SNI, which may be an address: that
  // is an address entry, written as one.
  if (!subject.domain().empty() && !engine::ParseIpAddress(subject.domain())) {
    const std::string host = engine::NormalizeHost(subject.domain());
    return port.empty() ? host : absl::StrCat(host, ":", port);
  }
  std::optional<engine::IpAddress> ip =
      engine::ParseIpAddress(subject.domain().empty() ? subject.ip() : subject.domain());
  if (!ip) return "";
  const std::string text = engine::FormatIpAddress(*ip);
  if (ip->family == engine::IpAddress::Family::kV4) {
    return port.empty() ? absl::StrCat(text, "/32") : absl::StrCat(text, "/32:", port);
  }
  return port.empty() ? absl::StrCat(text, "/128") : absl::StrCat("[", text, "/128]:", port);
}

Observations::Observations(ObservationFilter filter)
    : filter_(std::move(filter)),
      since_text_(FormatBound(filter_.since)),
      until_text_(FormatBound(filter_.until)) {}

bool Observations::ForSubject(uint32_t uid) const {
  for (const engine::UidRange& range : filter_.uids) {
    if (range.Contains(uid)) return true;
  }
  return false;
}

bool Observations::InWindow(absl::string_view ts) const {
  if (since_text_.empty() && until_text_.empty()) return true;
  const size_t canonical = std::max(since_text_.size(), until_text_.size());
  if (ts.size() == canonical) {
    return (since_text_.empty() || ts >= since_text_) && (until_text_.empty() || ts < until_text_);
  }
  absl::Time time;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, std::string(ts), &time, &error)) return false;
  return time >= filter_.since && time < filter_.until;
}

void Observations::AddLine(absl::string_view line) {
  ++counts_.lines;
  if (line.empty()) return;
  // Cheap filters first: most lines of a shared log are other subjects'.
  std::optional<uint32_t> uid = PeekUid(line);
  if (uid && !ForSubject(*uid)) return;
  if (!InWindow(PeekTs(line))) return;
  absl::StatusOr<LoggedDecision> decision = ParseLoggedDecision(line);
  if (!decision.ok()) {
    ++counts_.unreadable;
    return;
  }
  const leash::v1::DecisionRecord& record = decision->record;
  if (!ForSubject(record.uid())) return;
  if (record.action() == "suppressed") {
    // "decision log: <n> allow lines of uid <uid> not written between ...": the writers' own
    // report (proto/sidecar/decision_log.cc); its first number is the count.
    constexpr absl::string_view kPrefix = "decision log: ";
    absl::string_view reason = record.reason();
    if (absl::ConsumePrefix(&reason, kPrefix)) {
      uint64_t held = 0;
      if (absl::SimpleAtoi(reason.substr(0, reason.find(' ')), &held)) {
        counts_.suppressed_allows += held;
      }
    }
    return;
  }
  const bool allow = record.action() == "allow";
  const bool block = record.action() == "block";
  if (!allow && !block) return;  // outcome lines and the like: not decisions
  absl::StatusOr<leash::v1::Surface> surface = engine::ParseSurfaceName(record.surface());
  if (!surface.ok()) {
    ++counts_.unreadable;
    return;
  }
  if (!filter_.surfaces.empty() && !filter_.surfaces.count(*surface)) return;
  ++counts_.subject_lines;
  const std::string key = KeyOf(*surface, record.subject());
  const bool audited = block && !decision->enforced;
  if (audited) ++counts_.audited;
  if (allow || audited) {
    if (key.empty()) return;  // nothing an entry could name
    // Neither is a thing done of its own (engine/compiled_policy.h): an interpreter is part of
    // its program's exec, and a listing's entry would allow every file under the directory.
    if (*surface == leash::v1::SURFACE_COMMANDS &&
        absl::StartsWith(record.reason(),
                         absl::StrCat("commands: ", key, engine::kElfInterpreterOf))) {
      // Kept apart: run directly, the same file is the loader, never a command to suggest.
      interpreters_.insert(key);
      return;
    }
    if (*surface == leash::v1::SURFACE_FILESYSTEM &&
        absl::EndsWith(record.reason(), engine::kDirectoryListing)) {
      Note(listed_[key], record, audited);
      return;
    }
    Note(needed_[*surface][key], record, audited);
  } else {
    Note(refused_[*surface][key.empty() ? "(unnamed)" : key], record, false);
  }
}

const SeenMap& Observations::needed(leash::v1::Surface surface) const {
  static const SeenMap* empty = new SeenMap();
  auto it = needed_.find(surface);
  return it == needed_.end() ? *empty : it->second;
}

const SeenMap& Observations::refused(leash::v1::Surface surface) const {
  static const SeenMap* empty = new SeenMap();
  auto it = refused_.find(surface);
  return it == refused_.end() ? *empty : it->second;
}

}  // namespace leash::cli
