// Needle-in-a-haystack documents: filler paragraphs about an imaginary
// valley, with planted facts ("The secret number of the silver lighthouse
// is 4417.") at chosen depths and one question asking for all of them.
// Filler never uses a needle's words (nor "secret" and "number"), so only
// the facts share content words with the question. Seeded: the same spec
// gives the same document on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace reader {

struct HaystackSpec {
  uint32_t tokens = 2400;     // length of the context, in the word splitter's tokens (at least this)
  uint32_t needles = 3;       // ignored when depths are given
  std::vector<double> depths;  // in [0, 1]; empty: spread evenly, jittered by the seed
  uint64_t seed = 1;
};

struct PlantedNeedle {
  std::string key;     // "silver lighthouse": what the question names
  std::string answer;  // "4417"
  std::string fact;    // the sentence planted
  double depth = 0.0;  // where it was asked for, as a fraction of the filler
  uint64_t begin = 0, end = 0;  // the fact's bytes in the context
};

struct Haystack {
  std::string context;
  std::string question;
  std::vector<PlantedNeedle> needles;  // in document order
};

// Throws attendre::Error(invalid_argument) for more needles than the
// generator has distinct keys for (12) or a depth outside [0, 1].
Haystack generate_haystack(const HaystackSpec& spec);

// The most needles a haystack can hold.
inline constexpr uint32_t kMaxNeedles = 12;

}  // namespace reader
