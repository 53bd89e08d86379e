// Tutorial 2: using Poplibs (popops on popc).
#include <popc/poplar.hpp>
#include <popc/popops.hpp>

#include <iostream>

using namespace popc::api;
using namespace popc::api::program;

int main() {
  IPUModel ipuModel;
  Device device = ipuModel.createDevice();
  Target target = device.getTarget();
  Graph graph(target);

  // Add the device-side library code (nothing to load on popc; kept as in the guide)
  popops::addCodelets(graph);

  // Add variables to the graph
  Tensor v1 = graph.addVariable(FLOAT, {2, 2}, "v1");
  Tensor v2 = graph.addVariable(FLOAT, {2, 2}, "v2");
  graph.setTileMapping(v1, 0);
  graph.setTileMapping(v2, 0);

  // Create a control program that is a sequence of steps
  Sequence prog;

  // Add steps to initialise the variables
  Tensor c1 = graph.addConstant<float>(FLOAT, {4}, {1.0, 1.5, 2.0, 2.5});
  Tensor c2 = graph.addConstant<float>(FLOAT, {4}, {4.0, 3.0, 2.0, 1.0});
  graph.setTileMapping(c1, 0);
  graph.setTileMapping(c2, 0);
  prog.add(Copy(c1, v1.flatten()));
  prog.add(Copy(c2, v2.flatten()));

  // Extend program with elementwise add (this will add to the sequence)
  Tensor v3 = popops::add(graph, v1, v2, prog, "Add");
  prog.add(PrintTensor("v3", v3));

  // Add v2 to the result
  Tensor v4 = popops::add(graph, v3, v2, prog, "Add2");
  prog.add(PrintTensor("v4", v4));

  // Example element wise addition using a transposed view of the data
  Tensor v5 = popops::add(graph, v1, v2.transpose(), prog, "Add3");
  prog.add(PrintTensor("v5", v5));

  Engine engine(graph, prog);
  engine.load(device);

  std::cout << "Running program\n";
  engine.run(0);
  std::cout << "Program complete\n";
  return 0;
}
