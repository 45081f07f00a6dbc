// The ClientHello parser, one case per rule: what it reads, what it waits for, what it refuses.
#include "proxy/tls_client_hello.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proxy/testing/client_hello_builder.h"

namespace leash::proxy {
namespace {

using testing::BuildClientHello;
using testing::ClientHelloSpec;
using testing::ServerNameExtension;

struct Case {
  std::string name = {};
  std::string bytes = {};
  bool final = false;
  ParseState state = {};
  bool has_server_name = false;
  std::string server_name = {};
  bool has_ech = false;
  std::string error_fragment = {};
};

ClientHelloSpec Sni(const std::string& sni) {
  ClientHelloSpec spec;
  spec.sni = sni;
  return spec;
}

std::string WithHandshakeType(std::string hello, char type) {
  hello[5] = type;
  return hello;
}

std::vector<Case> Cases() {
  ClientHelloSpec split = Sni("split.example.com");
  split.record_size = 40;
  ClientHelloSpec ech_only;
  ech_only.ech = true;
  ClientHelloSpec ech_with_sni = Sni("public.example.net");
  ech_with_sni.ech = true;
  ClientHelloSpec no_extensions;
  no_extensions.no_extensions = true;
  ClientHelloSpec oversized = Sni("big.example.com");
  oversized.padding = 17000;
  ClientHelloSpec near_bound = Sni("large.example.com");
  near_bound.padding = 15000;
  ClientHelloSpec two_names;
  two_names.extra_extensions = {{0x0000, ServerNameExtension({"a.example", "b.example"})}};
  ClientHelloSpec repeated = Sni("a.example");
  repeated.extra_extensions = {{0x0000, ServerNameExtension({"b.example"})}};
  ClientHelloSpec empty_name;
  empty_name.extra_extensions = {{0x0000, ServerNameExtension({""})}};
  ClientHelloSpec control_byte;
  control_byte.extra_extensions = {{0x0000, ServerNameExtension({std::string("a\nb.example")})}};
  ClientHelloSpec other_name_type;
  other_name_type.extra_extensions = {{0x0000, std::string("\x00\x05\x07\x00\x02xy", 7)}};

  const std::string valid = BuildClientHello(Sni("www.example.com"));
  std::string interrupted = BuildClientHello(split);
  interrupted[45] = 0x17;  // second record's type: application data

  return {
      {"valid_sni", valid, false, ParseState::kComplete, true, "www.example.com"},
      {"sni_kept_as_sent_mixed_case_trailing_dot", BuildClientHello(Sni("WWW.Example.COM.")), false,
       ParseState::kComplete, true, "WWW.Example.COM."},
      {"ip_literal_sni_read_as_sent", BuildClientHello(Sni("192.0.2.7")), false,
       ParseState::kComplete, true, "192.0.2.7"},
      {"split_across_records", BuildClientHello(split), false, ParseState::kComplete, true,
       "split.example.com"},
      {"no_sni", BuildClientHello(ClientHelloSpec{}), false, ParseState::kComplete, false, ""},
      {"no_extensions", BuildClientHello(no_extensions), false, ParseState::kComplete, false, ""},
      {"ech_only", BuildClientHello(ech_only), false, ParseState::kComplete, false, "", true},
      {"ech_with_outer_sni", BuildClientHello(ech_with_sni), false, ParseState::kComplete, true,
       "public.example.net", true},
      {"unknown_name_type_ignored", BuildClientHello(other_name_type), false,
       ParseState::kComplete, false, ""},
      {"large_hello_within_bound", BuildClientHello(near_bound), false, ParseState::kComplete,
       true, "large.example.com"},
      {"oversized", BuildClientHello(oversized), false, ParseState::kTooLarge, false, "", false,
       "exceeds the 16384-byte bound"},
      {"empty_needs_more", "", false, ParseState::kNeedMore},
      {"header_only_needs_more", valid.substr(0, 5), false, ParseState::kNeedMore},
      {"half_needs_more", valid.substr(0, valid.size() / 2), false, ParseState::kNeedMore},
      {"final_half_is_incomplete", valid.substr(0, valid.size() / 2), true,
       ParseState::kMalformed, false, "", false, "incomplete"},
      {"final_two_bytes_not_tls", valid.substr(0, 2), true, ParseState::kNotThisProtocol},
      {"not_tls_http", "GET / HTTP/1.1\r\n", false, ParseState::kNotThisProtocol},
      {"not_tls_wrong_version_byte", std::string("\x16\x01\x00", 3), false,
       ParseState::kNotThisProtocol},
      {"two_host_names", BuildClientHello(two_names), false, ParseState::kMalformed, false, "",
       false, "more than one host_name"},
      {"repeated_server_name_extension", BuildClientHello(repeated), false,
       ParseState::kMalformed, false, "", false, "repeats extension 0"},
      {"empty_host_name", BuildClientHello(empty_name), false, ParseState::kMalformed, false, "",
       false, "host_name of 0 bytes"},
      {"control_byte_in_host_name", BuildClientHello(control_byte), false,
       ParseState::kMalformed, false, "", false, "not printable ASCII"},
      {"not_a_client_hello", WithHandshakeType(valid, 0x02), false, ParseState::kMalformed,
       false, "", false, "not a ClientHello"},
      {"record_interrupted_by_other_type", interrupted, false, ParseState::kMalformed, false, "",
       false, "non-handshake record"},
      {"zero_length_record", std::string("\x16\x03\x01\x00\x00", 5), false,
       ParseState::kMalformed, false, "", false, "record of 0 bytes"},
  };
}

TEST(ParseClientHello, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const ClientHelloResult result = ParseClientHello(c.bytes, c.final);
    EXPECT_EQ(result.state, c.state) << result.error;
    if (c.state == ParseState::kComplete) {
      EXPECT_EQ(result.hello.has_server_name, c.has_server_name);
      EXPECT_EQ(result.hello.server_name, c.server_name);
      EXPECT_EQ(result.hello.has_ech, c.has_ech);
    }
    if (!c.error_fragment.empty()) {
      EXPECT_NE(result.error.find(c.error_fragment), std::string::npos) << result.error;
    }
  }
}

// A hello arriving a few bytes at a time: every strict prefix waits, the whole reads.
TEST(ParseClientHello, EveryPrefixOfASplitHelloNeedsMore) {
  ClientHelloSpec spec = Sni("prefix.example.com");
  spec.record_size = 33;
  const std::string hello = BuildClientHello(spec);
  for (size_t n = 1; n < hello.size(); ++n) {
    ASSERT_EQ(ParseClientHello(hello.substr(0, n)).state, ParseState::kNeedMore) << "prefix " << n;
  }
  const ClientHelloResult whole = ParseClientHello(hello);
  ASSERT_EQ(whole.state, ParseState::kComplete);
  EXPECT_EQ(whole.hello.server_name, "prefix.example.com");
}

// Records of one byte each: the hello is small but its framing exceeds the peek bound.
TEST(ParseClientHello, TinyRecordsBeyondThePeekBoundAreTooLarge) {
  ClientHelloSpec spec = Sni("tiny.example.com");
  spec.padding = 3000;
  spec.record_size = 1;
  const std::string hello = BuildClientHello(spec);
  ASSERT_GT(hello.size(), kMaxPeekBytes);
  for (const std::string& bytes : {hello.substr(0, kMaxPeekBytes), hello}) {
    const ClientHelloResult result = ParseClientHello(bytes);
    EXPECT_EQ(result.state, ParseState::kTooLarge);
    EXPECT_NE(result.error.find("no complete ClientHello"), std::string::npos) << result.error;
  }
}

// Bytes after the hello (a client that pipelines) do not change what is read.
TEST(ParseClientHello, TrailingBytesAfterTheHelloAreIgnored) {
  const std::string hello = BuildClientHello(Sni("trail.example.com")) + "more bytes";
  const ClientHelloResult result = ParseClientHello(hello);
  ASSERT_EQ(result.state, ParseState::kComplete);
  EXPECT_EQ(result.hello.server_name, "trail.example.com");
}

}  // namespace
}  // namespace leash::proxy
