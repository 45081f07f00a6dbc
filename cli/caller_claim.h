// Who is running the CLI, as the CLI can tell: the operator behind sudo and the login UID the
// kernel keeps for the session (audit's loginuid, which su and sudo do not change). Sent to
// leashd with an unbind for its ledger, where it is recorded as the client's claim beside the
// credentials leashd itself sees on the admin socket (always root).
#pragma once

#include <optional>
#include <string>

namespace leash::cli {

struct CallerFacts {
  uint32_t uid = 0;
  std::optional<std::string> sudo_user;  // $SUDO_USER
  std::optional<std::string> sudo_uid;   // $SUDO_UID
  // /proc/self/loginuid; nullopt when unset (4294967295) or unreadable.
  std::optional<uint32_t> login_uid;
  // The login UID's account name, when it resolves.
  std::optional<std::string> login_name;
  std::optional<std::string> user;  // $USER
};

// This process's facts.
CallerFacts ReadCallerFacts();

// One line, e.g. "sudo from alice (SUDO_UID 1000); login uid 1000 (alice); uid 0". Never
// "unknown": what could not be read is said to be so.
std::string DescribeCaller(const CallerFacts& facts);

}  // namespace leash::cli
