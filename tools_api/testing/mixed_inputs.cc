#include "tools_api/testing/mixed_inputs.h"

#include <random>
#include <vector>

#include "absl/strings/str_cat.h"

namespace leash::tools::testing {
namespace {

const char* const kCode[] = {
    R"(#include <string>\n\nint main(int argc, char** argv) {\n  std::string name = argv[1];\n  if (name.empty()) return 1;\n  for (int i = 0; i < 10; ++i) printf(\"%d\\n\", i);\n  return 0;\n}\n)",
    R"(def load(path):\n    with open(path) as f:\n        data = json.load(f)\n    password = get_password()\n    return {k: v for k, v in data.items() if v is not None}\n)",
    R"(const config = { retries: 3, timeoutMs: 2500, apiBase: 'https://api.internal/v2' };\nexport async function fetchAll(ids) {\n  return Promise.all(ids.map((id) => fetch(`${config.apiBase}/items/${id}`)));\n}\n)",
    R"(SELECT u.id, u.name, count(o.id) AS orders FROM users u LEFT JOIN orders o ON o.user_id = u.id WHERE u.created_at > now() - interval '30 days' GROUP BY u.id, u.name ORDER BY orders DESC LIMIT 50;)",
};

const char* const kProse[] = {
    "The build failed because the linker could not find the symbol; rerun with verbose output "
    "and check that the library is listed after the objects that use it.",
    "Summarize the design document in three paragraphs, keeping the section on failure modes "
    "and leaving out the historical notes.",
    "Tokens are counted per request; keep max_tokens below the model's limit and retry on "
    "rate limiting with exponential backoff.",
};

const char* const kCommands[] = {
    "ls -la /home/fido/work/src && git status --short",
    R"(grep -rn \"TODO\" src/ | head -50)",
    "make -j2 test 2>&1 | tail -20",
    "python3 -m pytest tests/unit -q -x",
    "rm -rf build/ && cmake -S . -B build -G Ninja",
    "curl -s https://example.org/api/v1/status | jq .state",
};

const char* const kSensitive[] = {
    R"({"tool":"shell","cmd":"git push https://x:ghp_R8dKq2ZfT0wLx7NvB4mYc1HsJ9pEa6GuW3oV@github.com/o/r.git"})",
    R"({"tool":"send_mail","to":"alice.smith@corp-mail.co.uk","body":"see attached"})",
    R"({"tool":"shell","cmd":"sudo systemctl restart nginx"})",
    R"({"tool":"http","headers":{"Authorization":"Bearer Zr5Xy7Wb1Nc4Vd6Lp9Hs0Jg3"}})",
};

}  // namespace

std::string MixedInputsJson(size_t bytes, unsigned seed) {
  std::mt19937 rng(seed);
  auto pick = [&](auto& array) {
    return array[rng() % (sizeof(array) / sizeof(array[0]))];
  };
  std::string out = "[";
  std::string call;
  for (int i = 0;; ++i) {
    switch (rng() % 5) {
      case 0:
        call = absl::StrCat(R"({"tool":"shell","cmd":")", pick(kCommands),
                            R"(","cwd":"/home/fido/work","timeout":)", rng() % 600, "}");
        break;
      case 1:
        call = absl::StrCat(R"({"tool":"write_file","path":"/home/fido/work/src/file_)", i,
                            R"(.cc","content":")", pick(kCode), pick(kCode), R"("})");
        break;
      case 2:
        call = absl::StrCat(R"({"tool":"web_fetch","url":"https://docs.python.org/3/library/)",
                            "json.html#section-", rng() % 100,
                            R"(","headers":{"Accept":"text/html","User-Agent":"agent/1.0"}})");
        break;
      case 3:
        call = absl::StrCat(R"({"tool":"search","query":")", pick(kProse),
                            R"(","limit":)", rng() % 50, R"(,"filters":["docs","code"]})");
        break;
      default:
        call = absl::StrCat(R"({"tool":"read_file","path":"/home/fido/work/notes/)", i,
                            R"(.md","offset":0,"limit":4000})");
    }
    if (rng() % 40 == 0) call = pick(kSensitive);
    if (out.size() + call.size() + 2 > bytes) break;
    if (out.size() > 1) out += ",";
    out += call;
  }
  out += "]";
  return out;
}

}  // namespace leash::tools::testing
