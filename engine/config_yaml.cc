#include "engine/config_yaml.h"

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "engine/config_defaults.h"
#include "engine/utf8.h"
#include "yaml-cpp/yaml.h"

namespace leash::engine {
namespace {

using leash::v1::Config;
using leash::v1::EntryList;

std::string Join(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

const char* NodeKind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing (null)";
    case YAML::NodeType::Scalar:
      return "a value";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "nothing";
  }
}

// Walks a parsed YAML document into a Config, reporting the first problem with its position.
class Reader {
 public:
  Reader(absl::string_view source, ConfigKind kind) : source_(source), kind_(kind) {}

  absl::Status ReadDocument(const YAML::Node& root, Config& config) {
    if (root.IsNull()) return absl::OkStatus();
    const std::vector<absl::string_view> floor_keys = {
        "user", "fail_mode", "network", "filesystem", "commands", "tools", "logging",
        "enforcers"};
    return ForEachKey(root, "", floor_keys, [&](const std::string& key, const YAML::Node& value) {
      if (kind_ == ConfigKind::kProfile && (key == "user" || key == "logging")) {
        return Error(value, key,
                     key == "user"
                         ? "a profile cannot set the leashed user; it is the floor's "
                           "(/etc/leash/leash.yaml)"
                         : "logging is host-wide (one decision log); set it in the floor, not "
                           "a profile");
      }
      if (key == "user") return ReadString(value, key, [&](std::string v) { config.set_user(v); });
      if (key == "fail_mode") {
        return ReadString(value, key, [&](std::string v) { config.set_fail_mode(v); });
      }
      if (key == "network") return ReadNetwork(value, *config.mutable_network());
      if (key == "filesystem") return ReadSurface(value, key, *config.mutable_filesystem());
      if (key == "commands") return ReadSurface(value, key, *config.mutable_commands());
      if (key == "tools") return ReadTools(value, *config.mutable_tools());
      if (key == "logging") return ReadLogging(value, *config.mutable_logging());
      return ReadEnforcers(value, *config.mutable_enforcers());
    });
  }

 private:
  using KeyFn = std::function<absl::Status(const std::string& key, const YAML::Node& value)>;

  absl::Status Error(const YAML::Node& node, absl::string_view path, absl::string_view message) {
    const YAML::Mark mark = node.Mark();
    std::string where = source_;
    if (!mark.is_null()) absl::StrAppend(&where, ":", mark.line + 1, ":", mark.column + 1);
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", path.empty() ? "" : absl::StrCat(path, ": "), message));
  }

  // Calls `fn` for each key of the mapping `node` (at `path`); unknown and repeated keys are
  // errors, the unknown ones listing what is allowed.
  absl::Status ForEachKey(const YAML::Node& node, absl::string_view path,
                          const std::vector<absl::string_view>& allowed, const KeyFn& fn) {
    if (!node.IsMap()) {
      return Error(node, path, absl::StrCat("expected a mapping, got ", NodeKind(node)));
    }
    absl::flat_hash_set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      // Copies: yaml-cpp's iterator hands out a temporary pair (Node is a cheap handle).
      const YAML::Node key_node = it->first;
      const YAML::Node value = it->second;
      if (!key_node.IsScalar()) return Error(key_node, path, "a key must be a plain name");
      const std::string key = key_node.Scalar();
      const std::string key_path = Join(path, key);
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        return Error(key_node, path.empty() ? "" : std::string(path),
                     absl::StrCat("unknown key '", key, "' (expected one of: ",
                                  absl::StrJoin(allowed, ", "), ")"));
      }
      if (!seen.insert(key).second) {
        return Error(key_node, key_path, "key appears twice; write it once");
      }
      RETURN_IF_ERROR(fn(key, value));
    }
    return absl::OkStatus();
  }

  absl::Status ReadString(const YAML::Node& node, absl::string_view path,
                          const std::function<void(std::string)>& set) {
    if (!node.IsScalar()) {
      return Error(node, path, absl::StrCat("expected a value, got ", NodeKind(node)));
    }
    set(node.Scalar());
    return absl::OkStatus();
  }

  absl::Status ReadBool(const YAML::Node& node, absl::string_view path,
                        const std::function<void(bool)>& set) {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      return Error(node, path, absl::StrCat("expected true or false, got ",
                                            node.IsScalar() ? "'" + node.Scalar() + "'"
                                                            : NodeKind(node)));
    }
    set(value);
    return absl::OkStatus();
  }

  absl::Status ReadEntries(const YAML::Node& node, absl::string_view path, EntryList& out) {
    if (!node.IsSequence()) {
      return Error(node, path,
                   absl::StrCat("expected a list of entries, got ", NodeKind(node),
                                " (write [] for an empty list)"));
    }
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) {
        return Error(item, path, absl::StrCat("an entry must be a value, got ", NodeKind(item)));
      }
      out.add_entries(item.Scalar());
    }
    return absl::OkStatus();
  }

  absl::Status ReadMode(const YAML::Node& node, absl::string_view path,
                        const std::function<void(leash::v1::Mode)>& set) {
    if (node.IsScalar()) {
      absl::StatusOr<leash::v1::Mode> mode = ParseModeName(node.Scalar());
      if (mode.ok()) {
        set(*mode);
        return absl::OkStatus();
      }
    }
    return Error(node, path,
                 absl::StrCat(node.IsScalar() ? "'" + node.Scalar() + "'" : NodeKind(node),
                              " is not a mode (whitelist|blacklist)"));
  }

  template <typename Surface>
  absl::Status ReadSurfaceKey(const std::string& key, const YAML::Node& value,
                              absl::string_view path, Surface& surface) {
    const std::string key_path = Join(path, key);
    if (key == "mode") {
      return ReadMode(value, key_path, [&](leash::v1::Mode m) { surface.set_mode(m); });
    }
    if (key == "allow") return ReadEntries(value, key_path, *surface.mutable_allow());
    if (key == "audit") {
      return ReadBool(value, key_path, [&](bool on) { surface.set_audit(on); });
    }
    return ReadEntries(value, key_path, *surface.mutable_deny());
  }

  absl::Status ReadSurface(const YAML::Node& node, absl::string_view path,
                           leash::v1::SurfacePolicy& surface) {
    return ForEachKey(node, path, {"mode", "allow", "deny", "audit"},
                      [&](const std::string& key, const YAML::Node& value) {
                        return ReadSurfaceKey(key, value, path, surface);
                      });
  }

  absl::Status ReadNetwork(const YAML::Node& node, leash::v1::NetworkPolicy& network) {
    return ForEachKey(
        node, "network",
        {"mode", "allow", "deny", "audit", "udp", "inbound", "dns", "dns_resolvers"},
        [&](const std::string& key, const YAML::Node& value) -> absl::Status {
          if (key == "udp") {
            if (value.IsScalar() && (value.Scalar() == "drop" || value.Scalar() == "allow")) {
              network.set_udp(value.Scalar() == "drop" ? leash::v1::UDP_MODE_DROP
                                                       : leash::v1::UDP_MODE_ALLOW);
              return absl::OkStatus();
            }
            return Error(value, "network.udp",
                         absl::StrCat(value.IsScalar() ? "'" + value.Scalar() + "'"
                                                       : NodeKind(value),
                                      " is not drop|allow"));
          }
          if (key == "inbound") {
            if (value.IsScalar() && (value.Scalar() == "drop" || value.Scalar() == "allow")) {
              network.set_inbound(value.Scalar() == "drop" ? leash::v1::INBOUND_MODE_DROP
                                                           : leash::v1::INBOUND_MODE_ALLOW);
              return absl::OkStatus();
            }
            return Error(value, "network.inbound",
                         absl::StrCat(value.IsScalar() ? "'" + value.Scalar() + "'"
                                                       : NodeKind(value),
                                      " is not drop|allow"));
          }
          if (key == "dns") {
            if (value.IsScalar() && (value.Scalar() == "filter" || value.Scalar() == "resolvers")) {
              network.set_dns(value.Scalar() == "filter" ? leash::v1::DNS_MODE_FILTER
                                                         : leash::v1::DNS_MODE_RESOLVERS);
              return absl::OkStatus();
            }
            return Error(value, "network.dns",
                         absl::StrCat(value.IsScalar() ? "'" + value.Scalar() + "'"
                                                       : NodeKind(value),
                                      " is not filter|resolvers"));
          }
          if (key == "dns_resolvers") {
            return ReadEntries(value, "network.dns_resolvers", *network.mutable_dns_resolvers());
          }
          return ReadSurfaceKey(key, value, "network", network);
        });
  }

  absl::Status ReadTools(const YAML::Node& node, leash::v1::ToolsPolicy& tools) {
    return ForEachKey(
        node, "tools", {"mode", "allow", "deny", "audit", "inspect", "max_input_bytes"},
        [&](const std::string& key, const YAML::Node& value) -> absl::Status {
          if (key == "inspect") return ReadInspect(value, tools);
          if (key == "max_input_bytes") {
            uint64_t bytes = 0;
            if (!value.IsScalar() || !absl::SimpleAtoi(value.Scalar(), &bytes) || bytes == 0) {
              return Error(value, "tools.max_input_bytes", "expected a positive number of bytes");
            }
            tools.set_max_input_bytes(bytes);
            return absl::OkStatus();
          }
          return ReadSurfaceKey(key, value, "tools", tools);
        });
  }

  absl::Status ReadInspect(const YAML::Node& node, leash::v1::ToolsPolicy& tools) {
    std::vector<absl::string_view> categories(std::begin(kInspectCategories),
                                              std::end(kInspectCategories));
    return ForEachKey(
        node, "tools.inspect", categories,
        [&](const std::string& key, const YAML::Node& value) -> absl::Status {
          const std::string path = Join("tools.inspect", key);
          if (value.IsScalar()) {
            const std::string& v = value.Scalar();
            leash::v1::InspectAction action = leash::v1::INSPECT_ACTION_UNSPECIFIED;
            if (v == "block") action = leash::v1::INSPECT_ACTION_BLOCK;
            if (v == "log") action = leash::v1::INSPECT_ACTION_LOG;
            if (v == "allow") action = leash::v1::INSPECT_ACTION_ALLOW;
            if (action != leash::v1::INSPECT_ACTION_UNSPECIFIED) {
              (*tools.mutable_inspect())[key] = action;
              return absl::OkStatus();
            }
          }
          return Error(value, path,
                       absl::StrCat(value.IsScalar() ? "'" + value.Scalar() + "'"
                                                     : NodeKind(value),
                                    " is not block|log|allow"));
        });
  }

  absl::Status ReadLogging(const YAML::Node& node, leash::v1::LoggingPolicy& logging) {
    return ForEachKey(
        node, "logging", {"level", "decisions"},
        [&](const std::string& key, const YAML::Node& value) -> absl::Status {
          if (key == "decisions") {
            // What leashd can open: a relative path would be relative to wherever it started.
            if (value.IsScalar() && value.Scalar() != "stdout" &&
                (value.Scalar().empty() || value.Scalar()[0] != '/')) {
              return Error(value, "logging.decisions",
                           absl::StrCat("'", value.Scalar(),
                                        "' is not an absolute file path or \"stdout\""));
            }
            return ReadString(value, "logging.decisions",
                              [&](std::string v) { logging.set_decisions(v); });
          }
          static const std::vector<std::string> kLevels = {"debug", "info", "warning", "error",
                                                           "critical"};
          if (!value.IsScalar() ||
              std::find(kLevels.begin(), kLevels.end(), value.Scalar()) == kLevels.end()) {
            return Error(value, "logging.level",
                         absl::StrCat(value.IsScalar() ? "'" + value.Scalar() + "'"
                                                       : NodeKind(value),
                                      " is not a level (", absl::StrJoin(kLevels, "|"), ")"));
          }
          logging.set_level(value.Scalar());
          return absl::OkStatus();
        });
  }

  absl::Status ReadEnforcers(const YAML::Node& node, leash::v1::Enforcers& enforcers) {
    return ForEachKey(node, "enforcers", {"network", "filesystem", "tools"},
                      [&](const std::string& key, const YAML::Node& value) {
                        const std::string path = Join("enforcers", key);
                        return ReadBool(value, path, [&](bool on) {
                          if (key == "network") enforcers.set_network(on);
                          if (key == "filesystem") enforcers.set_filesystem(on);
                          if (key == "tools") enforcers.set_tools(on);
                        });
                      });
  }

  std::string source_;
  ConfigKind kind_;
};

void EmitEntries(YAML::Emitter& out, absl::string_view key, const EntryList& list) {
  out << YAML::Key << std::string(key) << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& entry : list.entries()) out << YAML::DoubleQuoted << entry;
  out << YAML::EndSeq;
}

template <typename Surface>
void EmitSurfaceFields(YAML::Emitter& out, const Surface& surface) {
  if (surface.has_mode()) {
    out << YAML::Key << "mode" << YAML::Value << std::string(ModeName(surface.mode()));
  }
  if (surface.has_allow()) EmitEntries(out, "allow", surface.allow());
  if (surface.has_deny()) EmitEntries(out, "deny", surface.deny());
  if (surface.has_audit()) out << YAML::Key << "audit" << YAML::Value << surface.audit();
}

}  // namespace

absl::string_view ModeName(leash::v1::Mode mode) {
  switch (mode) {
    case leash::v1::MODE_WHITELIST:
      return "whitelist";
    case leash::v1::MODE_BLACKLIST:
      return "blacklist";
    default:
      return "unspecified";
  }
}

absl::StatusOr<leash::v1::Mode> ParseModeName(absl::string_view name) {
  if (name == "whitelist") return leash::v1::MODE_WHITELIST;
  if (name == "blacklist") return leash::v1::MODE_BLACKLIST;
  return absl::InvalidArgumentError(
      absl::StrCat("'", name, "' is not a mode (whitelist|blacklist)"));
}

absl::string_view UdpModeName(leash::v1::UdpMode udp) {
  return udp == leash::v1::UDP_MODE_ALLOW ? "allow" : "drop";
}

absl::string_view InboundModeName(leash::v1::InboundMode inbound) {
  return inbound == leash::v1::INBOUND_MODE_ALLOW ? "allow" : "drop";
}

absl::string_view DnsModeName(leash::v1::DnsMode dns) {
  return dns == leash::v1::DNS_MODE_RESOLVERS ? "resolvers" : "filter";
}

absl::string_view InspectActionName(leash::v1::InspectAction action) {
  switch (action) {
    case leash::v1::INSPECT_ACTION_BLOCK:
      return "block";
    case leash::v1::INSPECT_ACTION_LOG:
      return "log";
    case leash::v1::INSPECT_ACTION_ALLOW:
      return "allow";
    default:
      return "unspecified";
  }
}

absl::Status CheckPolicyYamlSize(size_t size, absl::string_view source) {
  if (size <= kMaxPolicyYamlBytes) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      source, " is ", size, " bytes, over the ", kMaxPolicyYamlBytes,
      " bytes (1 MiB) a policy file may be; it was not parsed. A policy is a few KiB: keep long "
      "network and filesystem lists in a named list file (@<name>, /etc/leash/lists/<name>)"));
}

absl::Status CheckPolicyYamlText(absl::string_view yaml, absl::string_view source) {
  RETURN_IF_ERROR(CheckPolicyYamlSize(yaml.size(), source));
  if (IsValidUtf8(yaml)) return absl::OkStatus();
  int line = 1;
  for (absl::string_view text : absl::StrSplit(yaml, '\n')) {
    if (!IsValidUtf8(text)) break;
    ++line;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(source, ":", line,
                   ": not UTF-8 text; a policy file is UTF-8 (convert it, e.g. with "
                   "iconv -t UTF-8)"));
}

absl::StatusOr<Config> ParseConfigYaml(absl::string_view yaml, ConfigKind kind,
                                       absl::string_view source) {
  RETURN_IF_ERROR(CheckPolicyYamlText(yaml, source));
  Config config;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    RETURN_IF_ERROR(Reader(source, kind).ReadDocument(root, config));
  } catch (const YAML::Exception& e) {
    // Malformed YAML (and any conversion yaml-cpp refuses): report where it stopped.
    std::string where(source);
    if (!e.mark.is_null()) absl::StrAppend(&where, ":", e.mark.line + 1, ":", e.mark.column + 1);
    return absl::InvalidArgumentError(absl::StrCat(where, ": not valid YAML: ", e.msg));
  }
  return config;
}

namespace {

// Where the value at `keys` (from `i` on) under `node` is written. Copies of handles and the
// const operator[] only: looking a key up must not add it to the document.
std::optional<YAML::Mark> MarkOf(const YAML::Node& node, const std::vector<std::string>& keys,
                                 size_t i) {
  if (i == keys.size()) return node.Mark();
  if (!node.IsMap()) return std::nullopt;
  const YAML::Node child = node[keys[i]];
  if (!child.IsDefined()) return std::nullopt;
  return MarkOf(child, keys, i + 1);
}

}  // namespace

void LocateFindings(absl::string_view yaml, absl::string_view file, absl::string_view source,
                    std::vector<leash::v1::Finding>& findings) {
  if (yaml.size() > kMaxPolicyYamlBytes) return;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception&) {
    return;
  }
  for (leash::v1::Finding& finding : findings) {
    if (finding.source() != source || finding.field().empty()) continue;
    const std::vector<std::string> keys = absl::StrSplit(finding.field(), '.');
    std::optional<YAML::Mark> mark;
    try {
      mark = MarkOf(root, keys, 0);
    } catch (const YAML::Exception&) {
      continue;
    }
    if (!mark || mark->is_null()) continue;
    finding.set_message(
        absl::StrCat(file, ":", mark->line + 1, ":", mark->column + 1, ": ", finding.message()));
  }
}

std::string EmitConfigYaml(const Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  if (config.has_user()) out << YAML::Key << "user" << YAML::Value << config.user();
  if (config.has_fail_mode()) {
    out << YAML::Key << "fail_mode" << YAML::Value << config.fail_mode();
  }
  if (config.has_network()) {
    const leash::v1::NetworkPolicy& network = config.network();
    out << YAML::Key << "network" << YAML::Value << YAML::BeginMap;
    EmitSurfaceFields(out, network);
    if (network.has_udp()) {
      out << YAML::Key << "udp" << YAML::Value << std::string(UdpModeName(network.udp()));
    }
    if (network.has_inbound()) {
      out << YAML::Key << "inbound" << YAML::Value
          << std::string(InboundModeName(network.inbound()));
    }
    if (network.has_dns()) {
      out << YAML::Key << "dns" << YAML::Value << std::string(DnsModeName(network.dns()));
    }
    if (network.has_dns_resolvers()) EmitEntries(out, "dns_resolvers", network.dns_resolvers());
    out << YAML::EndMap;
  }
  auto emit_surface = [&](const char* key, const leash::v1::SurfacePolicy& surface) {
    out << YAML::Key << key << YAML::Value << YAML::BeginMap;
    EmitSurfaceFields(out, surface);
    out << YAML::EndMap;
  };
  if (config.has_filesystem()) emit_surface("filesystem", config.filesystem());
  if (config.has_commands()) emit_surface("commands", config.commands());
  if (config.has_tools()) {
    const leash::v1::ToolsPolicy& tools = config.tools();
    out << YAML::Key << "tools" << YAML::Value << YAML::BeginMap;
    EmitSurfaceFields(out, tools);
    if (!tools.inspect().empty()) {
      out << YAML::Key << "inspect" << YAML::Value << YAML::BeginMap;
      for (absl::string_view category : kInspectCategories) {
        auto it = tools.inspect().find(std::string(category));
        if (it == tools.inspect().end()) continue;
        out << YAML::Key << std::string(category) << YAML::Value
            << std::string(InspectActionName(it->second));
      }
      out << YAML::EndMap;
    }
    if (tools.has_max_input_bytes()) {
      out << YAML::Key << "max_input_bytes" << YAML::Value << tools.max_input_bytes();
    }
    out << YAML::EndMap;
  }
  if (config.has_logging()) {
    out << YAML::Key << "logging" << YAML::Value << YAML::BeginMap;
    if (config.logging().has_level()) {
      out << YAML::Key << "level" << YAML::Value << config.logging().level();
    }
    if (config.logging().has_decisions()) {
      out << YAML::Key << "decisions" << YAML::Value << config.logging().decisions();
    }
    out << YAML::EndMap;
  }
  if (config.has_enforcers()) {
    const leash::v1::Enforcers& enforcers = config.enforcers();
    out << YAML::Key << "enforcers" << YAML::Value << YAML::BeginMap;
    if (enforcers.has_network()) out << YAML::Key << "network" << YAML::Value << enforcers.network();
    if (enforcers.has_filesystem()) {
      out << YAML::Key << "filesystem" << YAML::Value << enforcers.filesystem();
    }
    if (enforcers.has_tools()) out << YAML::Key << "tools" << YAML::Value << enforcers.tools();
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace leash::engine
