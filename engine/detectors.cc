#include "engine/detectors.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "re2/re2.h"
#include "re2/set.h"

namespace leash::tools {
namespace {

// An accept function sees the whole match in *span, may narrow it to the sensitive part,
// and says whether it is a finding.
using AcceptFn = bool (*)(absl::string_view text, absl::string_view* span);

// --- Pattern pieces -----------------------------------------------------------------------

// What may follow a command word: whitespace, a shell operator or the end of the text.
#define LEASH_CMD_END R"((?:[\s;&|)'"`]|$))"
// A command word at a word boundary ("sudo", "/usr/bin/sudo", "$(sudo").
#define LEASH_CMD(word) R"(\b()" word R"())" LEASH_CMD_END

// rm's recursive flag in any spelling (-r, -R, -rf, -fr, -Rf, -vrf, --recursive) and a target
// that is the root: /, //, /., /*, quoted or not.
#define LEASH_RM_RECURSIVE R"((?:-[A-Za-z]*[rR][A-Za-z]*|--recursive))"
#define LEASH_RM_ROOT R"(["']?/+(?:\.?/*|\*)["']?)"
#define LEASH_RM_ARGS R"((?:[^;&|\n]*?\s)?)"

// A write to a file: a redirect, tee, a copy/move/install whose last operand it is, an
// in-place editor or attribute change, or dd of=.
#define LEASH_WRITE_TO(file)                                                          \
  R"(>>?\s*["']?)" file "|"                                                           \
  R"(\btee\s+(?:[^;&|\n]*?\s)?["']?)" file "|"                                        \
  R"(\b(?:cp|mv|install|ln|rsync)\s[^;&|\n]*?\s["']?)" file R"(["']?\s*(?:[;&|)\n]|$)|)" \
  R"(\b(?:sed\s[^;&|\n]*-i|chmod|chown|chattr|truncate)\s[^;&|\n]*?["']?)" file "|"    \
  R"(\bof=["']?)" file

#define LEASH_SUDOERS R"(/etc/sudoers(?:\.d(?:/[^\s;&|)'"`]*)?)?)"
#define LEASH_PASSWD_FILES R"(/etc/(?:passwd|shadow|gshadow|group)\b)"

// --- Accept functions ---------------------------------------------------------------------

bool HasDigit(absl::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
}
bool HasUpper(absl::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return absl::ascii_isupper(c); });
}
bool HasLower(absl::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return absl::ascii_islower(c); });
}

bool NotPlaceholder(absl::string_view text, absl::string_view* span) {
  return !IsPlaceholder(*span);
}

// Real OpenAI/Anthropic/Slack keys are random base62/base64url: digits and both cases.
// "sk-learn-contrib-...", "sk-ant-api03-sk-ant-api03-..." and "xoxb-your-token-here" are not.
bool RandomLooking(absl::string_view text, absl::string_view* span) {
  return HasDigit(*span) && HasUpper(*span) && HasLower(*span) && !IsPlaceholder(*span);
}
bool SlackLooking(absl::string_view text, absl::string_view* span) {
  return HasDigit(*span) && !IsPlaceholder(*span);
}

// google_api_key's match ends with the character after the key (or the text's end).
bool GoogleKey(absl::string_view text, absl::string_view* span) {
  if (span->size() > 39) span->remove_suffix(span->size() - 39);
  return !IsPlaceholder(*span);
}

// A PEM block with a body of a few characters is documentation ("<your key here>", "...").
bool PemHasBody(absl::string_view text, absl::string_view* span) {
  absl::string_view block = *span;
  const size_t header_end = block.find("-----", 5);
  if (header_end == absl::string_view::npos) return false;
  absl::string_view body = block.substr(header_end + 5);
  if (size_t footer = body.find("-----END"); footer != absl::string_view::npos) {
    body = body.substr(0, footer);
  }
  int base64 = 0;
  for (char c : body) {
    if (absl::ascii_isalnum(c) || c == '+' || c == '/' || c == '=') ++base64;
  }
  return base64 >= 32;
}

int CharClasses(absl::string_view s) {
  bool lower = false, upper = false, digit = false, symbol = false;
  for (char c : s) {
    if (absl::ascii_islower(c)) {
      lower = true;
    } else if (absl::ascii_isupper(c)) {
      upper = true;
    } else if (absl::ascii_isdigit(c)) {
      digit = true;
    } else if (c != '_' && c != '-' && c != '.') {
      symbol = true;  // word separators do not make a value look random
    }
  }
  return lower + upper + digit + symbol;
}

// The value half of generic_secret: long enough, over the entropy floor, of at least two
// character classes (a lone lowercase word or a number is not a secret), and no placeholder.
bool GenericValueLooksSecret(absl::string_view value) {
  if (value.size() < 8 || IsPlaceholder(value) || CharClasses(value) < 2) return false;
  // A value shorter than 16 bytes cannot reach the floor (its entropy is at most
  // log2(length)); it has to reach 0.8 * log2(length) instead.
  const double floor =
      std::min(kGenericSecretEntropyFloor, 0.8 * std::log2(static_cast<double>(value.size())));
  return ShannonEntropy(value) >= floor;
}

// Keys that end in "token" but name something public: pagination and sync cursors.
constexpr char kNonSecretKey[] =
    R"((?i)(?:page|next|prev|previous|sync|continuation|cursor|resume|start)[_.-]?token$)";

bool GenericSecret(absl::string_view text, absl::string_view* span);  // defined below

// Email: not an scp-style remote (git@github.com:org/repo), not a reserved example domain
// (RFC 2606), not an image name with a density suffix (icon@2x.png).
bool RealEmail(absl::string_view text, absl::string_view* span) {
  absl::string_view email = *span;
  const size_t end = email.data() + email.size() - text.data();
  if (end < text.size() && text[end] == ':') return false;
  const std::string domain = absl::AsciiStrToLower(email.substr(email.find('@') + 1));
  const absl::string_view tld = absl::string_view(domain).substr(domain.rfind('.') + 1);
  for (absl::string_view reserved : {"example.com", "example.org", "example.net"}) {
    if (domain == reserved || absl::EndsWith(domain, absl::StrCat(".", reserved))) return false;
  }
  for (absl::string_view reserved_tld :
       {"example", "test", "invalid", "localhost", "local", "png", "jpg", "jpeg", "gif", "svg",
        "webp", "ico", "bmp", "css", "js", "json", "yaml", "yml", "html", "txt", "pdf"}) {
    if (tld == reserved_tld) return false;
  }
  return true;
}

// Card numbers: 13-19 digits, a known issuer prefix, a valid Luhn checksum, and not one of
// the issuers' published test numbers.
bool CardNumber(absl::string_view text, absl::string_view* span) {
  std::string digits;
  for (char c : *span) {
    if (absl::ascii_isdigit(c)) digits.push_back(c);
  }
  if (digits.size() < 13 || digits.size() > 19 || !LuhnValid(digits)) return false;
  if (std::all_of(digits.begin(), digits.end(), [&](char c) { return c == digits[0]; })) {
    return false;
  }
  for (absl::string_view test_number :
       {"4111111111111111", "4242424242424242", "4012888888881881", "4000056655665556",
        "5555555555554444", "5105105105105100", "378282246310005", "371449635398431",
        "6011111111111117", "6011000990139424", "3530111333300000", "30569309025904"}) {
    if (digits == test_number) return false;
  }
  const int two = std::stoi(digits.substr(0, 2));
  const int four = std::stoi(digits.substr(0, 4));
  const int three = std::stoi(digits.substr(0, 3));
  return digits[0] == '4' ||                                     // Visa
         (two >= 51 && two <= 55) || (four >= 2221 && four <= 2720) ||  // Mastercard
         two == 34 || two == 37 ||                                // American Express
         four == 6011 || two == 65 || (three >= 644 && three <= 649) ||  // Discover
         two == 35 ||                                             // JCB
         two == 36 || two == 38 || (three >= 300 && three <= 305);  // Diners Club
}

// US social security numbers that can be issued: area not 000, 666 or 9xx, group not 00,
// serial not 0000, and not the well-known advertising/example numbers.
bool Ssn(absl::string_view text, absl::string_view* span) {
  absl::string_view ssn = *span;
  absl::string_view area = ssn.substr(0, 3), group = ssn.substr(4, 2), serial = ssn.substr(7);
  if (area == "000" || area == "666" || area[0] == '9') return false;
  if (group == "00" || serial == "0000") return false;
  for (absl::string_view example : {"123-45-6789", "078-05-1120", "219-09-9999"}) {
    if (ssn == example) return false;
  }
  return true;
}

// What a command phrase is shown without: the separator that ended it.
constexpr char kTrimCommand[] = " \t\r\n;&|)`";
// For a command word, a closing quote is a separator too ('sudo').
constexpr char kTrimWord[] = " \t\r\n;&|)`'\"";

struct Spec {
  const char* name;
  Category category;
  // Matched for its whole extent only (no submatches: RE2 then needs its DFAs alone, never
  // the slower NFA, however long the match); capture groups in it only document the span.
  const char* pattern;
  AcceptFn accept = nullptr;
  const char* trim = nullptr;  // trailing characters dropped from the span
};

// Order is priority: where two secret/PII matches overlap, the earlier detector wins, so the
// specific formats come before generic_secret.
const Spec kSpecs[] = {
    // --- secrets ---
    {"private_key", Category::kSecrets,
     R"((-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\z)))",
     PemHasBody},
    {"anthropic_api_key", Category::kSecrets, R"(\b(sk-ant-[a-z]{2,12}[0-9]{2}-[A-Za-z0-9_-]{32,}))",
     RandomLooking},
    {"openai_api_key", Category::kSecrets,
     R"(\b(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}))", RandomLooking},
    {"github_token", Category::kSecrets,
     R"(\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{50,251})\b)",
     NotPlaceholder},
    {"slack_token", Category::kSecrets,
     R"(\b(xox[abeoprs]-[A-Za-z0-9-]{10,250}|xapp-[0-9]-[A-Za-z0-9-]{10,250}))", SlackLooking},
    {"aws_access_key_id", Category::kSecrets,
     R"(\b((?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16})\b)", NotPlaceholder},
    {"google_api_key", Category::kSecrets, R"(\b(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$))",
     GoogleKey},
    {"stripe_live_key", Category::kSecrets, R"(\b((?:sk|rk)_live_[0-9A-Za-z]{24,247})\b)",
     NotPlaceholder},
    {"jwt", Category::kSecrets,
     R"(\b(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}))"},
    {"generic_secret", Category::kSecrets,
     R"((?i)([a-z0-9_.-]*(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|pwd|credentials?|access[_-]?key|private[_-]?key|auth))["']?\s*[:=]\s*["']?(?:bearer\s+|basic\s+|token\s+)?([A-Za-z0-9+/=_.~!@#%^*-]{8,})(?:["'\s,;&)}\]]|$))",
     GenericSecret},
    // --- pii ---
    {"email", Category::kPii,
     R"(\b([A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24})\b)", RealEmail},
    {"credit_card", Category::kPii, R"(\b((?:[0-9][ -]?){12,18}[0-9])\b)", CardNumber},
    {"us_ssn", Category::kPii, R"(\b([0-9]{3}-[0-9]{2}-[0-9]{4})\b)", Ssn},
    // --- priv_esc ---
    {"sudo", Category::kPrivEsc, LEASH_CMD("sudo"), nullptr, kTrimWord},
    {"su", Category::kPrivEsc, LEASH_CMD("su"), nullptr, kTrimWord},
    {"pkexec", Category::kPrivEsc, LEASH_CMD("pkexec"), nullptr, kTrimWord},
    {"doas", Category::kPrivEsc, LEASH_CMD("doas"), nullptr, kTrimWord},
    {"setuid_chmod", Category::kPrivEsc,
     R"(\b(chmod\s+(?:-[A-Za-z]+\s+|--[a-z-]+(?:=\S*)?\s+)*(?:(?:[ugoa]*[-+=][rwxXst]*,)*[ugoa]*[+=][rwxXt]*s[rwxXst]*(?:,[ugoa]*[-+=][rwxXst]*)*|0*[2-7][0-7]{3}))(?:[\s;&|)'"`]|$))",
     nullptr, kTrimWord},
    {"setuid_call", Category::kPrivEsc, R"(\b(set(?:e|re|res|fs)?[ug]id\s*\())"},
    {"setcap_privileged", Category::kPrivEsc,
     R"(\b(setcap\s[^;&|\n]*(?i:cap_(?:setuid|setgid|sys_admin|dac_override|dac_read_search|sys_ptrace|sys_module|chown|fowner))))"},
    {"rm_rf_root", Category::kPrivEsc,
     "((?:" R"(\brm\s+)" LEASH_RM_ARGS LEASH_RM_RECURSIVE R"(\s+)" LEASH_RM_ARGS LEASH_RM_ROOT
     "|" R"(\brm\s+)" LEASH_RM_ARGS LEASH_RM_ROOT R"(\s+)" LEASH_RM_ARGS LEASH_RM_RECURSIVE
     ")" LEASH_CMD_END "|" R"(\brm\s[^;&|\n]*--no-preserve-root)" ")"},
    {"sudoers_write", Category::kPrivEsc,
     "(" LEASH_WRITE_TO(LEASH_SUDOERS) "|" R"(\bvisudo(?:\s+-f\s*\S+)?)" LEASH_CMD_END
     "|" R"(\bNOPASSWD\s*:)" ")"},
    {"passwd_write", Category::kPrivEsc,
     "(" LEASH_WRITE_TO(LEASH_PASSWD_FILES) "|" R"(\b(?:vipw|vigr|chpasswd))" LEASH_CMD_END
     "|" R"(\b(?:useradd|usermod)\s[^;&|\n]*-u\s*0)" LEASH_CMD_END ")"},
    {"sudo_group", Category::kPrivEsc,
     R"(\b((?:usermod|gpasswd|adduser|useradd)\s[^;&|\n]*\b(?:sudo|wheel|root|docker))\b)"},
};

RE2::Options PatternOptions(int64_t max_mem) {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(max_mem);
  return options;
}

// Compiled once per process (a constant pattern); accept functions are plain function
// pointers, so they reach it here rather than through the Inspector.
const re2::RE2& NonSecretKey() {
  static const re2::RE2* const re = new re2::RE2(kNonSecretKey, PatternOptions(int64_t{1} << 20));
  return *re;
}

bool IsValueChar(char c) {
  return absl::ascii_isalnum(c) || absl::string_view("+/=_.~!@#%^*-").find(c) != absl::string_view::npos;
}

// generic_secret's match is `key ["']? [:=] ["']? [scheme ] value <terminator>`; the key holds
// no ':' or '=', so the first one separates. The span is the value.
bool GenericSecret(absl::string_view text, absl::string_view* span) {
  const absl::string_view m = *span;
  const size_t sep = m.find_first_of(":=");
  if (sep == absl::string_view::npos) return false;
  absl::string_view key = m.substr(0, sep);
  while (!key.empty() && (absl::ascii_isspace(key.back()) || key.back() == '"' || key.back() == '\'')) {
    key.remove_suffix(1);
  }
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(m.substr(sep + 1));
  if (!rest.empty() && (rest.front() == '"' || rest.front() == '\'')) rest.remove_prefix(1);
  for (absl::string_view scheme : {"bearer", "basic", "token"}) {
    if (rest.size() > scheme.size() && absl::StartsWithIgnoreCase(rest, scheme) &&
        absl::ascii_isspace(rest[scheme.size()])) {
      rest = absl::StripLeadingAsciiWhitespace(rest.substr(scheme.size()));
      break;
    }
  }
  size_t n = 0;
  while (n < rest.size() && IsValueChar(rest[n])) ++n;
  const absl::string_view value = rest.substr(0, n);
  if (re2::RE2::PartialMatch(re2::StringPiece(key.data(), key.size()), NonSecretKey()) ||
      !GenericValueLooksSecret(value)) {
    return false;
  }
  *span = value;
  return true;
}

size_t Offset(absl::string_view text, absl::string_view part) {
  return static_cast<size_t>(part.data() - text.data());
}

// Debian's RE2 has its own StringPiece, as Debian's Abseil has its own string_view.
re2::StringPiece Piece(absl::string_view s) { return re2::StringPiece(s.data(), s.size()); }
absl::string_view View(re2::StringPiece s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

class Inspector::Set {
 public:
  // The DFA of the whole set gets a generous budget: when it runs out, RE2 gives up on the
  // set and every detector is run on its own instead (slower, never wrong).
  Set() : set_(PatternOptions(int64_t{256} << 20), RE2::UNANCHORED) {}
  re2::RE2::Set set_;
};

absl::string_view CategoryName(Category category) {
  switch (category) {
    case Category::kSecrets:
      return "secrets";
    case Category::kPii:
      return "pii";
    case Category::kPrivEsc:
      return "priv_esc";
  }
  return "unknown";
}

Inspector::Inspector() = default;
Inspector::~Inspector() = default;

absl::StatusOr<std::unique_ptr<const Inspector>> Inspector::Create() {
  std::unique_ptr<Inspector> inspector(new Inspector());
  inspector->set_ = std::make_unique<Set>();
  for (const Spec& spec : kSpecs) {
    Detector detector;
    detector.info = DetectorInfo{spec.name, spec.category};
    detector.re = std::make_unique<re2::RE2>(spec.pattern, PatternOptions(int64_t{32} << 20));
    if (!detector.re->ok()) {
      return absl::InternalError(absl::StrCat("tool-input detector ", spec.name,
                                              " does not compile: ", detector.re->error()));
    }
    detector.accept = spec.accept;
    detector.trim = spec.trim != nullptr ? spec.trim
                    : spec.category == Category::kPrivEsc ? kTrimCommand
                                                          : "";
    std::string error;
    if (inspector->set_->set_.Add(spec.pattern, &error) < 0) {
      return absl::InternalError(
          absl::StrCat("tool-input detector ", spec.name, " does not compile in the set: ", error));
    }
    if (absl::string_view(spec.name) == "generic_secret") {
      inspector->generic_secret_ = static_cast<int>(inspector->detectors_.size());
    }
    inspector->detectors_.push_back(std::move(detector));
  }
  if (!inspector->set_->set_.Compile()) {
    return absl::InternalError("tool-input detectors do not compile as a set (out of memory)");
  }
  // Key names that carry a secret, as the last word of the key: "password", "api_key",
  // "apiKey", "x-api-key", "client_secret", "accessToken", "Authorization". "max_tokens",
  // "tokenizer", "token_type" and "author" do not end in one.
  inspector->secret_key_ = std::make_unique<re2::RE2>(
      R"((?i)(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|pwd|credentials?|access[_-]?key|private[_-]?key|auth|authorization|cookie)$)",
      PatternOptions(int64_t{8} << 20));
  if (!inspector->secret_key_->ok() || !NonSecretKey().ok()) {
    return absl::InternalError("tool-input key patterns do not compile");
  }
  return std::unique_ptr<const Inspector>(std::move(inspector));
}

int Inspector::FindDetector(absl::string_view name) const {
  for (int i = 0; i < num_detectors(); ++i) {
    if (detectors_[i].info.name == name) return i;
  }
  return -1;
}

std::vector<int> Inspector::Hits(absl::string_view text) const {
  std::vector<int> hits;
  re2::RE2::Set::ErrorInfo error;
  if (!set_->set_.Match(Piece(text), &hits, &error) && error.kind != re2::RE2::Set::kNoError) {
    // The set's DFA ran out of memory (or RE2 is inconsistent): decide with every detector.
    hits.clear();
    for (int i = 0; i < num_detectors(); ++i) hits.push_back(i);
  }
  std::sort(hits.begin(), hits.end());
  return hits;
}

void Inspector::MatchDetector(int d, absl::string_view text,
                              std::vector<DetectorMatch>* out) const {
  const Detector& detector = detectors_[d];
  re2::StringPiece whole;
  size_t pos = 0;
  while (pos <= text.size() &&
         detector.re->Match(Piece(text), pos, text.size(), RE2::UNANCHORED, &whole, 1)) {
    absl::string_view span = View(whole);
    const size_t end = Offset(text, span) + span.size();
    pos = end > pos ? end : pos + 1;
    if (detector.accept != nullptr && !detector.accept(text, &span)) continue;
    while (!span.empty() && detector.trim.find(span.back()) != absl::string_view::npos) {
      span.remove_suffix(1);
    }
    if (span.empty()) continue;
    out->push_back(DetectorMatch{d, Offset(text, span), Offset(text, span) + span.size()});
  }
}

void Inspector::Resolve(std::vector<DetectorMatch>* matches) const {
  // Secret/PII: by priority (detector order), drop a match overlapping one already kept.
  std::vector<DetectorMatch> sensitive, kept;
  for (const DetectorMatch& m : *matches) {
    (IsSensitive(detectors_[m.detector].info.category) ? sensitive : kept).push_back(m);
  }
  std::stable_sort(sensitive.begin(), sensitive.end(),
                   [](const DetectorMatch& a, const DetectorMatch& b) {
                     return a.detector != b.detector ? a.detector < b.detector
                                                     : a.begin < b.begin;
                   });
  const size_t first_sensitive = kept.size();
  for (const DetectorMatch& m : sensitive) {
    bool overlaps = false;
    for (size_t i = first_sensitive; i < kept.size() && !overlaps; ++i) {
      overlaps = m.begin < kept[i].end && kept[i].begin < m.end;
    }
    if (!overlaps) kept.push_back(m);
  }
  std::sort(kept.begin(), kept.end(), [](const DetectorMatch& a, const DetectorMatch& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.detector < b.detector;
  });
  *matches = std::move(kept);
}

std::vector<DetectorMatch> Inspector::Inspect(absl::string_view text) const {
  std::vector<DetectorMatch> matches;
  for (int d : Hits(text)) MatchDetector(d, text, &matches);
  Resolve(&matches);
  return matches;
}

std::vector<BatchMatch> Inspector::InspectBatch(absl::Span<const absl::string_view> texts) const {
  std::vector<BatchMatch> out;
  if (texts.empty()) return out;
  // One buffer: every text followed by '\n'. starts[i] is where text i begins.
  std::vector<size_t> starts;
  starts.reserve(texts.size() + 1);
  size_t total = 0;
  for (absl::string_view t : texts) total += t.size() + 1;
  std::string joined;
  joined.reserve(total);
  for (absl::string_view t : texts) {
    starts.push_back(joined.size());
    joined.append(t.data(), t.size());
    joined.push_back('\n');
  }
  starts.push_back(joined.size());

  // The set runs over chunks of whole texts, so a detector that hits is then run only over
  // the chunks it hit, not over every byte of the call. Findings are sparse: most chunks hit
  // nothing, and the set's one DFA pass is all the work they cost.
  std::vector<std::vector<DetectorMatch>> per_text(texts.size());
  for (size_t first = 0; first < texts.size();) {
    size_t last = first + 1;  // chunk = texts [first, last)
    while (last < texts.size() && starts[last] - starts[first] < kChunkBytes) ++last;
    const absl::string_view chunk(joined.data() + starts[first], starts[last] - starts[first]);
    for (int d : Hits(chunk)) {
      // Find the texts the detector's matches start in (a match that starts on the '\n'
      // before a text belongs to that text: it took the separator as leading context), then
      // match that text alone, so results equal Inspect()'s.
      // The chunk is the text searched (not the whole buffer), as for the set: \z and $ then
      // hold at its end, as they do at each text's own end.
      const re2::RE2& re = *detectors_[d].re;
      const re2::StringPiece piece = Piece(chunk);
      const size_t base = starts[first];
      size_t pos = 0;
      re2::StringPiece whole;
      while (pos < chunk.size() &&
             re.Match(piece, pos, chunk.size(), RE2::UNANCHORED, &whole, 1)) {
        const size_t at = base + static_cast<size_t>(whole.data() - chunk.data());
        size_t i = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), at) -
                                       starts.begin()) - 1;
        if (i < texts.size() && at == starts[i + 1] - 1) ++i;  // the separator after text i
        if (i >= last) break;
        MatchDetector(d, texts[i], &per_text[i]);
        // Continue on the separator after text i: it is the next text's leading context.
        // (It lies past `at`: a match starting on it was given to the next text above.)
        pos = starts[i + 1] - 1 - base;
      }
    }
    first = last;
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    if (per_text[i].empty()) continue;
    Resolve(&per_text[i]);
    for (const DetectorMatch& m : per_text[i]) out.push_back(BatchMatch{i, m});
  }
  return out;
}

bool Inspector::MayBeKeyedSecret(absl::string_view value) {
  return value.size() >= 8 && value.size() <= 4096 + 16;
}

bool Inspector::MayBeSecretKey(absl::string_view key) {
  // The last letters of secret_key_'s words: (api)key, secret, token, passwd/pwd,
  // credential(s), auth, authorization, cookie.
  return !key.empty() &&
         absl::string_view("ytndslhe").find(absl::ascii_tolower(key.back())) !=
             absl::string_view::npos;
}

bool Inspector::IsSecretKey(absl::string_view key) const {
  return re2::RE2::PartialMatch(Piece(key), *secret_key_) &&
         !re2::RE2::PartialMatch(Piece(key), NonSecretKey());
}

std::optional<DetectorMatch> Inspector::InspectSecretKeyValue(absl::string_view value) const {
  absl::string_view token = absl::StripAsciiWhitespace(value);
  for (absl::string_view scheme : {"Bearer ", "bearer ", "Basic ", "basic ", "Token ", "token "}) {
    if (absl::StartsWith(token, scheme)) {
      token.remove_prefix(scheme.size());
      token = absl::StripLeadingAsciiWhitespace(token);
      break;
    }
  }
  if (token.size() < 8 || token.size() > 4096) return std::nullopt;
  for (char c : token) {
    if (absl::ascii_isspace(c)) return std::nullopt;
  }
  if (!GenericValueLooksSecret(token)) return std::nullopt;
  const size_t begin = Offset(value, token);
  return DetectorMatch{generic_secret_, begin, begin + token.size()};
}

std::optional<DetectorMatch> Inspector::InspectKeyedValue(absl::string_view key,
                                                          absl::string_view value) const {
  if (!MayBeKeyedSecret(value) || !MayBeSecretKey(key) || !IsSecretKey(key)) return std::nullopt;
  return InspectSecretKeyValue(value);
}

double ShannonEntropy(absl::string_view text) {
  if (text.empty()) return 0;
  int counts[256] = {};
  for (unsigned char c : text) ++counts[c];
  double entropy = 0;
  const double n = static_cast<double>(text.size());
  for (int count : counts) {
    if (count == 0) continue;
    const double p = count / n;
    entropy -= p * std::log2(p);
  }
  return entropy;
}

bool IsPlaceholder(absl::string_view value) {
  if (value.empty()) return true;
  if (std::all_of(value.begin(), value.end(), [&](char c) { return c == value[0]; })) return true;
  const std::string lower = absl::AsciiStrToLower(value);
  for (absl::string_view word :
       {"redacted", "xxxx", "****", "....", "<", ">", "${", "{{", "%s", "example",
        "placeholder", "changeme", "change_me", "change-me", "your_", "your-", "yourapi",
        "yourtoken", "yoursecret", "yourpassword", "dummy", "sample", "fake", "insert_",
        "insert-", "replace_", "replace-", "replaceme", "todo", "fixme", "secret_here",
        "key_here", "token_here", "_here"}) {
    if (absl::StrContains(lower, word)) return true;
  }
  for (absl::string_view word : {"password", "passwd", "secret", "token", "none", "null", "nil",
                                 "undefined", "true", "false", "empty", "hunter2"}) {
    if (lower == word) return true;
  }
  return false;
}

bool LuhnValid(absl::string_view digits) {
  if (digits.empty()) return false;
  int sum = 0;
  bool twice = false;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (!absl::ascii_isdigit(*it)) return false;
    int d = *it - '0';
    if (twice) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    twice = !twice;
  }
  return sum % 10 == 0;
}

}  // namespace leash::tools
