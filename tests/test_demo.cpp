// attendre-demo run as a newcomer would: one row per policy with numbers in
// range, the demo's point (attention-scored eviction keeps what full
// attention looks at, fifo does not), and one-line errors for bad options.
#include "support.hpp"

#include <doctest/doctest.h>

#ifdef ATTENDRE_DEMO_BINARY

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Outcome = attendre::test::ToolOutcome;

Outcome run_demo(const std::string& arguments) { return attendre::test::run_tool(ATTENDRE_DEMO_BINARY, arguments); }

struct Row {
  unsigned kept = 0, planted = 0;
  double mass = 0.0, steps_per_second = 0.0;
};

// The row labels are the demo's user-facing contract.
const std::vector<std::string> kLabels = {
    "fifo (sliding window)", "fifo + 4 sinks (StreamingLLM)", "lru", "lfu", "lra_last (TOVA)",
    "lra_max", "lra_sum", "lfa lambda=0 (H2O)", "lfa lambda=1e-3"};

// Every label must start exactly one row, followed by "kept/planted mass% steps".
std::map<std::string, Row> parse_rows(const std::string& output) {
  std::map<std::string, Row> rows;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    for (const std::string& label : kLabels) {
      if (line.compare(0, label.size(), label) != 0 || line.size() <= label.size() + 1 ||
          line[label.size()] != ' ' || line[label.size() + 1] != ' ')
        continue;
      INFO("row: " << line);
      CHECK(rows.count(label) == 0);
      Row row;
      const int fields = std::sscanf(line.c_str() + label.size(), " %u/%u %lf%% %lf", &row.kept, &row.planted,
                                     &row.mass, &row.steps_per_second);
      REQUIRE(fields == 4);
      rows[label] = row;
    }
  }
  return rows;
}

}  // namespace

TEST_CASE("attendre-demo: one row per policy, numbers in range, attention-scored eviction keeps the needles") {
  const Outcome outcome = run_demo("--tokens 512 --memory 64");
  INFO(outcome.output);
  REQUIRE(outcome.exit_code == 0);
  CHECK(outcome.output.find("device: ") != std::string::npos);
  CHECK(outcome.output.find("M=64") != std::string::npos);

  const std::map<std::string, Row> rows = parse_rows(outcome.output);
  REQUIRE(rows.size() == kLabels.size());
  for (const auto& [label, row] : rows) {
    INFO(label);
    CHECK(row.planted == 16);
    CHECK(row.kept <= row.planted);
    CHECK(row.mass > 0.0);
    CHECK(row.mass <= 100.0);
    CHECK(row.steps_per_second > 0.0);
  }

  // At M=64 and 512 tokens the fixed stream gives fifo 0/16 needles and ~30%
  // of full attention's mass, lra_sum 16/16 and ~62%: the margins below leave
  // room for fp32 near-ties on the GPU flipping a few evictions.
  const Row& fifo = rows.at("fifo (sliding window)");
  Row best;
  for (const char* label : {"lra_last (TOVA)", "lra_max", "lra_sum", "lfa lambda=0 (H2O)", "lfa lambda=1e-3"}) {
    const Row& row = rows.at(label);
    if (row.mass > best.mass) best = row;
  }
  CHECK(best.kept >= fifo.kept + best.planted / 2);
  CHECK(best.mass >= fifo.mass + 15.0);
}

TEST_CASE("attendre-demo: bad options exit 2 with a one-line message") {
  for (const char* arguments : {"--bogus", "--tokens abc", "--tokens 5", "--memory", "--device tpu"}) {
    const Outcome outcome = run_demo(arguments);
    INFO(arguments << " -> " << outcome.output);
    CHECK(outcome.exit_code == 2);
    CHECK(outcome.output.rfind("attendre-demo: ", 0) == 0);
    CHECK(outcome.output.find('\n') == outcome.output.size() - 1);
  }
  const Outcome help = run_demo("--help");
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("--tokens") != std::string::npos);
}

#endif  // ATTENDRE_DEMO_BINARY
