#include "engine/refusal.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace leash::engine {
namespace {

std::string SingleQuoted(absl::string_view text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "'\\''"}}), "'");
}

}  // namespace

std::string ShellQuote(absl::string_view word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return absl::ascii_isalnum(c) || absl::string_view("_./:=@%+,-").find(c) !=
                                         absl::string_view::npos;
  });
  return plain ? std::string(word) : SingleQuoted(word);
}

std::string RenderCommand(const std::vector<std::string>& words,
                          const std::vector<std::string>& acks) {
  std::string out;
  for (const std::string& word : words) {
    if (!out.empty()) out.push_back(' ');
    out += ShellQuote(word);
  }
  for (const std::string& ack : acks) absl::StrAppend(&out, " --ack ", SingleQuoted(ack));
  return out;
}

leash::v1::Refusal MakeRefusal(absl::string_view kind, std::string message) {
  leash::v1::Refusal refusal;
  refusal.set_kind(std::string(kind));
  refusal.set_message(std::move(message));
  return refusal;
}

void AddLoosening(leash::v1::Refusal& refusal, absl::string_view scope,
                  const FieldChange& change) {
  leash::v1::Loosening& loosening = *refusal.add_loosenings();
  loosening.set_scope(std::string(scope));
  loosening.set_field(change.field);
  loosening.set_value(change.value);
  loosening.set_message(change.message);
  loosening.set_ack_token(change.ack_token);
}

std::string RenderRefusal(const leash::v1::Refusal& refusal) {
  std::string out = absl::StrCat("refused (", refusal.kind(), "): ", refusal.message(), "\n");
  for (const leash::v1::Loosening& loosening : refusal.loosenings()) {
    absl::StrAppend(&out, "  - ", loosening.scope().empty() ? "" : loosening.scope() + ": ",
                    loosening.message(), "\n");
    // No token: no --ack can consent to it here (the message says what can).
    if (!loosening.ack_token().empty()) {
      absl::StrAppend(&out, "      --ack ", SingleQuoted(loosening.ack_token()), "\n");
    }
  }
  if (refusal.inert_entries_size() > 0) out += "entries that can never match:\n";
  for (const leash::v1::InertEntry& inert : refusal.inert_entries()) {
    absl::StrAppend(&out, "  - ", inert.field(), ": '", inert.entry(), "': ", inert.reason(),
                    "\n");
  }
  for (const leash::v1::Finding& finding : refusal.findings()) {
    absl::StrAppend(&out, "  - ",
                    finding.severity() == leash::v1::SEVERITY_CRITICAL ? "critical: " : "error: ",
                    finding.source().empty() ? "" : finding.source() + " ",
                    finding.field().empty() ? "" : finding.field() + ": ", finding.message(), "\n");
  }
  if (!refusal.rerun().empty()) {
    absl::StrAppend(&out, refusal.loosenings_size() > 0 ? "re-run with consent:\n" : "re-run:\n",
                    "  ", refusal.rerun(), "\n");
  }
  return out;
}

}  // namespace leash::engine
