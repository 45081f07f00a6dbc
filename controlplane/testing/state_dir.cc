#include "controlplane/testing/state_dir.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/config_yaml.h"
#include "gtest/gtest.h"

namespace leash::controlplane::testing {

TempStateDir::TempStateDir() {
  const char* base = getenv("TEST_TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/state-XXXXXX";
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
  root_ = pattern;
}

TempStateDir::~TempStateDir() {
  std::error_code ignored;
  std::filesystem::remove_all(root_, ignored);
}

HostInputs Host(const std::string& floor_yaml, std::vector<std::string> agent_accounts) {
  HostInputs host;
  host.floor = engine::ParseConfigYaml(floor_yaml, engine::ConfigKind::kFloor, "leash.yaml");
  EXPECT_TRUE(host.floor.ok()) << host.floor.status();
  host.agent_accounts = std::move(agent_accounts);
  return host;
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "<absent>";
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void WriteRaw(const std::string& path, const std::string& content) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  ASSERT_FALSE(error) << error.message();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(out) << "open " << path;
  out << content;
}

}  // namespace leash::controlplane::testing
