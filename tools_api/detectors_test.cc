// Every detector against true positives, near-misses and placeholders; the generic
// key=value detector's entropy floor and stop-words; Inspect and InspectBatch agreeing.
#include "engine/detectors.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::tools {
namespace {

const Inspector& TheInspector() {
  static const Inspector* const inspector = Inspector::Create().value().release();
  return *inspector;
}

// The spans detector `name` reports in `text`.
std::vector<std::string> Spans(absl::string_view name, absl::string_view text) {
  const Inspector& inspector = TheInspector();
  const int d = inspector.FindDetector(name);
  EXPECT_GE(d, 0) << "no detector " << name;
  std::vector<std::string> spans;
  for (const DetectorMatch& m : inspector.Inspect(text)) {
    if (m.detector == d) spans.emplace_back(text.substr(m.begin, m.end - m.begin));
  }
  return spans;
}

struct Case {
  const char* rule;      // what the case checks
  const char* detector;
  std::string text;
  std::string span;      // the reported span; empty: the detector must not fire
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.rule; }

// Fake credentials, built so that no literal in this file is a whole token.
const std::string kGhp = absl::StrCat("ghp_", "R8dKq2ZfT0wLx7NvB4mYc1HsJ9pEa6GuW3oV");
const std::string kGithubPat = absl::StrCat(
    "github_pat_", "11ABCDEFG0aBcDeFgHiJkL_", "mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01234");
const std::string kOpenAi = absl::StrCat("sk-", "proj-", "Xq7Lm2Np9Rt4Vw6Yz8Ab1Cd3Ef5Gh0JkMnPqRsTu");
const std::string kOpenAiLegacy = absl::StrCat("sk-", "T3kf8Qm2Zr5Xy7Wb1Nc4Vd6Lp9Hs0Jg3Ka5Mt8Ru2Ev4Gz7Bq");
const std::string kAnthropic = absl::StrCat(
    "sk-ant-", "api03-", "Zr5Xy7Wb1Nc4Vd6Lp9Hs0Jg3Ka5Mt8Ru2Ev4Gz7BqT3kf8Qm2_-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AA");
const std::string kSlack = absl::StrCat("xoxb-", "2648371920-4839201756-", "Kq7Zr2Lm9Xw4Tn6Vb1Yc8Hd");
const std::string kAws = absl::StrCat("AKIA", "Z7Q2LM4XR9TB6WNC");
const std::string kGoogle = absl::StrCat("AIza", "SyD3k9Lm2Qx7Rt5Vw1Yb8Nc4Hj6Pf0Gs2Ke");
const std::string kStripe = absl::StrCat("sk_", "live_", "4eC39HqLyjWDarjtT1zdp7dc");
const std::string kJwt = absl::StrCat(
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", ".",
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFsaWNlIn0", ".",
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c");
const std::string kPem = absl::StrCat(
    "-----BEGIN RSA PRIVATE KEY-----\n", "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM5Ue8Lb3fG2Ek\n",
    "q9Xw4Tn6Vb1Yc8HdKq7Zr2Lm9Xw4Tn6Vb1Yc8Hd\n", "-----END RSA PRIVATE KEY-----");

std::vector<Case> Cases() {
  return {
      // --- private_key ---
      {"pem rsa block is a private key", "private_key", "key:\n" + kPem + "\ntrailer", kPem},
      {"pem without end runs to the end of the text", "private_key",
       "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB",
       "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB"},
      {"pem public key is not private", "private_key",
       "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----", ""},
      {"pem certificate is not private", "private_key",
       "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----", ""},
      {"pem placeholder body is documentation", "private_key",
       "-----BEGIN PRIVATE KEY-----\n<your key here>\n-----END PRIVATE KEY-----", ""},
      {"prose about private keys", "private_key", "never paste your private key here", ""},
      // --- anthropic_api_key ---
      {"anthropic key", "anthropic_api_key", "ANTHROPIC_API_KEY=" + kAnthropic, kAnthropic},
      {"anthropic prefix alone", "anthropic_api_key", "keys start with sk-ant-api03-", ""},
      {"anthropic key too short", "anthropic_api_key", "sk-ant-api03-abcDEF123", ""},
      {"anthropic prefix repeated is not random", "anthropic_api_key",
       "sk-ant-api03-sk-ant-api03-sk-ant-api03-sk-ant-api03-sk-ant-api03", ""},
      // --- openai_api_key ---
      {"openai project key", "openai_api_key", "key " + kOpenAi + " end", kOpenAi},
      {"openai legacy key", "openai_api_key", kOpenAiLegacy, kOpenAiLegacy},
      {"anthropic key is not an openai key", "openai_api_key", kAnthropic, ""},
      {"scikit-learn package name is a word", "openai_api_key",
       "pip install sk-learn-contrib-imbalanced-learning-toolkit", ""},
      {"word ending in sk is not a key", "openai_api_key",
       "task-Xq7Lm2Np9Rt4Vw6Yz8Ab1Cd3Ef5Gh0JkMnPqRsTu", ""},
      {"openai placeholder", "openai_api_key", "sk-proj-your_api_key_goes_here_XXXX_0000", ""},
      // --- github_token ---
      {"github classic token", "github_token", "token " + kGhp, kGhp},
      {"github oauth token", "github_token", "gho_" + kGhp.substr(4), "gho_" + kGhp.substr(4)},
      {"github fine-grained token", "github_token", kGithubPat, kGithubPat},
      {"github token one character short", "github_token", kGhp.substr(0, kGhp.size() - 1), ""},
      {"unknown github prefix", "github_token", "ghx_" + kGhp.substr(4), ""},
      {"github placeholder", "github_token", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", ""},
      // --- slack_token ---
      {"slack bot token", "slack_token", "SLACK=" + kSlack, kSlack},
      {"slack placeholder", "slack_token", "xoxb-your-token-here-please", ""},
      {"slack prefix in prose", "slack_token", "tokens look like xoxb-...", ""},
      // --- aws_access_key_id ---
      {"aws access key id", "aws_access_key_id", "id=" + kAws + ";", kAws},
      {"aws temporary key id", "aws_access_key_id", "ASIA" + kAws.substr(4), "ASIA" + kAws.substr(4)},
      {"aws documented example key", "aws_access_key_id", "AKIAIOSFODNN7EXAMPLE", ""},
      {"aws key id one character short", "aws_access_key_id", kAws.substr(0, 19), ""},
      {"aws key id lowercase", "aws_access_key_id", "akiaz7q2lm4xr9tb6wnc", ""},
      // --- google_api_key ---
      {"google api key", "google_api_key", "?key=" + kGoogle + "&q=1", kGoogle},
      {"google key too short", "google_api_key", kGoogle.substr(0, 30), ""},
      // --- stripe_live_key ---
      {"stripe live secret key", "stripe_live_key", kStripe, kStripe},
      {"stripe restricted live key", "stripe_live_key", "rk_live_" + kStripe.substr(8),
       "rk_live_" + kStripe.substr(8)},
      {"stripe test key is not live", "stripe_live_key", "sk_test_" + kStripe.substr(8), ""},
      {"stripe publishable key is public", "stripe_live_key", "pk_live_" + kStripe.substr(8), ""},
      // --- jwt ---
      {"jwt bearer", "jwt", "Authorization: Bearer " + kJwt, kJwt},
      {"jwt without signature", "jwt",
       "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0.", ""},
      {"base64 json that is not a token", "jwt", "eyJhbGciOiJIUzI1NiJ9", ""},
      // --- generic_secret ---
      {"password assignment", "generic_secret", "password=Zr5Xy7Wb1Nc4", "Zr5Xy7Wb1Nc4"},
      {"quoted api key in json text", "generic_secret", R"({"api_key": "q8Z2m4X7r1T9b6N3"})",
       "q8Z2m4X7r1T9b6N3"},
      {"env secret access key", "generic_secret",
       "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEZ", ""},
      {"env secret access key real", "generic_secret",
       "export AWS_SECRET_ACCESS_KEY=wJ4lrXUtnF3MIK7MDENGbPxRfiCYz9q2Lm8Tz1Q",
       "wJ4lrXUtnF3MIK7MDENGbPxRfiCYz9q2Lm8Tz1Q"},
      {"bearer token in header", "generic_secret", "auth: Bearer 7fK2p9Lq4Zx8Vm3N", "7fK2p9Lq4Zx8Vm3N"},
      {"redacted value", "generic_secret", "password=REDACTED", ""},
      {"xxxx value", "generic_secret", "api_key=xxxxxxxxxxxx", ""},
      {"angle placeholder", "generic_secret", "token=<token>", ""},
      {"variable reference", "generic_secret", "password=${DB_PASSWORD}", ""},
      {"your key here", "generic_secret", "api_key=your_api_key_here", ""},
      {"low entropy value", "generic_secret", "password=aaaaaaab", ""},
      {"lowercase word is not random", "generic_secret", "token_type: bearer_access_token", ""},
      {"max_tokens is a count", "generic_secret", "max_tokens=4096", ""},
      {"function call is code", "generic_secret", "password = get_password()", ""},
      {"page token is a cursor", "generic_secret", "page_token=CAUQAA7xZ2kL9", ""},
      {"number only", "generic_secret", "token=1234567890", ""},
      // --- email ---
      {"email address", "email", "send to alice.smith+work@corp-mail.co.uk now",
       "alice.smith+work@corp-mail.co.uk"},
      {"email in angle brackets", "email", "From: Bob <bob@company.io>", "bob@company.io"},
      {"example domain is a placeholder", "email", "user@example.com", ""},
      {"scp-style git remote", "email", "git clone git@github.com:org/repo.git", ""},
      {"image density suffix", "email", "icon@2x.png", ""},
      {"npm scoped version", "email", "npm i pkg@1.2.3", ""},
      {"host without tld", "email", "ssh root@localhost", ""},
      // --- credit_card ---
      {"visa number with spaces", "credit_card", "card 4556 7375 8689 9855 exp", "4556 7375 8689 9855"},
      {"mastercard number", "credit_card", "5425233430109903", "5425233430109903"},
      {"luhn failure", "credit_card", "4556737586899856", ""},
      {"published test number", "credit_card", "4111 1111 1111 1111", ""},
      {"timestamp is not a card", "credit_card", "1700000000000", ""},
      {"digits inside a longer run", "credit_card", "45567375868998551234567", ""},
      // --- us_ssn ---
      {"ssn", "us_ssn", "ssn: 536-22-8741", "536-22-8741"},
      {"ssn area 9xx is not issued", "us_ssn", "936-22-8741", ""},
      {"ssn zero group", "us_ssn", "536-00-8741", ""},
      {"advertising ssn", "us_ssn", "123-45-6789", ""},
      {"date is not an ssn", "us_ssn", "2024-01-15", ""},
      // --- sudo / su / pkexec / doas ---
      {"sudo command", "sudo", "sudo apt-get install x", "sudo"},
      {"sudo by absolute path", "sudo", "/usr/bin/sudo -i", "sudo"},
      {"sudo in a subshell", "sudo", "echo $(sudo cat /etc/shadow)", "sudo"},
      {"sudo as an argv element", "sudo", "sudo", "sudo"},
      {"pseudocode", "sudo", "write pseudocode first", ""},
      {"sudoku", "sudo", "solve the sudoku", ""},
      {"sudoers file", "sudo", "ls /etc/sudoers.d", ""},
      {"sudo_user variable", "sudo", "echo $SUDO_USER sudo_user", ""},
      {"su to root", "su", "su - root", "su"},
      {"su alone", "su", "su", "su"},
      {"sum is not su", "su", "sum file.txt", ""},
      {"suffix is not su", "su", "super user", ""},
      {"pkexec", "pkexec", "pkexec /bin/bash", "pkexec"},
      {"pkexec inside a word", "pkexec", "mypkexecutor run", ""},
      {"doas", "doas", "doas -u root sh", "doas"},
      {"doas inside a word", "doas", "pseudoass", ""},
      // --- setuid_chmod ---
      {"chmod u+s", "setuid_chmod", "chmod u+s /tmp/sh", "chmod u+s"},
      {"chmod +s", "setuid_chmod", "chmod +s ./bin", "chmod +s"},
      {"chmod g+s", "setuid_chmod", "chmod -R g+s /srv", "chmod -R g+s"},
      {"chmod 4755", "setuid_chmod", "chmod 4755 /tmp/sh", "chmod 4755"},
      {"chmod 04755", "setuid_chmod", "chmod 04755 /tmp/sh", "chmod 04755"},
      {"chmod 6755", "setuid_chmod", "chmod 6755 x", "chmod 6755"},
      {"chmod combined clauses", "setuid_chmod", "chmod u+x,u+s f", "chmod u+x,u+s"},
      {"chmod 755", "setuid_chmod", "chmod 755 /tmp/sh", ""},
      {"chmod 0644", "setuid_chmod", "chmod 0644 f", ""},
      {"chmod sticky 1777", "setuid_chmod", "chmod 1777 /tmp/x", ""},
      {"chmod u+x", "setuid_chmod", "chmod u+x run.sh", ""},
      {"chmod g-s removes", "setuid_chmod", "chmod g-s dir", ""},
      // --- setuid_call ---
      {"setuid call", "setuid_call", "os.setuid(0)", "setuid("},
      {"setresuid call", "setuid_call", "setresuid(0, 0, 0);", "setresuid("},
      {"setgid call with space", "setuid_call", "setgid (0)", "setgid ("},
      {"getuid is not setuid", "setuid_call", "os.getuid()", ""},
      {"setuid bit in prose", "setuid_call", "the setuid bit", ""},
      // --- setcap_privileged ---
      {"setcap setuid", "setcap_privileged", "setcap cap_setuid+ep /usr/bin/python3",
       "setcap cap_setuid"},
      {"setcap net bind is not escalation", "setcap_privileged",
       "setcap cap_net_bind_service=+ep ./server", ""},
      // --- rm_rf_root ---
      {"rm -rf /", "rm_rf_root", "rm -rf /", "rm -rf /"},
      {"rm -fr /", "rm_rf_root", "rm -fr /", "rm -fr /"},
      {"rm -Rf /", "rm_rf_root", "rm -Rf /", "rm -Rf /"},
      {"rm -r -f /", "rm_rf_root", "rm -r -f /", "rm -r -f /"},
      {"rm -f -r /", "rm_rf_root", "rm -f -r /", "rm -f -r /"},
      {"rm --recursive --force /", "rm_rf_root", "rm --recursive --force /",
       "rm --recursive --force /"},
      {"rm -rf /*", "rm_rf_root", "rm -rf /*", "rm -rf /*"},
      {"rm -rf quoted root", "rm_rf_root", "rm -rf \"/\"", "rm -rf \"/\""},
      {"rm -rf //", "rm_rf_root", "rm -rf //", "rm -rf //"},
      {"rm -rf /.", "rm_rf_root", "rm -rf /.", "rm -rf /."},
      {"rm -rf -- /", "rm_rf_root", "rm -rf -- /", "rm -rf -- /"},
      {"root before flags", "rm_rf_root", "rm / -rf", "rm / -rf"},
      {"no-preserve-root", "rm_rf_root", "rm -rf --no-preserve-root /",
       "rm -rf --no-preserve-root /"},
      {"no-preserve-root whatever the target", "rm_rf_root", "rm -r --no-preserve-root \"$D\"",
       "rm -r --no-preserve-root"},
      {"rm -rf / after sudo in a chain", "rm_rf_root", "cd /tmp && sudo rm -rfv / ; echo",
       "rm -rfv /"},
      {"rm by absolute path", "rm_rf_root", "/bin/rm -rf /", "rm -rf /"},
      {"rm of another path too", "rm_rf_root", "rm -rf /tmp/x /", "rm -rf /tmp/x /"},
      {"rm -rf /tmp/build", "rm_rf_root", "rm -rf /tmp/build", ""},
      {"rm -rf ./", "rm_rf_root", "rm -rf ./", ""},
      {"rm -rf build/", "rm_rf_root", "rm -rf build/", ""},
      {"rm -f / is not recursive", "rm_rf_root", "rm -f /", ""},
      {"rm -rf home dir", "rm_rf_root", "rm -rf /home/user/project", ""},
      {"farm is not rm", "rm_rf_root", "farm -rf /", ""},
      {"rm -rf / in a later command only", "rm_rf_root", "rm -rf build; ls /", ""},
      // --- sudoers_write ---
      {"append to sudoers", "sudoers_write", "echo 'x ALL=(ALL) ALL' >> /etc/sudoers",
       ">> /etc/sudoers"},
      {"tee into sudoers.d", "sudoers_write", "echo rule | tee -a /etc/sudoers.d/agent",
       "tee -a /etc/sudoers.d/agent"},
      {"copy over sudoers", "sudoers_write", "cp /tmp/s /etc/sudoers", "cp /tmp/s /etc/sudoers"},
      {"sed in place on sudoers", "sudoers_write", "sed -i 's/x/y/' /etc/sudoers",
       "sed -i 's/x/y/' /etc/sudoers"},
      {"visudo", "sudoers_write", "visudo", "visudo"},
      {"nopasswd rule", "sudoers_write", "agent ALL=(ALL) NOPASSWD: ALL", "NOPASSWD:"},
      {"read sudoers", "sudoers_write", "cat /etc/sudoers", ""},
      {"copy sudoers away", "sudoers_write", "cp /etc/sudoers /tmp/backup", ""},
      {"list sudoers.d", "sudoers_write", "ls -l /etc/sudoers.d", ""},
      // --- passwd_write ---
      {"append to passwd", "passwd_write", "echo 'r::0:0::/:/bin/sh' >> /etc/passwd",
       ">> /etc/passwd"},
      {"tee shadow", "passwd_write", "tee /etc/shadow < x", "tee /etc/shadow"},
      {"dd onto passwd", "passwd_write", "dd if=x of=/etc/passwd", "of=/etc/passwd"},
      {"vipw", "passwd_write", "vipw", "vipw"},
      {"useradd uid 0", "passwd_write", "useradd -o -u 0 evil", "useradd -o -u 0"},
      {"read passwd", "passwd_write", "grep root /etc/passwd", ""},
      {"copy passwd away", "passwd_write", "cp /etc/passwd /tmp/p", ""},
      {"useradd normal uid", "passwd_write", "useradd -u 1001 bob", ""},
      // --- sudo_group ---
      {"usermod into sudo", "sudo_group", "usermod -aG sudo agent", "usermod -aG sudo"},
      {"gpasswd into wheel", "sudo_group", "gpasswd -a agent wheel", "gpasswd -a agent wheel"},
      {"docker group is root-equivalent", "sudo_group", "usermod -aG docker agent",
       "usermod -aG docker"},
      {"ordinary group", "sudo_group", "usermod -aG video agent", ""},
  };
}

class DetectorTest : public ::testing::TestWithParam<Case> {};

TEST_P(DetectorTest, ReportsExactlyTheExpectedSpan) {
  const Case& c = GetParam();
  const std::vector<std::string> spans = Spans(c.detector, c.text);
  if (c.span.empty()) {
    EXPECT_THAT(spans, ::testing::IsEmpty()) << c.rule << ": " << c.text;
  } else {
    EXPECT_THAT(spans, ::testing::ElementsAre(c.span)) << c.rule << ": " << c.text;
  }
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name;
  for (char c : std::string(info.param.rule)) {
    name.push_back(absl::ascii_isalnum(c) ? c : '_');
  }
  return absl::StrCat(info.index, "_", name);
}

INSTANTIATE_TEST_SUITE_P(Detectors, DetectorTest, ::testing::ValuesIn(Cases()), CaseName);

TEST(DetectorTableTest, EveryDetectorHasAPositiveAndANegativeCase) {
  const Inspector& inspector = TheInspector();
  for (int d = 0; d < inspector.num_detectors(); ++d) {
    const absl::string_view name = inspector.info(d).name;
    bool positive = false, negative = false;
    for (const Case& c : Cases()) {
      if (c.detector != name) continue;
      (c.span.empty() ? negative : positive) = true;
    }
    EXPECT_TRUE(positive) << name << " has no true-positive case";
    EXPECT_TRUE(negative) << name << " has no near-miss case";
  }
}

TEST(DetectorTableTest, CategoriesAreTheSpecsThree) {
  const Inspector& inspector = TheInspector();
  EXPECT_EQ(inspector.info(inspector.FindDetector("github_token")).category, Category::kSecrets);
  EXPECT_EQ(inspector.info(inspector.FindDetector("email")).category, Category::kPii);
  EXPECT_EQ(inspector.info(inspector.FindDetector("rm_rf_root")).category, Category::kPrivEsc);
  EXPECT_EQ(CategoryName(Category::kPrivEsc), "priv_esc");
  EXPECT_EQ(inspector.FindDetector("no_such_detector"), -1);
}

TEST(OverlapTest, SpecificSecretWinsOverGenericAssignment) {
  const Inspector& inspector = TheInspector();
  const std::string text = "OPENAI_API_KEY=" + kOpenAi;
  const std::vector<DetectorMatch> matches = inspector.Inspect(text);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(inspector.info(matches[0].detector).name, "openai_api_key");
}

TEST(OverlapTest, PrivEscMatchesAreAllKept) {
  const Inspector& inspector = TheInspector();
  std::vector<std::string> names;
  for (const DetectorMatch& m : inspector.Inspect("sudo rm -rf /")) {
    names.emplace_back(inspector.info(m.detector).name);
  }
  EXPECT_THAT(names, ::testing::ElementsAre("sudo", "rm_rf_root"));
}

TEST(KeyedValueTest, SecretNamedKeyWithRandomValue) {
  const Inspector& inspector = TheInspector();
  for (absl::string_view key : {"password", "apiKey", "x-api-key", "client_secret",
                                "accessToken", "Authorization", "DB_PASSWORD"}) {
    auto m = inspector.InspectKeyedValue(key, "Zr5Xy7Wb1Nc4Vd6L");
    ASSERT_TRUE(m.has_value()) << key;
    EXPECT_EQ(inspector.info(m->detector).name, "generic_secret");
    EXPECT_EQ(m->begin, 0u);
    EXPECT_EQ(m->end, 16u);
  }
  auto bearer = inspector.InspectKeyedValue("Authorization", "Bearer Zr5Xy7Wb1Nc4Vd6L");
  ASSERT_TRUE(bearer.has_value());
  EXPECT_EQ(bearer->begin, 7u);
}

TEST(KeyedValueTest, NearMissesAndPlaceholders) {
  const Inspector& inspector = TheInspector();
  EXPECT_FALSE(inspector.InspectKeyedValue("tokenizer", "cl100k_base_Z9").has_value());
  EXPECT_FALSE(inspector.InspectKeyedValue("token_type", "Bearer").has_value());
  EXPECT_FALSE(inspector.InspectKeyedValue("author", "Zr5Xy7Wb1Nc4Vd6L").has_value());
  EXPECT_FALSE(inspector.InspectKeyedValue("nextPageToken", "CAUQAA7xZ2kL9").has_value());
  EXPECT_FALSE(inspector.InspectKeyedValue("password", "REDACTED").has_value());
  EXPECT_FALSE(inspector.InspectKeyedValue("password", "<password>").has_value());
  EXPECT_FALSE(inspector.InspectKeyedValue("password", "********").has_value());
  EXPECT_FALSE(inspector.InspectKeyedValue("api_key", "your-api-key").has_value());
  EXPECT_FALSE(inspector.InspectKeyedValue("password", "the one we agreed on").has_value());
  EXPECT_FALSE(inspector.InspectKeyedValue("secret", "short1A").has_value());
}

TEST(EntropyTest, FloorSeparatesRandomFromWords) {
  EXPECT_DOUBLE_EQ(ShannonEntropy(""), 0);
  EXPECT_DOUBLE_EQ(ShannonEntropy("aaaa"), 0);
  EXPECT_DOUBLE_EQ(ShannonEntropy("abcd"), 2);
  EXPECT_GE(ShannonEntropy("Zr5Xy7Wb1Nc4Vd6Lp9Hs"), kGenericSecretEntropyFloor);
  EXPECT_LT(ShannonEntropy("aaaaaaaaaaaaaaab"), kGenericSecretEntropyFloor);
}

TEST(PlaceholderTest, StopWords) {
  for (absl::string_view p : {"REDACTED", "xxxx-xxxx", "<token>", "${TOKEN}", "{{ secret }}",
                              "your_api_key", "changeme", "AKIAIOSFODNN7EXAMPLE", "********",
                              "password", "zzzzzzzz"}) {
    EXPECT_TRUE(IsPlaceholder(p)) << p;
  }
  EXPECT_FALSE(IsPlaceholder("Zr5Xy7Wb1Nc4"));
}

TEST(LuhnTest, Checksums) {
  EXPECT_TRUE(LuhnValid("4556737586899855"));
  EXPECT_FALSE(LuhnValid("4556737586899856"));
  EXPECT_FALSE(LuhnValid(""));
  EXPECT_FALSE(LuhnValid("45a6"));
}

void ExpectBatchEqualsOneAtATime(const std::vector<std::string>& texts) {
  const Inspector& inspector = TheInspector();
  std::vector<absl::string_view> views(texts.begin(), texts.end());
  const std::vector<BatchMatch> batch = inspector.InspectBatch(views);
  std::vector<BatchMatch> single;
  for (size_t i = 0; i < views.size(); ++i) {
    for (const DetectorMatch& m : inspector.Inspect(views[i])) single.push_back({i, m});
  }
  ASSERT_EQ(batch.size(), single.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ(batch[i].text, single[i].text) << i;
    EXPECT_EQ(batch[i].match.detector, single[i].match.detector) << i;
    EXPECT_EQ(batch[i].match.begin, single[i].match.begin) << i;
    EXPECT_EQ(batch[i].match.end, single[i].match.end) << i;
  }
}

// The batch pass joins texts with '\n'; every case's result must be the same alone and in a
// batch between neighbours that end/start with characters patterns care about.
TEST(BatchTest, BatchEqualsOneTextAtATime) {
  std::vector<std::string> texts = {"", "x", "sudo", " ", "rm -rf", "/", "-----BEGIN"};
  for (const Case& c : Cases()) texts.push_back(c.text);
  texts.push_back("password=");
  texts.push_back("Zr5Xy7Wb1Nc4");
  ExpectBatchEqualsOneAtATime(texts);
}

// Across chunk boundaries too: the set runs over ~2 KiB chunks of whole texts.
TEST(BatchTest, BatchEqualsOneTextAtATimeAcrossChunks) {
  std::vector<std::string> texts;
  int n = 0;
  for (const Case& c : Cases()) {
    texts.push_back(std::string(500 + 997 * (n++ % 9), 'f'));
    texts.push_back(c.text);
    texts.push_back(c.text + " " + c.text);
  }
  ExpectBatchEqualsOneAtATime(texts);
}

TEST(BatchTest, NothingFoundInPlainText) {
  const Inspector& inspector = TheInspector();
  std::vector<absl::string_view> views = {"read_file", "path", "/home/fido/work/notes.md",
                                          "limit", "the quick brown fox"};
  EXPECT_THAT(inspector.InspectBatch(views), ::testing::IsEmpty());
}

}  // namespace
}  // namespace leash::tools
