// The multi-process GoogleTest binaries' check that a run leaves nothing in /dev/shm: once every test has run, no
// process the binary forked (RunProcesses) still has a file there (dist_test_util.h, ShmLeftovers): one killed
// had its files removed by RunProcesses, one that ended normally closed its endpoints. Included by each test file
// of such a binary; registered once per binary.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dist_test_util.h"

namespace neuronmem::dist::testing {

class ShmLeftoversCheck : public ::testing::Environment {
 public:
  void TearDown() override {
    std::string names;
    for (const std::string& f : ShmLeftovers()) names += " /dev/shm/" + f;
    EXPECT_TRUE(names.empty()) << "processes the tests forked left files in /dev/shm:" << names;
  }
};

inline ::testing::Environment* const kShmLeftoversCheck = ::testing::AddGlobalTestEnvironment(new ShmLeftoversCheck);

}  // namespace neuronmem::dist::testing
