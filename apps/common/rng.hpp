// A deterministic random generator for the tools' generated inputs (the
// demo's stream, the reader's haystack): the same seed gives the same draws
// with every standard library.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>

namespace attendre::apps {

// std::normal_distribution and friends are implementation-defined, while
// mt19937_64's sequence is fixed by the standard: drawing through these keeps
// generated inputs (and the tests' expectations) identical everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(uniform() * n); }
  double normal() {  // Box-Muller, one value per call: simplicity over speed
    const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace attendre::apps
