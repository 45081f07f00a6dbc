#include "proto/sidecar/would_be_blocks.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace leash::sidecar {
namespace {

using leash::v1::SURFACE_COMMANDS;
using leash::v1::SURFACE_FILESYSTEM;
using leash::v1::SURFACE_NETWORK;

TEST(WouldBeBlockCounter, CountsPerSubjectAndSurfaceAndFillsInOrder) {
  WouldBeBlockCounter counter;
  counter.Add(2001, SURFACE_COMMANDS);
  counter.Add(1001, SURFACE_FILESYSTEM);
  counter.Add(1001, SURFACE_FILESYSTEM);
  counter.Add(1001, SURFACE_COMMANDS);
  EXPECT_EQ(counter.Count(1001, SURFACE_FILESYSTEM), 2u);
  EXPECT_EQ(counter.Count(1001, SURFACE_COMMANDS), 1u);
  EXPECT_EQ(counter.Count(1001, SURFACE_NETWORK), 0u);
  EXPECT_EQ(counter.Count(2001, SURFACE_FILESYSTEM), 0u);

  google::protobuf::RepeatedPtrField<leash::v1::WouldBeBlocks> out;
  out.Add()->set_uid(7);  // replaced, not appended to
  counter.Fill(&out);
  ASSERT_EQ(out.size(), 3);
  EXPECT_EQ(out[0].uid(), 1001u);
  EXPECT_EQ(out[0].surface(), SURFACE_FILESYSTEM);
  EXPECT_EQ(out[0].count(), 2u);
  EXPECT_EQ(out[1].uid(), 1001u);
  EXPECT_EQ(out[1].surface(), SURFACE_COMMANDS);
  EXPECT_EQ(out[1].count(), 1u);
  EXPECT_EQ(out[2].uid(), 2001u);
  EXPECT_EQ(out[2].count(), 1u);
}

TEST(WouldBeBlockCounter, LosesNoAddFromConcurrentThreads) {
  WouldBeBlockCounter counter;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) counter.Add(1001, SURFACE_NETWORK);
    });
  }
  google::protobuf::RepeatedPtrField<leash::v1::WouldBeBlocks> out;
  for (int i = 0; i < 100; ++i) counter.Fill(&out);  // a heartbeat reading meanwhile
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter.Count(1001, SURFACE_NETWORK), 40000u);
}

}  // namespace
}  // namespace leash::sidecar
