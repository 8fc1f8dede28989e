// The document the options ask for: a text file, a generated haystack, or
// the built-in one, put into the template with its question.
#pragma once

#include "document.hpp"
#include "options.hpp"
#include "session.hpp"

#include <memory>

namespace reader {

struct OpenedInput {
  std::unique_ptr<Document> document;
  std::vector<NeedleInfo> needles;  // positions and depths come from the survey
  std::string source, source_name, question, template_text;
};

// Throws io_error for a file that cannot be opened, invalid_argument for a
// template or haystack the options describe wrongly. UTF-8 is checked by
// the first walk over the document.
OpenedInput open_input(const Options& options);

// The question for a text given without one.
inline constexpr const char* kTextQuestion = "What is this text about?";

}  // namespace reader
