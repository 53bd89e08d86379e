#include <poplar/Vertex.hpp>

class Sum : public poplar::Vertex {
public:
  poplar::Input<poplar::Vector<float>> in;
  poplar::Output<float> out;
  bool compute() {
    float s = 0;
    for (float x : in)
      s += x;
    *out = s;
    return true;
  }
};
