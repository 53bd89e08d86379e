// Step programs (compiler/lib/step_program.cpp): anchor parsing, the
// batches-per-step Repeat, the pipeline's ramp-up / main / ramp-down cycles
// and the stage tile rule.
#include "compiler/lib/step.h"
#include "support/error.h"

#include <catch2/catch.hpp>

using namespace popc;
using graph::Program;
using graph::ProgramKind;

namespace {

// Stage s copies a tensor on IPU s-1 (or its own input) into one on IPU s.
struct Pipe {
  graph::DeviceGraph g;
  std::vector<lib::Segment> segments;
  explicit Pipe(uint32_t stages, bool skip = false) : g([&] {
      graph::Target t = graph::Target::forArch("ipu2", stages);
      t.tilesPerIpu = 2;
      return t;
    }()) {
    std::vector<graph::TensorId> t;
    for (uint32_t s = 0; s < stages; ++s) {
      t.push_back(g.addTensor("t" + std::to_string(s), DType::F32, {4}, graph::TensorRole::Intermediate));
      g.mapToTile(t.back(), g.target().firstTileOfIpu(s));
    }
    for (uint32_t s = 0; s < stages; ++s) {
      const uint32_t ex = g.addExchange("stage" + std::to_string(s));
      const graph::TensorId src = s == 0 ? t[0] : t[skip && s == 2 ? 0 : s - 1];
      if (s > 0)
        g.exchange(ex).copies.push_back({src, 0, t[s], 0, 16});
      else
        g.exchange(ex).copies.push_back({t[0], 0, t[0], 0, 16});
      segments.push_back({int64_t(s), {Program::exchange(ex)}});
    }
  }
};

// Stage numbers of a cycle, in execution order.
std::vector<int> stagesOf(const Program &cycle) {
  std::vector<int> out;
  for (const Program &stage : cycle.children)
    out.push_back(std::stoi(stage.name.substr(6)));
  return out;
}

} // namespace

TEST_CASE("anchors parse as PopART return types") {
  CHECK(lib::parseAnchor("y=ALL").second.kind == lib::Anchor::Kind::All);
  CHECK(lib::parseAnchor("a=b=FINAL").first == "a=b");
  auto [name, every] = lib::parseAnchor("out=EVERYN:3");
  CHECK(name == "out");
  CHECK(every.kind == lib::Anchor::Kind::EveryN);
  CHECK(every.n == 3);
  CHECK(every.text() == "EVERYN:3");
  CHECK(lib::parseAnchor("y=SUM").second.text() == "SUM");
  CHECK_THROWS_WITH(lib::parseAnchor("y=EVERYN:0"), Catch::Contains("EVERYN needs a period"));
  CHECK_THROWS_WITH(lib::parseAnchor("y=LAST"), Catch::Contains("unknown return type 'LAST'"));
  CHECK_THROWS_WITH(lib::parseAnchor("ALL"), Catch::Contains("expected NAME=ALL"));
}

TEST_CASE("batches per step is one Repeat of the micro-batch") {
  Pipe p(1);
  lib::StepConfig c;
  c.batchesPerStep = 3;
  c.accumulationFactor = 2;
  lib::StepPrograms out = lib::buildStepPrograms(p.g, p.segments, c, 1);
  REQUIRE(out.run.children.size() == 1);
  CHECK(out.run.children[0].kind == ProgramKind::Repeat);
  CHECK(out.run.children[0].count == 6);
  CHECK(out.plan.children.size() == 1); // the planner sees one micro-batch
}

TEST_CASE("a pipeline runs ramp-up, main and ramp-down cycles, last stage first") {
  Pipe p(3);
  lib::StepConfig c;
  c.batchesPerStep = 5;
  c.pipeline = true;
  lib::StepPrograms out = lib::buildStepPrograms(p.g, p.segments, c, 3);
  REQUIRE(out.run.children.size() == 3);
  const Program &up = out.run.children[0], &main = out.run.children[1], &down = out.run.children[2];
  REQUIRE(up.children.size() == 2);
  CHECK(stagesOf(up.children[0]) == std::vector<int>{0});
  CHECK(stagesOf(up.children[1]) == std::vector<int>{1, 0});
  CHECK(main.kind == ProgramKind::Repeat);
  CHECK(main.count == 3); // 5 micro-batches - 3 stages + 1
  CHECK(main.children[0].parallel);
  CHECK(stagesOf(main.children[0]) == std::vector<int>{2, 1, 0});
  REQUIRE(down.children.size() == 2);
  CHECK(stagesOf(down.children[0]) == std::vector<int>{2, 1});
  CHECK(stagesOf(down.children[1]) == std::vector<int>{2});
  CHECK(out.plan.children.size() == 3); // stages 0, 1, 2 once, in order
}

TEST_CASE("a pipeline with fewer micro-batches than stages still runs each stage once per micro-batch") {
  Pipe p(3);
  lib::StepConfig c;
  c.batchesPerStep = 2;
  c.pipeline = true;
  lib::StepPrograms out = lib::buildStepPrograms(p.g, p.segments, c, 3);
  std::vector<int> runs(3, 0);
  for (const Program &part : out.run.children)
    for (const Program &cycle : part.children)
      for (int s : stagesOf(cycle))
        runs[s]++;
  CHECK(runs == std::vector<int>{2, 2, 2});
  CHECK(out.run.children.size() == 2); // no main loop
}

TEST_CASE("a pipeline stage may not read from two stages back") {
  Pipe p(3, true);
  lib::StepConfig c;
  c.batchesPerStep = 4;
  c.pipeline = true;
  CHECK_THROWS_WITH(lib::buildStepPrograms(p.g, p.segments, c, 3),
                    Catch::Contains("stage 2 (IPU 2): exchange 'stage2' reads 't0' from IPU 0"));
}
