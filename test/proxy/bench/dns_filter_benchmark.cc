// The DNS filter's cost, as a ratio measured in one run: DNS questions per second from an agent
// account through leash-proxy's filter (network.dns: filter; the kernel redirects its UDP/53 to
// the proxy, which judges the name, forwards it, checks and caches the answer and writes a
// decision record) vs the same client as root straight to the same resolver (no redirect). The
// resolver is test/proxy/test_resolver.h in the namespace; the client asks one question at a
// time (dns_probe bench), so the figure is a round-trip rate. Rounds alternate the two modes.
// Run as root: bazel run -c opt //test/proxy:dns_filter_benchmark [-- --seconds=2 --reps=5]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "test/proxy/test_resolver.h"
#include "test/proxy/testbed.h"

namespace leash::testing {
namespace {

constexpr char kResolver[] = "192.0.2.53";
constexpr char kPolicy[] =
    R"pb(network { mode: MODE_WHITELIST allow { entries: "bench.test" } })pb";

double Qps(const absl::StatusOr<RunResult>& run, const std::string& what) {
  double qps = 0;
  if (!run.ok() || run->exit_code != 0 ||
      !absl::SimpleAtod(absl::StripPrefix(absl::StripTrailingAsciiWhitespace(run->out), "qps="),
                        &qps)) {
    std::fprintf(stderr, "%s failed: %s\n", what.c_str(),
                 run.ok() ? run->out.c_str() : run.status().ToString().c_str());
    return -1;
  }
  return qps;
}

int RunBenchmark(double seconds, int reps) {
  if (geteuid() != 0) {
    std::fprintf(stderr, "dns_filter_benchmark needs root (namespaces, accounts, nft)\n");
    return 2;
  }
  TestbedOptions options;
  options.agents = {{"ldnsb", 18021}};
  options.v0_addresses = {"192.0.2.10/24"};
  options.v1_addresses = {"192.0.2.53/24"};
  options.dns = {{{kResolver}, /*filter=*/true}};
  options.helpers = {"test/proxy/dns_probe"};
  absl::StatusOr<std::unique_ptr<ProxyTestbed>> bed = ProxyTestbed::Create(options);
  if (!bed.ok()) {
    std::fprintf(stderr, "testbed: %s\n", bed.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<TestResolver> resolver;
  {
    absl::StatusOr<NetNamespace::Entered> entered = (*bed)->ns().Enter();
    if (!entered.ok()) return 1;
    absl::StatusOr<std::unique_ptr<TestResolver>> started =
        TestResolver::Start(kResolver, {{"bench.test", {"192.0.2.11"}}});
    if (!started.ok()) {
      std::fprintf(stderr, "resolver: %s\n", started.status().ToString().c_str());
      return 1;
    }
    resolver = std::move(*started);
  }
  if (!(*bed)->StartProxy().ok() ||
      !(*bed)->PublishAndWait({(*bed)->Subject(0, kPolicy)}).ok()) {
    std::fprintf(stderr, "proxy did not start\n");
    return 1;
  }
  const std::vector<std::string> argv = {(*bed)->Helper("dns_probe"), "bench", kResolver,
                                         "bench.test", absl::StrCat(seconds)};
  std::vector<double> filtered, direct, ratios;
  for (int rep = 0; rep < reps; ++rep) {
    const double f = Qps((*bed)->RunAs(0, argv, absl::Seconds(seconds + 30)), "through the filter");
    const double d = Qps((*bed)->RunAsRoot(argv, absl::Seconds(seconds + 30)), "straight");
    if (f < 0 || d <= 0) {
      std::ifstream err((*bed)->proxy_stderr_path());
      std::stringstream text;
      text << err.rdbuf();
      std::fprintf(stderr, "proxy stderr:\n%s\n", text.str().c_str());
      return 1;
    }
    filtered.push_back(f);
    direct.push_back(d);
    ratios.push_back(f / d);
    std::printf("run %d: through the filter %.0f q/s, straight to the resolver %.0f q/s, ratio %.3f\n",
                rep + 1, f, d, f / d);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("median: through the filter %.0f q/s, straight %.0f q/s, ratio %.3f (%d runs of %gs)\n",
              median(filtered), median(direct), median(ratios), reps, seconds);
  std::printf("resolver saw %d questions\n", resolver->asked_total());
  return 0;
}

}  // namespace
}  // namespace leash::testing

int main(int argc, char** argv) {
  double seconds = 2;
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--seconds=") && absl::SimpleAtod(arg, &seconds)) continue;
    if (absl::ConsumePrefix(&arg, "--reps=") && absl::SimpleAtoi(arg, &reps) && reps > 0) continue;
    std::fprintf(stderr, "usage: dns_filter_benchmark [--seconds=2] [--reps=5]\n");
    return 2;
  }
  return leash::testing::RunBenchmark(seconds, reps);
}
