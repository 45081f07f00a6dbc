#include "controlplane/rtnl_route_rules.h"

#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
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
  if (mnl_socket_sendto(socket_, request, length) < 0) {
    return ErrnoStatus(errno, "sending to the NETLINK_ROUTE socket");
  }
  std::vector<char> buffer(MNL_SOCKET_BUFFER_SIZE * 4);
  const uint32_t portid = mnl_socket_get_portid(socket_);
  while (true) {
    const ssize_t n = mnl_socket_recvfrom(socket_, buffer.data(), buffer.size());
    if (n < 0) return ErrnoStatus(errno, "reading the NETLINK_ROUTE socket");
    const int ret = mnl_cb_run(buffer.data(), static_cast<size_t>(n), sent->nlmsg_seq, portid,
                               dumped != nullptr ? ParseRule : nullptr, dumped);
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
