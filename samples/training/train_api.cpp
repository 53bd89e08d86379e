// The training sample through the C++ API (popc/Session.hpp): a
// TrainingSession runs one Adam step per batch, an InferenceSession of the
// trained model measures the accuracy. The data comes from make_data.py as
// raw little-endian files (x.bin, label.bin, test_x.bin, test_label.bin).
//
// Usage: train_api WORK_DIR [MIN_ACCURACY]
#include <popc/Session.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>

namespace {

template <typename T> std::vector<T> readRaw(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: train_api WORK_DIR [MIN_ACCURACY]\n";
    return 2;
  }
  const std::string work = argv[1];
  const double minAccuracy = argc > 2 ? std::stod(argv[2]) : 0.9;
  const int64_t batch = 16;
  try {
    const auto x = readRaw<float>(work + "/x.bin");
    const auto label = readRaw<int64_t>(work + "/label.bin");
    const int64_t steps = int64_t(label.size()) / batch;

    popc::TrainingOptions training;
    training.loss = "loss";
    training.optimizer = popc::Optimizer::adam(0.02);
    popc::TrainingSession session(work + "/model.onnx", training);
    std::ofstream csv(work + "/losses_api.csv");
    float first = 0, last = 0;
    for (int64_t s = 0; s < steps; ++s) {
      std::vector<float> xs(x.begin() + s * batch * 2, x.begin() + (s + 1) * batch * 2);
      std::vector<int64_t> ys(label.begin() + s * batch, label.begin() + (s + 1) * batch);
      popc::ArrayMap out = session.run({{"x", popc::Array::of<float>({batch, 2}, xs)},
                                        {"label", popc::Array::of<int64_t>({batch}, ys)}});
      last = out.at("loss").as<float>()[0];
      if (s == 0)
        first = last;
      csv << last << "\n";
    }
    session.modelToHost(work + "/trained_api.onnx");

    popc::InferenceSession inference(work + "/trained_api.onnx");
    const auto tx = readRaw<float>(work + "/test_x.bin");
    const auto ty = readRaw<int64_t>(work + "/test_label.bin");
    popc::ArrayMap out = inference.run({{"x", popc::Array::of<float>({batch, 2}, tx)},
                                        {"label", popc::Array::of<int64_t>({batch}, ty)}});
    const auto logits = out.at("logits").as<float>();
    int correct = 0;
    for (int64_t i = 0; i < batch; ++i) {
      int best = 0;
      for (int c = 1; c < 4; ++c)
        if (logits[size_t(i * 4 + c)] > logits[size_t(i * 4 + best)])
          best = c;
      correct += best == ty[size_t(i)];
    }
    const double accuracy = double(correct) / double(batch);
    std::printf("loss: first step %.4f, last step %.4f; test accuracy %.3f\n", first, last, accuracy);
    return accuracy >= minAccuracy && last < first ? 0 : 1;
  } catch (const std::exception &e) {
    std::cerr << "train_api: error: " << e.what() << "\n";
    return 1;
  }
}
