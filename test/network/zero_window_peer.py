"""A remote peer with a TCP stack of its own, for the inbound tests: it connects to ADDRESS:PORT
from SOURCE with a raw socket, advertises a zero window from the handshake on (so the listener
that accepts, writes and closes sends nothing while its process holds the socket), waits until
that process has closed, then opens the window and reports what the orphaned socket sends.

Usage (root, in the remote host's namespace, with its own RSTs to PORT dropped):
    zero_window_peer.py SOURCE ADDRESS PORT
Prints one line: "no syn-ack", "no data", or "data <bytes as text>".
"""
import random
import socket
import struct
import sys
import time


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


SYN, ACK, FIN, RST = 0x02, 0x10, 0x01, 0x04


def segment(src, dst, sport, dport, seq, ack, flags, window):
    header = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, window, 0, 0)
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(header))
    csum = checksum(pseudo + header)
    return header[:16] + struct.pack("!H", csum) + header[18:]


def receive(sock, sport, dport, deadline):
    """The next TCP segment from dport to sport before deadline: (flags, seq, ack, payload)."""
    while time.time() < deadline:
        sock.settimeout(max(0.01, deadline - time.time()))
        try:
            packet = sock.recv(65535)
        except socket.timeout:
            return None
        ihl = (packet[0] & 0x0F) * 4
        tcp = packet[ihl:]
        src_port, dst_port, seq, ack, offset, flags = struct.unpack("!HHIIBB", tcp[:14])
        if src_port != dport or dst_port != sport:
            continue
        return flags, seq, ack, tcp[(offset >> 4) * 4:]
    return None


def main():
    source, address, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    sport = random.randint(40000, 60000)
    isn = random.randint(0, 2**32 - 1)
    sock.sendto(segment(source, address, sport, port, isn, 0, SYN, 0), (address, 0))
    reply = receive(sock, sport, port, time.time() + 4)
    if reply is None or reply[0] & (SYN | ACK) != SYN | ACK:
        print("no syn-ack")
        return
    their = (reply[1] + 1) & 0xFFFFFFFF
    mine = (isn + 1) & 0xFFFFFFFF
    sock.sendto(segment(source, address, sport, port, mine, their, ACK, 0), (address, 0))
    # The listener accepts, writes into the closed window and closes: its socket is orphaned.
    time.sleep(1.5)
    sock.sendto(segment(source, address, sport, port, mine, their, ACK, 65535), (address, 0))
    data = b""
    deadline = time.time() + 4
    while True:
        got = receive(sock, sport, port, deadline)
        if got is None:
            break
        data += got[3]
        if got[3]:
            # Acknowledge, so the orphan sends the rest (and its FIN) rather than retransmitting.
            their = (got[1] + len(got[3])) & 0xFFFFFFFF
            sock.sendto(segment(source, address, sport, port, mine, their, ACK, 65535),
                        (address, 0))
    print("data " + data.decode(errors="replace") if data else "no data")


if __name__ == "__main__":
    main()
