// Tool-input detectors: the patterns that find secrets, personal data and privilege-escalation
// commands in the text of a CheckTool call, and the Inspector that runs them.
//
// Every pattern is an RE2 (linear time in the input; untrusted input never reaches
// std::regex). The Inspector first runs all detectors at once as one RE2::Set over every text
// of a call joined by '\n' — one DFA pass for the whole call, which is all the work when
// nothing matches — and only then runs the detectors that hit, on the texts they hit, for
// match positions. A detector's pattern never uses a bare ^, $ or \A (only \b, (?:...|$) and
// \z, whose meaning '\n'-joining preserves), so the joined pass finds every text a single
// text's pass would; Inspect and InspectBatch give identical results (a test and the fuzz
// target check this).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace leash::tools {

// The three inspection categories (docs/ARCHITECTURE.md, rule T1), in report order
// (engine::kInspectCategories).
enum class Category { kSecrets = 0, kPii = 1, kPrivEsc = 2 };
inline constexpr int kNumCategories = 3;

// "secrets", "pii", "priv_esc": the keys of tools.inspect in the config.
absl::string_view CategoryName(Category category);

// Secrets and personal data are masked wherever they are written ("Sensitive tool-input
// matches (secrets, PII) are masked before they are written"); a privilege-escalation match
// is a command, shown as written so an operator can see what was refused.
inline bool IsSensitive(Category category) { return category != Category::kPrivEsc; }

struct DetectorInfo {
  // The name that appears in findings ("github_token", "email", "rm_rf_root").
  absl::string_view name;
  Category category;
};

// One detector's match in one text: the byte span of the sensitive part (for a key=value
// detector, the value; for a command, the command phrase).
struct DetectorMatch {
  int detector = -1;
  size_t begin = 0;
  size_t end = 0;
};

// A match in one of several texts given to InspectBatch.
struct BatchMatch {
  size_t text = 0;
  DetectorMatch match;
};

// The compiled detectors. Immutable after Create; every method is const and thread-safe.
// InspectBatch runs the set over chunks of whole texts (about 2 KiB each) and then each
// detector that hit only over the chunks it hit.
class Inspector {
 public:
  // Compiles every detector. Fails (Internal) only if a built-in pattern does not compile,
  // which the unit tests rule out.
  static absl::StatusOr<std::unique_ptr<const Inspector>> Create();
  ~Inspector();

  int num_detectors() const { return static_cast<int>(detectors_.size()); }
  const DetectorInfo& info(int detector) const { return detectors_[detector].info; }
  // The index of the detector called `name`, or -1.
  int FindDetector(absl::string_view name) const;

  // Every match in `text`, ordered by position. Overlapping secret/PII matches are resolved
  // in favour of the more specific detector (an OpenAI key inside `api_key=...` is an
  // openai_api_key, not a generic_secret); privilege-escalation matches are all kept.
  std::vector<DetectorMatch> Inspect(absl::string_view text) const;

  // Inspect() of each text, in one pass of the detector set over all of them. Results are
  // ordered by text, then position.
  std::vector<BatchMatch> InspectBatch(absl::Span<const absl::string_view> texts) const;

  // The key-context half of generic_secret: a JSON member whose key names a secret
  // ("password", "apiKey", "Authorization", "client_secret") and whose string value looks
  // like one (entropy floor, not a placeholder). Returns the value's sensitive span.
  std::optional<DetectorMatch> InspectKeyedValue(absl::string_view key,
                                                 absl::string_view value) const;

  // The two halves of InspectKeyedValue, for callers that see the same keys many times and
  // remember IsSecretKey's answer: whether `key` names a secret, and whether `value` (of
  // such a key) is one.
  bool IsSecretKey(absl::string_view key) const;
  std::optional<DetectorMatch> InspectSecretKeyValue(absl::string_view value) const;
  // Whether `value` could be a keyed secret at all (length, one token): a check that reads
  // little, to make before IsSecretKey.
  static bool MayBeKeyedSecret(absl::string_view value);
  // Whether `key` ends in a letter some secret key name ends in: a check that reads one
  // byte, to make before IsSecretKey (or a cache of it).
  static bool MayBeSecretKey(absl::string_view key);

 private:
  struct Detector {
    DetectorInfo info;
    std::unique_ptr<re2::RE2> re;
    // Extra checks on a match (entropy floor, placeholder words, Luhn, ...); may narrow the
    // span to the sensitive part.
    bool (*accept)(absl::string_view text, absl::string_view* span) = nullptr;
    absl::string_view trim;  // trailing characters dropped from the span
  };
  // InspectBatch runs the detector set over chunks of about this many bytes of whole texts.
  static constexpr size_t kChunkBytes = 2 * 1024;
  class Set;

  Inspector();
  // Appends every accepted match of detector `d` in `text` to `out`.
  void MatchDetector(int d, absl::string_view text, std::vector<DetectorMatch>* out) const;
  // Resolves overlaps and sorts one text's matches.
  void Resolve(std::vector<DetectorMatch>* matches) const;
  // Which detectors hit anywhere in `text` (all of them if the set could not decide).
  std::vector<int> Hits(absl::string_view text) const;

  std::vector<Detector> detectors_;
  std::unique_ptr<Set> set_;
  std::unique_ptr<re2::RE2> secret_key_;
  int generic_secret_ = -1;
};

// Shannon entropy of `text` in bits per byte.
double ShannonEntropy(absl::string_view text);

// Whether `value` is a placeholder rather than a secret: REDACTED, xxxx, ****, <token>,
// ${VAR}, {{var}}, "your_api_key", "changeme", example values, a run of one character.
bool IsPlaceholder(absl::string_view value);

// The entropy floor of generic_secret's values, in bits per byte.
inline constexpr double kGenericSecretEntropyFloor = 3.0;

// Whether `digits` passes the Luhn checksum.
bool LuhnValid(absl::string_view digits);

}  // namespace leash::tools
