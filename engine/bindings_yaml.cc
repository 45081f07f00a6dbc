#include "engine/bindings_yaml.h"

#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/utf8.h"
#include "yaml-cpp/yaml.h"

namespace leash::engine {
namespace {

absl::Status Error(absl::string_view source, const YAML::Node& node, absl::string_view message) {
  std::string where(source);
  const YAML::Mark mark = node.Mark();
  if (!mark.is_null()) absl::StrAppend(&where, ":", mark.line + 1, ":", mark.column + 1);
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", message));
}

// A scalar's text, which must be UTF-8 (yaml-cpp decodes some escapes, e.g. \N, to bytes that
// are not).
absl::StatusOr<std::string> Text(absl::string_view source, const YAML::Node& node,
                                 absl::string_view what) {
  if (!IsValidUtf8(node.Scalar())) return Error(source, node, absl::StrCat(what, ": not UTF-8"));
  return node.Scalar();
}

absl::StatusOr<Binding> ReadBinding(absl::string_view source, const std::string& scope,
                                    const YAML::Node& node) {
  if (!node.IsMap()) {
    return Error(source, node, absl::StrCat("bindings.", scope, ": expected a mapping with "
                                            "profile and acks"));
  }
  Binding binding;
  binding.scope = scope;
  bool has_profile = false;
  absl::flat_hash_set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) return Error(source, key, "a key must be a plain name");
    const std::string& name = key.Scalar();
    if (!seen.insert(name).second) {
      return Error(source, key, absl::StrCat("bindings.", scope, ".", name, ": key appears twice"));
    }
    if (name == "profile") {
      if (!value.IsScalar() || value.Scalar().empty()) {
        return Error(source, value, absl::StrCat("bindings.", scope, ".profile: expected a name"));
      }
      ASSIGN_OR_RETURN(binding.profile, Text(source, value, "profile"));
      has_profile = true;
    } else if (name == "acks") {
      if (value.IsNull()) continue;
      if (!value.IsSequence()) {
        return Error(source, value, absl::StrCat("bindings.", scope, ".acks: expected a list"));
      }
      for (const YAML::Node& ack : value) {
        if (!ack.IsScalar() || ack.Scalar().empty()) {
          return Error(source, ack,
                       absl::StrCat("bindings.", scope, ".acks: an ack must be <field>:<value>"));
        }
        ASSIGN_OR_RETURN(std::string text, Text(source, ack, "ack"));
        binding.acks.push_back(std::move(text));
      }
    } else {
      return Error(source, key,
                   absl::StrCat("bindings.", scope, ": unknown key '", name,
                                "' (expected profile, acks)"));
    }
  }
  if (!has_profile) {
    return Error(source, node, absl::StrCat("bindings.", scope, ": no profile"));
  }
  return binding;
}

absl::StatusOr<Bindings> Read(absl::string_view source, const YAML::Node& root) {
  if (root.IsNull()) return Bindings();
  if (!root.IsMap()) return Error(source, root, "expected a mapping with one key, bindings");
  std::vector<Binding> entries;
  bool has_bindings = false;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar() || key.Scalar() != "bindings") {
      return Error(source, key, "unknown key (expected bindings)");
    }
    if (has_bindings) return Error(source, key, "bindings: key appears twice");
    has_bindings = true;
    if (value.IsNull()) continue;
    if (!value.IsMap()) return Error(source, value, "bindings: expected a mapping of scopes");
    absl::flat_hash_set<std::string> scopes;
    for (auto b = value.begin(); b != value.end(); ++b) {
      const YAML::Node scope = b->first;
      if (!scope.IsScalar() || scope.Scalar().empty()) {
        return Error(source, scope, "bindings: a scope must be global or agent:<account>");
      }
      if (!scopes.insert(scope.Scalar()).second) {
        return Error(source, scope,
                     absl::StrCat("bindings: scope '", scope.Scalar(),
                                  "' appears twice (one profile per scope)"));
      }
      ASSIGN_OR_RETURN(std::string scope_text, Text(source, scope, "scope"));
      ASSIGN_OR_RETURN(Binding binding, ReadBinding(source, scope_text, b->second));
      entries.push_back(std::move(binding));
    }
  }
  return Bindings(std::move(entries));
}

}  // namespace

absl::StatusOr<Bindings> ParseBindingsYaml(absl::string_view yaml, absl::string_view source) {
  // The file is leashd's own and always UTF-8; anything else is not a file it wrote (and could
  // not be written back byte for byte).
  if (!IsValidUtf8(yaml)) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not UTF-8"));
  }
  try {
    return Read(source, YAML::Load(std::string(yaml)));
  } catch (const YAML::Exception& e) {
    std::string where(source);
    if (!e.mark.is_null()) absl::StrAppend(&where, ":", e.mark.line + 1, ":", e.mark.column + 1);
    return absl::InvalidArgumentError(absl::StrCat(where, ": not valid YAML: ", e.msg));
  }
}

std::string EmitBindingsYaml(const Bindings& bindings) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "bindings" << YAML::Value << YAML::BeginMap;
  for (const Binding& binding : bindings.entries()) {
    out << YAML::Key << YAML::DoubleQuoted << binding.scope << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "profile" << YAML::Value << YAML::DoubleQuoted << binding.profile;
    out << YAML::Key << "acks" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& ack : binding.acks) out << YAML::DoubleQuoted << ack;
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndMap;
  return absl::StrCat(
      "# Written by leashd (leash bind, leash unbind, leash profile save); edit with those.\n"
      "# One profile per scope; acks are that binding's consent to each loosening.\n",
      out.c_str(), "\n");
}

}  // namespace leash::engine
