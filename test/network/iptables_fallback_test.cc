// The iptables fallback for real, in a fresh namespace per test: it must really redirect one
// account's IPv4 TCP to its listener (and only IPv4 TCP), refuse a second UID, replace and
// release its rules. Also the factory's choice — nftables when nf_tables answers, the fallback
// with a stderr notice when it does not (CAP_NET_ADMIN dropped on the choosing thread makes
// nf_tables refuse) or when forced — and TeardownSubjects over the real nft applier.
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "controlplane/iptables_netfilter.h"
#include "controlplane/subordinate_ids.h"
#include "controlplane/netfilter_factory.h"
#include "controlplane/testing/fake_netfilter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/root_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/test_account.h"
#include "test/network/tagged_server.h"
#include "test/network/traffic_world.h"

namespace leash::controlplane {
namespace {

using ::leash::controlplane::testing::MakeSubject;
using ::leash::testing::NetNamespace;
using ::leash::testing::TaggedServer;
using ::leash::testing::TestAccount;
using ::leash::testing::TrafficTest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr uint16_t kPortA = 18101;
constexpr uint16_t kPortOther = 18102;
enum Endpoint { kLocal4 = 4, kUdp = 5 };

class IptablesFallbackTest : public TrafficTest {
 protected:
  void SetUp() override {
    TrafficTest::SetUp();
    if (!Ready()) return;
    absl::StatusOr<NetNamespace::Entered> entered = ns_->Enter();
    ASSERT_TRUE(entered.ok()) << entered.status();
    ASSERT_NO_FATAL_FAILURE(StartServer({
        {"a", "127.0.0.1", kPortA},
        {"other", "127.0.0.1", kPortOther},
        {"direct", "192.0.2.11", 443},
        {"direct", "2001:db8::11", 443},
        {"local", "127.0.0.1", 0},
        {"udp", "192.0.2.11", 0, true},
    }));
    // Forced, since nf_tables answers on this machine.
    absl::StatusOr<NetfilterChoice> choice = ChooseNetfilter(NetfilterBackend::kIptables);
    ASSERT_TRUE(choice.ok()) << choice.status();
    notice_ = choice->notice;
    nf_ = std::move(choice->netfilter);
    absl::StatusOr<std::vector<std::string>> lines = nf_->Prepare();
    ASSERT_TRUE(lines.ok()) << lines.status();
    EXPECT_THAT(*lines, IsEmpty());
  }

  std::string Saved() {
    absl::StatusOr<std::string> out = leash::testing::RunOk(
        ns_->Exec({DefaultIptablesCommand() + "-save", "-t", "nat"}));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or("");
  }

  std::unique_ptr<Netfilter> nf_;
  std::string notice_;
};

TEST_F(IptablesFallbackTest, SaysOnStderrThatItIsNotParity) {
  EXPECT_EQ(nf_->Describe(), "iptables (IPv4 TCP only, single UID)");
  EXPECT_THAT(notice_, HasSubstr("IPv4 TCP only"));
  EXPECT_THAT(notice_, HasSubstr("UDP is not dropped"));
  EXPECT_THAT(notice_, HasSubstr("single UID"));
  EXPECT_THAT(notice_, HasSubstr("not parity with nftables"));
}

TEST_F(IptablesFallbackTest, RedirectsTheAccountsIpv4TcpAndNothingElse) {
  ASSERT_TRUE(nf_->Apply(MakeSubject(a_->uid(), kPortA)).ok());
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 443), "a 192.0.2.11:443");
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 8080), "a 192.0.2.11:8080");
  // Loopback exempt except the proxy range, as with nftables.
  const uint16_t local = server_->port(kLocal4);
  EXPECT_EQ(Probe(a_, "tcp", "127.0.0.1", local), absl::StrCat("local 127.0.0.1:", local));
  EXPECT_EQ(Probe(a_, "tcp", "127.0.0.1", kPortOther), "a 127.0.0.1:18102");
  // The documented gaps: IPv6 TCP is not redirected and UDP is not dropped.
  // (No IPv6 conntrack without an IPv6 nat table, hence no original destination to report.)
  EXPECT_THAT(Probe(a_, "tcp", "2001:db8::11", 443), StartsWith("direct "));
  EXPECT_EQ(Probe(a_, "udp", "192.0.2.11", server_->port(kUdp)), "udp");
  // Other accounts and root are untouched.
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "direct 192.0.2.11:443");
  EXPECT_EQ(Probe(nullptr, "tcp", "192.0.2.11", 443), "direct 192.0.2.11:443");
}

TEST_F(IptablesFallbackTest, TheAccountsSubordinateUidsAreRedirectedToo) {
  absl::StatusOr<SubordinateIdFile> subuid = ReadSubordinateIds(kSubuidPath);
  ASSERT_TRUE(subuid.ok()) << subuid.status();
  NetfilterSubject subject = MakeSubject(a_->uid(), kPortA);
  subject.subordinate_uids = subuid->RangesOf(a_->name(), a_->uid());
  ASSERT_FALSE(subject.subordinate_uids.empty()) << "useradd gave " << a_->name() << " no range";
  ASSERT_TRUE(nf_->Apply(subject).ok());
  auto in_namespace = [&](const std::string& address, uint16_t port) {
    absl::StatusOr<leash::testing::RunResult> run = ns_->Run(
        a_->InOwnUserNamespace({probe_path(), "tcp", address, absl::StrCat(port)}),
        absl::Seconds(20));
    if (!run.ok()) return absl::StrCat("probe failed: ", run.status().ToString());
    return std::string(absl::StripAsciiWhitespace(run->out));
  };
  EXPECT_EQ(in_namespace("192.0.2.11", 443), "a 192.0.2.11:443");
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 443), "a 192.0.2.11:443");
  // Saved and found again by the subject's comment: replace and release take every range.
  EXPECT_EQ(ParseIptablesUids(Saved()), std::vector<uint32_t>{a_->uid()});
  EXPECT_EQ(IptablesDeleteLines(Saved(), a_->uid()).size(), 4u);
  ASSERT_TRUE(nf_->Release(a_->uid()).ok());
  EXPECT_THAT(in_namespace("192.0.2.11", 443), StartsWith("direct "));
}

TEST_F(IptablesFallbackTest, ASecondUidIsRefused) {
  ASSERT_TRUE(nf_->Apply(MakeSubject(a_->uid(), kPortA)).ok());
  absl::Status second = nf_->Apply(MakeSubject(b_->uid(), kPortOther));
  EXPECT_EQ(second.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.message(), HasSubstr("enforcing several UIDs needs nftables"));
  EXPECT_THAT(second.message(), HasSubstr(absl::StrCat("UID ", a_->uid(), " is already enforced")));
  absl::Status both =
      nf_->ApplyAll({MakeSubject(a_->uid(), kPortA), MakeSubject(b_->uid(), kPortOther)});
  EXPECT_EQ(both.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(both.message(), HasSubstr("enforcing several UIDs needs nftables"));
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "direct 192.0.2.11:443");
  EXPECT_THAT(*nf_->ListSubjects(), ElementsAre(a_->uid()));
}

// A UID the fallback cannot enforce, beside the one it does, is closed rather than left
// unconfined: every connection refused, loopback too. The closure does not count as enforcing
// (the enforced UID is re-applied freely), a teardown finds it, Apply replaces it and Release
// removes it.
TEST_F(IptablesFallbackTest, AUidItCannotEnforceIsClosedNotLeftUnconfined) {
  auto* fallback = static_cast<IptablesNetfilter*>(nf_.get());
  ASSERT_TRUE(nf_->Apply(MakeSubject(a_->uid(), kPortA)).ok());
  ASSERT_TRUE(fallback->Close(b_->uid()).ok());
  ASSERT_TRUE(fallback->Close(b_->uid()).ok());  // already closed: left as it is
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "error ECONNREFUSED");
  EXPECT_EQ(Probe(b_, "tcp", "127.0.0.1", server_->port(kLocal4)), "error ECONNREFUSED");
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 443), "a 192.0.2.11:443");
  ASSERT_TRUE(nf_->Apply(MakeSubject(a_->uid(), kPortOther)).ok());
  EXPECT_THAT(*nf_->ListSubjects(), ElementsAre(a_->uid(), b_->uid()));
  EXPECT_EQ(fallback->Close(0).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(nf_->Release(b_->uid()).ok());
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "direct 192.0.2.11:443");
  ASSERT_TRUE(fallback->Close(b_->uid()).ok());
  ASSERT_TRUE(nf_->Release(a_->uid()).ok());
  ASSERT_TRUE(nf_->Apply(MakeSubject(b_->uid(), kPortA)).ok());  // enforced now: closure replaced
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "a 192.0.2.11:443");
}

TEST_F(IptablesFallbackTest, ReapplyReplacesAndReleaseRemovesTheRules) {
  ASSERT_TRUE(nf_->ApplyAll({MakeSubject(a_->uid(), kPortA)}).ok());
  ASSERT_TRUE(nf_->Apply(MakeSubject(a_->uid(), kPortOther)).ok());
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 443), "other 192.0.2.11:443");
  EXPECT_EQ(ParseIptablesUids(Saved()), std::vector<uint32_t>{a_->uid()});
  EXPECT_EQ(IptablesDeleteLines(Saved(), a_->uid()).size(), 2u);  // replaced, not stacked
  ASSERT_TRUE(nf_->Release(a_->uid()).ok());
  EXPECT_THAT(Probe(a_, "tcp", "192.0.2.11", 443), StartsWith("direct "));
  EXPECT_THAT(Saved(), ::testing::Not(HasSubstr("leash-agent-")));
  EXPECT_TRUE(nf_->Release(a_->uid()).ok());  // nothing left: not an error
  EXPECT_THAT(*nf_->ListSubjects(), IsEmpty());
  // With the first UID gone, another may be enforced.
  ASSERT_TRUE(nf_->Apply(MakeSubject(b_->uid(), kPortA)).ok());
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "a 192.0.2.11:443");
}

TEST_F(IptablesFallbackTest, CallsActInTheCreatorsNamespaceFromAnyThread) {
  // The test thread left the namespace after SetUp; the fallback still acts inside it.
  std::thread other([&] { EXPECT_TRUE(nf_->Apply(MakeSubject(a_->uid(), kPortA)).ok()); });
  other.join();
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 443), "a 192.0.2.11:443");
  absl::StatusOr<std::string> host = leash::testing::RunOk(
      {DefaultIptablesCommand() + "-save", "-t", "nat"});
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_THAT(*host, ::testing::Not(HasSubstr(absl::StrCat("leash-agent-", a_->uid()))));
}

// --- The factory and teardown --------------------------------------------------------------

// Runs `body` on a fresh thread inside `ns` with CAP_NET_ADMIN dropped from that thread's
// effective set (capabilities are per thread), so nf_tables refuses it with EPERM.
void WithoutNetAdmin(const NetNamespace& ns, const std::function<void()>& body) {
  std::thread t([&] {
    absl::StatusOr<NetNamespace::Entered> entered = ns.Enter();
    ASSERT_TRUE(entered.ok()) << entered.status();
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    ASSERT_EQ(syscall(SYS_capget, &header, data), 0);
    __user_cap_data_struct dropped[2] = {data[0], data[1]};
    dropped[CAP_NET_ADMIN / 32].effective &= ~(1u << (CAP_NET_ADMIN % 32));
    ASSERT_EQ(syscall(SYS_capset, &header, dropped), 0);
    body();
    ASSERT_EQ(syscall(SYS_capset, &header, data), 0);
  });
  t.join();
}

// The test's own namespace is all it needs.
class NetfilterFactoryTest : public leash::testing::RootTest {};

TEST_F(NetfilterFactoryTest, ChoosesNftablesWhenItAnswersAndSaysNothing) {
  absl::StatusOr<NetNamespace::Entered> entered = ns_->Enter();
  ASSERT_TRUE(entered.ok());
  absl::StatusOr<NetfilterChoice> choice = ChooseNetfilter();
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->netfilter->Describe(), "nftables");
  EXPECT_EQ(choice->notice, "");
}

TEST_F(NetfilterFactoryTest, FallsBackToIptablesWhenNftablesRefusesAndSaysWhy) {
  WithoutNetAdmin(*ns_, [] {
    absl::StatusOr<NetfilterChoice> choice = ChooseNetfilter();
    ASSERT_TRUE(choice.ok()) << choice.status();
    EXPECT_EQ(choice->netfilter->Describe(), "iptables (IPv4 TCP only, single UID)");
    EXPECT_THAT(choice->notice, HasSubstr("nftables is unavailable"));
    EXPECT_THAT(choice->notice, HasSubstr("CAP_NET_ADMIN"));
    EXPECT_THAT(choice->notice, HasSubstr("falling back to iptables"));
    EXPECT_THAT(choice->notice, HasSubstr("IPv4 TCP only"));
  });
}

// The fallback enforces one UID, so enforcing several refuses to run without nftables
// (docs/ARCHITECTURE.md, rule N13). nf_tables really refusing (the thread has no
// CAP_NET_ADMIN): the choice is the fallback, and a host with agent accounts is refused, naming
// nftables, why, and every agent.
TEST_F(NetfilterFactoryTest, EnforcingSeveralUidsRefusesToRunWithoutNft) {
  WithoutNetAdmin(*ns_, [] {
    absl::StatusOr<NetfilterChoice> choice = ChooseNetfilter();
    ASSERT_TRUE(choice.ok()) << choice.status();
    ASSERT_TRUE(choice->single_uid_fallback);
    ASSERT_NE(choice->fallback, nullptr);
    EXPECT_TRUE(CheckEnforcesEverySubject(*choice, "fido", {}).ok());
    absl::Status refused =
        CheckEnforcesEverySubject(*choice, "fido", {"leash-iris", "leash-vader"});
    EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(refused.message(), HasSubstr("enforcing several UIDs needs nftables"));
    EXPECT_THAT(refused.message(), HasSubstr("nftables is unavailable (nf_tables does not answer"));
    EXPECT_THAT(refused.message(), HasSubstr("(leash-iris, leash-vader)"));
  });
}

TEST_F(NetfilterFactoryTest, NftablesOnlyIsAnErrorWhenItRefuses) {
  WithoutNetAdmin(*ns_, [] {
    absl::StatusOr<NetfilterChoice> choice = ChooseNetfilter(NetfilterBackend::kNftables);
    EXPECT_EQ(choice.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(choice.status().message(), HasSubstr("nf_tables does not answer"));
  });
}

TEST_F(NetfilterFactoryTest, TeardownReleasesEveryPortMapUidFromTheKernel) {
  absl::StatusOr<NetNamespace::Entered> entered = ns_->Enter();
  ASSERT_TRUE(entered.ok());
  absl::StatusOr<NetfilterChoice> choice = ChooseNetfilter(NetfilterBackend::kNftables);
  ASSERT_TRUE(choice.ok()) << choice.status();
  Netfilter& nf = *choice->netfilter;
  ASSERT_TRUE(nf.Prepare().ok());
  ASSERT_TRUE(nf.ApplyAll({MakeSubject(1001, 18001), MakeSubject(1002, 18002),
                           MakeSubject(1003, 18003)})
                  .ok());
  // 1004 is in the port map but was never applied.
  ASSERT_TRUE(TeardownSubjects(nf, {1001, 1002, 1004}).ok());
  EXPECT_THAT(*nf.ListSubjects(), ElementsAre(1003u));
}

}  // namespace
}  // namespace leash::controlplane
