// Host-side sampling (attendre/generate.hpp): greedy is the arg max with
// ties to the smaller id; draws follow softmax(logits / T) restricted to the
// top-p nucleus; a seed gives the same draws on every platform.
#include "gguf_test_support.hpp"

#include <attendre/generate.hpp>

#include <cmath>
#include <limits>

using namespace attendre;

namespace {

std::vector<double> frequencies(Sampler& sampler, std::span<const float> logits, int draws) {
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < draws; ++i) ++counts[sampler.sample(logits).value_or_throw()];
  std::vector<double> out;
  for (int c : counts) out.push_back(static_cast<double>(c) / draws);
  return out;
}

}  // namespace

TEST_CASE("sampler: greedy takes the largest logit, the smaller id on ties") {
  Sampler greedy = Sampler::create(SamplingOptions{}).value_or_throw();
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  CHECK(greedy.sample(logits).value_or_throw() == 1);
  CHECK(greedy.sample(std::vector<float>{-3.0f}).value_or_throw() == 0);
  test::check_error([&] { greedy.sample({}).value_or_throw(); }, ErrorCode::invalid_argument, "empty row of logits");
}

TEST_CASE("sampler: draws follow the tempered softmax inside the top-p nucleus") {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  Sampler plain = Sampler::create(SamplingOptions{1.0, 1.0, 1}).value_or_throw();
  const std::vector<double> p = frequencies(plain, logits, 20000);
  CHECK(p[0] == doctest::Approx(0.5).epsilon(0.05));
  CHECK(p[1] == doctest::Approx(0.3).epsilon(0.05));
  CHECK(p[2] == doctest::Approx(0.2).epsilon(0.06));
  // T = 2 flattens: probabilities proportional to sqrt(0.5), sqrt(0.3), sqrt(0.2).
  Sampler warm = Sampler::create(SamplingOptions{2.0, 1.0, 2}).value_or_throw();
  const std::vector<double> w = frequencies(warm, logits, 20000);
  const double z = std::sqrt(0.5) + std::sqrt(0.3) + std::sqrt(0.2);
  CHECK(w[0] == doctest::Approx(std::sqrt(0.5) / z).epsilon(0.05));
  CHECK(w[2] == doctest::Approx(std::sqrt(0.2) / z).epsilon(0.06));
  // top_p 0.6: 0.5 alone falls short, so the nucleus is {0, 1}, renormalised 5:3.
  Sampler nucleus = Sampler::create(SamplingOptions{1.0, 0.6, 3}).value_or_throw();
  const std::vector<double> n = frequencies(nucleus, logits, 20000);
  CHECK(n[2] == 0.0);
  CHECK(n[0] == doctest::Approx(0.625).epsilon(0.05));
  // A nucleus of one is greedy.
  Sampler narrow = Sampler::create(SamplingOptions{1.0, 0.01, 4}).value_or_throw();
  CHECK(frequencies(narrow, logits, 100)[0] == 1.0);
}

TEST_CASE("sampler: a seed gives the same draws everywhere (a local generator, fixed here)") {
  std::vector<float> logits(16);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 5) * 0.25f;
  Sampler a = Sampler::create(SamplingOptions{1.0, 0.9, 42}).value_or_throw();
  Sampler b = Sampler::create(SamplingOptions{1.0, 0.9, 42}).value_or_throw();
  Sampler c = Sampler::create(SamplingOptions{1.0, 0.9, 43}).value_or_throw();
  std::vector<uint32_t> draws_a, draws_b, draws_c;
  for (int i = 0; i < 12; ++i) {
    draws_a.push_back(a.sample(logits).value_or_throw());
    draws_b.push_back(b.sample(logits).value_or_throw());
    draws_c.push_back(c.sample(logits).value_or_throw());
  }
  CHECK(draws_a == draws_b);
  CHECK(draws_a != draws_c);
  // splitmix64 and an explicit order make these the draws of every platform.
  CHECK(draws_a == std::vector<uint32_t>{12, 9, 14, 3, 4, 6, 14, 1, 3, 2, 9, 13});
}

TEST_CASE("sampler: temperature and top-p outside their domains are refused, naming them") {
  test::check_error([] { (void)Sampler::create(SamplingOptions{-0.5, 1.0, 0}).value_or_throw(); }, ErrorCode::invalid_argument, "temperature");
  test::check_error([] { (void)Sampler::create(SamplingOptions{NAN, 1.0, 0}).value_or_throw(); }, ErrorCode::invalid_argument, "temperature");
  test::check_error([] { (void)Sampler::create(SamplingOptions{1.0, 0.0, 0}).value_or_throw(); }, ErrorCode::invalid_argument, "top_p must lie in (0, 1]");
  test::check_error([] { (void)Sampler::create(SamplingOptions{1.0, 1.5, 0}).value_or_throw(); }, ErrorCode::invalid_argument, "top_p must lie in (0, 1]");
}

TEST_CASE("sampler: a row holding NaN or +inf is a numerical error naming the token, -inf masks a token out") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const double temperature : {0.0, 1.0}) {
    Sampler sampler = Sampler::create(SamplingOptions{temperature, 0.9, 1}).value_or_throw();
    test::check_error([&] { sampler.sample(std::vector<float>(4, nan)).value_or_throw(); }, ErrorCode::numerical_error,
                      "token 0 has NaN");
    // -inf masks a token out: it is never picked, and a row of nothing else is refused.
    for (int draw = 0; draw < 50; ++draw) CHECK(sampler.sample(std::vector<float>{-inf, 1.0f, -inf, 0.5f}).value_or_throw() % 2 == 1);
    test::check_error([&] { sampler.sample(std::vector<float>(3, -inf)).value_or_throw(); }, ErrorCode::numerical_error,
                      "all -inf");
    test::check_error([&] { sampler.sample(std::vector<float>{inf, 1.0f}).value_or_throw(); }, ErrorCode::numerical_error,
                      "token 0 has inf");
  }
}
