// Conformance through the plugin: the StableHLO test files (../shared/conformance/stablehlo-testdata, every
// STEP-th file of the top level, default 1: all; @main without parameters and check.expect_* calls)
// compiled and executed through PJRT (the table only) and through the C API, which must agree file by file
// (compiles or not, passes its checks or not). Exits 77 (skip) when the folder is absent.
//
//   pjrt_conformance_test PLUGIN DIR [STEP]
#include <neuronmem/neuronmem.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pjrt/pjrt_helpers.h"

namespace fs = std::filesystem;
using neuronmem_pjrt_test::Outcome;
using neuronmem_pjrt_test::Take;

namespace {

// How a file ended: "pass", "compile <code>", "run <code>".
std::string ViaCApi(neuronmem_client_t* client, neuronmem_device_t* device, const std::string& text) {
  neuronmem_executable_t* e = nullptr;
  if (neuronmem_status_t* s = neuronmem_executable_compile_text(client, text.data(), text.size(), nullptr, &e)) {
    const std::string r = "compile " + std::to_string(neuronmem_status_code(s));
    neuronmem_status_free(s);
    return r;
  }
  neuronmem_executable_properties_t p{};
  p.struct_size = sizeof p;
  neuronmem_status_free(neuronmem_executable_properties(e, &p));
  std::vector<neuronmem_buffer_t*> results(p.num_outputs + 1, nullptr);
  neuronmem_execute_args_t a{};
  a.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
  a.executable = e;
  a.device = device;
  neuronmem_event_t* done = nullptr;
  std::string r = "pass";
  if (neuronmem_status_t* s = neuronmem_executable_execute(&a, results.data(), &done, nullptr)) {
    r = "run " + std::to_string(neuronmem_status_code(s));
    neuronmem_status_free(s);
  } else {
    if (neuronmem_status_t* s = neuronmem_event_wait(done, -1)) {
      r = "run " + std::to_string(neuronmem_status_code(s));
      neuronmem_status_free(s);
    }
    neuronmem_event_destroy(done);
  }
  for (neuronmem_buffer_t* b : results) neuronmem_buffer_destroy(b);
  neuronmem_executable_destroy(e);
  return r;
}

std::string ViaPjrt(const PJRT_Api* api, PJRT_Client* client, const std::string& text) {
  std::string code = text;
  auto p = NM_ARGS(PJRT_Program);
  p.code = code.data();
  p.code_size = code.size();
  p.format = "mlir";
  p.format_size = 4;
  auto c = NM_ARGS(PJRT_Client_Compile_Args);
  c.client = client;
  c.program = &p;
  Outcome o = Take(api, api->PJRT_Client_Compile(&c));
  if (o.code != PJRT_Error_Code_OK) return "compile " + std::to_string(o.code);
  auto ge = NM_ARGS(PJRT_LoadedExecutable_GetExecutable_Args);
  ge.loaded_executable = c.executable;
  Take(api, api->PJRT_LoadedExecutable_GetExecutable(&ge));
  auto no = NM_ARGS(PJRT_Executable_NumOutputs_Args);
  no.executable = ge.executable;
  Take(api, api->PJRT_Executable_NumOutputs(&no));
  auto de = NM_ARGS(PJRT_Executable_Destroy_Args);
  de.executable = ge.executable;
  Take(api, api->PJRT_Executable_Destroy(&de));
  std::vector<PJRT_Buffer*> outputs(no.num_outputs + 1, nullptr);
  PJRT_Buffer** lists[1] = {outputs.data()};
  PJRT_Event* done[1] = {nullptr};
  auto opts = NM_ARGS(PJRT_ExecuteOptions);
  auto x = NM_ARGS(PJRT_LoadedExecutable_Execute_Args);
  x.executable = c.executable;
  x.options = &opts;
  x.num_devices = 1;
  x.num_args = 0;
  x.output_lists = lists;
  x.device_complete_events = done;
  std::string r = "pass";
  o = Take(api, api->PJRT_LoadedExecutable_Execute(&x));
  if (o.code != PJRT_Error_Code_OK) {
    r = "run " + std::to_string(o.code);
  } else {
    o = neuronmem_pjrt_test::AwaitAndDestroy(api, done[0]);
    if (o.code != PJRT_Error_Code_OK) r = "run " + std::to_string(o.code);
  }
  for (PJRT_Buffer* b : outputs) neuronmem_pjrt_test::DestroyBuffer(api, b);
  auto dl = NM_ARGS(PJRT_LoadedExecutable_Destroy_Args);
  dl.executable = c.executable;
  Take(api, api->PJRT_LoadedExecutable_Destroy(&dl));
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PLUGIN DIR [STEP]\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[2];
  const size_t step = argc > 3 ? std::max<size_t>(1, std::strtoul(argv[3], nullptr, 10)) : 1;
  if (!fs::is_directory(dir)) {
    std::printf("SKIP: %s is absent\n", dir.c_str());
    return 77;
  }
  const PJRT_Api* api = neuronmem_pjrt_test::LoadPlugin(argv[1]);
  if (!api) return 1;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && (entry.path().extension() == ".mlir" || entry.path().extension() == ".bc"))
      files.push_back(entry.path());  // StableHLO text, or portable artifacts (x.mlir.bc: vhlo bytecode)
  std::sort(files.begin(), files.end());

  neuronmem_client_options_t o{};
  o.struct_size = sizeof o;
  o.num_cores = 1;
  neuronmem_client_t* cclient = nullptr;
  if (neuronmem_status_t* s = neuronmem_client_create(&o, &cclient)) {
    std::fprintf(stderr, "neuronmem_client_create failed\n");
    neuronmem_status_free(s);
    return 1;
  }
  neuronmem_device_t* cdevice = nullptr;
  neuronmem_status_free(neuronmem_client_lookup_device(cclient, 0, &cdevice));
  const PJRT_NamedValue cores = neuronmem_pjrt_test::IntOption("num_cores", 1);
  auto cc = NM_ARGS(PJRT_Client_Create_Args);
  cc.create_options = &cores;
  cc.num_options = 1;
  Outcome created = Take(api, api->PJRT_Client_Create(&cc));
  if (created.code != PJRT_Error_Code_OK) {
    std::fprintf(stderr, "PJRT_Client_Create: %s\n", created.message.c_str());
    return 1;
  }

  int ran = 0, agreed = 0, passed = 0;
  for (size_t i = 0; i < files.size(); i += step) {
    std::ifstream in(files[i], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const std::string direct = ViaCApi(cclient, cdevice, text);
    const std::string pjrt = ViaPjrt(api, cc.client, text);
    ++ran;
    passed += pjrt == "pass";
    if (direct == pjrt) {
      ++agreed;
      if (pjrt != "pass") std::printf("both %s: %s\n", files[i].filename().c_str(), pjrt.c_str());
    } else {
      std::printf("DIFFER %s: C API %s, PJRT %s\n", files[i].filename().c_str(), direct.c_str(), pjrt.c_str());
    }
  }
  std::printf("%d files: %d agree, %d pass through PJRT\n", ran, agreed, passed);
  auto cd = NM_ARGS(PJRT_Client_Destroy_Args);
  cd.client = cc.client;
  Outcome destroyed = Take(api, api->PJRT_Client_Destroy(&cd));
  neuronmem_status_t* s = neuronmem_client_destroy(cclient);
  const bool clean = destroyed.code == PJRT_Error_Code_OK && !s;
  neuronmem_status_free(s);
  if (!clean) std::printf("a client did not destroy cleanly: %s\n", destroyed.message.c_str());
  // Most of the suite passes on the direct path: a sample where nothing passes means the plugin is broken.
  return agreed == ran && passed * 2 >= ran && clean ? 0 : 1;
}
