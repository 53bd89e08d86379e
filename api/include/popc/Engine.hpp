// popc graph API: Engine compiles a Graph and its programs to a popef
// executable, and runs it in-process on the simulated IPU (or saves it for
// poprun-lite).
#pragma once
#include "popc/Graph.hpp"
#include "popc/Program.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace popc::api {

using OptionFlags = std::map<std::string, std::string>;

// The popef bytes of `graph` with `programs` (program i = child i of main).
std::vector<uint8_t> compileGraph(Graph &graph, const std::vector<program::Program> &programs,
                                  const OptionFlags &options = {});

class Engine {
public:
  Engine(Graph &graph, const program::Program &program, const OptionFlags &options = {});
  Engine(Graph &graph, const std::vector<program::Program> &programs, const OptionFlags &options = {});
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  void load(const Device &) {} // the simulated device is always there
  void run(unsigned program = 0, const std::string &debugName = "");

  // createHostWrite / createHostRead handles.
  void writeTensor(const std::string &handle, const void *data);
  void writeTensor(const std::string &handle, const void *begin, const void *end);
  void readTensor(const std::string &handle, void *data);
  void readTensor(const std::string &handle, void *begin, void *end);

  // A FIFO reads (host-to-device) or writes (device-to-host) the host buffer
  // [begin, end) as a circular buffer, one transfer of the stream's size per Copy.
  void connectStream(const std::string &handle, void *begin, void *end);
  void connectStream(const std::string &handle, void *p); // one transfer's worth, reused
  void connectStreamToCallback(const std::string &handle, std::function<void(void *)> callback);

  // PrintTensor output goes here (default: stdout).
  void setPrintHandler(std::function<void(const std::string &)> handler);

  const std::vector<uint8_t> &getExecutable() const; // popef bytes (the schedule uncompressed)
  void saveExecutable(const std::string &path) const;  // as popc-onnx writes popefs: the schedule zstd-compressed

  // Simulated cycles of all runs so far, and a profile summary (tut4).
  uint64_t getCycles() const;
  void printProfileSummary(std::ostream &os) const;
  void resetProfile();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace popc::api
