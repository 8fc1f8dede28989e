// Values echoed back in messages are printed in their shortest round-trip
// form: a refused value never reads as an accepted one ("got 1.000000" for a
// top-p just above 1), nor as a bound, nor floods the line with digits.
#include "support.hpp"

#include "core/number_text.hpp"
#include <attendre/config.hpp>
#include <attendre/generate.hpp>

#include <doctest/doctest.h>

#include <charconv>
#include <cmath>
#include <limits>

using namespace attendre;

TEST_CASE("number text: the shortest form that reads back as the same double") {
  CHECK(shortest_text(1e308) == "1e+308");
  CHECK(shortest_text(1.0000000000000002) == "1.0000000000000002");
  CHECK(shortest_text(0.5) == "0.5");
  CHECK(shortest_text(-0.0) == "-0");
  const double values[] = {std::nextafter(1.0, 2.0), std::numeric_limits<double>::denorm_min(),
                           -std::numeric_limits<double>::max(), 0.1 + 0.2, 123456789.125};
  for (const double value : values) {
    const std::string text = shortest_text(value);
    INFO(text);
    double back = 0.0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), back);
    CHECK(ec == std::errc{});
    CHECK(end == text.data() + text.size());
    CHECK(back == value);
    CHECK(text.size() <= 24);
  }
}

TEST_CASE("number text: the library's checks echo a refused value exactly") {
  SamplingOptions sampling;
  sampling.top_p = std::nextafter(1.0, 2.0);
  const auto message = [](const Status& status) { return status.ok() ? std::string("ok") : status.message(); };
  CHECK(message(sampling.check()).find("top_p must lie in (0, 1], got 1.0000000000000002") != std::string::npos);
  sampling.top_p = 1.0;
  sampling.temperature = -1e300;
  CHECK(message(sampling.check()).find("got -1e+300") != std::string::npos);

  LayerConfig config;
  config.shape = {1, 1, 4};
  config.kv.capacity = 4;
  config.retrieval.top_k = 4;
  config.kv.policy = Policy::lfa(3.4028236e38);  // just past FLT_MAX, which "3.4e+38" would look like
  CHECK(message(config.check()).find("lfa lambda is 3.4028236e+38") != std::string::npos);
}
