// --report: one self-contained HTML page (no network: inline CSS, the
// retention maps drawn on canvases by an inline script from base64 cells).
// The first map sits at the top, inside a border of kMapBorder, so that a
// screenshot at phone or desktop width shows it; below it the results
// table, the needles, the text with what each memory kept highlighted
// (switched per run without script), the configuration and the timings.
// Its size is bounded whatever the document's length: maps are binned
// (RetentionMap), and a long text is shown as excerpts around what was kept.
#pragma once

#include "document.hpp"
#include "session.hpp"

#include <array>
#include <string>

namespace reader {

// Colours tests look for in screenshots: the border around every map, and
// the cells (not read yet, read but not held, held by score level low..high).
inline constexpr const char* kMapBorder = "#e6007e";
inline constexpr const char* kUnreadColour = "#eeeeee";
inline constexpr const char* kEvictedColour = "#ffffff";
inline constexpr std::array<const char*, 8> kHeldColours = {"#fde725", "#b5de2b", "#6ece58", "#35b779",
                                                            "#1f9e89", "#26828e", "#31688e", "#3e4989"};

// The text section shows the whole document up to this many bytes of
// text, excerpts around kept positions past it.
inline constexpr size_t kFullTextBytes = 200'000;
inline constexpr size_t kMaxTextBytes = 400'000;

std::string html_report(const Session& session, Document& document, TokenStream& tokenizer);

// The document's text as HTML, every token held at the end by run r's last
// block in class "rR", needles in "n", the question in "q" (html_text.cpp).
std::string html_document_text(const Session& session, Document& document, TokenStream& tokenizer);

// &, <, > and " as entities.
std::string html_escape(std::string_view text);

}  // namespace reader
