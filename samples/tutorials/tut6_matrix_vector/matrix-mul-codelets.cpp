// Tutorial 6 codelet: one dot product (a row of the matrix with the vector).
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

  // The tutorials' model: 2 multiply-accumulates per cycle plus overhead.
  uint64_t getCycleEstimate() const { return 5 + (a.size() + 1) / 2; }
};
