#include "input.hpp"

#include "haystack.hpp"

namespace reader {

OpenedInput open_input(const Options& o) {
  OpenedInput in;
  in.template_text = o.template_text.empty() ? std::string(kDefaultTemplate) : o.template_text;
  std::vector<TemplatePiece> pieces = parse_template(in.template_text);
  std::unique_ptr<TextSource> context;
  std::vector<NeedleBytes> needle_bytes;
  if (o.input == InputKind::text) {
    context = open_text_file(o.text_path);
    in.source = "text";
    in.source_name = o.text_path;
    in.question = o.question.value_or(kTextQuestion);
  } else {
    Haystack haystack = generate_haystack(o.haystack);
    in.source = o.input == InputKind::builtin ? "built-in haystack" : "haystack";
    in.source_name = "seed " + std::to_string(o.haystack.seed) + ", " + std::to_string(o.haystack.tokens) +
                     " tokens of filler asked";
    in.question = o.question.value_or(haystack.question);
    for (const PlantedNeedle& n : haystack.needles) {
      needle_bytes.push_back({n.begin, n.end});
      NeedleInfo info;
      info.key = n.key;
      info.answer = n.answer;
      info.fact = n.fact;
      info.requested_depth = n.depth;
      in.needles.push_back(std::move(info));
    }
    context = text_in_memory(std::move(haystack.context), "the generated haystack");
  }
  in.document = std::make_unique<Document>(std::move(pieces), in.question, std::move(context), std::move(needle_bytes));
  return in;
}

}  // namespace reader
