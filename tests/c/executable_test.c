/* executable.h used from plain C17: compiles a graph with an intra-graph move and a pinned_host argument,
 * queries it, executes it (args struct with NEURONMEM_*_STRUCT_SIZE sizes, an event list), reads the
 * results and the execution's statistics, launches it on both devices at once (execute_devices), runs an
 * all_reduce across both devices (peer bytes device -> device), swaps tensors core to core with
 * stablehlo.send / recv (source_target_pairs, channel type 1; a recv from a device left out of the launch
 * fails saying so), serves host transfers through send/recv callbacks, and checks the strict placement
 * error. Exit code 0 = pass. */
#include "c_test.h"

static const char kText[] =
    "func.func @main(%w: tensor<4xf32> {mhlo.memory_kind = \"pinned_host\"}, %x: tensor<4xf32>)\n"
    "    -> (tensor<4xf32>, tensor<4xf32> {mhlo.memory_kind = \"pinned_host\"}) {\n"
    "  %0 = stablehlo.multiply %w, %x : tensor<4xf32>\n"
    "  %1 = stablehlo.custom_call @MoveToHost(%0) {backend_config = \"\"} : (tensor<4xf32>) -> tensor<4xf32>\n"
    "  return %0, %1 : tensor<4xf32>, tensor<4xf32>\n"
    "}\n";

/* Both devices contribute; both get the sum (a launch is one process grid). */
static const char kAllReduce[] =
    "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %0 = \"stablehlo.all_reduce\"(%a) ({\n"
    "    ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
    "      %s = stablehlo.add %x, %y : tensor<f32>\n"
    "      stablehlo.return %s : tensor<f32>\n"
    "  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>\n"
    "  return %0 : tensor<4xf32>\n"
    "}\n";

/* Each device sends its operand to the other and returns what it received (channel 3, device to device). */
static const char kSwap[] =
    "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %t = stablehlo.after_all : !stablehlo.token\n"
    "  %s = \"stablehlo.send\"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,\n"
    "      source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>} : (tensor<4xf32>, !stablehlo.token) "
    "-> !stablehlo.token\n"
    "  %r:2 = \"stablehlo.recv\"(%s) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,\n"
    "      source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>} : (!stablehlo.token) -> (tensor<4xf32>, "
    "!stablehlo.token)\n"
    "  return %r#0 : tensor<4xf32>\n"
    "}\n";

/* psum over "x"=2 in a shard_map: the two halves of f32[4] summed on each device, gathered back along "x". */
static const char kManual[] =
    "module @m {\n"
    "  sdy.mesh @mesh = <[\"x\"=2]>\n"
    "  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{\"x\"}]>] out_shardings=[<@mesh, [{\"x\"}]>]\n"
    "        manual_axes={\"x\"} (%a: tensor<2xf32>) {\n"
    "      %s = \"stablehlo.all_reduce\"(%a) ({\n"
    "        ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
    "          %t = stablehlo.add %x, %y : tensor<f32>\n"
    "          stablehlo.return %t : tensor<f32>\n"
    "      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,\n"
    "          channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids}\n"
    "          : (tensor<2xf32>) -> tensor<2xf32>\n"
    "      sdy.return %s : tensor<2xf32>\n"
    "    } : (tensor<4xf32>) -> tensor<4xf32>\n"
    "    return %1 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static int contains(neuronmem_string_t s, const char* text) {
  const size_t n = strlen(text);
  for (size_t i = 0; i + n <= s.size; ++i) {
    if (memcmp(s.data + i, text, n) == 0) return 1;
  }
  return 0;
}

/* Sends its operand to the host (channel 5), receives from the host (channel 6), adds. */
static const char kHost[] =
    "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %t = stablehlo.after_all : !stablehlo.token\n"
    "  %s = \"stablehlo.send\"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 2>,\n"
    "      is_host_transfer = true} : (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token\n"
    "  %r:2 = \"stablehlo.recv\"(%s) {channel_handle = #stablehlo.channel_handle<handle = 6, type = 3>,\n"
    "      is_host_transfer = true} : (!stablehlo.token) -> (tensor<4xf32>, !stablehlo.token)\n"
    "  %y = stablehlo.add %x, %r#0 : tensor<4xf32>\n"
    "  return %y : tensor<4xf32>\n"
    "}\n";

/* user_data: float[2], the sum of each device's payload. */
static neuronmem_status_t* on_send(const neuronmem_host_transfer_t* t, void* user_data) {
  float* sums = (float*)user_data;
  const float* p = (const float*)t->tensors[0].data;
  if (t->channel_id != 5 || t->num_tensors != 1 || t->device < 0 || t->device > 1) {
    return neuronmem_status_create(NEURONMEM_STATUS_INTERNAL, "bad transfer", 12);
  }
  sums[t->device] = p[0] + p[1] + p[2] + p[3];
  return NULL;
}

static neuronmem_status_t* on_recv(const neuronmem_host_transfer_t* t, void* user_data) {
  (void)user_data;
  float* p = (float*)t->tensors[0].data;
  for (int i = 0; i < 4; ++i) p[i] = 100.0f * (float)(t->replica_id + 1);
  return NULL;
}

static neuronmem_buffer_t* upload(neuronmem_client_t* client, neuronmem_memory_t* memory, const float* data) {
  const int64_t dims[1] = {4};
  return upload_f32(client, memory, data, dims, 1);
}

static void read4(neuronmem_buffer_t* b, float* out) {
  neuronmem_buffer_read_args_t r;
  memset(&r, 0, sizeof r);
  r.struct_size = NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE;
  r.buffer = b;
  r.size = 4 * sizeof(float);
  r.dst = out;
  CHECK(code_of(neuronmem_buffer_read(&r, NULL)) == NEURONMEM_STATUS_OK);
}

/* One message of 16 bytes from the peer core, device -> device, and no byte moved to or from a host kind. */
static void check_one_peer_message(neuronmem_execution_t* run) {
  neuronmem_transfer_counts_t dd;
  memset(&dd, 0, sizeof dd);
  dd.struct_size = NEURONMEM_TRANSFER_COUNTS_STRUCT_SIZE;
  CHECK(code_of(neuronmem_execution_transfers(run, NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_DEVICE, &dd)) ==
        NEURONMEM_STATUS_OK);
  CHECK(dd.peer_transfers == 1 && dd.peer_bytes == 16);
  neuronmem_execution_stats_t ls;
  memset(&ls, 0, sizeof ls);
  ls.struct_size = NEURONMEM_EXECUTION_STATS_STRUCT_SIZE;
  CHECK(code_of(neuronmem_execution_stats(run, &ls)) == NEURONMEM_STATUS_OK);
  CHECK(ls.peer_transfers == 1 && ls.peer_bytes == 16 && ls.explicit_bytes == 0 && ls.implicit_bytes == 0);
}

int main(void) {
  neuronmem_device_t* const* devices = NULL;
  size_t n_dev = 0;
  neuronmem_client_t* client = new_client(2, 2u << 20, 32u << 20, &devices, &n_dev);
  if (!client) return 1;

  neuronmem_compile_options_t co;
  memset(&co, 0, sizeof co);
  co.struct_size = NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE;
  co.filename = "c.mlir";
  co.argument_placement = NEURONMEM_ARGUMENT_PLACEMENT_STRICT;
  neuronmem_executable_t* exe = NULL;
  CHECK(code_of(neuronmem_executable_compile_text(client, kText, sizeof kText - 1, &co, &exe)) == NEURONMEM_STATUS_OK);
  if (!exe) return 1;
  neuronmem_executable_properties_t props;
  memset(&props, 0, sizeof props);
  props.struct_size = NEURONMEM_EXECUTABLE_PROPERTIES_STRUCT_SIZE;
  CHECK(code_of(neuronmem_executable_properties(exe, &props)) == NEURONMEM_STATUS_OK);
  CHECK(props.num_parameters == 2 && props.num_outputs == 2 && props.num_replicas == 2);
  CHECK(props.num_explicit_moves == 1);
  CHECK(props.num_manual_devices == 0);

  /* Run on device 1, the weights read in place from pinned_host. */
  neuronmem_memory_t* w_mem = NULL;
  neuronmem_memory_t* x_mem = NULL;
  CHECK(code_of(neuronmem_executable_parameter_memory(exe, devices[1], 0, &w_mem)) == NEURONMEM_STATUS_OK);
  CHECK(code_of(neuronmem_executable_parameter_memory(exe, devices[1], 1, &x_mem)) == NEURONMEM_STATUS_OK);
  const float w[4] = {1, 2, 3, 4};
  const float x[4] = {2, 2, 2, 2};
  neuronmem_buffer_t* args[2] = {upload(client, w_mem, w), upload(client, x_mem, x)};
  neuronmem_execute_args_t ea;
  memset(&ea, 0, sizeof ea);
  ea.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
  ea.executable = exe;
  ea.device = devices[1];
  ea.arguments = args;
  ea.num_arguments = 2;
  neuronmem_buffer_t* results[2] = {NULL, NULL};
  neuronmem_event_t* done = NULL;
  neuronmem_execution_t* run = NULL;
  CHECK(code_of(neuronmem_executable_execute(&ea, results, &done, &run)) == NEURONMEM_STATUS_OK);
  CHECK(code_of(neuronmem_event_wait(done, -1)) == NEURONMEM_STATUS_OK);
  float out[4];
  read4(results[1], out);
  CHECK(out[0] == 2 && out[1] == 4 && out[2] == 6 && out[3] == 8);
  neuronmem_memory_t* out_mem = NULL;
  neuronmem_memory_kind_t kind = NEURONMEM_MEMORY_KIND_DEVICE;
  CHECK(code_of(neuronmem_buffer_memory(results[1], &out_mem)) == NEURONMEM_STATUS_OK);
  CHECK(code_of(neuronmem_memory_kind(out_mem, &kind)) == NEURONMEM_STATUS_OK);
  CHECK(kind == NEURONMEM_MEMORY_KIND_PINNED_HOST);
  neuronmem_execution_stats_t st;
  memset(&st, 0, sizeof st);
  st.struct_size = NEURONMEM_EXECUTION_STATS_STRUCT_SIZE;
  CHECK(code_of(neuronmem_execution_stats(run, &st)) == NEURONMEM_STATUS_OK);
  CHECK(st.implicit_transfers == 0 && st.implicit_bytes == 0); /* the step made no implicit copy */
  CHECK(st.explicit_transfers == 1 && st.explicit_bytes == 16);
  neuronmem_transfer_counts_t tc;
  memset(&tc, 0, sizeof tc);
  tc.struct_size = NEURONMEM_TRANSFER_COUNTS_STRUCT_SIZE;
  CHECK(code_of(neuronmem_execution_transfers(run, NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_PINNED_HOST,
                                              &tc)) == NEURONMEM_STATUS_OK);
  CHECK(tc.explicit_transfers == 1 && tc.implicit_transfers == 0);
  CHECK(code_of(neuronmem_execution_transfers(run, (neuronmem_memory_kind_t)7, NEURONMEM_MEMORY_KIND_DEVICE, &tc)) ==
        NEURONMEM_STATUS_INVALID_ARGUMENT);

  /* Strict: the weights given in device memory are refused; nothing is created. */
  neuronmem_memory_t* dev = NULL;
  CHECK(code_of(neuronmem_device_memory_of_kind(devices[1], NEURONMEM_MEMORY_KIND_DEVICE, &dev)) ==
        NEURONMEM_STATUS_OK);
  neuronmem_buffer_t* misplaced = upload(client, dev, w);
  neuronmem_buffer_t* bad_args[2] = {misplaced, args[1]};
  ea.arguments = bad_args;
  neuronmem_buffer_t* none[2] = {NULL, NULL};
  neuronmem_event_t* no_event = NULL;
  CHECK(code_of(neuronmem_executable_execute(&ea, none, &no_event, NULL)) == NEURONMEM_STATUS_FAILED_PRECONDITION);
  CHECK(none[0] == NULL && none[1] == NULL && no_event == NULL);

  /* One launch on both devices, distinct arguments per device (row-major), per-device events and stats. */
  neuronmem_memory_t* x0_mem = NULL;
  CHECK(code_of(neuronmem_executable_parameter_memory(exe, devices[0], 1, &x0_mem)) == NEURONMEM_STATUS_OK);
  const float x0[4] = {3, 3, 3, 3};
  neuronmem_buffer_t* x0_buf = upload(client, x0_mem, x0);
  neuronmem_buffer_t* launch_args[4] = {args[0], x0_buf, args[0], args[1]}; /* device 0, then device 1 */
  neuronmem_device_t* launch_devices[2] = {devices[0], devices[1]};
  neuronmem_execute_devices_args_t la;
  memset(&la, 0, sizeof la);
  la.struct_size = NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE;
  la.executable = exe;
  la.devices = launch_devices;
  la.num_devices = 2;
  la.arguments = launch_args;
  la.num_arguments = 2;
  neuronmem_buffer_t* launch_results[4] = {NULL, NULL, NULL, NULL};
  /* A launch without its executable fails and clears the per-device outputs it knows the length of. */
  neuronmem_event_t* launch_done[2] = {(neuronmem_event_t*)&la, (neuronmem_event_t*)&la};
  neuronmem_execution_t* launch_runs[2] = {(neuronmem_execution_t*)&la, (neuronmem_execution_t*)&la};
  la.executable = NULL;
  CHECK(code_of(neuronmem_executable_execute_devices(&la, launch_results, launch_done, launch_runs)) ==
        NEURONMEM_STATUS_INVALID_ARGUMENT);
  CHECK(launch_done[0] == NULL && launch_done[1] == NULL && launch_runs[0] == NULL && launch_runs[1] == NULL);
  la.executable = exe;
  CHECK(code_of(neuronmem_executable_execute_devices(&la, launch_results, launch_done, launch_runs)) ==
        NEURONMEM_STATUS_OK);
  for (int d = 0; d < 2; ++d) {
    CHECK(code_of(neuronmem_event_wait(launch_done[d], -1)) == NEURONMEM_STATUS_OK);
    read4(launch_results[2 * d], out);
    const float scale = d == 0 ? 3.0f : 2.0f;
    CHECK(out[0] == scale && out[3] == 4 * scale);
    neuronmem_execution_stats_t ls;
    memset(&ls, 0, sizeof ls);
    ls.struct_size = NEURONMEM_EXECUTION_STATS_STRUCT_SIZE;
    CHECK(code_of(neuronmem_execution_stats(launch_runs[d], &ls)) == NEURONMEM_STATUS_OK);
    CHECK(ls.explicit_transfers == 1 && ls.implicit_transfers == 0 && ls.peer_transfers == 0 && ls.peer_bytes == 0);
    uint32_t replica = 9, partition = 9;
    CHECK(code_of(neuronmem_executable_logical_ids(exe, devices[d], &replica, &partition)) == NEURONMEM_STATUS_OK);
    CHECK(replica == (uint32_t)d && partition == 0);
    neuronmem_execution_destroy(launch_runs[d]);
    neuronmem_event_destroy(launch_done[d]);
  }
  for (int i = 0; i < 4; ++i) neuronmem_buffer_destroy(launch_results[i]);
  neuronmem_buffer_destroy(x0_buf);

  /* all_reduce across both devices: core to core, counted as peer bytes device -> device, no host bytes. */
  neuronmem_executable_t* ar = NULL;
  CHECK(code_of(neuronmem_executable_compile_text(client, kAllReduce, sizeof kAllReduce - 1, &co, &ar)) ==
        NEURONMEM_STATUS_OK);
  if (!ar) return 1;
  neuronmem_buffer_t* ar_args[2] = {NULL, NULL};
  for (int d = 0; d < 2; ++d) {
    neuronmem_memory_t* m = NULL;
    CHECK(code_of(neuronmem_executable_parameter_memory(ar, devices[d], 0, &m)) == NEURONMEM_STATUS_OK);
    const float v[4] = {(float)(d + 1), (float)(d + 1), (float)(d + 1), (float)(d + 1)};
    ar_args[d] = upload(client, m, v);
  }
  la.executable = ar;
  la.arguments = ar_args;
  la.num_arguments = 1;
  neuronmem_buffer_t* ar_results[2] = {NULL, NULL};
  CHECK(code_of(neuronmem_executable_execute_devices(&la, ar_results, launch_done, launch_runs)) ==
        NEURONMEM_STATUS_OK);
  for (int d = 0; d < 2; ++d) {
    CHECK(code_of(neuronmem_event_wait(launch_done[d], -1)) == NEURONMEM_STATUS_OK);
    read4(ar_results[d], out);
    CHECK(out[0] == 3 && out[3] == 3);
    check_one_peer_message(launch_runs[d]);
    neuronmem_execution_destroy(launch_runs[d]);
    neuronmem_event_destroy(launch_done[d]);
    neuronmem_buffer_destroy(ar_results[d]);
    neuronmem_buffer_destroy(ar_args[d]);
  }
  neuronmem_executable_destroy(ar);

  /* A manual computation over 2 devices whose body communicates: one execution on device 0 runs its devices on
   * both cores of the client (the property says 2 at once, the statistics 2 cores and no thread). */
  neuronmem_executable_t* mc = NULL;
  CHECK(code_of(neuronmem_executable_compile_text(client, kManual, sizeof kManual - 1, &co, &mc)) ==
        NEURONMEM_STATUS_OK);
  if (!mc) return 1;
  memset(&props, 0, sizeof props);
  props.struct_size = NEURONMEM_EXECUTABLE_PROPERTIES_STRUCT_SIZE;
  CHECK(code_of(neuronmem_executable_properties(mc, &props)) == NEURONMEM_STATUS_OK);
  CHECK(props.num_manual_devices == 2);
  {
    neuronmem_memory_t* m = NULL;
    CHECK(code_of(neuronmem_executable_parameter_memory(mc, devices[0], 0, &m)) == NEURONMEM_STATUS_OK);
    const float v[4] = {1, 2, 30, 40};
    neuronmem_buffer_t* mc_args[1] = {upload(client, m, v)};
    neuronmem_execute_args_t ma;
    memset(&ma, 0, sizeof ma);
    ma.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
    ma.executable = mc;
    ma.device = devices[0];
    ma.arguments = mc_args;
    ma.num_arguments = 1;
    neuronmem_buffer_t* mc_result = NULL;
    neuronmem_event_t* mc_done = NULL;
    neuronmem_execution_t* mc_run = NULL;
    CHECK(code_of(neuronmem_executable_execute(&ma, &mc_result, &mc_done, &mc_run)) == NEURONMEM_STATUS_OK);
    CHECK(code_of(neuronmem_event_wait(mc_done, -1)) == NEURONMEM_STATUS_OK);
    read4(mc_result, out);
    CHECK(out[0] == 31 && out[1] == 42 && out[2] == 31 && out[3] == 42);
    neuronmem_execution_stats_t ms;
    memset(&ms, 0, sizeof ms);
    ms.struct_size = NEURONMEM_EXECUTION_STATS_STRUCT_SIZE;
    CHECK(code_of(neuronmem_execution_stats(mc_run, &ms)) == NEURONMEM_STATUS_OK);
    CHECK(ms.manual_cores == 2 && ms.manual_threads == 0);
    neuronmem_execution_destroy(mc_run);
    neuronmem_event_destroy(mc_done);
    neuronmem_buffer_destroy(mc_result);
    neuronmem_buffer_destroy(mc_args[0]);
  }
  neuronmem_executable_destroy(mc);

  /* send / recv core to core: each device gets the other's tensor, one peer transfer of 16 bytes device ->
   * device on each, no host bytes. */
  neuronmem_executable_t* sw = NULL;
  CHECK(code_of(neuronmem_executable_compile_text(client, kSwap, sizeof kSwap - 1, &co, &sw)) == NEURONMEM_STATUS_OK);
  if (!sw) return 1;
  neuronmem_buffer_t* sw_args[2] = {NULL, NULL};
  for (int d = 0; d < 2; ++d) {
    neuronmem_memory_t* m = NULL;
    CHECK(code_of(neuronmem_executable_parameter_memory(sw, devices[d], 0, &m)) == NEURONMEM_STATUS_OK);
    const float v[4] = {(float)(10 * d + 1), (float)(10 * d + 2), (float)(10 * d + 3), (float)(10 * d + 4)};
    sw_args[d] = upload(client, m, v);
  }
  la.executable = sw;
  la.arguments = sw_args;
  la.num_arguments = 1;
  neuronmem_buffer_t* sw_results[2] = {NULL, NULL};
  CHECK(code_of(neuronmem_executable_execute_devices(&la, sw_results, launch_done, launch_runs)) ==
        NEURONMEM_STATUS_OK);
  for (int d = 0; d < 2; ++d) {
    CHECK(code_of(neuronmem_event_wait(launch_done[d], -1)) == NEURONMEM_STATUS_OK);
    read4(sw_results[d], out);
    const float peer = (float)(10 * (1 - d));
    CHECK(out[0] == peer + 1 && out[1] == peer + 2 && out[2] == peer + 3 && out[3] == peer + 4);
    check_one_peer_message(launch_runs[d]);
    neuronmem_execution_destroy(launch_runs[d]);
    neuronmem_event_destroy(launch_done[d]);
    neuronmem_buffer_destroy(sw_results[d]);
  }
  /* Alone (a plain execute is a launch of its one device), device 1 waits for device 0, which never runs. */
  neuronmem_execute_args_t sa;
  memset(&sa, 0, sizeof sa);
  sa.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
  sa.executable = sw;
  sa.device = devices[1];
  sa.arguments = &sw_args[1];
  sa.num_arguments = 1;
  neuronmem_buffer_t* alone = NULL;
  neuronmem_event_t* alone_done = NULL;
  CHECK(code_of(neuronmem_executable_execute(&sa, &alone, &alone_done, NULL)) == NEURONMEM_STATUS_OK);
  neuronmem_status_t* alone_error = neuronmem_event_wait(alone_done, -1);
  CHECK(neuronmem_status_code(alone_error) == NEURONMEM_STATUS_FAILED_PRECONDITION);
  CHECK(contains(neuronmem_status_message(alone_error),
                 "'stablehlo.recv' on channel 3: process (1, 0) waits for data from (0, 0), which never runs "
                 "(device 0 is not part of this launch, which runs device 1)"));
  neuronmem_status_free(alone_error);
  neuronmem_event_destroy(alone_done);
  neuronmem_buffer_destroy(alone);
  for (int d = 0; d < 2; ++d) neuronmem_buffer_destroy(sw_args[d]);
  neuronmem_executable_destroy(sw);

  /* Host transfers through the launch's callbacks, by channel id. */
  neuronmem_executable_t* hx = NULL;
  CHECK(code_of(neuronmem_executable_compile_text(client, kHost, sizeof kHost - 1, &co, &hx)) == NEURONMEM_STATUS_OK);
  if (!hx) return 1;
  float sums[2] = {0, 0};
  const neuronmem_host_callback_t sends[1] = {{5, on_send, sums}};
  const neuronmem_host_callback_t recvs[1] = {{6, on_recv, NULL}};
  neuronmem_buffer_t* hx_args[2] = {NULL, NULL};
  for (int d = 0; d < 2; ++d) {
    neuronmem_memory_t* m = NULL;
    CHECK(code_of(neuronmem_executable_parameter_memory(hx, devices[d], 0, &m)) == NEURONMEM_STATUS_OK);
    const float v[4] = {1, 2, 3, (float)d};
    hx_args[d] = upload(client, m, v);
  }
  la.executable = hx;
  la.arguments = hx_args;
  la.send_callbacks = sends;
  la.num_send_callbacks = 1;
  /* Without the recv callback: refused before anything runs. */
  neuronmem_buffer_t* hx_results[2] = {NULL, NULL};
  CHECK(code_of(neuronmem_executable_execute_devices(&la, hx_results, launch_done, NULL)) ==
        NEURONMEM_STATUS_INVALID_ARGUMENT);
  CHECK(hx_results[0] == NULL && launch_done[0] == NULL && sums[0] == 0);
  la.recv_callbacks = recvs;
  la.num_recv_callbacks = 1;
  CHECK(code_of(neuronmem_executable_execute_devices(&la, hx_results, launch_done, NULL)) == NEURONMEM_STATUS_OK);
  for (int d = 0; d < 2; ++d) {
    CHECK(code_of(neuronmem_event_wait(launch_done[d], -1)) == NEURONMEM_STATUS_OK);
    read4(hx_results[d], out);
    const float h = 100.0f * (float)(d + 1);
    CHECK(out[0] == 1 + h && out[3] == (float)d + h);
    CHECK(sums[d] == 6 + (float)d);
    neuronmem_event_destroy(launch_done[d]);
    neuronmem_buffer_destroy(hx_results[d]);
    neuronmem_buffer_destroy(hx_args[d]);
  }
  neuronmem_executable_destroy(hx);
  CHECK(props.num_partitions == 1);

  neuronmem_execution_destroy(run);
  neuronmem_event_destroy(done);
  for (int i = 0; i < 2; ++i) {
    neuronmem_buffer_destroy(results[i]);
    neuronmem_buffer_destroy(args[i]);
  }
  neuronmem_buffer_destroy(misplaced);
  neuronmem_executable_destroy(exe);
  return finish(client, "c executable");
}
