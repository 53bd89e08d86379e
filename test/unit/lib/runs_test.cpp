#include "compiler/lib/laid_out_table.h"
#include "compiler/lib/planner.h"
#include "compiler/lib/runs.h"

#include <catch2/catch.hpp>

using namespace popc::lib;

TEST_CASE("contiguous runs merge", "[runs]") {
  RunList r;
  r.add(0, 4);
  r.add(4, 4);
  r.add(12, 4);
  REQUIRE(r.runs().size() == 2);
  CHECK(r.runs()[0].bytes == 8);
  CHECK(r.totalBytes() == 12);
}

TEST_CASE("broadcast runs repeat a row vector per row", "[runs]") {
  RunList r;
  addBroadcastRuns(r, {3, 4}, {4}, 0, 12, 4);
  REQUIRE(r.runs().size() == 3);
  for (const Run &run : r.runs()) {
    CHECK(run.byte == 0);
    CHECK(run.bytes == 16);
  }
}

TEST_CASE("broadcast runs of a column vector", "[runs]") {
  RunList r;
  addBroadcastRuns(r, {2, 3}, {2, 1}, 1, 5, 1); // elements 1..4 → sources 0,0,1,1
  std::vector<uint64_t> src;
  for (const Run &run : r.runs())
    for (uint64_t i = 0; i < run.bytes; ++i)
      src.push_back(run.byte + i);
  CHECK(src == std::vector<uint64_t>{0, 0, 1, 1});
}

TEST_CASE("transpose runs follow the permutation", "[runs]") {
  RunList r;
  addTransposeRuns(r, {2, 3}, {1, 0}, 0, 6, 1); // out[j][i] = in[i][j]
  std::vector<uint64_t> src;
  for (const Run &run : r.runs())
    for (uint64_t i = 0; i < run.bytes; ++i)
      src.push_back(run.byte + i);
  CHECK(src == std::vector<uint64_t>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("split candidates are distinct and decreasing", "[planner]") {
  auto c = blockSizeCandidates(10, 100);
  CHECK(c == std::vector<uint64_t>{10, 5, 4, 3, 2, 1});
  CHECK(blockSizeCandidates(10, 2) == std::vector<uint64_t>{10, 5});
}

TEST_CASE("LaidOutTable: a layout is found again only for the same tile and runs", "[lib]") {
  using popc::lib::LaidOutTable;
  using popc::lib::Run;
  LaidOutTable table;
  const std::vector<Run> rows = {{0, 64}, {256, 64}}, shifted = {{0, 64}, {320, 64}}, fewer = {{0, 64}};
  CHECK(!table.find(3, rows));
  table.add(3, rows, popc::graph::FieldRef{7, 3, 0, 128});
  table.add(3, fewer, popc::graph::FieldRef{8, 3, 0, 64});
  auto found = table.find(3, rows);
  REQUIRE(found);
  CHECK(found->tensor == 7);
  CHECK(table.find(3, fewer)->tensor == 8);
  CHECK(!table.find(4, rows));    // another tile
  CHECK(!table.find(3, shifted)); // other runs
}
