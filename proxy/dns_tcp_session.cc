#include "proxy/dns_tcp_session.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "proxy/dns_message.h"

namespace leash::proxy {

void DnsTcpSession::Start(ProxyContext* context, DnsFilter* filter, int fd, DnsAsker asker,
                          absl::Duration idle_timeout) {
  asker.tcp = true;
  auto* session = new DnsTcpSession(context, filter, fd, std::move(asker), idle_timeout);
  if (!context->loop->Add(fd, EPOLLIN | EPOLLRDHUP, session).ok()) {
    session->Close();
    return;
  }
  context->loop->ArmTimer(&session->timer_, context->loop->now() + idle_timeout, session);
  session->ReadQueries();
}

DnsTcpSession::DnsTcpSession(ProxyContext* context, DnsFilter* filter, int fd, DnsAsker asker,
                             absl::Duration idle_timeout)
    : context_(context),
      filter_(filter),
      fd_(fd),
      asker_(std::move(asker)),
      idle_timeout_(idle_timeout) {
  context_->counters.active.fetch_add(1, std::memory_order_relaxed);
  ++context_->active_by_uid[asker_.uid];
  context_->dns_sessions.insert(this);
}

DnsTcpSession::~DnsTcpSession() {
  context_->counters.active.fetch_sub(1, std::memory_order_relaxed);
  auto held = context_->active_by_uid.find(asker_.uid);
  if (held != context_->active_by_uid.end() && --held->second == 0) {
    context_->active_by_uid.erase(held);
  }
}

void DnsTcpSession::CloseAll(ProxyContext* context) {
  while (!context->dns_sessions.empty()) (*context->dns_sessions.begin())->Close();
}

void DnsTcpSession::OnEvents(uint32_t events, unsigned /*tag*/) {
  if (closed_) return;
  if (events & EPOLLERR) {
    Close();
    return;
  }
  if (events & EPOLLOUT) Flush();
  if (!closed_ && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))) ReadQueries();
}

void DnsTcpSession::OnTimer() {
  if (in_flight_ > 0) {
    // Waiting on the resolvers is not idleness; their own timeouts end the wait.
    context_->loop->ArmTimer(&timer_, context_->loop->now() + idle_timeout_, this);
    return;
  }
  Close();
}

void DnsTcpSession::ReadQueries() {
  // A reply given at once (a refused name) arrives inside Handle, within this loop, and asks
  // for more reading: the loop below goes on by itself.
  if (reading_) return;
  reading_ = true;
  ReadQueriesOnce();
  reading_ = false;
  UpdateInterest();
}

void DnsTcpSession::ReadQueriesOnce() {
  char buffer[4096];
  while (!closed_ && !peer_done_ && !close_after_flush_ && in_flight_ < kMaxDnsInFlightPerSession) {
    // Whole frames already buffered go first.
    if (in_.size() >= 2) {
      const size_t length = (static_cast<uint8_t>(in_[0]) << 8) | static_cast<uint8_t>(in_[1]);
      if (length > kMaxDnsQueryBytes) {
        // Judged (and logged) as oversized on what arrived; the stream cannot be framed past it.
        const std::string head = in_.substr(2, std::min<size_t>(in_.size() - 2, dns::kHeaderBytes));
        filter_->Handle(asker_, head + std::string(length - head.size(), '\0'),
                        [this](std::string reply) { Send(std::move(reply)); });
        close_after_flush_ = true;
        break;
      }
      if (in_.size() >= 2 + length) {
        const std::string query = in_.substr(2, length);
        in_.erase(0, 2 + length);
        ++in_flight_;
        std::shared_ptr<bool> alive = alive_;
        filter_->Handle(asker_, query, [this, alive](std::string reply) {
          if (!*alive) return;
          --in_flight_;
          Send(std::move(reply));
          ReadQueries();  // a slot is free again
        });
        continue;
      }
    }
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) {
      in_.append(buffer, static_cast<size_t>(n));
      context_->loop->ArmTimer(&timer_, context_->loop->now() + idle_timeout_, this);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0) {
      Close();
      return;
    }
    peer_done_ = true;  // EOF: answer what is in flight, then close
  }
}

void DnsTcpSession::Send(std::string message) {
  if (closed_) return;
  out_ += static_cast<char>(message.size() >> 8);
  out_ += static_cast<char>(message.size() & 0xFF);
  out_ += message;
  Flush();
}

void DnsTcpSession::Flush() {
  while (!out_.empty()) {
    const ssize_t n = send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      out_.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    Close();
    return;
  }
  UpdateInterest();
}

void DnsTcpSession::UpdateInterest() {
  if (closed_) return;
  if (out_.empty() && (close_after_flush_ || (peer_done_ && in_flight_ == 0))) {
    Close();
    return;
  }
  // Readiness to read is asked for only while a query would be read: an EOF or a queued query
  // would otherwise keep waking the loop (level-triggered) while answers are awaited. A reset
  // still arrives as EPOLLERR.
  uint32_t events = 0;
  if (!peer_done_ && !close_after_flush_ && in_flight_ < kMaxDnsInFlightPerSession) {
    events |= EPOLLIN | EPOLLRDHUP;
  }
  if (!out_.empty()) events |= EPOLLOUT;
  context_->loop->Modify(fd_, events, this).IgnoreError();
}

void DnsTcpSession::Close() {
  if (closed_) return;
  closed_ = true;
  *alive_ = false;
  context_->dns_sessions.erase(this);
  context_->loop->CancelTimer(&timer_);
  context_->loop->Remove(fd_);
  close(fd_);
  fd_ = -1;
  context_->loop->DeleteSoon(this);
}

}  // namespace leash::proxy
