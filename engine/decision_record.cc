#include "engine/decision_record.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace leash::engine {

std::string MakeRef(uint64_t random_bits) {
  static constexpr char kAlphabet[] = "abcdefghijkmnpqrstuvwxyz23456789";  // no l, o, 0, 1
  std::string ref(8, 'a');
  for (char& c : ref) {
    c = kAlphabet[random_bits & 31];
    random_bits >>= 5;
  }
  return ref;
}

leash::v1::DecisionRecord MakeDecisionRecord(absl::Time ts, std::string ref, uint32_t uid,
                                             Surface surface, const Decision& decision,
                                             leash::v1::Subject subject) {
  leash::v1::DecisionRecord record;
  record.set_ts(absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", ts, absl::UTCTimeZone()));
  record.set_ref(std::move(ref));
  record.set_uid(uid);
  record.set_surface(std::string(SurfaceName(surface)));
  record.set_action(std::string(VerdictName(decision.verdict)));
  record.set_reason(decision.reason);
  *record.mutable_subject() = std::move(subject);
  return record;
}

std::string DecisionLine(const leash::v1::DecisionRecord& record) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string line;
  if (!google::protobuf::util::MessageToJsonString(record, &line, options).ok()) {
    line = absl::StrCat("{\"ref\":\"", record.ref(), "\",\"reason\":\"unrenderable\"}");
  }
  line.push_back('\n');
  return line;
}

}  // namespace leash::engine
