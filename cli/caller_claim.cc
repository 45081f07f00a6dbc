#include "cli/caller_claim.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace leash::cli {
namespace {

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::optional<std::string> NameOf(uint32_t uid) {
  struct passwd entry;
  struct passwd* found = nullptr;
  char buffer[4096];
  if (getpwuid_r(uid, &entry, buffer, sizeof(buffer), &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  return std::string(found->pw_name);
}

// The kernel's "no login UID": the session was not started through a login (a daemon, a
// container without audit).
constexpr uint32_t kUnsetLoginUid = 4294967295u;

}  // namespace

CallerFacts ReadCallerFacts() {
  CallerFacts facts;
  facts.uid = getuid();
  facts.sudo_user = Env("SUDO_USER");
  facts.sudo_uid = Env("SUDO_UID");
  facts.user = Env("USER");
  std::ifstream file("/proc/self/loginuid");
  std::string text;
  uint32_t login_uid = 0;
  if (std::getline(file, text) &&
      absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &login_uid) &&
      login_uid != kUnsetLoginUid) {
    facts.login_uid = login_uid;
    facts.login_name = NameOf(login_uid);
  }
  return facts;
}

std::string DescribeCaller(const CallerFacts& facts) {
  std::string out;
  if (facts.sudo_user) {
    absl::StrAppend(&out, "sudo from ", *facts.sudo_user,
                    facts.sudo_uid ? absl::StrCat(" (SUDO_UID ", *facts.sudo_uid, ")") : "", "; ");
  }
  if (facts.login_uid) {
    absl::StrAppend(&out, "login uid ", *facts.login_uid,
                    facts.login_name ? absl::StrCat(" (", *facts.login_name, ")") : "", "; ");
  } else {
    absl::StrAppend(&out, "no login uid; ");
  }
  if (!facts.sudo_user && facts.user) absl::StrAppend(&out, "USER ", *facts.user, "; ");
  absl::StrAppend(&out, "uid ", facts.uid);
  return out;
}

}  // namespace leash::cli
