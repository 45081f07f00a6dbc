#include "cli/usage.h"

#include <map>

#include "engine/decision.h"

namespace leash::cli {
namespace {

constexpr char kOverview[] = R"(leash: per-user enforcement for local AI agents

usage: leash [global flags] [<command> [args]]
  With no command, leash runs the service (it execs leashd; leash.service does this).

commands (policy writes go through leashd and are followed by a reconcile):
  init --user <name>                   record the leashed user; create the account and
                                       /etc/leash/leash.yaml (0640 root:<name>) if needed
  status                               the user, each surface's mode and list sizes, enforcer
                                       toggles, the decision log, every subject and sidecar;
                                       a health check: exit 0 healthy, 3 offline, 4 degraded
  validate                             judge the config, profiles and bindings; exit 1 on
                                       errors or criticals
  check <surface> <subject>            dry-run one decision (network: host:port)
  <surface> allow|deny <entry>         add an entry to the floor's allow or deny list (judged:
                                       an allow on a whitelist widens every subject, --ack)
  <surface> remove <entry>             remove an entry from the floor's lists (judged: removing
                                       a deny loosens every subject and needs its --ack)
  <surface> list                       the surface's entries: the floor's and every profile's,
                                       each with the file it is written in
  <surface> mode whitelist|blacklist   set a surface's mode in the floor (judged: blacklist
                                       widens every subject, --ack)
  profile save <name> --from <file>    save a profile (a fragment); --ack per bound agent
  profile list | show <name> | delete <name>
                                       a bound profile's delete is refused (it would deny its
                                       subjects everything): unbind first, or --ack
                                       'dangling:<scope>' per binding
  bindings                             list the bindings and their acks; DANGLING marks one
                                       whose profile does not exist
  bind global|agent:<account> <profile>     attach a profile to a scope (--ack to consent)
  unbind global|agent:<account>        remove a binding (judged; --ack to consent)
  reconcile                            re-read passwd, re-resolve, change only what differs
  tool check <name> --inputs '<json>'  one CheckTool call on the tools socket, as a harness
  logs [--follow] [--tail N]           the decisions, from the log then live (filters: see
                                       leash logs --help)
  suggest --account <account>          a profile fragment from what the agent did, with the
                                       save and bind lines it needs (writes nothing)
  restart                              restart leash.service (a reconcile is usually the
                                       right instrument: it un-confines nobody)
  teardown                             release every chain by hand (with --unless-failed:
                                       leash.service's ExecStopPost, after a deliberate stop)

surfaces: network|net, filesystem|fs, commands|cmd, tools|tool

global flags:
  -c, --config <path>     config file (default $LEASH_CONFIG, else /etc/leash/leash.yaml)
  --json                  every outcome as one JSON object on stdout, errors and refusals
                          too: "ok", "exit_code", "error" (on failure), then the result's
                          fields; enum values as the YAML spells them, numbers as numbers
  --ack '<token>'         consent to a loosening, repeatable: '<field>:<value>' on bind,
                          unbind and <surface> remove; 'agent:<account>=<field>:<value>' on
                          profile save; 'dangling:<scope>' on profile delete
  --no-reconcile          write the policy but do not reconcile (it is not in force until
                          the next reconcile or SIGHUP)
  --offline               answer status/validate/check from the config file, not leashd
  --account <account>     check: whose policy (default the configured user); tool check:
                          the agent the call is for
  --socket <path>         leashd's admin socket (default /run/leash/leash.sock)
  --tools-socket <path>   the tools socket (default /run/leash/tools.sock)
  --state-dir <path>      teardown: leashd's state folder (default /var/lib/leash)
  --run-dir <path>        teardown: leashd's run folder (default /run/leash)
  --unless-failed         teardown: release only if systemd's $SERVICE_RESULT, $EXIT_CODE
                          and $EXIT_STATUS say leash.service was stopped on purpose
  -h, --help              this text; `leash <command> --help` for one command

exit codes:
  0  ok (check: allowed)
  1  refused, blocked, findings that fail validation, or a write not put in force
  2  usage error
  3  leashd is not answering (or the admin socket is not yours: it is root-only); status
     then shows the config file, and its --json says "offline": true
  4  status: degraded (a subject without its policy, something not in force, a sidecar
     down), each named on the DEGRADED line and in --json's "degraded"
  7  tool check: the caller (root, with no --account) or the --account named is not a
     leashed subject, so nothing was judged
)";

const std::map<std::string, std::string>& CommandHelp() {
  static const auto* help = new std::map<std::string, std::string>{
      {"validate", R"(usage: leash validate [--json] [--offline]
  Judges the floor, every profile and every binding: a blacklist surface with an allow list
  (never consulted: error), a deny entry that can never match (critical), an allow entry that
  can never match (warning), commands in blacklist mode (warning), stale acks, bindings that
  resolve for nobody, a profile deny the floor already has (info: it changes nothing). Exits 1
  when any finding is an error or critical, 0 with warnings only.
  Without leashd it judges the config file alone, and says so.
)"},
      {"check", R"(usage: leash check <surface> <subject> [--account <account>] [--json]
  Dry-runs a decision against a subject's live policy (default: the configured user).
  network: host:port, ip:port or [v6]:port   filesystem: an absolute path
  commands: a binary path or name            tools: a tool name
  A command name is found on the system PATH (/usr/local/sbin:/usr/local/bin:/usr/sbin:
  /usr/bin:/sbin:/bin) as an exec finds it, and the program it resolves to is judged, as the
  watcher judges an exec of it; the output says what it resolved to.
  Exits 0 when allowed, 1 when blocked. Without leashd: against the config file.
)"},
      {"profile", R"(usage: leash profile save <name> --from <file.yaml> [--ack 'agent:<account>=<field>:<value>']...
       leash profile list | show <name> | delete <name> [--ack 'dangling:<scope>']...
  A profile is a fragment: only the keys it means to set. Its deny lists are added to the
  floor's and the global binding's (a floor deny holds for every agent); its allow lists and
  other keys are its own values. A save that would loosen any bound agent beyond its own acks
  is refused with every loosening, its token and the re-run line.
  Deleting a profile a binding still names is refused: the binding would dangle and deny its
  subjects (for global, every subject on the host) everything. Unbind first to return them to
  the floor, or acknowledge each binding with --ack 'dangling:<scope>' to hold them
  fail-closed on purpose.
)"},
      {"bindings", R"(usage: leash bindings [--json]
  One line per binding: its scope, its profile and its acks. A binding whose profile does not
  exist is marked DANGLING (--json: "dangling": true, with "problem" saying what it denies and
  the unbind that ends it); one whose profile does not load, DOES NOT LOAD.
)"},
      {"<surface>", R"(usage: leash <surface> list [--json]
       leash <surface> allow|deny <entry> [--ack '<field>:<value>']...
       leash <surface> remove <entry> [--ack '<field>:<value>']...
       leash <surface> mode whitelist|blacklist [--ack '<field>:<value>']...
  surfaces: network|net, filesystem|fs, commands|cmd, tools|tool
  list: the surface's floor mode and every entry of its allow and deny lists, the floor's and
  every profile's, each with the tier that writes it and its file.
  remove: takes the entry out of every floor list of the surface that holds it, keeping the
  file's comments and layout. Judged like every write: removing an allow tightens; removing a
  deny loosens the floor for every subject and is refused until acknowledged with the --ack
  the refusal names (unset.deny:<surface>:<entry>). An entry a profile writes is edited in
  that profile (leash profile save).
  allow, deny and mode are judged the same way, as the floor before and after: an allow added
  to a whitelist (<surface>.allow:<entry>) and a switch to blacklist (<surface>.mode:blacklist)
  widen every subject and are refused until acknowledged; a deny, a switch to whitelist, or an
  allow on a blacklist (never consulted) proceed. The consent is written to the consent ledger
  before the floor.
)"},
      {"bind", R"(usage: leash bind global|agent:<account> <profile> [--ack '<field>:<value>']...
  A change that widens what a subject may do is refused unless acknowledged by field and value.
  bind global changes the floor for every subject on the host.
)"},
      {"unbind", R"(usage: leash unbind global|agent:<account> [--ack '<field>:<value>']...
  Judged like a bind (removing a tightening loosens); recorded in the unbind ledger first.
)"},
      {"tool", R"(usage: leash tool check <name> [--inputs '<json>'|-] [--account <account>] [--json]
  Asks CheckTool on the tools socket; exits 0 when allowed, 1 when blocked, 7 when the caller
  is not a leashed subject (root is not one: add --account <agent account>).
)"},
      {"logs", R"(usage: leash logs [--follow] [--account <account>] [--surface <surface>]
                  [--action block|allow] [--since <when>] [--until <when>] [--ref <ref>]
                  [--tail N] [--json]
  Prints decisions from leashd's stream: those of the decision log (and its rotations
  <log>.1, <log>.2.gz, ...) from --ref (that line and after) or --since, else the last N
  (default 20) that match; with --follow, then each new one as it happens. leashd serves at
  most 8 at once. <when> is a duration before now (10m, 2h) or an RFC 3339 time. One line each:
  time, account, surface, action, what, reason, ref; --json prints the log's own JSON lines.
  A watcher that does not keep up is told how many lines it lost; the log file has them.
  --action block includes an audited surface's would-be blocks (shown as block (audit));
  an --account that is no subject of leashd is an error.
)"},
      {"suggest", R"(usage: leash suggest --account <account> [--since 2h] [--until <when>]
                     [--surface network|filesystem|commands|tools[,...]] [--log <path>]
                     [--profile <name>] [--state-dir <dir>]
  Reads the account's decisions from the decision log (default: the floor's
  logging.decisions, with its rotations <log>.1, <log>.2.gz, ... as far back as --since
  reaches) and prints, as YAML, a profile fragment
  that allows what it was allowed and what audit logged it would have been refused, and
  nothing else: names under one parent seen twice or more become that parent (*.github.com),
  never a top-level name (nor a two-label name under a two-letter one, like co.uk);
  addresses stay /32 or /128; a folder with 3 or more distinct things seen in it becomes the
  folder; commands by path, tools by name. Each entry's comment gives its count and a ref.
  Enforced blocks are listed, not suggested. Ends with the exact `leash profile save` and
  `leash bind` lines, with the --ack tokens leashd's consent judgement asks for (judged
  against --config and --state-dir). --since/--until: a duration before now or an RFC 3339
  time. --profile defaults to <account>-observed. Exits 1 when nothing was seen.
)"},
      {"init", R"(usage: leash init --user <name>
  Creates the account if missing and writes the config 0640 root:<name>; an existing config
  keeps its content and gets its mode and owner re-stated.
)"},
      {"teardown", R"(usage: leash teardown [--unless-failed] [--state-dir <dir>] [--run-dir <dir>]
  Releases every subject's nftables chains (the port map's, the configured user's, and any
  the kernel still lists). Refused while a leashd runs on the run folder (default /run/leash):
  stop it instead, its stop path releases every chain.
  A leashd that exits for failure (it gave up on a sidecar, a fatal error, a crash) leaves
  every chain in place, so the agents' network stays closed until leashd runs again; run
  teardown by hand to open it without one.
  --unless-failed: leash.service's ExecStopPost. Releases only when systemd's $SERVICE_RESULT,
  $EXIT_CODE and $EXIT_STATUS say the service was stopped on purpose (systemctl stop, SIGTERM);
  after a failure it releases nothing, says why, and exits 0.
)"},
  };
  return *help;
}

}  // namespace

std::string Usage(const std::string& command) {
  auto it = CommandHelp().find(command);
  if (it == CommandHelp().end() && engine::ParseSurfaceName(command).ok()) {
    it = CommandHelp().find("<surface>");
  }
  return it == CommandHelp().end() ? kOverview : it->second;
}

}  // namespace leash::cli
