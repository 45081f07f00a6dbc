// What the operator reads: `leash status`, `leash bindings`, reconcile reports, and the --json
// form of every command, rendered from responses built here (no leashd, no root).
#include "cli/render.h"

#include "google/protobuf/text_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

template <typename Message>
Message Parse(const std::string& text) {
  Message message;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &message)) << text;
  return message;
}

constexpr char kFloor[] = R"pb(
  fail_mode: "closed"
  network {
    mode: MODE_WHITELIST
    allow { entries: "github.com" entries: "pypi.org" }
    deny { entries: "evil.com" }
    udp: UDP_MODE_DROP
    inbound: INBOUND_MODE_DROP
  }
  filesystem { mode: MODE_BLACKLIST deny { entries: "~/.ssh" } }
  commands { mode: MODE_WHITELIST allow { entries: "git" } }
  tools {
    mode: MODE_BLACKLIST
    inspect { key: "secrets" value: INSPECT_ACTION_BLOCK }
    inspect { key: "pii" value: INSPECT_ACTION_LOG }
  }
  enforcers { network: true filesystem: true tools: false }
  logging { decisions: "/var/log/leash/decisions.jsonl" }
)pb";

constexpr char kSubjectsAndSidecars[] = R"pb(
  netfilter: "nftables"
  loopback_resolvers { address: "127.0.0.53" in_resolv_conf: true udp: true tcp: true }
  loopback_resolvers { address: "127.0.0.54" udp: true tcp: true }
  loopback_resolvers { address: "0.0.0.0" udp: true }
  map_version: 7
  subjects {
    account: "leash-iris" uid: 1001 port: 18001 state: "enforced"
    profiles: "profile:web-research"
    counters {
      inbound_dropped_packets: 3
      unproxied_dropped_packets: 2
      loopback_dns_refused_packets: 4
    }
    subordinate_uids { first: 100000 last: 165535 }
  }
  subjects {
    account: "leash-vader" uid: 1002 port: 18002 state: "no-policy"
    detail: "profile 'gone' does not exist"
    counters_error: "UID 1002 has no chain"
  }
  sidecars { name: "leash-proxy" running: true pid: 4242 acked_version: 7 }
  sidecars { name: "leash-fswatch" running: false restarts: 2 }
  reconcile_passes: 5
  last_reconcile {
    changes { account: "leash-iris" uid: 1001 change: "added" }
    unchanged: 1
  }
)pb";

constexpr char kSubjectsAndSidecarsText[] =
    "loopback resolvers: 127.0.0.53 (resolv.conf; udp, tcp), 127.0.0.54 (udp, tcp), 0.0.0.0 "
    "(every address; udp)\n"
    "  (an agent's DNS to any of them goes to its filter, or is refused: rule N15)\n"
    "subjects (2, map version 7):\n"
    "  leash-iris       uid 1001   port 18001 enforced       from profile:web-research\n"
    "    inbound (drop): 3 packets dropped; tcp escaping the proxy: 2 packets dropped; loopback "
    "dns refused: 4 packets (since the chain was applied)\n"
    "    subordinate uids 100000-165535; gids none\n"
    "  leash-vader      uid 1002   port 18002 no-policy      (profile 'gone' does not exist)\n"
    "    counters: cannot be read: UID 1002 has no chain\n"
    "sidecars:\n"
    "  leash-proxy    running  pid 4242    acked map 7     restarts 0\n"
    "  leash-fswatch  DOWN     pid 0       acked map 0     restarts 2\n"
    "reconcile passes: 5; last: 1 changed, 1 unchanged, 0 warnings\n";

TEST(RenderStatus, TheFloorTableThenEverySubjectSidecarAndTheLastReconcile) {
  leash::v1::StatusResponse status = Parse<leash::v1::StatusResponse>(kSubjectsAndSidecars);
  status.set_user("fido");
  status.set_uid(1000);
  status.set_config_path("/etc/leash/leash.yaml");
  *status.mutable_floor() = Parse<leash::v1::Config>(kFloor);
  EXPECT_EQ(RenderStatus(status),
            std::string("user: fido (uid 1000)\n"
                        "config: /etc/leash/leash.yaml\n"
                        "fail_mode: closed\n"
                        "surface     mode        allow   deny\n"
                        "network     whitelist       2      1  udp: drop  inbound: drop  dns: filter\n"
                        "filesystem  blacklist       0      1\n"
                        "commands    whitelist       1      0\n"
                        "tools       blacklist       0      0  inspect: secrets=block pii=log\n"
                        "enforcers: network on, filesystem on, tools OFF\n"
                        "decision log: /var/log/leash/decisions.jsonl\n"
                        "network enforcement: nftables\n") +
                kSubjectsAndSidecarsText);
}

// An unreadable floor is not shown as an empty one (every mode unspecified, every enforcer
// OFF): the status says it cannot be read, and what is in force comes from the last reconcile.
TEST(RenderStatus, AnUnreadableFloorIsSaidAndNoFloorTableIsShown) {
  leash::v1::StatusResponse status = Parse<leash::v1::StatusResponse>(kSubjectsAndSidecars);
  status.set_config_path("/etc/leash/leash.yaml");
  status.set_floor_error("/etc/leash/leash.yaml:3:9: network.mode: 'whitlist' is not a mode");
  const std::string text = RenderStatus(status);
  EXPECT_THAT(text, HasSubstr("floor: CANNOT BE READ: /etc/leash/leash.yaml:3:9"));
  EXPECT_THAT(text, HasSubstr("sudo leash reconcile"));
  EXPECT_THAT(text, Not(HasSubstr("enforcers:")));
  EXPECT_THAT(text, Not(HasSubstr("surface ")));
  EXPECT_THAT(text, HasSubstr(kSubjectsAndSidecarsText));
}

// Rule N15's line: none found, or why they could not be read; nothing when offline (leashd
// was not asked).
TEST(RenderStatus, LoopbackResolversNoneFoundUnreadableOrOffline) {
  leash::v1::StatusResponse status;
  EXPECT_THAT(RenderStatus(status), HasSubstr("loopback resolvers: none found\n"));
  status.set_loopback_resolvers_error("/proc/thread-self/net/udp: permission denied");
  EXPECT_THAT(RenderStatus(status),
              HasSubstr("loopback resolvers: cannot be read: /proc/thread-self/net/udp"));
  status.set_offline(true);
  EXPECT_THAT(RenderStatus(status), Not(HasSubstr("loopback resolvers")));
}

TEST(RenderStatus, InboundAllowShowsWhatWasServed) {
  leash::v1::StatusResponse status = Parse<leash::v1::StatusResponse>(R"pb(
    subjects {
      account: "leash-iris" uid: 1001 port: 18001 state: "enforced"
      policy { network { inbound: INBOUND_MODE_ALLOW } }
      counters { inbound_dropped_packets: 1 inbound_allowed_packets: 9 }
    }
  )pb");
  EXPECT_THAT(RenderStatus(status),
              HasSubstr("    inbound (allow): 1 packets dropped, 9 served; tcp escaping the proxy: "
                        "0 packets dropped"));
}

// Audited surfaces are named in capitals: under the subject whose policy audits them, each
// with the blocks it let through, and under the floor's table when the floor does; a surface
// no longer audited that let some through says so in lower case, and a policy that audits
// nothing and let nothing through adds no line.
TEST(RenderStatus, AuditedSurfacesAreNamedInCapitalsWithTheirWouldBeBlocks) {
  leash::v1::StatusResponse status = Parse<leash::v1::StatusResponse>(R"pb(
    subjects {
      account: "leash-iris" uid: 1001 port: 18001 state: "enforced"
      policy { network { audit: true } filesystem { audit: false } tools { audit: true } }
      would_be_blocks { network: 12 filesystem: 3 tools: 1 }
    }
    subjects {
      account: "leash-vader" uid: 1002 port: 18002 state: "enforced" policy {}
      would_be_blocks {}
    }
    subjects { account: "leash-zed" uid: 1003 port: 18003 state: "enforced" policy {} }
  )pb");
  *status.mutable_floor() = Parse<leash::v1::Config>(kFloor);
  std::string text = RenderStatus(status);
  EXPECT_THAT(text, HasSubstr("leash-iris       uid 1001   port 18001 enforced      \n"
                              "    AUDIT (blocks logged with enforced: false, not made): NETWORK "
                              "(12 would-be blocks), TOOLS (1 would-be block) since leashd "
                              "started\n"
                              "    would-be blocks while in audit earlier, since leashd started: "
                              "filesystem 3\n"
                              "  leash-vader      uid 1002   port 18002 enforced      \n"
                              "  leash-zed"));
  EXPECT_THAT(text, Not(HasSubstr("\nAUDIT")));
  status.mutable_floor()->mutable_commands()->set_audit(true);
  text = RenderStatus(status);
  EXPECT_THAT(text, HasSubstr("tools       blacklist       0      0  inspect: secrets=block pii=log\n"
                              "AUDIT (blocks logged with enforced: false, not made): COMMANDS\n"
                              "enforcers:"));
}

TEST(RenderBindings, OneLinePerBindingWithItsAcks) {
  EXPECT_EQ(RenderBindings(Parse<leash::v1::ListBindingsResponse>(R"pb(
              bindings { scope: "global" profile: "base" }
              bindings {
                scope: "agent:leash-iris"
                profile: "web-research"
                acks: "network.allow:openai.com"
                acks: "commands.allow:curl"
              }
            )pb")),
            "global -> base\n"
            "agent:leash-iris -> web-research  acks: network.allow:openai.com, commands.allow:curl\n");
  EXPECT_EQ(RenderBindings({}), "no bindings: every subject resolves to the floor\n");
}

TEST(RenderBindings, ADanglingBindingIsMarkedWithWhatItDeniesAndTheFix) {
  EXPECT_EQ(RenderBindings(Parse<leash::v1::ListBindingsResponse>(R"pb(
              bindings {
                scope: "agent:leash-iris"
                profile: "web"
                dangling: true
                problem: "profile 'web' does not exist: agent:leash-iris is denied everything"
              }
              bindings { scope: "global" profile: "odd" problem: "profile 'odd' does not load" }
            )pb")),
            "agent:leash-iris -> web  DANGLING\n"
            "    profile 'web' does not exist: agent:leash-iris is denied everything\n"
            "global -> odd  DOES NOT LOAD\n"
            "    profile 'odd' does not load\n");
}

TEST(RenderEntries, EachEntryWithItsListTierAndFile) {
  EXPECT_EQ(RenderEntries(Parse<leash::v1::ListEntriesResponse>(R"pb(
              entries {
                surface: "commands"
                list: "deny"
                entry: "ssh"
                source: "floor"
                file: "/etc/leash/leash.yaml"
              }
              entries {
                surface: "commands"
                list: "allow"
                entry: "git"
                source: "profile:dev"
                file: "/var/lib/leash/profiles/dev.yaml"
                bound_to: "agent:leash-iris"
              }
              floor_modes { key: "commands" value: "blacklist" }
            )pb")),
            "commands (floor mode: blacklist)\n"
            "  deny  ssh    floor  /etc/leash/leash.yaml\n"
            "  allow git    profile:dev  /var/lib/leash/profiles/dev.yaml  (bound to "
            "agent:leash-iris)\n");
  EXPECT_EQ(RenderEntries(Parse<leash::v1::ListEntriesResponse>(
                R"pb(floor_modes { key: "tools" value: "whitelist" })pb")),
            "tools (floor mode: whitelist)\n  no entries\n");
}

TEST(RenderReconcile, ChangesThenWarningsOrTheFailure) {
  leash::v1::ReconcileReport report = Parse<leash::v1::ReconcileReport>(R"pb(
    changes { account: "leash-iris" uid: 1001 change: "added" }
    changes { account: "leash-vader" uid: 1002 change: "denied" detail: "profile 'gone' does not exist" }
    unchanged: 3
    duration_us: 12345
    warnings: "leash-ops holds subordinate UIDs"
    not_in_force: "leash-iris (uid 1001): its chain"
  )pb");
  EXPECT_EQ(RenderReconcile(report),
            "reconciled: 2 changed, 3 unchanged (12.3 ms)\n"
            "  added leash-iris (uid 1001)\n"
            "  denied leash-vader (uid 1002): profile 'gone' does not exist\n"
            "  leash-ops holds subordinate UIDs\n");
  EXPECT_EQ(RenderNotInForce(report), "  - leash-iris (uid 1001): its chain\n");
  report.set_error("the floor cannot be read");
  EXPECT_EQ(RenderReconcile(report),
            "reconcile failed, nothing was changed: the floor cannot be read\n");
  EXPECT_EQ(RenderNotInForce({}), "");
}

TEST(RenderCheck, TheVerdictFirstAndAnOfflineAnswerSaysSo) {
  leash::v1::CheckResponse response = Parse<leash::v1::CheckResponse>(R"pb(
    decision { action: ACTION_BLOCK reason: "network: evil.com is not on the allow list" }
    account: "leash-iris"
    evaluated_by: "leashd"
  )pb");
  EXPECT_EQ(RenderCheck(response, "/etc/leash/leash.yaml"),
            "block  network: evil.com is not on the allow list  [leash-iris]\n");
  response.set_evaluated_by("offline");
  response.mutable_decision()->set_action(leash::v1::ACTION_ALLOW);
  response.clear_account();
  EXPECT_EQ(RenderCheck(response, "/tmp/x.yaml"),
            "allow  network: evil.com is not on the allow list\n"
            "(offline: judged /tmp/x.yaml directly; leashd was not asked)\n");
}

TEST(RenderValidate, CountsFindingsAndSaysWhichBlock) {
  leash::v1::ValidateResponse response = Parse<leash::v1::ValidateResponse>(R"pb(
    findings { severity: SEVERITY_WARNING source: "floor" field: "network.allow" message: "never matches" }
    findings { severity: SEVERITY_ERROR source: "profile:web" field: "mode" message: "bad" }
  )pb");
  const std::string text = RenderValidate(response, "/etc/leash/leash.yaml");
  EXPECT_THAT(text, HasSubstr("/etc/leash/leash.yaml: 2 findings\n"));
  EXPECT_THAT(text, HasSubstr("invalid: 1 finding is an error or critical\n"));
  EXPECT_EQ(RenderValidate({}, "/etc/leash/leash.yaml"), "/etc/leash/leash.yaml: valid, no findings\n");
}

// --json: one line, the proto's own field names, and fields at their default printed too, so a
// script reading "written": false does not have to treat a missing key as false.
TEST(Json, ProtoFieldNamesAndDefaultsPrinted) {
  leash::v1::PolicyWriteResponse response;
  response.add_notices("bind global changes the floor for every subject on the host");
  const std::string json = ToJson(response);
  EXPECT_THAT(json, HasSubstr("\"written\":false"));
  EXPECT_THAT(json, HasSubstr("\"notices\":[\"bind global changes the floor"));
  EXPECT_EQ(json.find('\n'), std::string::npos);
}

// --json numbers are numbers: protobuf's own JSON quotes every 64-bit integer ("7"), which a
// script comparing map_version > 6 reads as a string.
TEST(Json, NumbersAsNumbers) {
  const std::string json = ToJson(Parse<leash::v1::StatusResponse>(kSubjectsAndSidecars));
  EXPECT_THAT(json, HasSubstr("\"map_version\":7,"));
  EXPECT_THAT(json, HasSubstr("\"reconcile_passes\":5"));
  EXPECT_THAT(json, HasSubstr("\"inbound_dropped_packets\":3"));
  EXPECT_THAT(json, Not(HasSubstr("\"7\"")));
}

// --json enum values are spelled as the YAML spells them, so a value read from --json can be
// written back into leash.yaml or given to `leash <surface> mode`.
TEST(Json, EnumValuesAsTheYamlSpellsThem) {
  const std::string json = ToJson(Parse<leash::v1::Config>(kFloor));
  EXPECT_THAT(json, HasSubstr("\"network\":{\"mode\":\"whitelist\""));
  EXPECT_THAT(json, HasSubstr("\"udp\":\"drop\""));
  EXPECT_THAT(json, HasSubstr("\"inbound\":\"drop\""));
  EXPECT_THAT(json, HasSubstr("\"secrets\":\"block\""));
  EXPECT_THAT(json, Not(HasSubstr("MODE_")));
  leash::v1::CheckResponse check;
  check.mutable_decision()->set_action(leash::v1::ACTION_BLOCK);
  EXPECT_THAT(ToJson(check), HasSubstr("\"action\":\"block\""));
  leash::v1::ValidateResponse validate;
  validate.add_findings()->set_severity(leash::v1::SEVERITY_ERROR);
  EXPECT_THAT(ToJson(validate), HasSubstr("\"severity\":\"error\""));
}

// Fields keep the proto's order and presence: an optional the tier did not write is absent
// (a fragment's "not written" differs from "written as the default"), a plain scalar is there.
TEST(Json, FieldOrderAndPresenceKept) {
  leash::v1::Config fragment;
  fragment.mutable_network()->mutable_allow()->add_entries("a.com\"\n");
  const std::string json = ToJson(fragment);
  EXPECT_THAT(json, HasSubstr("\"network\":{\"allow\":{\"entries\":[\"a.com\\\"\\n\"]}"));
  EXPECT_THAT(json, Not(HasSubstr("\"mode\"")));
  EXPECT_THAT(json, Not(HasSubstr("\"filesystem\"")));
}

TEST(Json, AFlatObjectKeepsEachFieldsType) {
  JsonField path{"config", "/etc/leash/leash.yaml"};
  JsonField removed{"rules_removed", "", 3, /*is_number=*/true};
  JsonField done{"done", "", 0, false, /*is_bool=*/true, /*boolean=*/true};
  const std::string json = JsonObject({path, removed, done});
  EXPECT_THAT(json, HasSubstr("\"config\":\"/etc/leash/leash.yaml\""));
  EXPECT_THAT(json, HasSubstr("\"rules_removed\":3"));
  EXPECT_THAT(json, HasSubstr("\"done\":true"));
}

}  // namespace
}  // namespace leash::cli
