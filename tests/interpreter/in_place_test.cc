// In-place updates (docs/executor.md, "In-place updates"): scatter, dynamic_update_slice and reshape write into
// their operand's memory at its last use when that memory is the program's (a planned intermediate) or a donated
// argument's, and never into anything else. Every case that must not be overwritten has a test whose values
// would be wrong, or whose plan would show it, if it were.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "interp_test_util.h"
#include "stablehlo/parser.h"

namespace neuronmem::interp {
namespace {

// `%name = scatter(%operand, %indices, %updates)` adding each update into one element of an f32[n] operand
// (indices [m, 1], updates [m]).
std::string ScatterAdd(const std::string& name, const std::string& operand, const std::string& indices,
                       const std::string& updates, int n, int m) {
  const std::string t = "tensor<" + std::to_string(n) + "xf32>";
  const std::string it = "tensor<" + std::to_string(m) + "x1xi32>";
  const std::string ut = "tensor<" + std::to_string(m) + "xf32>";
  return "  %" + name + " = \"stablehlo.scatter\"(%" + operand + ", %" + indices + ", %" + updates +
         ") <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [0], "
         "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({\n"
         "  ^bb0(%p_" +
         name + ": tensor<f32>, %q_" + name + ": tensor<f32>):\n    %sum_" + name + " = stablehlo.add %p_" + name +
         ", %q_" + name + " : tensor<f32>\n    stablehlo.return %sum_" + name + " : tensor<f32>\n  }) : (" + t + ", " +
         it + ", " + ut + ") -> " + t + "\n";
}

std::vector<float> Cache() { return {0.5f, 1.25f, -3.0f, 4.0f, 1e-3f, 6.0f, 7.5f, -8.0f}; }

// Compiles `text` with donations; runs it on views of the caller's vectors.
class InPlace : public ::testing::Test {
 protected:
  // Result allocator: result k may be given memory of the caller's (the executor hands out a donated
  // argument's memory for its donation's result), the others come from the heap.
  class Allocator final : public ResultAllocator {
   public:
    std::map<size_t, void*> given;
    void* Allocate(size_t index, size_t bytes) override {
      auto it = given.find(index);
      return it != given.end() ? it->second : host_.Allocate(index, bytes);
    }

   private:
    HostResultAllocator host_;
  };

  void Compile(const std::string& text, std::vector<int32_t> donations = {}, std::vector<uint8_t> spaces = {}) {
    text_ = text;
    modules_.clear();
    ASSERT_FALSE(stablehlo::ParseModules(text_, "test.mlir", &modules_));
    CompileOptions o;
    o.filename = "test.mlir";
    o.donations = std::move(donations);
    o.param_spaces = std::move(spaces);
    Status s = interp::Compile(modules_[0], o, &program_);
    ASSERT_FALSE(s) << s->message;
  }

  // Runs on f32 vectors (i32 ones for indices): `donated` per argument (empty: none); result k's memory is
  // argument donate_into[k]'s when given (as the executor does for a donated argument).
  std::vector<std::vector<float>> Run(std::vector<std::vector<float>*> f32, std::vector<std::vector<int32_t>*> s32,
                                      const std::vector<bool>& donated = {},
                                      const std::map<size_t, size_t>& donate_into = {},
                                      std::vector<const void*>* result_ptrs = nullptr) {
    std::vector<TensorView> args;
    dims_.clear();
    dims_.reserve(f32.size() + s32.size());
    size_t fi = 0, si = 0;
    for (const ValueSpec& p : program_->parameters()) {
      dims_.push_back(p.dims);
      TensorView v;
      v.type = p.type;
      v.dims = dims_.back().data();
      v.rank = p.dims.size();
      v.data = p.type == ElementType::kF32 ? static_cast<void*>(f32[fi++]->data()) : s32[si++]->data();
      args.push_back(v);
    }
    Allocator alloc;
    for (const auto& [k, a] : donate_into) alloc.given[k] = args[a].data;
    std::unique_ptr<bool[]> mask(new bool[args.size() + 1]());
    for (size_t i = 0; i < donated.size(); ++i) mask[i] = donated[i];
    Program::RunOptions options;
    options.donated = donated.empty() ? nullptr : mask.get();
    std::vector<TensorView> results;
    Status s = program_->Run(args.data(), args.size(), &alloc, &results, options);
    EXPECT_FALSE(s) << s->message;
    std::vector<std::vector<float>> out(s ? program_->results().size() : 0);  // empty results on failure
    for (const TensorView& v : results) {
      const float* p = static_cast<const float*>(v.data);
      out.emplace_back(p, p + v.NumElements());
      if (result_ptrs) result_ptrs->push_back(v.data);
    }
    return out;
  }

  // Runs a program of (%c: f32[8], %i: i32[2, 1], %u: f32[2]) on %c = Cache(), donating %c when `donate`;
  // *cache receives %c's memory afterwards.
  std::vector<std::vector<float>> RunOnCache(std::vector<float> u, std::vector<int32_t> i, bool donate,
                                             std::vector<float>* cache = nullptr) {
    std::vector<float> c = Cache();
    auto out = Run({&c, &u}, {&i}, {donate, false, false});
    if (cache) *cache = c;
    return out;
  }

  std::string text_;
  std::vector<stablehlo::Module> modules_;
  std::unique_ptr<Program> program_;
  std::vector<std::vector<int64_t>> dims_;
};

const std::string kChain =
    "func.func @main(%c: tensor<8xf32>, %i: tensor<2x1xi32>, %u: tensor<2xf32>) -> tensor<8xf32> {\n" +
    ScatterAdd("s1", "c", "i", "u", 8, 2) + ScatterAdd("s2", "s1", "i", "u", 8, 2) +
    "  func.return %s2 : tensor<8xf32>\n}\n";

TEST_F(InPlace, DonatedArgumentIsUpdatedWhereItLies) {
  Compile(kChain);  // no donation: only the intermediate %s1 is updated in place by the second scatter
  EXPECT_EQ(program_->num_in_place(), 1u);
  EXPECT_FALSE(program_->overwrites_parameter(0));
  const size_t kept_workspace = program_->workspace_bytes();
  Compile(kChain, {0, -1, -1});
  EXPECT_EQ(program_->num_in_place(), 2u);
  EXPECT_TRUE(program_->overwrites_parameter(0));
  EXPECT_LT(program_->workspace_bytes(), kept_workspace);  // the chain lives in the argument: nothing planned
  std::vector<float> c = Cache(), u = {10, 20};
  std::vector<int32_t> i = {2, 6};
  std::vector<const void*> ptrs;
  const auto out = Run({&c, &u}, {&i}, {true, false, false}, {{0, 0}}, &ptrs);
  const std::vector<float> expect = {0.5f, 1.25f, 17.0f, 4.0f, 1e-3f, 6.0f, 47.5f, -8.0f};
  EXPECT_EQ(out[0], expect);
  EXPECT_EQ(ptrs[0], c.data());
  EXPECT_EQ(c, expect);  // written where it lies
}

TEST_F(InPlace, KeptArgumentIsCopiedOnceAndResultsAreBitIdentical) {
  std::vector<float> u = {0.1f, 0.7f};
  std::vector<int32_t> i = {3, 3};
  Compile(kChain);
  std::vector<float> c0 = Cache();
  const auto plain = Run({&c0, &u}, {&i});
  EXPECT_EQ(c0, Cache());
  Compile(kChain, {0, -1, -1});
  // Not donated this run (no mask, or a mask that keeps it: PJRT's non_donatable): the argument stays as it was.
  for (const std::vector<bool>& mask : {std::vector<bool>{}, std::vector<bool>{false, false, false}}) {
    std::vector<float> c = Cache();
    std::vector<const void*> ptrs;
    const auto out = Run({&c, &u}, {&i}, mask, {}, &ptrs);
    EXPECT_EQ(c, Cache());
    EXPECT_NE(ptrs[0], c.data());
    ASSERT_EQ(out[0].size(), plain[0].size());
    EXPECT_EQ(std::memcmp(out[0].data(), plain[0].data(), out[0].size() * 4), 0);
  }
  std::vector<float> c = Cache();
  const auto donated = Run({&c, &u}, {&i}, {true, false, false}, {{0, 0}});
  EXPECT_EQ(std::memcmp(donated[0].data(), plain[0].data(), plain[0].size() * 4), 0);
}

TEST_F(InPlace, ArgumentWithoutDonationIsNeverWritten) {
  Compile(kChain, {-1, -1, -1});
  EXPECT_EQ(program_->num_in_place(), 1u);  // %s1 -> %s2 only
  EXPECT_FALSE(program_->overwrites_parameter(0));
  std::vector<float> c;
  const auto out = RunOnCache({1, 1}, {0, 1}, true, &c);  // a run's donation cannot make it donatable
  EXPECT_EQ(c, Cache());
  EXPECT_EQ(out[0], (std::vector<float>{2.5f, 3.25f, -3.0f, 4.0f, 1e-3f, 6.0f, 7.5f, -8.0f}));
}

TEST_F(InPlace, ArgumentInAnotherMemorySpaceIsNotWritten) {
  // A donated argument in space 1 (pinned_host) while the scatter's result lives in space 0 (device).
  Compile(kChain, {0, -1, -1}, {1, 0, 0});
  EXPECT_FALSE(program_->overwrites_parameter(0));
  EXPECT_EQ(program_->num_in_place(), 1u);
  std::vector<float> c;
  const auto out = RunOnCache({1, 1}, {0, 1}, true, &c);
  EXPECT_EQ(c, Cache());
  EXPECT_EQ(out[0], (std::vector<float>{2.5f, 3.25f, -3.0f, 4.0f, 1e-3f, 6.0f, 7.5f, -8.0f}));
}

TEST_F(InPlace, ValueReadLaterIsNotOverwritten) {
  // An intermediate, and a donated argument, each read again after the scatter that updates it.
  Compile(
      "func.func @main(%c: tensor<8xf32>, %i: tensor<2x1xi32>, %u: tensor<2xf32>) -> (tensor<8xf32>, "
      "tensor<8xf32>) {\n"
      "  %a = stablehlo.add %c, %c : tensor<8xf32>\n" +
          ScatterAdd("s", "a", "i", "u", 8, 2) + ScatterAdd("t", "c", "i", "u", 8, 2) +
          "  %r = stablehlo.add %a, %s : tensor<8xf32>\n"
          "  %q = stablehlo.add %c, %t : tensor<8xf32>\n"
          "  func.return %r, %q : tensor<8xf32>, tensor<8xf32>\n}\n",
      {0, -1, -1});
  EXPECT_EQ(program_->num_in_place(), 0u);
  const auto out = RunOnCache({100, 1000}, {1, 4}, true);
  const std::vector<float> base = Cache();
  std::vector<float> r(8), q(8);
  for (size_t k = 0; k < 8; ++k) {
    const float add = k == 1 ? 100.0f : k == 4 ? 1000.0f : 0.0f;
    r[k] = 2 * base[k] + (2 * base[k] + add);
    q[k] = base[k] + (base[k] + add);
  }
  EXPECT_EQ(out[0], r);
  EXPECT_EQ(out[1], q);
}

TEST_F(InPlace, ConstantIsNotOverwritten) {
  // The program's constant is read by every run: a second run must see it unchanged.
  Compile(
      "func.func @main(%i: tensor<2x1xi32>, %u: tensor<2xf32>) -> tensor<8xf32> {\n"
      "  %k = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>\n" +
      ScatterAdd("s", "k", "i", "u", 8, 2) + "  func.return %s : tensor<8xf32>\n}\n");
  EXPECT_EQ(program_->num_in_place(), 0u);
  std::vector<float> u = {10, 10};
  std::vector<int32_t> i = {0, 7};
  const auto first = Run({&u}, {&i});
  const auto second = Run({&u}, {&i});
  EXPECT_EQ(first[0], (std::vector<float>{11, 2, 3, 4, 5, 6, 7, 18}));
  EXPECT_EQ(second[0], first[0]);
}

TEST_F(InPlace, CalleeParameterIsNotOverwritten) {
  // The callee's parameter is its caller's value (here a donated argument the caller reads after the call).
  Compile("func.func private @f(%p: tensor<8xf32>, %i: tensor<2x1xi32>, %u: tensor<2xf32>) -> tensor<8xf32> {\n" +
              ScatterAdd("s", "p", "i", "u", 8, 2) +
              "  func.return %s : tensor<8xf32>\n}\n"
              "func.func @main(%c: tensor<8xf32>, %i: tensor<2x1xi32>, %u: tensor<2xf32>) -> tensor<8xf32> {\n"
              "  %b = func.call @f(%c, %i, %u) : (tensor<8xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<8xf32>\n"
              "  %r = stablehlo.subtract %b, %c : tensor<8xf32>\n"
              "  func.return %r : tensor<8xf32>\n}\n",
          {0, -1, -1});
  EXPECT_EQ(program_->num_in_place(), 0u);
  const auto out = RunOnCache({3, 5}, {0, 5}, true);
  EXPECT_EQ(out[0], (std::vector<float>{3, 0, 0, 0, 0, 5, 0, 0}));
}

TEST_F(InPlace, RegionParameterIsNotOverwritten) {
  // A named computation's body runs on its operand's memory: its argument is the operand, read afterwards.
  Compile(
      "func.func @main(%c: tensor<8xf32>, %i: tensor<2x1xi32>, %u: tensor<2xf32>) -> tensor<8xf32> {\n"
      "  %a = stablehlo.add %c, %c : tensor<8xf32>\n"
      "  %n = sdy.named_computation<\"stage\">(%a, %i, %u) (%x: tensor<8xf32>, %j: tensor<2x1xi32>, %v: "
      "tensor<2xf32>) {\n" +
      ScatterAdd("s", "x", "j", "v", 8, 2) +
      "    sdy.return %s : tensor<8xf32>\n"
      "  } : (tensor<8xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<8xf32>\n"
      "  %r = stablehlo.subtract %n, %a : tensor<8xf32>\n"
      "  func.return %r : tensor<8xf32>\n}\n");
  EXPECT_EQ(program_->num_in_place(), 0u);
  const auto out = RunOnCache({2, 4}, {7, 1}, false);
  EXPECT_EQ(out[0], (std::vector<float>{0, 4, 0, 0, 0, 0, 0, 2}));
}

// A loop: `carried` scatters into the loop-carried value itself; otherwise into %k, defined before the loop
// (its only use is inside the body, but every iteration reads it again).
std::string Loop(bool carried) {
  return std::string(
             "func.func @main(%c: tensor<8xf32>, %i: tensor<2x1xi32>, %u: tensor<2xf32>) -> tensor<8xf32> {\n"
             "  %k = stablehlo.add %c, %c : tensor<8xf32>\n"
             "  %n0 = stablehlo.constant dense<0> : tensor<i32>\n"
             "  %r:2 = stablehlo.while(%n = %n0, %acc = %k) : tensor<i32>, tensor<8xf32>\n"
             "  cond {\n"
             "    %three = stablehlo.constant dense<3> : tensor<i32>\n"
             "    %lt = stablehlo.compare LT, %n, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
             "    stablehlo.return %lt : tensor<i1>\n"
             "  } do {\n"
             "    %one = stablehlo.constant dense<1> : tensor<i32>\n"
             "    %n1 = stablehlo.add %n, %one : tensor<i32>\n") +
         ScatterAdd("s", carried ? "acc" : "k", "i", "u", 8, 2) +
         "    stablehlo.return %n1, %s : tensor<i32>, tensor<8xf32>\n"
         "  }\n"
         "  func.return %r#1 : tensor<8xf32>\n}\n";
}

TEST_F(InPlace, ValueFromOutsideALoopIsNotOverwritten) {
  Compile(Loop(false), {0, -1, -1});
  EXPECT_EQ(program_->num_in_place(), 0u);
  const auto out = RunOnCache({1, 2}, {0, 3}, true);
  std::vector<float> expect = Cache();
  for (float& x : expect) x *= 2;
  expect[0] += 1;  // each iteration scatters into %k afresh: the last one's result, not three updates
  expect[3] += 2;
  EXPECT_EQ(out[0], expect);
}

TEST_F(InPlace, LoopCarriedValueIsNotOverwritten) {
  // The body's argument lies in the loop's own buffers: the planner must not hand it to the scatter.
  Compile(Loop(true), {0, -1, -1});
  EXPECT_EQ(program_->num_in_place(), 0u);
  std::vector<float> c;
  const auto out = RunOnCache({1, 2}, {0, 3}, true, &c);
  std::vector<float> expect = Cache();
  for (float& x : expect) x *= 2;
  expect[0] += 3;
  expect[3] += 6;
  EXPECT_EQ(out[0], expect);
  EXPECT_EQ(c, Cache());
}

TEST_F(InPlace, OperandTheOpAlsoReadsIsNotOverwritten) {
  // The updates are the operand itself (scattered in reverse order): writing them in place would read
  // elements already overwritten. And one value as both inputs of a two-input scatter.
  Compile(
      "func.func @main(%c: tensor<4xf32>, %i: tensor<4x1xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {\n"
      "  %a = stablehlo.add %c, %c : tensor<4xf32>\n"
      "  %b = stablehlo.multiply %c, %c : tensor<4xf32>\n"
      "  %s = \"stablehlo.scatter\"(%a, %i, %a) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = "
      "[], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({\n"
      "  ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
      "    stablehlo.return %q : tensor<f32>\n"
      "  }) : (tensor<4xf32>, tensor<4x1xi32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "  %t:2 = \"stablehlo.scatter\"(%b, %b, %i, %c, %c) <{scatter_dimension_numbers = "
      "#stablehlo.scatter<update_window_dims = [], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
      "index_vector_dim = 1>}> ({\n"
      "  ^bb0(%p0: tensor<f32>, %p1: tensor<f32>, %q0: tensor<f32>, %q1: tensor<f32>):\n"
      "    %x = stablehlo.add %p0, %q0 : tensor<f32>\n"
      "    %y = stablehlo.subtract %p1, %q1 : tensor<f32>\n"
      "    stablehlo.return %x, %y : tensor<f32>, tensor<f32>\n"
      "  }) : (tensor<4xf32>, tensor<4xf32>, tensor<4x1xi32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, "
      "tensor<4xf32>)\n"
      "  func.return %s, %t#0, %t#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>\n}\n");
  EXPECT_EQ(program_->num_in_place(), 0u);
  std::vector<float> c = {1, 2, 3, 4};
  std::vector<int32_t> i = {3, 2, 1, 0};
  const auto out = Run({&c}, {&i});
  EXPECT_EQ(out[0], (std::vector<float>{8, 6, 4, 2}));
  EXPECT_EQ(out[1], (std::vector<float>{5, 7, 11, 17}));  // c*c + reversed c
  EXPECT_EQ(out[2], (std::vector<float>{-3, 1, 7, 15}));
}

TEST_F(InPlace, DynamicUpdateSliceAndReshapeOfAnIntermediate) {
  Compile(
      "func.func @main(%c: tensor<8xf32>, %v: tensor<2xf32>, %o: tensor<i32>) -> tensor<2x4xf32> {\n"
      "  %a = stablehlo.add %c, %c : tensor<8xf32>\n"
      "  %d = stablehlo.dynamic_update_slice %a, %v, %o : (tensor<8xf32>, tensor<2xf32>, tensor<i32>) -> "
      "tensor<8xf32>\n"
      "  %r = stablehlo.reshape %d : (tensor<8xf32>) -> tensor<2x4xf32>\n"
      "  func.return %r : tensor<2x4xf32>\n}\n",
      {0, -1, -1});
  EXPECT_EQ(program_->num_in_place(), 2u);
  std::vector<float> c = {1, 2, 3, 4, 5, 6, 7, 8}, v = {-1, -2};
  std::vector<int32_t> o = {7};  // clamped to 6
  const auto out = Run({&c, &v}, {&o}, {true, false, false});
  EXPECT_EQ(out[0], (std::vector<float>{2, 4, 6, 8, 10, 12, -1, -2}));
  EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));  // %c itself was not the operand
}

// Results are written where the allocator puts them when that memory is aligned and apart from the arguments:
// a value returned twice, or a parameter returned, is copied; memory the allocator takes from an argument the
// program still reads (as the executor hands out a donated argument's) and unaligned memory fall back to
// computing in the workspace, with the same values.
TEST_F(InPlace, ResultsAreWrittenWhereTheAllocatorPutsThem) {
  const std::string t = "tensor<64xf32>";
  Compile("func.func @main(%a: " + t + ", %b: " + t + ") -> (" + t + ", " + t + ", " + t + ", " + t +
          ") {\n  %s = stablehlo.add %a, %b : " + t + "\n  %p = stablehlo.multiply %s, %a : " + t +
          "\n  func.return %p, %s, %a, %p : " + t + ", " + t + ", " + t + ", " + t + "\n}\n");
  std::vector<float> a(64), b(64), s(64), p(64);
  for (size_t i = 0; i < 64; ++i) {
    a[i] = 0.25f * static_cast<float>(i) - 3.0f;
    b[i] = 1.5f - 0.125f * static_cast<float>(i);
    s[i] = a[i] + b[i];
    p[i] = s[i] * a[i];
  }
  const std::vector<float> a0 = a;
  EXPECT_EQ(Run({&a, &b}, {}), (std::vector<std::vector<float>>{p, s, a0, p}));
  // Result 1 (%s) given %a's memory (64-byte aligned here): %p still reads %a after %s is computed, so %s must
  // not be written there before the end (fused, the region would read its own output as %a).
  std::vector<float> buf(64 + 32);
  float* aligned = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t{63});
  std::copy(a0.begin(), a0.end(), aligned);
  std::vector<TensorView> args(2);
  const int64_t d[] = {64};
  args[0] = TensorView{aligned, ElementType::kF32, d, 1};
  args[1] = TensorView{b.data(), ElementType::kF32, d, 1};
  Allocator alloc;
  alloc.given[1] = aligned;
  std::vector<TensorView> results;
  ASSERT_FALSE(program_->Run(args.data(), args.size(), &alloc, &results));
  ASSERT_EQ(results.size(), 4u);
  const float* r0 = static_cast<const float*>(results[0].data);
  EXPECT_EQ(std::vector<float>(r0, r0 + 64), p);
  EXPECT_EQ(std::vector<float>(aligned, aligned + 64), s);  // result 1, copied in at the end
  // Unaligned result memory: computed in the workspace and copied.
  Allocator unaligned;
  unaligned.given[1] = buf.data() + (aligned == buf.data() ? 1 : 0);
  args[0].data = a.data();
  ASSERT_FALSE(program_->Run(args.data(), args.size(), &unaligned, &results));
  const float* r1 = static_cast<const float*>(results[1].data);
  EXPECT_EQ(std::vector<float>(r1, r1 + 64), s);
}

}  // namespace
}  // namespace neuronmem::interp
