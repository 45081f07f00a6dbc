// capability_probe: performs, one at a time, the privileged kernel operations leashd and its
// sidecars perform, so capabilities_test.sh can run each under `setpriv --bounding-set=...`
// and show which capability leash.service must keep (the operation fails without it) and
// that the unit's set is enough (it succeeds with exactly that set).
//
//   capability_probe caps                 print this process's effective capability mask
//   capability_probe fanotify <dir>       leash-fswatch's fanotify_init + FAN_MARK_FILESYSTEM
//   capability_probe answer <dir>         the same, then take ONE permission event and handle
//                                         it the way leash-fswatch does: the event's file
//                                         descriptor, pidfd_open(the event's pid) and
//                                         PIDFD_GET_INFO (its pidfd cache), PIDFD_GET_INFO on
//                                         the event's own pidfd, pidfd_send_signal(0) (the
//                                         /proc/<pid>/status identity check on kernels without
//                                         PIDFD_GET_INFO), then FAN_ALLOW
//   capability_probe bind <port>          leash-proxy's listener: bind+listen 127.0.0.1:<port>
//
// Each prints key=value lines (value "ok" or the errno name) and exits 0 when the operation
// it names succeeded, 1 when it did not, 2 on a usage error.
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/fanotify.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "fswatch/pidfd_identity.h"

namespace {


#ifndef FAN_REPORT_PIDFD
#define FAN_REPORT_PIDFD 0x00000080
#endif
#ifndef FAN_EVENT_INFO_TYPE_PIDFD
#define FAN_EVENT_INFO_TYPE_PIDFD 4
struct fanotify_event_info_pidfd {
  struct fanotify_event_info_header hdr;
  int32_t pidfd;
};
#endif

std::string ErrnoName(int error) {
  const char* name = strerrorname_np(error);
  return name != nullptr ? name : std::to_string(error);
}

void Report(const char* key, int error) {
  std::printf("%s=%s\n", key, error == 0 ? "ok" : ErrnoName(error).c_str());
  std::fflush(stdout);
}

// leash-fswatch's group: fswatch/fanotify_linux.cc FanotifyLinux::Open and Mark.
int OpenMarkedGroup(const char* dir) {
  const int fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_UNLIMITED_QUEUE |
                                   FAN_REPORT_PIDFD,
                               O_RDONLY | O_LARGEFILE | O_CLOEXEC);
  if (fd < 0) {
    Report("fanotify_init", errno);
    return -1;
  }
  Report("fanotify_init", 0);
  if (fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN_PERM | FAN_OPEN_EXEC_PERM,
                    AT_FDCWD, dir) != 0) {
    Report("fanotify_mark", errno);
    close(fd);
    return -1;
  }
  Report("fanotify_mark", 0);
  return fd;
}

int Caps() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      std::printf("%s\n", line.c_str());
      return 0;
    }
  }
  return 1;
}

int Fanotify(const char* dir) {
  const int fd = OpenMarkedGroup(dir);
  if (fd < 0) return 1;
  close(fd);
  return 0;
}

// Exit 0 only when the event was read with a usable file descriptor and answered: that is
// what leash-fswatch needs to judge a path at all. The identity lines are reported for the
// test to assert on separately.
int Answer(const char* dir) {
  const int fd = OpenMarkedGroup(dir);
  if (fd < 0) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  pollfd waiting{fd, POLLIN, 0};
  if (poll(&waiting, 1, 20000) != 1) {
    Report("event", ETIMEDOUT);
    return 1;
  }
  alignas(fanotify_event_metadata) char buffer[4096];
  const ssize_t n = read(fd, buffer, sizeof(buffer));
  if (n < 0) {
    // The kernel could not open the file for us; it denies the event itself.
    Report("event_read", errno);
    return 1;
  }
  Report("event_read", 0);
  const auto* meta = reinterpret_cast<const fanotify_event_metadata*>(buffer);
  int pidfd = -1;
  for (size_t offset = meta->metadata_len;
       offset + sizeof(fanotify_event_info_header) <= meta->event_len;) {
    const auto* header = reinterpret_cast<const fanotify_event_info_header*>(buffer + offset);
    if (header->len == 0) break;
    if (header->info_type == FAN_EVENT_INFO_TYPE_PIDFD) {
      pidfd = reinterpret_cast<const fanotify_event_info_pidfd*>(header)->pidfd;
    }
    offset += header->len;
  }
  Report("event_fd", meta->fd >= 0 ? 0 : EBADF);
  // leash-fswatch's own route on kernels with PIDFD_GET_INFO (fswatch/pidfd_identity.h): a
  // pidfd opened for the event's PID, then the credentials through it.
  const int opened = leash::fswatch::OpenPidfd(meta->pid);
  if (opened >= 0) {
    leash::fswatch::Creds creds;
    Report("pidfd_open_info", leash::fswatch::ReadPidfdCreds(opened, creds));
    close(opened);
  } else {
    Report("pidfd_open_info", -opened);
  }
  if (pidfd >= 0) {
    leash::fswatch::Creds creds;
    const int info_error = leash::fswatch::ReadPidfdCreds(pidfd, creds);
    Report("pidfd_info", info_error);
    if (info_error == 0) std::printf("event_ruid=%u\n", creds.ruid);
    Report("pidfd_signal0",
           syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0 ? 0 : errno);
  } else {
    Report("pidfd", EBADF);
  }
  if (meta->fd >= 0) {
    fanotify_response response{meta->fd, FAN_ALLOW};
    Report("answer", write(fd, &response, sizeof(response)) == sizeof(response) ? 0 : errno);
    close(meta->fd);
  }
  if (pidfd >= 0) close(pidfd);
  close(fd);
  return meta->fd >= 0 ? 0 : 1;
}

int Bind(const char* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(std::atoi(port)));
  const int rc = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                         listen(fd, 16) == 0
                     ? 0
                     : errno;
  Report("bind", rc);
  close(fd);
  return rc == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "caps" && argc == 2) return Caps();
  if (command == "fanotify" && argc == 3) return Fanotify(argv[2]);
  if (command == "answer" && argc == 3) return Answer(argv[2]);
  if (command == "bind" && argc == 3) return Bind(argv[2]);
  std::fprintf(stderr, "usage: capability_probe caps | fanotify <dir> | answer <dir> | bind <port>\n");
  return 2;
}
