// Host compute: `_xla_compute_type = "host"` on an op, a func.call or a func.func runs in pinned_host
// memory. The statistics show exactly the moves the boundary needs (device values the host code reads moved in
// once before the outermost marked op, host values device code reads moved back once), and the results equal
// a run of the same graph with the marks turned into a compute type the executor ignores.
#include <map>
#include <mutex>
#include <tuple>

#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

constexpr neuronmem_memory_kind_t D = NEURONMEM_MEMORY_KIND_DEVICE;
constexpr neuronmem_memory_kind_t P = NEURONMEM_MEMORY_KIND_PINNED_HOST;
constexpr neuronmem_memory_kind_t U = NEURONMEM_MEMORY_KIND_UNPINNED_HOST;

// (from, to) -> {explicit transfers, bytes}
using Moves = std::map<std::pair<neuronmem_memory_kind_t, neuronmem_memory_kind_t>, std::pair<uint64_t, uint64_t>>;

// The same graph without host compute: JAX's compute_on('device') writes "dense", which the executor ignores.
std::string WithoutHostCompute(std::string text) {
  const std::string mark = "_xla_compute_type = \"host\"";
  for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at))
    text.replace(at, mark.size(), "_xla_compute_type = \"dense\"");
  return text;
}

class HostComputeTest : public ExecTest {
 protected:
  struct Outcome {
    std::vector<std::vector<float>> outputs;
    Moves moves;
    uint64_t implicit = 0;
    neuronmem_executable_properties_t props{};
  };

  // Compiles `text`, runs it once on `args` (f32, uploaded to `kinds`), and reads every output and the moves.
  Outcome Run(const std::string& text, const std::vector<std::vector<float>>& args,
              const std::vector<std::vector<int64_t>>& dims, std::vector<neuronmem_memory_kind_t> kinds = {}) {
    Outcome o;
    neuronmem_executable_t* e = nullptr;
    EXPECT_OK(Compile(text, &e));
    if (!e) return o;
    o.props.struct_size = sizeof o.props;
    EXPECT_OK(neuronmem_executable_properties(e, &o.props));
    std::vector<neuronmem_buffer_t*> in;
    for (size_t i = 0; i < args.size(); ++i)
      in.push_back(Upload(args[i], dims[i], Memory(i < kinds.size() ? kinds[i] : D)));
    std::vector<neuronmem_buffer_t*> results;
    neuronmem_event_t* done = nullptr;
    neuronmem_execution_t* x = nullptr;
    EXPECT_OK(Execute(e, in, &results, &done, &x));
    if (!done) return o;
    EXPECT_OK(neuronmem_event_wait(done, -1));
    for (size_t k = 0; k < results.size(); ++k) {
      neuronmem_executable_value_t v{};
      v.struct_size = sizeof v;
      EXPECT_OK(neuronmem_executable_output(e, k, &v));
      size_t n = 1;
      for (size_t d = 0; d < v.num_dims; ++d) n *= static_cast<size_t>(v.dims[d]);
      o.outputs.push_back(Read(results[k], n));
      EXPECT_EQ(KindOf(results[k]), v.memory_kind) << "output " << k;
    }
    for (neuronmem_memory_kind_t from : {D, P, U}) {
      for (neuronmem_memory_kind_t to : {D, P, U}) {
        const neuronmem_transfer_counts_t c = Pair(x, from, to);
        if (c.explicit_transfers || c.explicit_bytes) o.moves[{from, to}] = {c.explicit_transfers, c.explicit_bytes};
        o.implicit += c.implicit_transfers;
      }
    }
    neuronmem_event_destroy(done);
    neuronmem_execution_destroy(x);
    return o;
  }

  // Runs `text` and its copy without host compute; the results must be the same, bit for bit.
  Outcome RunBoth(const std::string& text, const std::vector<std::vector<float>>& args,
                  const std::vector<std::vector<int64_t>>& dims, std::vector<neuronmem_memory_kind_t> kinds = {}) {
    Outcome host = Run(text, args, dims, kinds);
    Outcome device = Run(WithoutHostCompute(text), args, dims, kinds);
    EXPECT_EQ(host.outputs, device.outputs);
    EXPECT_EQ(host.implicit, 0u);
    return host;
  }
};

// What JAX writes for `compute_on('device_host')` inside jit: a call of a private function marked on the call,
// each output wrapped in annotate_device_placement to its memory kind (here device).
const char kJaxComputeOn[] = R"(
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x2xf32>, %arg1: tensor<8x2xf32>)
      -> (tensor<8x2xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8x2xf32>
    %1 = call @compute_on(%0, %arg1) {mhlo.frontend_attributes = {_xla_compute_type = "host"}}
        : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
    %2 = stablehlo.custom_call @annotate_device_placement(%1) {has_side_effect = true,
        mhlo.frontend_attributes = {_xla_buffer_placement = "device"}} : (tensor<8x2xf32>) -> tensor<8x2xf32>
    %3 = stablehlo.multiply %2, %2 : tensor<8x2xf32>
    return %3 : tensor<8x2xf32>
  }
  func.func private @compute_on(%arg0: tensor<8x2xf32>, %arg1: tensor<8x2xf32>) -> tensor<8x2xf32> {
    %0 = stablehlo.multiply %arg0, %arg1 : tensor<8x2xf32>
    %1 = stablehlo.sine %0 : tensor<8x2xf32>
    return %1 : tensor<8x2xf32>
  }
}
)";

std::vector<float> Ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i) - 1.5f;
  return v;
}

TEST_F(HostComputeTest, JaxComputeOnMovesOperandsInAndTheResultBack) {
  const Outcome o = RunBoth(kJaxComputeOn, {Ramp(16, 0.25f), Ramp(16, -0.5f)}, {{8, 2}, {8, 2}});
  // Both operands moved into pinned_host before the call (64 bytes each); the result moved back by the
  // annotation, the placement call's own move.
  EXPECT_EQ(o.moves, (Moves{{{D, P}, {2, 128}}, {{P, D}, {1, 64}}}));
  EXPECT_EQ(o.props.num_explicit_moves, 3u);  // the annotation and the two copies in
  EXPECT_GT(o.props.peak_host_bytes, 0u);     // the callee's values live in pinned_host
  const Outcome plain = Run(WithoutHostCompute(kJaxComputeOn), {Ramp(16, 0.25f), Ramp(16, -0.5f)}, {{8, 2}, {8, 2}});
  EXPECT_EQ(plain.props.peak_host_bytes, 0u);
  EXPECT_EQ(plain.moves, Moves{});  // a device -> device annotation is no transfer
}

// Ops marked one by one (XLA's own frontend attribute on an instruction): each device value the host ops read
// is moved in once, however many host ops read it; each host value device ops read is moved back once.
TEST_F(HostComputeTest, MarkedOpsMoveEachValueOncePerSide) {
  const char text[] = R"(
func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = stablehlo.multiply %a, %a {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : tensor<4xf32>
  %1 = stablehlo.add %0, %a {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : tensor<4xf32>
  %2 = stablehlo.subtract %1, %a : tensor<4xf32>
  %3 = stablehlo.negate %1 : tensor<4xf32>
  %4 = stablehlo.multiply %2, %3 : tensor<4xf32>
  return %4, %1 : tensor<4xf32>, tensor<4xf32>
}
)";
  const Outcome o = RunBoth(text, {{1, -2, 3.5f, 0.25f}}, {{4}});
  // %a in once; %1 back once, for the subtract, the negate and device output 1.
  EXPECT_EQ(o.moves, (Moves{{{D, P}, {1, 16}}, {{P, D}, {1, 16}}}));
  EXPECT_EQ(o.props.num_explicit_moves, 2u);  // the two copies compiled in
}

// A result the graph returns as a pinned_host output is where it must be: neither moved back to the device
// nor moved again into the output (JAX's out_memory_spaces = host writes the annotation to pinned_host).
TEST_F(HostComputeTest, AResultReturnedInPinnedHostIsNotMovedTwice) {
  const char text[] = R"(
func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32> {mhlo.memory_kind = "pinned_host"},
                                      tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, tensor<4xf32>) {
  %0 = func.call @host_fn(%a) {mhlo.frontend_attributes = {_xla_compute_type = "host"}}
      : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.custom_call @annotate_device_placement(%0) {has_side_effect = true,
      mhlo.frontend_attributes = {_xla_buffer_placement = "pinned_host"}} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
func.func private @host_fn(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.exponential %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
  const Outcome o = RunBoth(text, {{0, 1, -1, 0.5f}}, {{4}});
  // In: %a once. Out: only output 2, a device output, receives the value from pinned_host.
  EXPECT_EQ(o.moves, (Moves{{{D, P}, {1, 16}}, {{P, D}, {1, 16}}}));
}

// A function called from device code and from host code is compiled for each side: the device call computes
// in device memory, the host call in pinned_host; a function marked itself runs on the host at every call.
TEST_F(HostComputeTest, AFunctionCalledFromBothSidesIsCompiledForEach) {
  const char text[] = R"(
func.func @main(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %0 = func.call @f(%a) : (tensor<16xf32>) -> tensor<16xf32>
  %1 = func.call @f(%a) {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : (tensor<16xf32>) -> tensor<16xf32>
  %2 = func.call @g(%a, %b) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %3 = func.call @g(%0, %b) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %4 = stablehlo.add %0, %1 : tensor<16xf32>
  %5 = stablehlo.add %2, %3 : tensor<16xf32>
  %6 = stablehlo.multiply %4, %5 : tensor<16xf32>
  return %6 : tensor<16xf32>
}
func.func private @f(%x: tensor<16xf32>) -> tensor<16xf32> {
  %0 = stablehlo.exponential %x : tensor<16xf32>
  %1 = func.call @h(%0) : (tensor<16xf32>) -> tensor<16xf32>
  return %1 : tensor<16xf32>
}
func.func private @h(%x: tensor<16xf32>) -> tensor<16xf32> {
  %0 = stablehlo.tanh %x : tensor<16xf32>
  return %0 : tensor<16xf32>
}
func.func private @g(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32>
    attributes {mhlo.frontend_attributes = {_xla_compute_type = "host"}} {
  %0 = stablehlo.multiply %x, %y : tensor<16xf32>
  return %0 : tensor<16xf32>
}
)";
  const Outcome o = RunBoth(text, {Ramp(16, 0.125f), Ramp(16, 0.5f)}, {{16}, {16}});
  // In: %a (once for the host call of @f and the first call of @g), %b (once for both calls of @g), %0 (the
  // device result of @f, for the second call of @g): 3 x 64 bytes. Back: %1, %2, %3 for the adds.
  EXPECT_EQ(o.moves, (Moves{{{D, P}, {3, 192}}, {{P, D}, {3, 192}}}));
}

// A marked while loop runs on the host with everything inside it: its operands and the device value its body
// reads from outside are moved in once before the loop, not once per iteration. A marked op inside a device
// loop moves on every iteration: the counts are per execution.
TEST_F(HostComputeTest, LoopsMoveOncePerExecutionOfTheCodeAround) {
  const char text[] = R"(
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = "stablehlo.while"(%c0, %a) ({
  ^bb0(%i: tensor<i32>, %acc: tensor<4xf32>):
    %n = stablehlo.constant dense<5> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }, {
  ^bb0(%i: tensor<i32>, %acc: tensor<4xf32>):
    %one = stablehlo.constant dense<1> : tensor<i32>
    %i1 = stablehlo.add %i, %one : tensor<i32>
    %s = stablehlo.multiply %acc, %b : tensor<4xf32>
    stablehlo.return %i1, %s : tensor<i32>, tensor<4xf32>
  }) {mhlo.frontend_attributes = {_xla_compute_type = "host"}}
      : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>)
  %1:2 = "stablehlo.while"(%c0, %a) ({
  ^bb0(%i: tensor<i32>, %acc: tensor<4xf32>):
    %n = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }, {
  ^bb0(%i: tensor<i32>, %acc: tensor<4xf32>):
    %one = stablehlo.constant dense<1> : tensor<i32>
    %i1 = stablehlo.add %i, %one : tensor<i32>
    %s = stablehlo.add %acc, %b {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : tensor<4xf32>
    stablehlo.return %i1, %s : tensor<i32>, tensor<4xf32>
  }) : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>)
  %2 = stablehlo.add %0#1, %1#1 : tensor<4xf32>
  return %2, %0#1 : tensor<4xf32>, tensor<4xf32>
}
)";
  const Outcome o = RunBoth(text, {{1, 2, 3, 4}, {0.5f, 2, -1, 1}}, {{4}, {4}});
  // Host loop: %a and %b in once (the counter starts from a constant). Device loop, 3 iterations: %acc in
  // (%b's copy from before the host loop serves again) and %s back (the loop's return is a device read), each
  // time. Then the host loop's result back once, for the add and for output 1 (device).
  EXPECT_EQ(o.moves, (Moves{{{D, P}, {2 + 3, (2 + 3) * 16}}, {{P, D}, {3 + 1, (3 + 1) * 16}}}));
}

// An entry function marked itself runs entirely on the host: device arguments are moved in, pinned_host ones
// read in place, and its device output is filled from pinned_host by the output's move.
TEST_F(HostComputeTest, AMarkedEntryRunsOnTheHost) {
  const char text[] = R"(
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) -> tensor<4xf32>
    attributes {mhlo.frontend_attributes = {_xla_compute_type = "host"}} {
  %0 = stablehlo.multiply %a, %b : tensor<4xf32>
  %1 = stablehlo.add %0, %b : tensor<4xf32>
  return %1 : tensor<4xf32>
}
)";
  const Outcome o = RunBoth(text, {{1, 2, 3, 4}, {2, 2, 0.5f, -1}}, {{4}, {4}}, {D, P});
  EXPECT_EQ(o.moves, (Moves{{{D, P}, {1, 16}}, {{P, D}, {1, 16}}}));
}

// Host code reads host arguments where they lie (pinned_host, unpinned_host): nothing moves for them. Host code
// in a function called from device code cannot know at compile time that the function's argument lies in host
// memory: it copies it, which within pinned_host is no transfer; the function's return, a device read, moves
// the value back.
TEST_F(HostComputeTest, HostArgumentsAreReadInPlace) {
  const char text[] = R"(
func.func @main(%a: tensor<4xf32> {mhlo.memory_kind = "pinned_host"},
                %b: tensor<4xf32> {mhlo.memory_kind = "unpinned_host"})
    -> (tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) {
  %0 = stablehlo.multiply %a, %b {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : tensor<4xf32>
  %1 = func.call @dev(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
func.func private @dev(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.sqrt %x {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
  const Outcome o = RunBoth(text, {{1, 4, 9, 16}, {2, 2, 3, 0.5f}}, {{4}, {4}}, {P, U});
  // @dev's result back to the device (its return), then into pinned_host output 1 (the output's move).
  EXPECT_EQ(o.moves, (Moves{{{P, D}, {1, 16}}, {{D, P}, {1, 16}}}));
}

// Placement calls inside host code are honoured: MoveToDevice puts its result in device memory (a counted
// move), and host code reading that result reads a copy moved back in. Kernels show where their operands lie.
TEST_F(HostComputeTest, MovesInsideHostCodeAreHonoured) {
  struct Seen {
    std::mutex mu;
    std::vector<neuronmem_memory_kind_t> kinds;
  } seen;
  RegisterKernel(
      "probe",
      [](const neuronmem_kernel_call_t* call, void* user) -> neuronmem_status_t* {
        auto* s = static_cast<Seen*>(user);
        std::lock_guard<std::mutex> lock(s->mu);
        s->kinds.push_back(call->inputs[0].memory_kind);
        std::memcpy(call->outputs[0].data, call->inputs[0].data, 16);
        return nullptr;
      },
      &seen);
  const char text[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @on_host(%a) {mhlo.frontend_attributes = {_xla_compute_type = "host"}}
      : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.custom_call @probe(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func private @on_host(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @probe(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.custom_call @MoveToDevice(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = stablehlo.custom_call @probe(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = stablehlo.add %2, %1 : tensor<4xf32>
  return %3 : tensor<4xf32>
}
)";
  const Outcome o = Run(text, {{1, 2, 3, 4}}, {{4}});
  EXPECT_EQ(o.outputs, (std::vector<std::vector<float>>{{2, 4, 6, 8}}));
  // Host probe of %x, host probe of %1 (moved back in), device probe of the call's result (moved back).
  EXPECT_EQ(seen.kinds, (std::vector<neuronmem_memory_kind_t>{P, P, D}));
  // In: %a, then %1 once (the probe and the add share the copy). Out: MoveToDevice, the call's result.
  EXPECT_EQ(o.moves, (Moves{{{D, P}, {2, 32}}, {{P, D}, {2, 32}}}));
}

// A shape operand device code computes from constants is still known when host code reads it through its copy.
TEST_F(HostComputeTest, ShapesComputedOnTheDeviceReachHostCode) {
  const char text[] = R"(
func.func @main(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %c = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %s = stablehlo.add %c, %c : tensor<2xi64>
  %0 = "stablehlo.dynamic_broadcast_in_dim"(%x, %s) {broadcast_dimensions = array<i64: 1>,
      mhlo.frontend_attributes = {_xla_compute_type = "host"}} : (tensor<4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %1 = stablehlo.reshape %0 : (tensor<?x4xf32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
)";
  const Outcome o = RunBoth(text, {{1, 2, 3, 4}}, {{4}});
  EXPECT_EQ(o.outputs, (std::vector<std::vector<float>>{{1, 2, 3, 4, 1, 2, 3, 4}}));
  // In: %x and the shape; back: the broadcast for the reshape.
  EXPECT_EQ(o.moves, (Moves{{{D, P}, {2, 16 + 16}}, {{P, D}, {1, 32}}}));
}

// An op failing inside host code fails the execution with its location; the host workspace is freed and the
// client runs the graph again.
TEST_F(HostComputeTest, AFailureInsideHostCodeNamesItsOp) {
  const char text[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @checked(%a) {mhlo.frontend_attributes = {_xla_compute_type = "host"}}
      : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @checked(%x: tensor<4xf32>) -> tensor<4xf32> {
  %ones = stablehlo.constant dense<1.0> : tensor<4xf32>
  stablehlo.custom_call @check.expect_eq(%x, %ones) : (tensor<4xf32>, tensor<4xf32>) -> ()
  %0 = stablehlo.add %x, %ones : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(text, &e));
  neuronmem_memory_stats_t before{};
  before.struct_size = NEURONMEM_MEMORY_STATS_STRUCT_SIZE;
  ASSERT_OK(neuronmem_memory_stats(Memory(P), &before));
  for (const std::vector<float>& input : {std::vector<float>{1, 1, 5, 1}, std::vector<float>{1, 1, 1, 1}}) {
    neuronmem_buffer_t* a = Upload(input, {4}, Memory(D));
    std::vector<neuronmem_buffer_t*> results;
    neuronmem_event_t* done = nullptr;
    ASSERT_OK(Execute(e, {a}, &results, &done));
    const Result r = Take(neuronmem_event_wait(done, -1));
    neuronmem_event_destroy(done);
    if (input[2] == 5) {
      EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
      EXPECT_NE(r.message.find("test.mlir:9:3: 'stablehlo.custom_call' @check.expect_eq"), std::string::npos)
          << r.message;
      EXPECT_NE(r.message.find("at index [2]"), std::string::npos) << r.message;
    } else {
      EXPECT_EQ(r.code, NEURONMEM_STATUS_OK) << r.message;
      EXPECT_EQ(Read(results[0], 4), std::vector<float>(4, 2.0f));
    }
    neuronmem_memory_stats_t after{};
    after.struct_size = NEURONMEM_MEMORY_STATS_STRUCT_SIZE;
    ASSERT_OK(neuronmem_memory_stats(Memory(P), &after));
    EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);  // the host workspace went back
  }
}

// The manifest reports every host-compute region, including calls of marked functions and a marked entry, and
// the result of a host call is pinned_host (a move of it starts there).
TEST_F(HostComputeTest, TheManifestReportsEveryRegion) {
  auto regions = [](const std::string& text, neuronmem_manifest_t** m) {
    std::vector<std::string> out;
    EXPECT_OK(neuronmem_manifest_load_text(text.data(), text.size(), nullptr, m));
    neuronmem_manifest_counts_t c{};
    c.struct_size = sizeof c;
    EXPECT_OK(neuronmem_manifest_counts(*m, &c));
    for (size_t i = 0; i < c.num_host_compute; ++i) {
      neuronmem_string_t op{}, fn{};
      uint32_t line = 0, col = 0;
      EXPECT_OK(neuronmem_manifest_host_compute(*m, i, &op, &fn, &line, &col));
      out.push_back(std::string(op.data, op.size) + " in @" + std::string(fn.data, fn.size) + ":" +
                    std::to_string(line));
    }
    return out;
  };
  neuronmem_manifest_t* m = nullptr;
  EXPECT_EQ(regions(kJaxComputeOn, &m), std::vector<std::string>{"func.call in @main:6"});
  neuronmem_manifest_move_t mv{};
  mv.struct_size = sizeof mv;
  ASSERT_OK(neuronmem_manifest_move(m, 0, &mv));
  EXPECT_EQ(std::string(mv.from_kind.data, mv.from_kind.size), "pinned_host");  // the call's result
  neuronmem_manifest_destroy(m);
  const char calls[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @g(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.negate %0 {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : tensor<4xf32>
  %2 = func.call @g(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
func.func private @g(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {mhlo.frontend_attributes = {_xla_compute_type = "host"}} {
  return %x : tensor<4xf32>
}
)";
  EXPECT_EQ(regions(calls, &m),
            (std::vector<std::string>{"func.call in @main:3", "stablehlo.negate in @main:4", "func.call in @main:5"}));
  neuronmem_manifest_destroy(m);
  const char entry[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32>
    attributes {mhlo.frontend_attributes = {_xla_compute_type = "host"}} {
  return %a : tensor<4xf32>
}
)";
  EXPECT_EQ(regions(entry, &m), std::vector<std::string>{"func.func in @main:2"});
  neuronmem_manifest_destroy(m);
}

}  // namespace
}  // namespace neuronmem_test
