#include "test/cli/workload_fixture.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace leash::testing {
namespace {

// Answers every GET with "hello\n" on 192.0.2.11 (the remote host) at the port in argv[1].
constexpr char kHelloServerPy[] = R"(
import http.server, sys
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello\n"
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def log_message(self, *args): pass
http.server.HTTPServer(("192.0.2.11", int(sys.argv[1])), Hello).serve_forever()
)";

}  // namespace

void WorkloadTest::MakeWorld() {
  ASSERT_NO_FATAL_FAILURE(MakeTree(
      {"/work", "/work/sub", "/bin"},
      {"/work/a.txt", "/work/b.txt", "/work/c.txt", "/work/sub/d.txt", "/outside.txt"},
      {"/bin/tool-one", "/bin/tool-two", "/bin/tool-three"}));
  ASSERT_NO_FATAL_FAILURE(StartServers(kHelloServerPy, {8080, 8081}));
}

std::string WorkloadTest::WorkloadScript() const {
  const std::string& root = fs_->path();
  return absl::StrCat(
      "import subprocess, urllib.request\n",
      "print('http', urllib.request.urlopen('http://192.0.2.11:8080/', timeout=10).read()"
      ".decode().strip())\n",
      "for f in ['a.txt', 'b.txt', 'c.txt', 'sub/d.txt']:\n",
      "  open('", root, "/work/' + f).read()\n",
      "subprocess.run(['", root, "/bin/tool-one'], check=True)\n",
      "subprocess.run(['", root, "/bin/tool-two'], check=True)\n",
      "print('workload done')\n");
}

std::string WorkloadTest::OutsideScript() const {
  return absl::StrCat("import subprocess, urllib.request\n", TryOutside());
}

std::string WorkloadTest::TryOutside() const {
  const std::string& root = fs_->path();
  return absl::StrCat(
      "try:\n  open('", root, "/outside.txt').read(); print('file allowed')\n",
      "except PermissionError: print('file refused')\n",
      "try:\n  subprocess.run(['", root, "/bin/tool-three'], check=True); print('exec allowed')\n",
      "except PermissionError: print('exec refused')\n",
      "try:\n  urllib.request.urlopen('http://192.0.2.11:8081/', timeout=10).read(); "
      "print('port allowed')\n",
      "except Exception: print('port refused')\n");
}

std::vector<std::string> WorkloadTest::PrintedCommands(const std::string& suggestion) {
  std::vector<std::string> commands;
  for (absl::string_view line : absl::StrSplit(suggestion, '\n')) {
    if (absl::ConsumePrefix(&line, "#   sudo leash ")) commands.emplace_back(line);
  }
  return commands;
}

}  // namespace leash::testing
