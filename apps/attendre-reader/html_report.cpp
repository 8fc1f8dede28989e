#include "html_report.hpp"

#include "common/human_bytes.hpp"
#include "summary.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

namespace reader {
namespace {

std::string base64(const std::vector<uint8_t>& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = uint32_t{bytes[i]} << 16 | (i + 1 < bytes.size() ? uint32_t{bytes[i + 1]} << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t{bytes[i + 2]} : 0);
    out += kAlphabet[n >> 18 & 63];
    out += kAlphabet[n >> 12 & 63];
    out += i + 1 < bytes.size() ? kAlphabet[n >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

std::string percent(double fraction) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * fraction);
  return buf;
}

// JSON is valid JavaScript; "</" is escaped so no string can close the script.
std::string script_value(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') out += "<\\";
    else out += text[i];
  }
  return out;
}

std::string style() {
  std::string css = R"(
body{font:16px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
main{max-width:980px;margin:0 auto;padding:12px 14px 40px}
h1{font-size:1.25rem;margin:4px 0}h2{font-size:1.05rem;margin:22px 0 8px}
.question{margin:2px 0 10px;font-weight:600}
figure{margin:0}figcaption{font-size:.9rem;margin-bottom:3px}
.maps{display:grid;grid-template-columns:repeat(auto-fit,minmax(400px,1fr));gap:10px 18px;margin-bottom:8px}
@media (max-width:460px){.maps{grid-template-columns:1fr}}
canvas.map{display:block;width:100%;height:auto;border:3px solid BORDER;image-rendering:pixelated;box-sizing:border-box}
.axis{display:flex;justify-content:space-between;font-size:.75rem;color:#666}
.legend{font-size:.8rem;color:#444;display:flex;flex-wrap:wrap;gap:4px 12px;align-items:center}
.swatch{display:inline-block;width:12px;height:12px;border:1px solid #bbb;vertical-align:middle;margin-right:3px}
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:.9rem}
td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
td:first-child,th:first-child{text-align:left}
.kept{color:#1a7f37;font-weight:600}.lost{color:#b3261e}
.doc{white-space:pre-wrap;word-wrap:break-word;background:#fff;border:1px solid #ddd;padding:10px;font-size:.92rem}
.doc .q{text-decoration:underline;text-decoration-color:#888}.doc .n{outline:1px dashed #b3261e}
.runs label{display:inline-block;padding:3px 10px;margin:0 4px 6px 0;border:1px solid #999;border-radius:14px;cursor:pointer;font-size:.85rem}
.runs input{position:absolute;opacity:0}.runs input:checked+label{background:#1d1d1f;color:#fff}
.cut{color:#888}.note{font-size:.85rem;color:#555}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font-size:.9rem}dt{color:#555}dd{margin:0;word-break:break-word}
)";
  css.replace(css.find("BORDER"), 6, kMapBorder);
  return css;
}

// The per-run highlight rules: the text shows run r when its radio button is checked.
std::string run_rules(size_t runs) {
  std::string css;
  for (size_t r = 0; r < runs; ++r)
    css += "#run" + std::to_string(r) + ":checked~.doc .r" + std::to_string(r) + "{background:#ffd866}\n";
  return css;
}

std::string maps_section(const Session& s) {
  std::string html = "<section id=\"maps\"><div class=\"maps\">\n";
  const int64_t T = s.survey.tokens;
  for (size_t r = 0; r < s.runs.size(); ++r) {
    const RetentionMap& map = s.runs[r].map;
    html += "<figure><figcaption><b>" + html_escape(s.runs[r].label) + "</b>: the last block's memory, " +
            std::to_string(map.rows.size()) + " snapshots</figcaption>";
    html += "<canvas class=\"map\" data-run=\"" + std::to_string(r) + "\" width=\"" + std::to_string(map.columns) +
            "\" height=\"" + std::to_string(map.rows.size()) + "\"></canvas>";
    html += "<div class=\"axis\"><span>position 0</span><span>document position &rarr;</span><span>" +
            std::to_string(T - 1) + "</span></div></figure>\n";
  }
  html += "</div><div class=\"legend\"><span>step &darr;, one row per snapshot, the last after the " +
          std::string(s.memory.flush ? "flush" : "drain") + ":</span>";
  html += std::string("<span><i class=\"swatch\" style=\"background:") + kUnreadColour + "\"></i>not read yet</span>";
  html += std::string("<span><i class=\"swatch\" style=\"background:") + kEvictedColour + "\"></i>read, not held</span>";
  html += "<span>held, score low";
  for (const char* c : kHeldColours) html += std::string("<i class=\"swatch\" style=\"background:") + c + "\"></i>";
  html += "high</span></div>\n</section>\n";
  return html;
}

std::string results_section(const Session& s) {
  std::string html = "<section><h2>What each memory kept</h2><div class=\"scroll\"><table><tr><th>policy</th>";
  for (const NeedleInfo& n : s.needles) html += "<th>@" + percent(n.depth) + "</th>";
  html += "<th>mass</th><th>tokens/s</th><th>GPU memory</th></tr>\n";
  for (const RunResult& r : s.runs) {
    html += "<tr><td>" + html_escape(r.label) + "</td>";
    for (const NeedleInfo& n : s.needles) {
      const bool kept = r.last_block().held_in(n.positions.first, n.positions.last) > 0;
      html += kept ? "<td class=\"kept\">kept</td>" : "<td class=\"lost\">lost</td>";
    }
    html += "<td>" + (r.mass ? percent(r.mass->value) : std::string("n/a")) + "</td><td>" +
            grouped(static_cast<uint64_t>(std::llround(r.tokens_per_second(s.survey.tokens)))) + "</td><td>" +
            (r.device_bytes ? attendre::apps::human_bytes(*r.device_bytes) : std::string("-")) + "</td></tr>\n";
  }
  html += "</table></div>";
  html += "<p class=\"note\">A needle is kept when any of its tokens is in the last block's memory after the " +
          std::string(s.memory.flush ? "flush" : "drain") +
          ". Mass: the share of full attention's weight on what block 0 held when each query retrieved.</p>";
  if (!s.needles.empty()) {
    html += "<ol>";
    for (const NeedleInfo& n : s.needles)
      html += "<li>at " + percent(n.depth) + " (positions " + std::to_string(n.positions.first) + "&ndash;" +
              std::to_string(n.positions.last) + "): " + html_escape(n.fact) + "</li>";
    html += "</ol>";
  }
  for (const RunResult& r : s.runs)
    if (r.answer) html += "<p><b>Answer (" + html_escape(r.label) + "):</b> " + html_escape(*r.answer) + "</p>";
  return html + "</section>\n";
}

// The run the text shows first: the one that kept the most needles (the
// first such), so the page opens on what a memory can do.
size_t shown_first(const Session& s) {
  size_t best = 0, best_kept = 0;
  for (size_t r = 0; r < s.runs.size(); ++r) {
    size_t kept = 0;
    for (const NeedleInfo& n : s.needles) kept += s.runs[r].last_block().held_in(n.positions.first, n.positions.last) > 0;
    if (kept > best_kept) best = r, best_kept = kept;
  }
  return best;
}

std::string text_section(const Session& s, Document& document, TokenStream& tokenizer) {
  std::string html = "<section class=\"runs\"><h2>The text, with what the last block kept</h2>";
  const size_t first = shown_first(s);
  for (size_t r = 0; r < s.runs.size(); ++r) {
    const std::string id = "run" + std::to_string(r);
    html += "<input type=\"radio\" name=\"run\" id=\"" + id + "\"" + (r == first ? " checked" : "") + "><label for=\"" + id +
            "\">" + html_escape(s.runs[r].label) + "</label>";
  }
  html += "<div class=\"doc\">" + html_document_text(s, document, tokenizer) + "</div>";
  html += "<p class=\"note\">Highlighted: held by the chosen run's last block at the end. Dashed: the needles. "
          "Underlined: the question.</p></section>\n";
  return html;
}

std::string configuration_section(const Session& s) {
  std::string html = "<section><h2>Configuration and timings</h2><dl>";
  const auto item = [&](const std::string& term, const std::string& value) {
    html += "<dt>" + html_escape(term) + "</dt><dd>" + html_escape(value) + "</dd>";
  };
  item("device", s.device);
  item("model", s.backend_description);
  item("document", s.source + " (" + s.source_name + "), " + grouped(static_cast<uint64_t>(s.survey.tokens)) + " tokens");
  item("template", s.template_text);
  item("memory", memory_line(s));
  for (const RunResult& r : s.runs) {
    char timing[160];
    std::snprintf(timing, sizeof timing, "%.2f s, %llu steps, %.0f tokens/s", r.seconds,
                  static_cast<unsigned long long>(r.steps), r.tokens_per_second(s.survey.tokens));
    item("read: " + r.label, timing);
  }
  char yardstick[120];
  std::snprintf(yardstick, sizeof yardstick, "%.2f s for %llu queries", s.yardstick_seconds,
                static_cast<unsigned long long>(s.yardstick_queries));
  item("full attention (mass)", yardstick);
  return html + "</dl></section>\n";
}

// Draws every map: cells decoded from base64, painted at one pixel per cell
// on an offscreen canvas, scaled up without smoothing so the colours stay exact.
std::string map_script(const Session& s) {
  nlohmann::json maps = nlohmann::json::array();
  for (const RunResult& r : s.runs) {
    std::vector<uint8_t> cells;
    for (const RetentionMap::Row& row : r.map.rows) cells.insert(cells.end(), row.cells.begin(), row.cells.end());
    maps.push_back({{"columns", r.map.columns}, {"rows", r.map.rows.size()}, {"cells", base64(cells)}});
  }
  nlohmann::json palette = {kUnreadColour, kEvictedColour};
  for (const char* c : kHeldColours) palette.push_back(c);
  return "<script>\nconst maps=" + script_value(maps) + ";\nconst palette=" + script_value(palette) + R"(;
const rgb=palette.map(h=>[1,3,5].map(i=>parseInt(h.substr(i,2),16)));
function draw(canvas){
  const m=maps[+canvas.dataset.run], bytes=atob(m.cells);
  const off=document.createElement('canvas'); off.width=m.columns; off.height=m.rows;
  const octx=off.getContext('2d'), img=octx.createImageData(m.columns,m.rows);
  for(let i=0;i<bytes.length;i++){const c=rgb[bytes.charCodeAt(i)]||rgb[0];img.data.set([c[0],c[1],c[2],255],4*i);}
  octx.putImageData(img,0,0);
  const width=Math.max(1,Math.round(canvas.clientWidth-6)), rowHeight=Math.max(2,Math.min(4,Math.floor(240/m.rows)));
  canvas.width=width; canvas.height=m.rows*rowHeight;
  const ctx=canvas.getContext('2d'); ctx.imageSmoothingEnabled=false;
  ctx.drawImage(off,0,0,width,canvas.height);
}
document.querySelectorAll('canvas.map').forEach(draw);
</script>
)";
}

}  // namespace

std::string html_report(const Session& s, Document& document, TokenStream& tokenizer) {
  std::string html = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                     "<title>attendre-reader: " + html_escape(s.source) + "</title><style>" + style() +
                     run_rules(s.runs.size()) + "</style></head>\n<body><main>\n";
  html += "<h1>attendre-reader</h1><p class=\"question\">" + html_escape(s.question) + "</p>\n";
  html += maps_section(s);
  html += results_section(s);
  html += text_section(s, document, tokenizer);
  html += configuration_section(s);
  html += "</main>\n" + map_script(s) + "</body></html>\n";
  return html;
}

}  // namespace reader
