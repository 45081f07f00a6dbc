#include "test/proxy/testbed.h"

#include "test/fixtures/account_view.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "test/proxy/nft_redirect_fixture.h"

namespace leash::testing {
namespace {

constexpr char kProxyBinary[] = "proxy/leash-proxy";

absl::StatusOr<std::string> Absolute(const std::string& runfile) {
  std::error_code error;
  std::filesystem::path path = std::filesystem::canonical(runfile, error);
  if (error) {
    return absl::NotFoundError(absl::StrCat(runfile, " not in runfiles: ", error.message()));
  }
  return path.string();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ProxyTestbed>> ProxyTestbed::Create(const TestbedOptions& options) {
  std::unique_ptr<ProxyTestbed> bed(new ProxyTestbed());
  bed->options_ = options;
  for (const auto& [name, port] : options.agents) {
    // Unique to this run on the host: runs sharing it would otherwise race for one name.
    absl::StatusOr<std::unique_ptr<TestAccount>> account =
        TestAccount::Create(UniqueAccountName(name));
    if (!account.ok()) return account.status();
    bed->accounts_.push_back(std::move(*account));
  }
  absl::StatusOr<std::unique_ptr<NetNamespace>> ns = NetNamespace::Create();
  if (!ns.ok()) return ns.status();
  bed->ns_ = std::move(*ns);
  absl::StatusOr<std::unique_ptr<NetNamespace>> remote = NetNamespace::Create();
  if (!remote.ok()) return remote.status();
  bed->remote_ = std::move(*remote);
  if (absl::Status veth = bed->ns_->AddVethTo(*bed->remote_, "v0", options.v0_addresses, "v1",
                                              options.v1_addresses);
      !veth.ok()) {
    return veth;
  }
  absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("lpx");
  if (!dir.ok()) return dir.status();
  bed->dir_ = std::move(*dir);
  chmod(bed->dir_->path().c_str(), 0755);  // helpers must be reachable by the agent accounts

  bed->etc_netns_dir_ = absl::StrCat("/etc/netns/", bed->ns_->name());
  bed->created_etc_netns_ = !std::filesystem::exists("/etc/netns");
  std::filesystem::create_directories(bed->etc_netns_dir_);
  {
    std::ofstream hosts(bed->etc_netns_dir_ + "/hosts");
    hosts << "127.0.0.1 localhost\n::1 localhost\n" << options.hosts_file;
  }

  std::vector<RedirectedAgent> redirected;
  for (size_t i = 0; i < options.agents.size(); ++i) {
    RedirectedAgent agent;
    agent.uid = bed->accounts_[i]->uid();
    agent.port = options.agents[i].second;
    if (i < options.dns.size()) {
      for (const std::string& resolver : options.dns[i].resolvers) {
        agent.dns_resolvers.push_back(*engine::ParseIpAddress(resolver));
      }
      agent.dns_filter = options.dns[i].filter;
      agent.udp_allowed = options.dns[i].udp_allow;
    }
    redirected.push_back(std::move(agent));
  }
  if (absl::Status rules = InstallRedirectRules(*bed->ns_, redirected);
      !rules.ok()) {
    return rules;
  }

  for (const std::string& helper : options.helpers) {
    absl::StatusOr<std::string> source = Absolute(helper);
    if (!source.ok()) return source.status();
    const std::string target = bed->dir_->Join(std::filesystem::path(helper).filename());
    std::filesystem::copy_file(*source, target);
    chmod(target.c_str(), 0755);
    bed->helper_paths_.push_back(target);
  }

  bed->service_ = std::make_unique<policystream::PolicyStreamService>();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix:", bed->dir_->Join("leash.sock")),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(bed->service_.get());
  bed->server_ = builder.BuildAndStart();
  if (bed->server_ == nullptr) return absl::InternalError("PolicyStream server did not start");
  bed->decision_log_ = bed->dir_->Join("decisions.jsonl");
  bed->proxy_stderr_ = bed->dir_->Join("proxy.stderr");
  return bed;
}

ProxyTestbed::~ProxyTestbed() {
  proxy_.reset();  // SIGKILL and reap
  if (service_ != nullptr) service_->Shutdown();
  if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  if (!etc_netns_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(etc_netns_dir_, ignored);
    if (created_etc_netns_) std::filesystem::remove("/etc/netns", ignored);  // only if empty
  }
  ns_.reset();
  remote_.reset();
  accounts_.clear();
}

std::string ProxyTestbed::Helper(const std::string& name) const {
  for (const std::string& path : helper_paths_) {
    if (std::filesystem::path(path).filename() == name) return path;
  }
  return "/nonexistent/" + name;
}

absl::Status ProxyTestbed::StartProxy() {
  absl::StatusOr<std::string> binary = Absolute(kProxyBinary);
  if (!binary.ok()) return binary.status();
  std::string command = absl::StrCat("exec '", *binary, "' --decision-log-fd=3 --admin-socket='",
                                     dir_->Join("leash.sock"), "'");
  for (const std::string& flag : options_.proxy_flags) absl::StrAppend(&command, " ", flag);
  absl::StrAppend(&command, " 3>>'", decision_log_, "'");
  absl::StatusOr<Background> proxy = Background::Start(ns_->Exec({"sh", "-c", command}), proxy_stderr_);
  if (!proxy.ok()) return proxy.status();
  proxy_ = std::make_unique<Background>(std::move(*proxy));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ProxyTestbed::PublishAndWait(
    const std::vector<leash::v1::SubjectPolicy>& subjects) {
  const uint64_t version = service_->Publish(subjects);
  if (proxy_ == nullptr) return version;
  absl::Status acked =
      service_->WaitForAck(leash::v1::SIDECAR_KIND_PROXY, version, absl::Seconds(20));
  if (!acked.ok()) {
    std::ifstream err(proxy_stderr_);
    std::stringstream text;
    text << err.rdbuf();
    return absl::Status(acked.code(), absl::StrCat(acked.message(), "; proxy stderr: ", text.str()));
  }
  return version;
}

policystream::SidecarState ProxyTestbed::ProxyState() const {
  return service_->State(leash::v1::SIDECAR_KIND_PROXY);
}

absl::StatusOr<RunResult> ProxyTestbed::RunAs(size_t agent, const std::vector<std::string>& argv,
                                              absl::Duration timeout) const {
  return ns_->Run(accounts_[agent]->AsUser(argv), timeout);
}

absl::StatusOr<RunResult> ProxyTestbed::RunAsRoot(const std::vector<std::string>& argv,
                                                  absl::Duration timeout) const {
  return ns_->Run(argv, timeout);
}

std::vector<leash::v1::DecisionRecord> ProxyTestbed::Records() const {
  std::vector<leash::v1::DecisionRecord> records;
  std::ifstream file(decision_log_);
  std::string line;
  while (std::getline(file, line)) {
    leash::v1::DecisionRecord record;
    if (google::protobuf::util::JsonStringToMessage(line, &record).ok()) records.push_back(record);
  }
  return records;
}

leash::v1::SubjectPolicy ProxyTestbed::Subject(size_t agent, const std::string& config_text) const {
  leash::v1::SubjectPolicy subject;
  subject.set_uid(uid(agent));
  subject.set_account(accounts_[agent]->name());
  subject.set_port(options_.agents[agent].second);
  google::protobuf::TextFormat::ParseFromString(config_text, subject.mutable_policy());
  if (agent < options_.dns.size()) {
    for (const std::string& resolver : options_.dns[agent].resolvers) {
      subject.add_dns_resolvers(resolver);
    }
    subject.mutable_policy()->mutable_network()->set_dns(
        options_.dns[agent].filter ? leash::v1::DNS_MODE_FILTER : leash::v1::DNS_MODE_RESOLVERS);
    if (options_.dns[agent].udp_allow) {
      subject.mutable_policy()->mutable_network()->set_udp(leash::v1::UDP_MODE_ALLOW);
    }
  }
  return subject;
}

leash::v1::SubjectPolicy ProxyTestbed::NoPolicySubject(size_t agent,
                                                       const std::string& reason) const {
  leash::v1::SubjectPolicy subject;
  subject.set_uid(uid(agent));
  subject.set_account(accounts_[agent]->name());
  subject.set_port(options_.agents[agent].second);
  subject.mutable_no_policy()->set_reason(reason);
  subject.mutable_no_policy()->set_fail_mode("closed");
  return subject;
}

}  // namespace leash::testing
