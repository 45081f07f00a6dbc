#include "engine/guarded_ranges.h"

#include <vector>

namespace leash::engine {
namespace {

IpAddress Parse(absl::string_view text) { return *ParseIpAddress(text); }

constexpr absl::string_view kInstanceMetadata = "the cloud metadata address";

const std::vector<GuardedRangeEntry>& Table() {
  static const std::vector<GuardedRangeEntry>* const table = new std::vector<GuardedRangeEntry>{
      // Cloud instance-metadata and platform addresses, each as its provider documents it.
      // Most sit inside a range below already; they come first so that a refusal names what
      // the address is. One does not: Azure's 168.63.129.16 is public space.
      //
      // The instance metadata service of AWS EC2 ("Instance metadata and user data", EC2 User
      // Guide), Google Compute Engine (metadata.google.internal: "About VM metadata"), Azure
      // ("Azure Instance Metadata Service"), Oracle OCI ("Getting Instance Metadata"),
      // DigitalOcean ("Droplet Metadata API"), IBM Cloud VPC ("VPC Instance Metadata API").
      {Parse("169.254.169.254"), 32, GuardedRange::kMetadata, kInstanceMetadata},
      // AWS, over IPv6 on Nitro instances: the metadata service, the Route 53 Resolver and the
      // Amazon Time Sync Service, and their IPv4 addresses (AWS whitepaper "IPv6 on AWS",
      // "Supporting Amazon VPC services").
      {Parse("fd00:ec2::254"), 128, GuardedRange::kMetadata, kInstanceMetadata},
      {Parse("169.254.169.253"), 32, GuardedRange::kMetadata,
       "the AWS VPC DNS resolver address (cloud platform)"},
      {Parse("fd00:ec2::253"), 128, GuardedRange::kMetadata,
       "the AWS VPC DNS resolver address (cloud platform)"},
      {Parse("169.254.169.123"), 32, GuardedRange::kMetadata,
       "the Amazon Time Sync Service address (cloud platform)"},
      {Parse("fd00:ec2::123"), 128, GuardedRange::kMetadata,
       "the Amazon Time Sync Service address (cloud platform)"},
      // Amazon ECS: the task metadata endpoint (version 2) and the container credentials
      // endpoint of IAM roles for tasks (ECS Developer Guide, "Amazon ECS task metadata
      // endpoint version 2", "Task IAM role").
      {Parse("169.254.170.2"), 32, GuardedRange::kMetadata,
       "the Amazon ECS task metadata and credentials address"},
      // Azure's WireServer: the VM agent's channel to the platform, its DNS and DHCP (Azure
      // Virtual Network, "What is IP address 168.63.129.16?").
      {Parse("168.63.129.16"), 32, GuardedRange::kMetadata,
       "Azure's platform address (WireServer)"},
      // Alibaba Cloud ECS instance metadata (ECS User Guide, "Instance metadata").
      {Parse("100.100.100.200"), 32, GuardedRange::kMetadata,
       "the Alibaba Cloud metadata address"},
      {Parse("0.0.0.0"), 8, GuardedRange::kUnspecified, "in unspecified 0.0.0.0/8"},
      {Parse("::"), 128, GuardedRange::kUnspecified, "the unspecified address ::"},
      {Parse("127.0.0.0"), 8, GuardedRange::kLoopback, "in loopback 127.0.0.0/8"},
      {Parse("::1"), 128, GuardedRange::kLoopback, "the loopback address ::1"},
      {Parse("169.254.0.0"), 16, GuardedRange::kLinkLocal, "in link-local 169.254.0.0/16"},
      {Parse("fe80::"), 10, GuardedRange::kLinkLocal, "in link-local fe80::/10"},
      {Parse("10.0.0.0"), 8, GuardedRange::kPrivate, "in private 10.0.0.0/8"},
      {Parse("172.16.0.0"), 12, GuardedRange::kPrivate, "in private 172.16.0.0/12"},
      {Parse("192.168.0.0"), 16, GuardedRange::kPrivate, "in private 192.168.0.0/16"},
      {Parse("fc00::"), 7, GuardedRange::kPrivate, "in unique-local fc00::/7"},
      {Parse("fec0::"), 10, GuardedRange::kPrivate, "in site-local fec0::/10"},
      // Local-use NAT64 (RFC 8215): where the IPv4 address sits depends on the local prefix
      // length, so the whole range is treated as the site's own.
      {Parse("64:ff9b:1::"), 48, GuardedRange::kPrivate, "in local-use NAT64 64:ff9b:1::/48"},
      {Parse("100.64.0.0"), 10, GuardedRange::kSharedSpace,
       "in shared (carrier-grade NAT) 100.64.0.0/10"},
      {Parse("224.0.0.0"), 4, GuardedRange::kMulticast, "in multicast 224.0.0.0/4"},
      {Parse("ff00::"), 8, GuardedRange::kMulticast, "in multicast ff00::/8"},
      {Parse("240.0.0.0"), 4, GuardedRange::kReserved,
       "in reserved 240.0.0.0/4 (with the broadcast address 255.255.255.255)"},
      {Parse("192.0.0.0"), 24, GuardedRange::kReserved,
       "in IETF protocol assignments 192.0.0.0/24"},
  };
  return *table;
}

}  // namespace

absl::Span<const GuardedRangeEntry> GuardedRanges() { return Table(); }

const GuardedRangeEntry* GuardedRangeOf(const IpAddress& address) {
  for (const GuardedRangeEntry& range : Table()) {
    if (range.network.family == address.family &&
        MaskAddress(address, range.prefix_len) == range.network) {
      return &range;
    }
  }
  return nullptr;
}

}  // namespace leash::engine
