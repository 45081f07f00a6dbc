#include "controlplane/rtnl_route_rules.h"

#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace leash::controlplane {
namespace {

constexpr char kFwmarkAcceptPath[] = "/proc/sys/net/ipv4/tcp_fwmark_accept";

int ParseAttribute(const nlattr* attr, void* data) {
  const nlattr** table = static_cast<const nlattr**>(data);
  const int type = mnl_attr_get_type(attr);
  if (type >= 0 && type <= FRA_MAX) table[type] = attr;
  return MNL_CB_OK;
}

// One RTM_NEWRULE message of a dump, read back into a RouteRule.
int ParseRule(const nlmsghdr* header, void* data) {
  auto* rules = static_cast<std::vector<RouteRule>*>(data);
  const auto* frh = static_cast<const fib_rule_hdr*>(mnl_nlmsg_get_payload(header));
  const nlattr* attrs[FRA_MAX + 1] = {};
  mnl_attr_parse(header, sizeof(*frh), ParseAttribute, attrs);
  RouteRule rule;
  rule.family = frh->family;
  rule.action = frh->action;
  rule.invert = (frh->flags & FIB_RULE_INVERT) != 0;
  rule.table = frh->table;
  if (attrs[FRA_TABLE] != nullptr) rule.table = mnl_attr_get_u32(attrs[FRA_TABLE]);
  if (attrs[FRA_PRIORITY] != nullptr) rule.priority = mnl_attr_get_u32(attrs[FRA_PRIORITY]);
  if (attrs[FRA_FWMARK] != nullptr) rule.fwmark = mnl_attr_get_u32(attrs[FRA_FWMARK]);
  if (attrs[FRA_FWMASK] != nullptr) rule.fwmask = mnl_attr_get_u32(attrs[FRA_FWMASK]);
  if (attrs[FRA_GOTO] != nullptr) rule.goto_target = mnl_attr_get_u32(attrs[FRA_GOTO]);
  if (attrs[FRA_PROTOCOL] != nullptr) rule.protocol = mnl_attr_get_u8(attrs[FRA_PROTOCOL]);
  if (attrs[FRA_UID_RANGE] != nullptr &&
      mnl_attr_get_payload_len(attrs[FRA_UID_RANGE]) >= sizeof(fib_rule_uid_range)) {
    fib_rule_uid_range range;
    std::memcpy(&range, mnl_attr_get_payload(attrs[FRA_UID_RANGE]), sizeof(range));
    // The kernel reports a rule without uidrange as none; a full range is what it stores then.
    if (!(range.start == 0 && range.end == UINT32_MAX)) {
      rule.uids = engine::UidRange{range.start, range.end};
    }
  }
  // A mark of 0 with a mask is reported as given; a rule without fwmark reports neither.
  if (attrs[FRA_FWMARK] != nullptr && attrs[FRA_FWMASK] == nullptr) rule.fwmask = UINT32_MAX;
  rules->push_back(rule);
  return MNL_CB_OK;
}

// The RTM_NEWRULE / RTM_DELRULE request for `rule`.
nlmsghdr* BuildRule(char* buffer, uint16_t type, uint16_t flags, uint32_t seq,
                    const RouteRule& rule) {
  nlmsghdr* header = mnl_nlmsg_put_header(buffer);
  header->nlmsg_type = type;
  header->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
  header->nlmsg_seq = seq;
  auto* frh = static_cast<fib_rule_hdr*>(mnl_nlmsg_put_extra_header(header, sizeof(fib_rule_hdr)));
  frh->family = static_cast<uint8_t>(rule.family);
  frh->action = rule.action;
  frh->flags = rule.invert ? FIB_RULE_INVERT : 0;
  mnl_attr_put_u32(header, FRA_PRIORITY, rule.priority);
  mnl_attr_put_u8(header, FRA_PROTOCOL, rule.protocol);
  if (rule.fwmask != 0) {
    mnl_attr_put_u32(header, FRA_FWMARK, rule.fwmark);
    mnl_attr_put_u32(header, FRA_FWMASK, rule.fwmask);
  }
  if (rule.uids) {
    const fib_rule_uid_range range{rule.uids->first, rule.uids->last};
    mnl_attr_put(header, FRA_UID_RANGE, sizeof(range), &range);
  }
  if (rule.table != 0) {
    // The attribute wins over the header's byte, which cannot hold a table id past 255.
    mnl_attr_put_u32(header, FRA_TABLE, rule.table);
  }
  if (rule.action == FR_ACT_GOTO) mnl_attr_put_u32(header, FRA_GOTO, rule.goto_target);
  return header;
}

absl::Status ErrnoStatus(int error, const std::string& what) {
  return absl::ErrnoToStatus(error, what);
}

}  // namespace

absl::StatusOr<std::unique_ptr<RtnlRouteRules>> RtnlRouteRules::Open() {
  mnl_socket* socket = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (socket == nullptr) return ErrnoStatus(errno, "opening a NETLINK_ROUTE socket");
  if (mnl_socket_bind(socket, 0, MNL_SOCKET_AUTOPID) < 0) {
    const int error = errno;
    mnl_socket_close(socket);
    return ErrnoStatus(error, "binding the NETLINK_ROUTE socket");
  }
  const int fd = open(kFwmarkAcceptPath, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    mnl_socket_close(socket);
    return ErrnoStatus(error, absl::StrCat("opening ", kFwmarkAcceptPath));
  }
  return std::unique_ptr<RtnlRouteRules>(new RtnlRouteRules(socket, fd));
}

RtnlRouteRules::RtnlRouteRules(mnl_socket* socket, int sysctl_fd)
    : socket_(socket), sysctl_fd_(sysctl_fd) {}

RtnlRouteRules::~RtnlRouteRules() {
  mnl_socket_close(socket_);
  close(sysctl_fd_);
}

absl::Status RtnlRouteRules::Exchange(const void* request, size_t length,
                                      std::vector<RouteRule>* dumped) {
  const auto* sent = static_cast<const nlmsghdr*>(request);
  (void)length;
  return Run(sent, dumped != nullptr ? ParseRule : nullptr, dumped);
}

absl::Status RtnlRouteRules::Run(const nlmsghdr* sent, int (*callback)(const nlmsghdr*, void*),
                                 void* data) {
  if (mnl_socket_sendto(socket_, sent, sent->nlmsg_len) < 0) {
    return ErrnoStatus(errno, "sending to the NETLINK_ROUTE socket");
  }
  std::vector<char> buffer(MNL_SOCKET_BUFFER_SIZE * 4);
  const uint32_t portid = mnl_socket_get_portid(socket_);
  while (true) {
    const ssize_t n = mnl_socket_recvfrom(socket_, buffer.data(), buffer.size());
    if (n < 0) return ErrnoStatus(errno, "reading the NETLINK_ROUTE socket");
    const int ret =
        mnl_cb_run(buffer.data(), static_cast<size_t>(n), sent->nlmsg_seq, portid, callback, data);
    if (ret == MNL_CB_ERROR) return ErrnoStatus(errno, "the kernel refused the rule request");
    if (ret == MNL_CB_STOP) return absl::OkStatus();
  }
}

absl::StatusOr<std::vector<RouteRule>> RtnlRouteRules::ListAll() {
  std::vector<RouteRule> rules;
  for (int family : {AF_INET, AF_INET6}) {
    char buffer[MNL_SOCKET_BUFFER_SIZE];
    nlmsghdr* header = mnl_nlmsg_put_header(buffer);
    header->nlmsg_type = RTM_GETRULE;
    header->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    header->nlmsg_seq = seq_++;
    auto* frh =
        static_cast<fib_rule_hdr*>(mnl_nlmsg_put_extra_header(header, sizeof(fib_rule_hdr)));
    frh->family = static_cast<uint8_t>(family);
    absl::Status s = Exchange(header, header->nlmsg_len, &rules);
    if (!s.ok()) {
      return absl::UnavailableError(absl::StrCat("listing policy-routing rules: ", s.message()));
    }
  }
  return rules;
}

absl::StatusOr<std::vector<RouteRule>> RtnlRouteRules::ListOwn() {
  absl::StatusOr<std::vector<RouteRule>> all = ListAll();
  if (!all.ok()) return all.status();
  std::vector<RouteRule> own;
  for (const RouteRule& rule : *all) {
    if (rule.protocol == kLeashRuleProtocol) own.push_back(rule);
  }
  return own;
}

absl::StatusOr<std::vector<uint32_t>> RtnlRouteRules::OtherPriorities() {
  absl::StatusOr<std::vector<RouteRule>> all = ListAll();
  if (!all.ok()) return all.status();
  std::vector<uint32_t> priorities;
  for (const RouteRule& rule : *all) {
    if (rule.protocol != kLeashRuleProtocol) priorities.push_back(rule.priority);
  }
  return priorities;
}

absl::Status RtnlRouteRules::Add(const RouteRule& rule) {
  char buffer[MNL_SOCKET_BUFFER_SIZE];
  const nlmsghdr* header = BuildRule(buffer, RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, seq_++, rule);
  absl::Status s = Exchange(header, header->nlmsg_len, nullptr);
  if (absl::IsAlreadyExists(s)) return absl::OkStatus();
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("adding policy-routing rule `",
                                               DescribeRouteRule(rule), "`: ", s.message()));
  }
  return s;
}

absl::Status RtnlRouteRules::Delete(const RouteRule& rule) {
  char buffer[MNL_SOCKET_BUFFER_SIZE];
  const nlmsghdr* header = BuildRule(buffer, RTM_DELRULE, 0, seq_++, rule);
  absl::Status s = Exchange(header, header->nlmsg_len, nullptr);
  if (absl::IsNotFound(s)) return absl::OkStatus();
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("deleting policy-routing rule `",
                                               DescribeRouteRule(rule), "`: ", s.message()));
  }
  return s;
}

namespace {

int ParseLinkAttribute(const nlattr* attr, void* data) {
  const nlattr** table = static_cast<const nlattr**>(data);
  const int type = mnl_attr_get_type(attr);
  if (type >= 0 && type <= IFLA_MAX) table[type] = attr;
  return MNL_CB_OK;
}

int ParseInfoAttribute(const nlattr* attr, void* data) {
  const nlattr** table = static_cast<const nlattr**>(data);
  const int type = mnl_attr_get_type(attr);
  if (type >= 0 && type <= IFLA_INFO_MAX) table[type] = attr;
  return MNL_CB_OK;
}

struct FoundLink {
  int index = 0;
  std::string kind;
};

// The RTM_NEWLINK answer to a RTM_GETLINK: the index and IFLA_INFO_KIND.
int ParseLink(const nlmsghdr* header, void* data) {
  auto* found = static_cast<FoundLink*>(data);
  const auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(header));
  found->index = ifi->ifi_index;
  const nlattr* attrs[IFLA_MAX + 1] = {};
  mnl_attr_parse(header, sizeof(*ifi), ParseLinkAttribute, attrs);
  if (attrs[IFLA_LINKINFO] != nullptr) {
    const nlattr* info[IFLA_INFO_MAX + 1] = {};
    mnl_attr_parse_nested(attrs[IFLA_LINKINFO], ParseInfoAttribute, info);
    if (info[IFLA_INFO_KIND] != nullptr) found->kind = mnl_attr_get_str(info[IFLA_INFO_KIND]);
  }
  return MNL_CB_OK;
}

nlmsghdr* LinkRequest(char* buffer, uint16_t type, uint16_t flags, uint32_t seq, int index) {
  nlmsghdr* header = mnl_nlmsg_put_header(buffer);
  header->nlmsg_type = type;
  header->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
  header->nlmsg_seq = seq;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(header, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = index;
  if (index == 0) mnl_attr_put_strz(header, IFLA_IFNAME, kRefusalDevice);
  return header;
}

constexpr char kRefusalDeviceKind[] = "ifb";

}  // namespace

absl::StatusOr<RtnlRouteRules::Link> RtnlRouteRules::FindRefusalDevice() {
  char buffer[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* header = LinkRequest(buffer, RTM_GETLINK, 0, seq_++, 0);
  // With the ack: the link's message, then the ack that ends the answer.
  FoundLink found;
  absl::Status s = Run(header, ParseLink, &found);
  if (!s.ok()) {
    if (absl::IsNotFound(s)) return absl::NotFoundError(absl::StrCat("no device ", kRefusalDevice));
    return absl::Status(s.code(), absl::StrCat("looking up device ", kRefusalDevice, ": ",
                                               s.message()));
  }
  return Link{found.index, found.kind};
}

absl::Status RtnlRouteRules::PrepareRefusalDevice() {
  absl::StatusOr<Link> link = FindRefusalDevice();
  if (absl::IsNotFound(link.status())) {
    char buffer[MNL_SOCKET_BUFFER_SIZE];
    nlmsghdr* header = LinkRequest(buffer, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, seq_++, 0);
    nlattr* info = mnl_attr_nest_start(header, IFLA_LINKINFO);
    mnl_attr_put_strz(header, IFLA_INFO_KIND, kRefusalDeviceKind);
    mnl_attr_nest_end(header, info);
    absl::Status s = Run(header, nullptr, nullptr);
    if (!s.ok() && !absl::IsAlreadyExists(s)) {
      return absl::Status(s.code(), absl::StrCat("creating the ", kRefusalDeviceKind, " device ",
                                                 kRefusalDevice, ": ", s.message()));
    }
    link = FindRefusalDevice();
  }
  if (!link.ok()) return link.status();
  if (link->kind != kRefusalDeviceKind) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a device named ", kRefusalDevice, " exists and is not an ", kRefusalDeviceKind,
        " device (kind \"", link->kind, "\"): what Leash routes there could leave the host; "
        "remove it (`ip link del ", kRefusalDevice, "`) and restart leashd"));
  }
  device_index_ = link->index;
  // IPv6 on, without an address of its own (no link-local route in the main table): routes
  // through it need the device's IPv6, which a host with disable_ipv6 set by default lacks.
  const std::string ipv6 = absl::StrCat("/proc/sys/net/ipv6/conf/", kRefusalDevice, "/disable_ipv6");
  if (const int fd = open(ipv6.c_str(), O_WRONLY | O_CLOEXEC); fd >= 0) {
    const ssize_t written = write(fd, "0\n", 2);
    close(fd);
    if (written != 2) return ErrnoStatus(errno, absl::StrCat("writing 0 to ", ipv6));
  }
  {
    char buffer[MNL_SOCKET_BUFFER_SIZE];
    nlmsghdr* header = LinkRequest(buffer, RTM_NEWLINK, 0, seq_++, device_index_);
    nlattr* spec = mnl_attr_nest_start(header, IFLA_AF_SPEC);
    nlattr* inet6 = mnl_attr_nest_start(header, AF_INET6);
    mnl_attr_put_u8(header, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE);
    mnl_attr_nest_end(header, inet6);
    mnl_attr_nest_end(header, spec);
    // A kernel without IPv6 refuses this; the IPv6 routes then fail and say so.
    (void)Run(header, nullptr, nullptr);
  }
  char buffer[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* header = LinkRequest(buffer, RTM_NEWLINK, 0, seq_++, device_index_);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_get_payload(header));
  ifi->ifi_flags = IFF_UP;
  ifi->ifi_change = IFF_UP;
  absl::Status up = Run(header, nullptr, nullptr);
  if (!up.ok()) {
    return absl::Status(up.code(), absl::StrCat("setting ", kRefusalDevice, " up: ", up.message()));
  }
  return absl::OkStatus();
}

absl::Status RtnlRouteRules::DeleteRefusalDevice() {
  absl::StatusOr<Link> link = FindRefusalDevice();
  if (absl::IsNotFound(link.status())) return absl::OkStatus();
  if (!link.ok()) return link.status();
  if (link->kind != kRefusalDeviceKind) return absl::OkStatus();  // not Leash's: left alone
  char buffer[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* header = LinkRequest(buffer, RTM_DELLINK, 0, seq_++, link->index);
  absl::Status s = Run(header, nullptr, nullptr);
  device_index_ = 0;
  if (absl::IsNotFound(s)) return absl::OkStatus();
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("deleting device ", kRefusalDevice, ": ", s.message()));
  }
  return s;
}

absl::Status RtnlRouteRules::ChangeRefusalRoute(uint16_t type, uint16_t flags, int family,
                                                uint32_t uid) {
  char buffer[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* header = mnl_nlmsg_put_header(buffer);
  header->nlmsg_type = type;
  header->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
  header->nlmsg_seq = seq_++;
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(header, sizeof(rtmsg)));
  rtm->rtm_family = static_cast<uint8_t>(family);
  rtm->rtm_table = RT_TABLE_UNSPEC;  // RTA_TABLE holds it: past 255
  rtm->rtm_protocol = kLeashRuleProtocol;
  rtm->rtm_type = RTN_UNICAST;
  mnl_attr_put_u32(header, RTA_TABLE, SubjectTable(uid));
  if (type == RTM_NEWROUTE) {
    rtm->rtm_scope = RT_SCOPE_UNIVERSE;
    rtm->rtm_flags = RTNH_F_ONLINK;
    if (family == AF_INET) {
      mnl_attr_put(header, RTA_GATEWAY, sizeof(kRefusalGateway4), kRefusalGateway4);
      mnl_attr_put_u32(header, RTA_FLOW, uid);
    } else {
      uint8_t gateway[16];
      std::memcpy(gateway, kRefusalGatewayPrefix6, sizeof(kRefusalGatewayPrefix6));
      const uint32_t big_endian = htonl(uid);
      std::memcpy(gateway + 12, &big_endian, sizeof(big_endian));
      mnl_attr_put(header, RTA_GATEWAY, sizeof(gateway), gateway);
    }
    mnl_attr_put_u32(header, RTA_OIF, static_cast<uint32_t>(device_index_));
  } else {
    rtm->rtm_scope = RT_SCOPE_NOWHERE;  // any scope
  }
  absl::Status s = Run(header, nullptr, nullptr);
  const char* family_name = family == AF_INET6 ? "IPv6" : "IPv4";
  if (type == RTM_NEWROUTE && absl::IsAlreadyExists(s)) return absl::OkStatus();
  if (type == RTM_DELROUTE && absl::IsNotFound(s)) return absl::OkStatus();
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat(type == RTM_NEWROUTE ? "adding" : "deleting", " the ",
                                               family_name, " refusal route of table ",
                                               SubjectTable(uid), " (subject ", uid, ") on ",
                                               kRefusalDevice, ": ", s.message()));
  }
  return s;
}

absl::Status RtnlRouteRules::AddRefusalRoute(int family, uint32_t uid) {
  if (device_index_ == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("adding a refusal route before ", kRefusalDevice, " was prepared"));
  }
  return ChangeRefusalRoute(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, family, uid);
}

absl::Status RtnlRouteRules::DeleteRefusalRoute(int family, uint32_t uid) {
  return ChangeRefusalRoute(RTM_DELROUTE, 0, family, uid);
}

absl::StatusOr<int> RtnlRouteRules::ReadFwmarkAccept() {
  char text[16] = {};
  const ssize_t n = pread(sysctl_fd_, text, sizeof(text) - 1, 0);
  if (n < 0) return ErrnoStatus(errno, absl::StrCat("reading ", kFwmarkAcceptPath));
  int value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(text, n)), &value)) {
    return absl::InternalError(absl::StrCat(kFwmarkAcceptPath, " holds \"", text, "\""));
  }
  return value;
}

absl::Status RtnlRouteRules::WriteFwmarkAccept(int value) {
  const std::string text = absl::StrCat(value, "\n");
  if (pwrite(sysctl_fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return ErrnoStatus(errno, absl::StrCat("writing ", value, " to ", kFwmarkAcceptPath));
  }
  return absl::OkStatus();
}

}  // namespace leash::controlplane
