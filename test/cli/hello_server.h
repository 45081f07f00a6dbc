// A Python HTTP server for the end-to-end tests' remote host: answers every GET with
// "hello\n" on 192.0.2.11 (the veth peer RootTest's namespace gets) at the port in argv[1].
#pragma once

namespace leash::testing {

inline constexpr char kHelloServerPy[] = R"(
import http.server, sys
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello\n"
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def log_message(self, *args): pass
http.server.HTTPServer(("192.0.2.11", int(sys.argv[1])), Hello).serve_forever()
)";

}  // namespace leash::testing
