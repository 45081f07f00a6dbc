// Test helpers for the tiers: configs and profile libraries written as YAML, so a test reads
// like the files an operator writes. Test-only.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "engine/config_yaml.h"
#include "engine/tiers.h"
#include "gtest/gtest.h"

namespace leash::engine::testing {

// A floor (any key) parsed from YAML; a parse error fails the test.
inline leash::v1::Config Floor(absl::string_view yaml) {
  absl::StatusOr<leash::v1::Config> config = ParseConfigYaml(yaml, ConfigKind::kFloor, "floor");
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : leash::v1::Config();
}

// A profile fragment parsed from YAML.
inline leash::v1::Config Fragment(absl::string_view yaml) {
  absl::StatusOr<leash::v1::Config> config =
      ParseConfigYaml(yaml, ConfigKind::kProfile, "profile");
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : leash::v1::Config();
}

// name -> fragment YAML.
inline ProfileLibrary Library(
    std::initializer_list<std::pair<std::string, std::string>> profiles) {
  ProfileLibrary library;
  for (const auto& [name, yaml] : profiles) library.emplace(name, Fragment(yaml));
  return library;
}

}  // namespace leash::engine::testing
