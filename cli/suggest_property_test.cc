// The property: whatever the decision log says, no entry `leash suggest` makes is a way out
// (cli/testing/suggest_rules.h). Logs are generated from a fixed seed per case: the loader
// run under each of its names, programs and links the agent can replace, many host names of
// its choosing under shared parents, paths with "..", "." and "//", unicode, control
// characters, escaped bytes, glob characters, and lines naming interpreters.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/suggest_fragment.h"
#include "cli/suggest_observations.h"
#include "cli/testing/suggest_rules.h"
#include "engine/compiled_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

using testing::Host;
using testing::kAgentUid;

// A JSON string's body: every byte below 0x20, '"' and '\\' escaped.
std::string Json(const std::string& text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte < 0x20) {
      out += absl::StrCat("\\u00", absl::Hex(byte, absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

class Generator {
 public:
  explicit Generator(uint32_t seed) : random_(seed) {}

  template <typename T>
  const T& Pick(const std::vector<T>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(random_)];
  }
  bool OneIn(int n) { return std::uniform_int_distribution<int>(0, n - 1)(random_) == 0; }

  // A name the agent chose: plain, unicode, a control character, a glob, a dot name.
  std::string Label() {
    static const std::vector<std::string> kOdd = {"a1",
                                                  "b2",
                                                  "x",
                                                  "api",
                                                  "caf\xc3\xa9",
                                                  "\xe2\x80\xae"
                                                  "exe",
                                                  "new\nline",
                                                  "tab\tx",
                                                  "*",
                                                  "?",
                                                  "[ab]",
                                                  ".",
                                                  "..",
                                                  "",
                                                  "-",
                                                  "xn--80ak6aa92e",
                                                  "UPPER",
                                                  "\\xff",
                                                  "a b"};
    if (OneIn(3)) return Pick(kOdd);
    return absl::StrCat(Pick(std::vector<std::string>{"a", "b", "app", "svc", "t"}),
                        std::uniform_int_distribution<int>(0, 99)(random_));
  }

  std::string Program() {
    const AdversarialHostRef host;
    std::vector<std::string> all(host->bad_programs.begin(), host->bad_programs.end());
    all.insert(all.end(), host->good_programs.begin(), host->good_programs.end());
    switch (std::uniform_int_distribution<int>(0, 5)(random_)) {
      case 0:  // in a folder the agent writes, under a name of its choosing
        return absl::StrCat(Pick(host->agent_folders), "/", Label());
      case 1:  // another spelling of a known program
        return absl::StrCat(
            Pick(std::vector<std::string>{"/usr/bin/../bin/", "/usr//bin/", "/usr/./bin/", ""}),
            Pick(std::vector<std::string>{"git", "ld.so", "curl"}));
      case 2:
        return absl::StrCat("/usr/bin/", Label());
      default:
        return Pick(all);
    }
  }

  std::string Hostname() {
    static const std::vector<std::string> kParents = {
        "herokuapp.com", "github.io", "example.co.uk", "com", "ngrok.io", "x.example.com"};
    std::string name = absl::StrCat(Label(), ".", Pick(kParents));
    if (OneIn(8)) name = absl::StrCat("*.", Pick(kParents));
    if (OneIn(10)) name = Label();
    return name;
  }

  std::string Path() {
    static const std::vector<std::string> kFolders = {
        "/srv/data", "/srv/data/sub", "/home/agent/work", "/tmp", "/srv/shared", "/etc", "/"};
    std::string path = absl::StrCat(Pick(kFolders), "/", Label());
    if (OneIn(4)) path = absl::StrCat(path, "/", Label());
    return path;
  }

  std::string Line(int n) {
    const std::string ts = "2026-12-02T06:00:00.000000Z";
    const std::string ref = absl::StrCat("g", n);
    const bool audited = OneIn(3);
    const std::string action = audited || OneIn(5) ? "block" : "allow";
    const std::string enforced = audited ? R"(,"enforced":false)" : "";
    std::string surface, subject, reason = "why";
    switch (std::uniform_int_distribution<int>(0, 3)(random_)) {
      case 0:
        surface = "commands";
        subject = absl::StrCat(R"("binary":")", Json(Program()), R"(")");
        break;
      case 1: {
        // An interpreter line, as the watcher writes one for an allowed program's loader.
        surface = "commands";
        const std::string interp = Program();
        subject = absl::StrCat(R"("binary":")", Json(interp), R"(")");
        reason = absl::StrCat("commands: ", interp, engine::kElfInterpreterOf, "/usr/bin/git");
        break;
      }
      case 2:
        surface = "network";
        subject = absl::StrCat(R"("domain":")", Json(Hostname()), R"(","port":)",
                               Pick(std::vector<int>{443, 8080, 80}));
        break;
      default:
        surface = "filesystem";
        subject = absl::StrCat(R"("path":")", Json(Path()), R"(")");
        break;
    }
    return absl::StrCat(R"({"ts":")", ts, R"(","ref":")", ref, R"(","uid":)", kAgentUid,
                        R"(,"surface":")", surface, R"(","action":")", action, R"(","reason":")",
                        Json(reason), R"(","subject":{)", subject, "}", enforced, "}");
  }

 private:
  struct AdversarialHostRef {
    const testing::AdversarialHost* operator->() const { return &Host(); }
  };
  std::mt19937 random_;
};

TEST(SuggestProperty, NoSuggestedEntryIsAWayOut) {
  constexpr uint32_t kCases = 400;
  size_t commands = 0, names = 0, paths = 0;
  for (uint32_t seed = 1; seed <= kCases; ++seed) {
    Generator generate(seed);
    ObservationFilter filter;
    filter.uids = {{kAgentUid, kAgentUid}};
    Observations observations(filter);
    std::vector<std::string> lines;
    const int count = 1 + static_cast<int>(seed % 60);
    for (int n = 0; n < count; ++n) {
      lines.push_back(generate.Line(n));
      observations.AddLine(lines.back());
    }
    absl::StatusOr<Fragment> fragment = BuildFragment(observations, Host().facts, {}, "profile:p");
    ASSERT_TRUE(fragment.ok()) << "seed " << seed << ": " << fragment.status() << "\n"
                               << absl::StrJoin(lines, "\n");
    const std::vector<std::string> broken = testing::BrokenRules(*fragment, observations);
    EXPECT_THAT(broken, ::testing::IsEmpty()) << "seed " << seed << "\n"
                                              << fragment->yaml << absl::StrJoin(lines, "\n");
    if (!broken.empty()) break;
    commands += fragment->config.commands().allow().entries_size();
    names += fragment->config.network().allow().entries_size();
    paths += fragment->config.filesystem().allow().entries_size();
  }
  // The property holds of something: the good programs, names and paths do get through.
  EXPECT_GT(commands, 0u);
  EXPECT_GT(names, 0u);
  EXPECT_GT(paths, 0u);
}

// Each of the three ways out seen under audit, alone.
TEST(SuggestProperty, TheThreeSeenCases) {
  ObservationFilter filter;
  filter.uids = {{kAgentUid, kAgentUid}};
  Observations observations(filter);
  for (const std::string& line : {
           absl::StrCat(R"({"ts":"t","ref":"l1","uid":)", kAgentUid,
                        R"(,"surface":"commands","action":"allow","reason":"commands: )"
                        R"(/lib64/ld-linux-x86-64.so.2 not in deny list",)"
                        R"("subject":{"binary":"/lib64/ld-linux-x86-64.so.2"}})"),
           absl::StrCat(R"({"ts":"t","ref":"w1","uid":)", kAgentUid,
                        R"(,"surface":"commands","action":"block","enforced":false,)"
                        R"("reason":"x","subject":{"binary":"/home/agent/bin/tool"}})"),
           absl::StrCat(R"({"ts":"t","ref":"h1","uid":)", kAgentUid,
                        R"(,"surface":"network","action":"allow","reason":"x",)"
                        R"("subject":{"domain":"a1.herokuapp.com","port":8080}})"),
           absl::StrCat(R"({"ts":"t","ref":"h2","uid":)", kAgentUid,
                        R"(,"surface":"network","action":"allow","reason":"x",)"
                        R"("subject":{"domain":"b2.herokuapp.com","port":8080}})"),
       }) {
    observations.AddLine(line);
  }
  absl::StatusOr<Fragment> fragment = BuildFragment(observations, Host().facts, {}, "profile:p");
  ASSERT_TRUE(fragment.ok()) << fragment.status();
  EXPECT_THAT(testing::BrokenRules(*fragment, observations), ::testing::IsEmpty());
  EXPECT_FALSE(fragment->config.has_commands());
  EXPECT_THAT(fragment->config.network().allow().entries(),
              ::testing::ElementsAre("a1.herokuapp.com:8080", "b2.herokuapp.com:8080"));
  EXPECT_THAT(fragment->notes,
              ::testing::Contains(::testing::HasSubstr(
                  "not suggested: commands '/lib64/ld-linux-x86-64.so.2' (1 time, e.g. ref l1): "
                  "the ELF loader")));
  EXPECT_THAT(fragment->notes,
              ::testing::Contains(::testing::HasSubstr(
                  "not suggested: commands '/home/agent/bin/tool' (1 time, e.g. ref w1): an "
                  "entry matches whatever file is at its path")));
}

}  // namespace
}  // namespace leash::cli
