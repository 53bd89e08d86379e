// Tutorial 7: matrix-vector multiplication optimised: each row is split into
// colAxisSplit segments (partial dot products), then a reduction per row. The
// split is chosen by a cycle estimate that uses the codelets' getCycleEstimate.
// Usage: tut7 numRows numCols [--arch ipu1|ipu2] [--estimate-only] [--profile]
#include <popc/poplar.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <vector>

using namespace popc::api;
using namespace popc::api::program;

static unsigned ceilDiv(unsigned a, unsigned b) { return (a + b - 1) / b; }

struct Cost {
  unsigned compute = 0, exchange = 0, reduceExchange = 0, reduceCompute = 0;
  unsigned total() const { return compute + exchange + reduceExchange + reduceCompute; }
};

// Worst-case time of the busiest tile in each phase: vertices run on the
// workers in rounds; a tile receives its vector segment (partial sums) over
// the exchange at exchangeBytesPerCycle.
static Cost estimateCycles(Graph &graph, unsigned numRows, unsigned numCols, unsigned colAxisSplit) {
  const Target &t = graph.getTarget();
  const unsigned numTiles = t.getNumTiles(), workers = t.getNumWorkerContexts();
  const unsigned segment = ceilDiv(numCols, colAxisSplit);
  Cost c;
  const unsigned verticesPerTile = ceilDiv(numRows * colAxisSplit, numTiles);
  const uint64_t dotCycles =
      graph.estimateCycles("DotProductVertex", {{"a", segment * 4}, {"b", segment * 4}, {"out", 4}});
  c.compute = ceilDiv(verticesPerTile, workers) * workers * dotCycles;
  c.exchange = segment * 4 / t.getExchangeBytesPerCycle();
  const unsigned rowsPerTile = ceilDiv(numRows, numTiles);
  c.reduceExchange = rowsPerTile * colAxisSplit * 4 / t.getExchangeBytesPerCycle();
  const uint64_t reduceCycles = graph.estimateCycles("ReduceVertex", {{"in", colAxisSplit * 4}, {"out", 4}});
  c.reduceCompute = ceilDiv(rowsPerTile, workers) * workers * reduceCycles;
  return c;
}

static unsigned calcOptimalColAxisSplit(Graph &graph, unsigned numRows, unsigned numCols) {
  unsigned best = 1, worst = 0;
  Cost bestCost = estimateCycles(graph, numRows, numCols, 1);
  for (unsigned split = 1; split < std::max(2u, numCols); ++split) {
    Cost c = estimateCycles(graph, numRows, numCols, split);
    worst = std::max(worst, c.total());
    if (c.total() < bestCost.total()) {
      bestCost = c;
      best = split;
    }
  }
  std::cout << "Best split chosen:\n"
            << "colsAxisSplit=" << best << ", total cost=" << bestCost.total()
            << " (compute cost=" << bestCost.compute << ", exchange cost=" << bestCost.exchange
            << ",\n                                reduce exchange cost=" << bestCost.reduceExchange
            << ",\n                                reduce compute cost=" << bestCost.reduceCompute << ")\n";
  std::cout << "Worst cost seen: " << worst << "\n";
  return best;
}

static Program buildMultiplyProgram(Graph &graph, Tensor matrix, Tensor in, Tensor out, unsigned colAxisSplit) {
  const unsigned numRows = matrix.dim(0), numCols = matrix.dim(1);
  const unsigned numTiles = graph.getTarget().getNumTiles();
  const unsigned segment = ceilDiv(numCols, colAxisSplit);

  // Create a tensor to hold the intermediate calculated partial sums
  Tensor partials = graph.addVariable(FLOAT, {numRows, colAxisSplit}, "partials");

  // Create a compute set to hold the vertices to perform the partial sum calculations.
  ComputeSet mulCS = graph.addComputeSet("mulCS");
  const unsigned numVertices = numRows * colAxisSplit;
  for (unsigned i = 0; i < colAxisSplit; ++i) {
    const unsigned beginCol = i * segment, endCol = std::min(numCols, beginCol + segment);
    for (unsigned row = 0; row < numRows; ++row) {
      // Vertices spread evenly over the tiles; each tile holds its matrix segments and partials.
      const unsigned tile = uint64_t(row * colAxisSplit + i) * numTiles / numVertices;
      Tensor seg = matrix[row].slice(beginCol, endCol);
      graph.setTileMapping(seg, tile);
      graph.setTileMapping(partials[row][i], tile);
      auto v = graph.addVertex(mulCS, "DotProductVertex",
                               {{"a", seg}, {"b", in.slice(beginCol, endCol)}, {"out", partials[row][i]}});
      graph.setTileMapping(v, tile);
    }
  }
  // Create a compute set to calculate the reduction: one vertex per output element.
  ComputeSet reduceCS = graph.createComputeSet("reduceCS");
  for (unsigned row = 0; row < numRows; ++row) {
    const unsigned tile = uint64_t(row) * numTiles / numRows;
    graph.setTileMapping(out[row], tile);
    auto v = graph.addVertex(reduceCS, "ReduceVertex", {{"in", partials[row]}, {"out", out[row]}});
    graph.setTileMapping(v, tile);
  }
  return Sequence(Execute(mulCS), Execute(reduceCS));
}

int main(int argc, char **argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " numRows numCols [--arch ipu1|ipu2] [--estimate-only] [--profile]\n";
    return 1;
  }
  const unsigned numRows = std::atoi(argv[1]), numCols = std::atoi(argv[2]);
  std::string arch = "ipu2";
  bool estimateOnly = false, profile = false;
  for (int i = 3; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--arch") && i + 1 < argc)
      arch = argv[++i];
    else if (!std::strcmp(argv[i], "--estimate-only"))
      estimateOnly = true;
    else if (!std::strcmp(argv[i], "--profile"))
      profile = true;
  }
  std::cout << "Multiplying matrix of size " << numRows << "x" << numCols << " by vector of size " << numCols
            << "\n";
  std::cout << "Creating environment (compiling vertex programs)\n";
  IPUModel ipuModel(arch.c_str());
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  graph.addCodelets("matrix-mul-codelets.cpp");

  std::cout << "Constructing compute graph and control program\n";
  const unsigned colAxisSplit = calcOptimalColAxisSplit(graph, numRows, numCols);
  if (estimateOnly)
    return 0;

  Tensor matrix = graph.addVariable(FLOAT, {numRows, numCols}, "matrix");
  Tensor inputVector = graph.addVariable(FLOAT, {numCols}, "inputVector");
  Tensor outputVector = graph.addVariable(FLOAT, {numRows}, "outputVector");
  mapLinearly(graph, inputVector);
  auto inStreamM = graph.addHostToDeviceFIFO("matrix", FLOAT, numRows * numCols);
  auto inStreamV = graph.addHostToDeviceFIFO("inputVector", FLOAT, numCols);
  auto outStream = graph.addDeviceToHostFIFO("outputVector", FLOAT, numRows);

  Program mul = buildMultiplyProgram(graph, matrix, inputVector, outputVector, colAxisSplit);
  // Program 0 loads the data, program 1 multiplies (so its cycles can be measured alone), program 2 reads back.
  Engine engine(graph, {Sequence(Copy(inStreamM, matrix), Copy(inStreamV, inputVector)), mul,
                        Sequence(Copy(outputVector, outStream))});
  engine.load(device);

  std::vector<float> hMatrix(numRows * numCols), hInput(numCols), hOutput(numRows);
  for (unsigned col = 0; col < numCols; ++col) {
    hInput[col] = float(col);
    for (unsigned row = 0; row < numRows; ++row)
      hMatrix[row * numCols + col] = float(row * col);
  }
  engine.connectStream("matrix", hMatrix.data(), hMatrix.data() + hMatrix.size());
  engine.connectStream("inputVector", hInput.data(), hInput.data() + hInput.size());
  engine.connectStream("outputVector", hOutput.data(), hOutput.data() + hOutput.size());

  std::cout << "Running graph program to multiply matrix by vector\n";
  engine.run(0);
  engine.resetProfile();
  engine.run(1);
  const uint64_t cycles = engine.getCycles();
  if (profile)
    engine.printProfileSummary(std::cout); // where the multiply program's cycles go
  engine.run(2);

  bool ok = true;
  for (unsigned row = 0; row < numRows; ++row) {
    double expected = 0;
    for (unsigned col = 0; col < numCols; ++col)
      expected += double(hMatrix[row * numCols + col]) * hInput[col];
    if (std::abs(hOutput[row] - expected) > 1e-5 * std::max(1.0, std::abs(expected))) {
      std::cout << "Row " << row << ": got " << hOutput[row] << ", expected " << expected << "\n";
      ok = false;
    }
  }
  std::cout << (ok ? "Multiplication result OK" : "Multiplication result WRONG") << "\n";
  std::cout << "Program cycles: " << cycles << "\n";
  return ok ? 0 : 1;
}
