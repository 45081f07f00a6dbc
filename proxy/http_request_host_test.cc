// The HTTP/1.x host reader, one case per rule.
#include "proxy/http_request_host.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace leash::proxy {
namespace {

struct Case {
  std::string name = {};
  std::string bytes = {};
  bool final = {};
  ParseState state = {};
  std::string host = {};  // expected host (kComplete), "" = none
  std::string source = {};  // expected source (kComplete with a host)
  std::string error_fragment = {};
};

std::vector<Case> Cases() {
  return {
      {"host_header", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", false, ParseState::kComplete,
       "example.com", "Host header"},
      {"host_with_port_drops_port", "GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", false,
       ParseState::kComplete, "example.com", "Host header"},
      {"host_case_and_dot_kept_as_sent", "GET / HTTP/1.1\r\nhOsT:  Example.COM. \r\n\r\n", false,
       ParseState::kComplete, "Example.COM.", "Host header"},
      {"ipv6_literal_host", "GET / HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n\r\n", false,
       ParseState::kComplete, "2001:db8::1", "Host header"},
      {"ipv4_literal_host", "GET / HTTP/1.1\r\nHost: 192.0.2.1\r\n\r\n", false,
       ParseState::kComplete, "192.0.2.1", "Host header"},
      {"absolute_form_wins_over_host",
       "GET http://target.example/x HTTP/1.1\r\nHost: other.example\r\n\r\n", false,
       ParseState::kComplete, "target.example", "absolute-form"},
      {"absolute_form_with_port_and_query", "GET https://t.example:8443?q=1 HTTP/1.1\r\n\r\n",
       false, ParseState::kComplete, "t.example", "absolute-form"},
      {"connect_authority_form", "CONNECT tunnel.example:443 HTTP/1.1\r\n\r\n", false,
       ParseState::kComplete, "tunnel.example", "authority-form"},
      {"bare_lf_line_endings", "GET / HTTP/1.1\nHost: lf.example\n\n", false,
       ParseState::kComplete, "lf.example", "Host header"},
      {"http10_without_host", "GET / HTTP/1.0\r\n\r\n", false, ParseState::kComplete, "", ""},
      {"empty_host_is_no_host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", false, ParseState::kComplete,
       "", ""},
      {"other_headers_ignored", "POST /a HTTP/1.1\r\nX-Y: z\r\nHost: h.example\r\nA: b\r\n\r\nbody",
       false, ParseState::kComplete, "h.example", "Host header"},
      {"method_prefix_needs_more", "GE", false, ParseState::kNeedMore},
      {"request_line_needs_more", "GET /index.html HT", false, ParseState::kNeedMore},
      {"headers_need_more", "GET / HTTP/1.1\r\nHost: a.example\r\n", false, ParseState::kNeedMore},
      {"final_headers_incomplete", "GET / HTTP/1.1\r\nHost: a.example\r\n", true,
       ParseState::kMalformed, "", "", "incomplete"},
      {"final_method_only_is_not_http", "HELLO", true, ParseState::kNotThisProtocol},
      {"binary_is_not_http", std::string("\x00\x01\x02", 3), false, ParseState::kNotThisProtocol},
      {"ssh_banner_is_not_http", "SSH-2.0-OpenSSH_9.2\r\n", false, ParseState::kNotThisProtocol},
      {"http2_prior_knowledge_is_not_http1", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false,
       ParseState::kNotThisProtocol},
      {"http09_is_not_http1", "GET /\r\n", false, ParseState::kNotThisProtocol},
      {"long_token_is_not_http", std::string(40, 'A') + " ", false, ParseState::kNotThisProtocol},
      {"two_host_headers", "GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n", false,
       ParseState::kMalformed, "", "", "more than one Host"},
      {"userinfo_in_absolute_form", "GET http://allowed.example@evil.example/ HTTP/1.1\r\n\r\n",
       false, ParseState::kMalformed, "", "", "userinfo"},
      {"userinfo_in_host_header", "GET / HTTP/1.1\r\nHost: a@b.example\r\n\r\n", false,
       ParseState::kMalformed, "", "", "is not a host"},
      {"obs_fold", "GET / HTTP/1.1\r\nHost: a.example\r\n continued\r\n\r\n", false,
       ParseState::kMalformed, "", "", "obs-fold"},
      {"space_before_colon", "GET / HTTP/1.1\r\nHost : a.example\r\n\r\n", false,
       ParseState::kMalformed, "", "", "not a token"},
      {"bad_port", "GET / HTTP/1.1\r\nHost: a.example:http\r\n\r\n", false, ParseState::kMalformed,
       "", "", "is not a host"},
      {"unbracketed_ipv6", "GET / HTTP/1.1\r\nHost: 2001:db8::1\r\n\r\n", false,
       ParseState::kMalformed, "", "", "is not a host"},
      {"relative_target_not_path_or_url", "GET foo HTTP/1.1\r\n\r\n", false,
       ParseState::kMalformed, "", "", "not a path or a URL"},
      {"connect_without_port_ok", "CONNECT tunnel.example HTTP/1.1\r\n\r\n", false,
       ParseState::kComplete, "tunnel.example", "authority-form"},
      {"oversized_complete_head_still_too_large",
       "GET / HTTP/1.1\r\nX: " + std::string(kMaxPeekBytes, 'a') + "\r\nHost: late.example\r\n\r\n",
       false, ParseState::kTooLarge, "", "", "longer than"},
      {"oversized_head", "GET / HTTP/1.1\r\nX: " + std::string(kMaxPeekBytes, 'a'), false,
       ParseState::kTooLarge, "", "", "longer than"},
  };
}

TEST(ParseHttpRequestHost, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const HttpRequestHostResult result = ParseHttpRequestHost(c.bytes, c.final);
    EXPECT_EQ(result.state, c.state) << result.error;
    if (c.state == ParseState::kComplete) {
      EXPECT_EQ(result.request.has_host, !c.host.empty());
      EXPECT_EQ(result.request.host, c.host);
      EXPECT_EQ(result.request.source, c.source);
    }
    if (!c.error_fragment.empty()) {
      EXPECT_NE(result.error.find(c.error_fragment), std::string::npos) << result.error;
    }
  }
}

TEST(ParseHttpRequestHost, EveryPrefixNeedsMore) {
  const std::string request = "GET /a/b?c HTTP/1.1\r\nUser-Agent: t\r\nHost: p.example:81\r\n\r\n";
  for (size_t n = 1; n < request.size(); ++n) {
    ASSERT_EQ(ParseHttpRequestHost(request.substr(0, n)).state, ParseState::kNeedMore)
        << "prefix " << n;
  }
  EXPECT_EQ(ParseHttpRequestHost(request).request.host, "p.example");
}

}  // namespace
}  // namespace leash::proxy
