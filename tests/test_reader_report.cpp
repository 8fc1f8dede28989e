// attendre-reader's HTML report as a browser shows it: headless Chromium
// (Debian's `chromium`) screenshots it at a desktop and a phone width, and
// the screenshots must not be blank and must show the retention map: the
// map's border colour around a box holding the map's own cell colours. The
// report's size stays bounded for long inputs. Skips, saying why, without
// chromium or libpng.
#include "reader_support.hpp"

#if defined(ATTENDRE_READER_BINARY)

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>

#ifdef ATTENDRE_HAVE_PNG
#include <png.h>
#endif

using namespace attendre::test;
using namespace attendre::test::reader;

namespace {

constexpr const char* kChromium = "/usr/bin/chromium";

// The colours apps/attendre-reader/html_report.hpp draws with.
constexpr uint32_t kBorder = 0xe6007e, kUnread = 0xeeeeee, kPage = 0xfafafa;
constexpr uint32_t kHeld[] = {0xfde725, 0xb5de2b, 0x6ece58, 0x35b779, 0x1f9e89, 0x26828e, 0x31688e, 0x3e4989};

#ifdef ATTENDRE_HAVE_PNG
struct Image {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;
  uint32_t at(uint32_t x, uint32_t y) const {
    const uint8_t* p = rgb.data() + (uint64_t{y} * width + x) * 3;
    return uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2];
  }
};

Image read_png(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  REQUIRE_MESSAGE(png_image_begin_read_from_file(&image, path.c_str()) != 0, "cannot read " << path);
  image.format = PNG_FORMAT_RGB;
  Image out;
  out.width = image.width;
  out.height = image.height;
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  REQUIRE(png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr) != 0);
  return out;
}

// Screenshots `html` at width x height and checks what a reader must see.
void check_screenshot(const TempDir& dir, const std::string& html, uint32_t width, uint32_t height) {
  const std::string png = dir / ("shot-" + std::to_string(width) + ".png");
  const std::string profile = dir / ("profile-" + std::to_string(width));
  std::filesystem::create_directories(profile);
  const std::string command =
      std::string("timeout 120 ") + kChromium +
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
      " --disable-component-update --disable-sync --user-data-dir=" + quote(profile) + " --screenshot=" + quote(png) +
      " --window-size=" + std::to_string(width) + "," + std::to_string(height) + " " + quote("file://" + html) +
      " >/dev/null 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
  const Image image = read_png(png);
  REQUIRE(image.width == width);
  REQUIRE(image.height == height);

  // Not blank: most of a page is background, but far from all of it.
  uint64_t ink = 0;
  uint32_t x0 = width, y0 = height, x1 = 0, y1 = 0;
  for (uint32_t y = 0; y < height; ++y)
    for (uint32_t x = 0; x < width; ++x) {
      const uint32_t c = image.at(x, y);
      ink += c != kPage && c != 0xffffff;
      if (c == kBorder) x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
    }
  CHECK(ink > uint64_t{width} * height / 20);

  // The map: its border in view, a box of a real size, its cells drawn inside.
  REQUIRE_MESSAGE(x1 > x0, "no map border (#e6007e) on screen at " << width << "x" << height);
  CHECK(x1 - x0 >= width / 3);
  CHECK(y1 - y0 >= 60);
  std::map<uint32_t, uint64_t> inside;
  for (uint32_t y = y0 + 3; y + 3 <= y1; ++y)
    for (uint32_t x = x0 + 3; x + 3 <= x1; ++x) ++inside[image.at(x, y)];
  uint64_t held = 0, levels = 0;
  for (uint32_t c : kHeld) {
    held += inside[c];
    levels += inside[c] > 0;
  }
  const uint64_t area = uint64_t{x1 - x0} * (y1 - y0);
  INFO("screenshot " << width << "x" << height << ": map box " << x1 - x0 << "x" << y1 - y0 << ", held pixels " << held);
  CHECK(held > area / 100);   // held cells, in the map's own colours
  CHECK(levels >= 4);         // scores spread over the palette
  CHECK(inside[kUnread] > area / 10);  // and the part not read yet
}
#endif

}  // namespace

TEST_CASE("attendre-reader: the HTML report renders in headless Chromium at desktop and phone widths") {
#ifndef ATTENDRE_HAVE_PNG
  MESSAGE("skipped: built without libpng (Debian: libpng-dev), so screenshots cannot be decoded");
#else
  if (!std::filesystem::exists(kChromium)) {
    MESSAGE("skipped: no " << kChromium << " (Debian: apt-get install chromium)");
    return;
  }
  const TempDir dir;
  const std::string html = dir / "report.html";
  // More steps than the map has rows and more positions than columns: both downsampled.
  const ToolStreams r = run_reader("--haystack-tokens 1400 --depths 0.1,0.5,0.8 --seed 7 --kv-capacity 192 --chunk 8"
                                   " --q-capacity 16 --compare fifo,lra_sum --quiet --report " + quote(html));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const std::string page = slurp(html);
  CHECK(page.find("http://") == std::string::npos);  // self-contained: nothing to fetch
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("<script src") == std::string::npos);
  const std::regex dims("\"columns\":([0-9]+),\"rows\":([0-9]+)");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), dims); it != std::sregex_iterator(); ++it) {
    CHECK(std::stoi((*it)[1]) <= 320);
    CHECK(std::stoi((*it)[2]) <= 162);  // 160 sampled steps, the last one, the state after the drain
    CHECK(std::stoi((*it)[2]) >= 80);
  }
  check_screenshot(dir, html, 1280, 900);
  check_screenshot(dir, html, 390, 844);
#endif
}

TEST_CASE("attendre-reader: the report of a long text shows excerpts and stays small") {
  const TempDir dir;
  // 300 KB in 600 long words: long to show, quick to read.
  std::string text = "A first line with a fact: the amber compass is 12.\n\n";
  const std::string word(499, 'x');
  while (text.size() < 300'000) text += word + " ";
  std::ofstream(dir / "long.txt", std::ios::binary) << text;
  const ToolStreams r = run_reader("--text " + quote(dir / "long.txt") + " --policy lra_sum --kv-capacity 64 --quiet --report " +
                                   quote(dir / "r.html"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string page = slurp(dir / "r.html");
  CHECK(page.find("Only the passages around what was kept are shown.") != std::string::npos);
  CHECK(page.size() < 150'000);
}

#endif
