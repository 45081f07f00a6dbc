// PeekDestinationName: the rule for each kind of first bytes (see proxy/peek.h).
#include "proxy/peek.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proxy/peek_limits.h"
#include "proxy/testing/client_hello_builder.h"

namespace leash::proxy {
namespace {

using testing::BuildClientHello;
using testing::ClientHelloSpec;

struct Case {
  std::string name = {};
  std::string bytes = {};
  bool final = {};
  PeekOutcome outcome = {};
  std::string domain = {};
  std::string detail_fragment = {};
};

std::string Hello(const std::string& sni, bool ech = false) {
  ClientHelloSpec spec;
  spec.sni = sni;
  spec.ech = ech;
  return BuildClientHello(spec);
}

std::vector<Case> Cases() {
  ClientHelloSpec huge;
  huge.sni = "huge.example";
  huge.padding = 17000;
  return {
      {"tls_sni_is_the_name", Hello("api.example.com"), false, PeekOutcome::kName,
       "api.example.com", "TLS SNI"},
      {"ip_literal_sni_passed_to_engine_as_sent", Hello("192.0.2.9"), false, PeekOutcome::kName,
       "192.0.2.9", "TLS SNI"},
      {"missing_sni_decides_on_address", Hello(""), false, PeekOutcome::kNoName, "", "without SNI"},
      {"ech_only_decides_on_address", Hello("", true), false, PeekOutcome::kNoName, "", "ECH"},
      {"ech_outer_sni_is_not_the_name", Hello("public.example", true), false,
       PeekOutcome::kNoName, "", "ECH"},
      {"http_host", "GET / HTTP/1.1\r\nHost: h.example:8080\r\n\r\n", false, PeekOutcome::kName,
       "h.example", "HTTP Host header"},
      {"http_absolute_form", "GET http://abs.example/ HTTP/1.1\r\nHost: x.example\r\n\r\n", false,
       PeekOutcome::kName, "abs.example", "HTTP absolute-form"},
      {"http_without_host_decides_on_address", "GET / HTTP/1.0\r\n\r\n", false,
       PeekOutcome::kNoName, "", "without a host"},
      {"nothing_sent_by_deadline_decides_on_address", "", true, PeekOutcome::kNoName, "",
       "sent nothing"},
      {"opaque_bytes_decide_on_address", std::string("\x05\x01\x00", 3), false,
       PeekOutcome::kNoName, "", "neither TLS nor HTTP"},
      {"http2_prior_knowledge_decides_on_address", "PRI * HTTP/2.0\r\n\r\n", false,
       PeekOutcome::kNoName, "", "neither TLS nor HTTP"},
      {"malformed_tls_is_unreadable", Hello("a.example").substr(0, 60), true,
       PeekOutcome::kUnreadable, "", "incomplete"},
      {"oversized_tls_is_unreadable", BuildClientHello(huge), false, PeekOutcome::kUnreadable, "",
       "bound"},
      {"ambiguous_http_is_unreadable", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", false,
       PeekOutcome::kUnreadable, "", "more than one Host"},
      {"partial_tls_waits", Hello("a.example").substr(0, 20), false, PeekOutcome::kNeedMore, "",
       ""},
      {"partial_http_waits", "GET / HTTP/1.1\r\nHo", false, PeekOutcome::kNeedMore, "", ""},
      {"nothing_yet_waits", "", false, PeekOutcome::kNeedMore, "", ""},
  };
}

TEST(PeekDestinationName, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const PeekResult result = PeekDestinationName(c.bytes, c.final);
    EXPECT_EQ(result.outcome, c.outcome) << result.detail;
    EXPECT_EQ(result.domain, c.domain);
    EXPECT_NE(result.detail.find(c.detail_fragment), std::string::npos) << result.detail;
  }
}

}  // namespace
}  // namespace leash::proxy
