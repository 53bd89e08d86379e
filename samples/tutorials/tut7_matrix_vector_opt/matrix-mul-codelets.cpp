// Tutorial 7 codelets: partial dot products of row segments, and the
// reduction of each row's partial sums.
#include <poplar/Vertex.hpp>

using namespace poplar;

class DotProductVertex : public Vertex {
public:
  Input<Vector<float>> a;
  Input<Vector<float>> b;
  Output<float> out;

  bool compute() {
    float sum = 0;
    for (unsigned i = 0; i < a.size(); ++i)
      sum += a[i] * b[i];
    *out = sum;
    return true;
  }

  uint64_t getCycleEstimate() const { return 5 + (a.size() + 1) / 2; }
};

class ReduceVertex : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;

  bool compute() {
    float sum = 0;
    for (unsigned i = 0; i < in.size(); ++i)
      sum += in[i];
    *out = sum;
    return true;
  }

  uint64_t getCycleEstimate() const { return 5 + (in.size() + 1) / 2; }
};
