#include "ir_test_util.h"

using namespace popc;
using namespace popc::ir;
using Catch::Matchers::Contains;

TEST_CASE("Attributes typed getters", "[ir]") {
  Attributes a;
  a.set("i", int64_t(3));
  a.set("f", 0.5);
  a.set("s", std::string("SAME_UPPER"));
  a.set("is", std::vector<int64_t>{1, 2});
  CHECK(a.getInt("i") == 3);
  CHECK(a.getInt("missing", 7) == 7);
  CHECK(a.getFloat("f", 0) == 0.5);
  CHECK(a.getFloat("i", 0) == 3.0); // ints read as floats
  CHECK(a.getString("s", "") == "SAME_UPPER");
  CHECK(a.getInts("is") == std::vector<int64_t>{1, 2});
  CHECK(a.getFloats("is") == std::vector<double>{1, 2});
  CHECK_THROWS_WITH(a.getInt("f"), "attribute 'f' is float, expected int");
  CHECK_THROWS_WITH(a.getInt("nope"), Contains("required attribute 'nope' is missing"));
  CHECK_THROWS_WITH(a.getInts("s"), "attribute 's' is string, expected ints");
  CHECK_THROWS_WITH(a.getTensor("i"), "attribute 'i' is int, expected tensor");
  a.erase("i");
  CHECK_FALSE(a.has("i"));
}

TEST_CASE("attribute type errors are prefixed with the op", "[ir]") {
  Graph g;
  test::addInput(g, "x", {1, 4});
  Op op = test::makeOp("Softmax", "sm", {"x"});
  op.attrs.set("axis", 1.5);
  CHECK_THROWS_WITH(test::infer(g, op), "Softmax 'sm': attribute 'axis' is float, expected int");
}
