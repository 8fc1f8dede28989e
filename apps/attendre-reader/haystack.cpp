#include "haystack.hpp"

#include "common/needle_placement.hpp"
#include "common/rng.hpp"
#include "core/fail.hpp"
#include "core/number_text.hpp"
#include "word_splitter.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace reader {
namespace {

using attendre::apps::Rng;

// Needle keys: colours and objects that the filler below never uses.
constexpr std::array<std::string_view, kMaxNeedles> kColours = {
    "silver", "copper", "amber", "jade", "cobalt", "scarlet", "ivory", "bronze", "violet", "indigo", "crimson", "golden"};
constexpr std::array<std::string_view, kMaxNeedles> kObjects = {
    "lighthouse", "kettle", "violin", "compass", "lantern", "telescope",
    "harp", "clocktower", "carousel", "observatory", "chessboard", "teapot"};

// The filler's words: a valley, its people and its weather.
constexpr std::array<std::string_view, 24> kNouns = {
    "river", "path", "hill", "garden", "market", "field", "window", "road", "village", "forest", "stone", "wall",
    "boat", "cloud", "meadow", "orchard", "bridge", "well", "barn", "harbour", "chapel", "mill", "fence", "valley"};
constexpr std::array<std::string_view, 16> kPeople = {
    "the farmer", "the baker", "a child", "the miller", "an old woman", "the teacher", "a traveller", "the fisherman",
    "the weaver", "a shepherd", "the carpenter", "the innkeeper", "a young man", "the priest", "the potter", "a girl"};
constexpr std::array<std::string_view, 20> kAdjectives = {
    "quiet", "narrow", "green", "distant", "gentle", "heavy", "bright", "wooden", "empty", "muddy",
    "crooked", "warm", "grey", "steep", "busy", "cold", "broad", "sleepy", "windy", "shady"};
constexpr std::array<std::string_view, 16> kVerbsPast = {
    "walked past", "looked at", "painted", "repaired", "cleaned", "crossed", "visited", "watched",
    "followed", "measured", "described", "remembered", "passed", "circled", "approached", "admired"};
constexpr std::array<std::string_view, 12> kTimes = {
    "In the morning", "At noon", "Later that day", "In the evening", "Before dawn", "After the rain",
    "During the harvest", "On market day", "In early spring", "Late in autumn", "At dusk", "Every winter"};
constexpr std::array<std::string_view, 12> kWeather = {
    "the wind carried the smell of bread", "a light rain fell on the roofs", "fog settled over the water",
    "the sun warmed the fields", "snow covered the slopes", "birds gathered on the chimneys",
    "bells rang in the distance", "smoke rose from the kitchens", "the clouds moved slowly east",
    "frogs sang by the ponds", "leaves drifted across the lanes", "a cart rattled over the cobbles"};

template <size_t N>
std::string_view pick(Rng& rng, const std::array<std::string_view, N>& words) {
  return words[rng.below(static_cast<uint32_t>(N))];
}

std::string capitalized(std::string_view text) {
  std::string s(text);
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

std::string filler_sentence(Rng& rng) {
  const std::string noun(pick(rng, kNouns)), other(pick(rng, kNouns)), adj(pick(rng, kAdjectives));
  switch (rng.below(6)) {
    case 0: return "The " + adj + " " + noun + " lay beside the " + other + ".";
    case 1: return capitalized(pick(rng, kPeople)) + " " + std::string(pick(rng, kVerbsPast)) + " the " + adj + " " + noun + ".";
    case 2: return std::string(pick(rng, kTimes)) + ", " + std::string(pick(rng, kWeather)) + ".";
    case 3: return capitalized(pick(rng, kPeople)) + " " + std::string(pick(rng, kVerbsPast)) + " the " + noun +
                   " and then the " + other + ".";
    case 4: return "Near the " + noun + ", " + std::string(pick(rng, kPeople)) + " told a story about the " + adj + " " + other + ".";
    default: return "Nobody in the village had seen the " + noun + " so " + adj + " before.";
  }
}

uint64_t count_tokens(std::string_view text) {
  WordSplitter splitter;
  std::vector<Token> tokens;
  splitter.begin_part(Part::context);
  splitter.feed(text, tokens);
  splitter.end_part(tokens);
  return tokens.size();
}

std::string question_for(const std::vector<PlantedNeedle>& needles) {
  if (needles.size() == 1) return "What is the secret number of the " + needles[0].key + "?";
  std::string list;
  for (size_t i = 0; i < needles.size(); ++i) list += (i ? ", the " : "the ") + needles[i].key;
  return "What is the secret number of each of these: " + list + "?";
}

}  // namespace

Haystack generate_haystack(const HaystackSpec& spec) {
  const auto count = static_cast<uint32_t>(spec.depths.empty() ? spec.needles : spec.depths.size());
  attendre::require(count >= 1 && count <= kMaxNeedles,
                    "a haystack holds 1 to " + std::to_string(kMaxNeedles) + " needles, asked for " + std::to_string(count));
  for (double d : spec.depths)
    attendre::require(d >= 0.0 && d <= 1.0, "needle depths are fractions in [0, 1], got " + attendre::shortest_text(d));
  Rng rng(spec.seed);

  // Filler first, sentence by sentence, until it is long enough.
  std::vector<std::string> filler;
  for (uint64_t tokens = 0; tokens < spec.tokens;) {
    filler.push_back(filler_sentence(rng));
    tokens += count_tokens(filler.back());
  }
  const auto sentences = static_cast<double>(filler.size());

  // Distinct keys: a colour and an object drawn without repetition.
  std::vector<std::string_view> colours(kColours.begin(), kColours.end()), objects(kObjects.begin(), kObjects.end());
  std::vector<PlantedNeedle> needles(count);
  std::vector<double> depths = spec.depths;
  if (depths.empty()) {
    for (int64_t at : attendre::apps::spread_positions(count, sentences, 0.5, rng))
      depths.push_back(static_cast<double>(at) / sentences);
  }
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t c = rng.below(static_cast<uint32_t>(colours.size())), o = rng.below(static_cast<uint32_t>(objects.size()));
    needles[i].key = std::string(colours[c]) + " " + std::string(objects[o]);
    colours.erase(colours.begin() + c);
    objects.erase(objects.begin() + o);
    needles[i].answer = std::to_string(1000 + rng.below(9000));
    needles[i].fact = "The secret number of the " + needles[i].key + " is " + needles[i].answer + ".";
    needles[i].depth = depths[i];
  }
  std::stable_sort(needles.begin(), needles.end(), [](const auto& a, const auto& b) { return a.depth < b.depth; });

  // Paragraphs of 3 to 6 sentences; each needle goes before the filler
  // sentence at its depth (or at the very end for depth 1).
  Haystack h;
  size_t next_needle = 0;
  uint32_t left_in_paragraph = 3 + rng.below(4);
  for (size_t s = 0; s <= filler.size(); ++s) {
    while (next_needle < needles.size() &&
           (s == filler.size() || static_cast<double>(s) >= needles[next_needle].depth * sentences)) {
      PlantedNeedle& n = needles[next_needle++];
      if (!h.context.empty() && h.context.back() != '\n') h.context += ' ';
      n.begin = h.context.size();
      h.context += n.fact;
      n.end = h.context.size();
    }
    if (s == filler.size()) break;
    if (!h.context.empty()) h.context += left_in_paragraph == 0 ? "\n\n" : " ";
    if (left_in_paragraph == 0) left_in_paragraph = 3 + rng.below(4);
    h.context += filler[s];
    --left_in_paragraph;
  }
  h.context += "\n";
  h.question = question_for(needles);
  h.needles = std::move(needles);
  return h;
}

}  // namespace reader
