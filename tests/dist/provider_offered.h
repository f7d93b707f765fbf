// meson runs the multi-process tests once per provider (FI_PROVIDER=tcp, and =shm): a provider libfabric does not
// offer here (an RDM endpoint with tagged messages) skips the run rather than failing it. A test file registers it:
//   const auto* const kProviderOffered = ::testing::AddGlobalTestEnvironment(new ProviderOffered);
#pragma once

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <stdlib.h>
#include <string.h>

namespace neuronmem::dist::testing {

class ProviderOffered : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* name = getenv("FI_PROVIDER");
    if (name == nullptr) return;
    fi_info* hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED;
    hints->fabric_attr->prov_name = strdup(name);
    fi_info* info = nullptr;
    const int rc = fi_getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &info);
    fi_freeinfo(hints);
    if (info != nullptr) fi_freeinfo(info);
    if (rc != 0) GTEST_SKIP() << "libfabric offers no RDM tagged endpoint of provider " << name;
  }
};

}  // namespace neuronmem::dist::testing
