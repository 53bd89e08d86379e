// Uses the installed graph API: a popops add and a codelet compiled at run
// time against the installed codelet header.
#include <popc/poplar.hpp>
#include <popc/popops.hpp>

#include <iostream>

using namespace popc::api;
using namespace popc::api::program;

int main(int argc, char **argv) {
  Graph graph(Target::createIPUTarget(1, "ipu2", 4));
  graph.addCodelets(argv[1]);
  Tensor a = graph.addConstant<float>(FLOAT, {3}, {1, 2, 3}, "a");
  graph.setTileMapping(a, 0);
  Sequence prog;
  Tensor b = popops::add(graph, a, a, prog, "twice");
  Tensor c = graph.addVariable(FLOAT, {}, "c");
  graph.setTileMapping(c, 1);
  ComputeSet cs = graph.addComputeSet("sum");
  VertexRef v = graph.addVertex(cs, "Sum", {{"in", b}, {"out", c}});
  graph.setTileMapping(v, 1);
  prog.add(Execute(cs));
  prog.add(PrintTensor("sum", c.reshape({1})));
  Engine engine(graph, prog);
  engine.run(0);
  return 0;
}
