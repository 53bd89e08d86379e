// Tutorial 6: matrix-vector multiplication, one DotProductVertex per row.
// Usage: tut6 numRows numCols
#include <popc/poplar.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <vector>

using namespace popc::api;
using namespace popc::api::program;

// One vertex per row of the matrix, on the tile that holds the row.
static Program buildMultiplyProgram(Graph &graph, Tensor matrix, Tensor in, Tensor out) {
  const unsigned numRows = matrix.dim(0);
  const unsigned numTiles = graph.getTarget().getNumTiles();
  ComputeSet mulCS = graph.addComputeSet("mulCS");
  for (unsigned i = 0; i < numRows; ++i) {
    auto v = graph.addVertex(mulCS, "DotProductVertex", {{"a", matrix[i]}, {"b", in}, {"out", out[i]}});
    graph.setTileMapping(v, i % numTiles);
  }
  return Execute(mulCS);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " numRows numCols\n";
    return 1;
  }
  const unsigned numRows = std::atoi(argv[1]), numCols = std::atoi(argv[2]);
  std::cout << "Multiplying matrix of size " << numRows << "x" << numCols << " by vector of size " << numCols
            << "\n";

  std::cout << "Creating environment (compiling vertex programs)\n";
  IPUModel ipuModel;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  graph.addCodelets("matrix-mul-codelets.cpp");

  std::cout << "Constructing compute graph and control program\n";
  Tensor matrix = graph.addVariable(FLOAT, {numRows, numCols}, "matrix");
  Tensor inputVector = graph.addVariable(FLOAT, {numCols}, "inputVector");
  Tensor outputVector = graph.addVariable(FLOAT, {numRows}, "outputVector");
  const unsigned numTiles = device.getTarget().getNumTiles();
  for (unsigned i = 0; i < numRows; ++i) {
    graph.setTileMapping(matrix[i], i % numTiles);
    graph.setTileMapping(outputVector[i], i % numTiles);
  }
  graph.setTileMapping(inputVector, 0);

  auto inStreamM = graph.addHostToDeviceFIFO("matrix", FLOAT, numRows * numCols);
  auto inStreamV = graph.addHostToDeviceFIFO("inputVector", FLOAT, numCols);
  auto outStream = graph.addDeviceToHostFIFO("outputVector", FLOAT, numRows);

  Sequence prog;
  prog.add(Copy(inStreamM, matrix));
  prog.add(Copy(inStreamV, inputVector));
  prog.add(buildMultiplyProgram(graph, matrix, inputVector, outputVector));
  prog.add(Copy(outputVector, outStream));

  Engine engine(graph, prog);
  engine.load(device);

  // matrix[row][col] = row * col, input[col] = col
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

  // Check the result against the host.
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
  return ok ? 0 : 1;
}
