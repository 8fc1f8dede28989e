// Fuzz target: the .npy reader on arbitrary bytes. Every input is either
// refused with a one-line malformed_input naming the file, or read into an
// array whose size agrees with its shape and whose data are the file's last
// bytes; nothing else (a crash, an over-read, another exception, an
// allocation larger than the input) is acceptable.
#include "fuzz_check.hpp"

#include "npy/npy.hpp"

#include <algorithm>
#include <span>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attendre;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const npy::Array array = npy::parse(bytes, "fuzz.npy");
    const size_t expected = static_cast<size_t>(array.element_count()) * npy::item_size(array.dtype);
    fuzz::check(array.data.size() == expected, "data size is element count x item size");
    fuzz::check(expected <= size && std::equal(array.data.begin(), array.data.end(), bytes.end() - expected),
                "the data are the input's last bytes");
  } catch (const Error& e) {
    const std::string message = e.what();
    fuzz::check(e.code() == ErrorCode::malformed_input, "rejections are malformed_input", message);
    fuzz::check(message.rfind("fuzz.npy: ", 0) == 0, "rejections name the file", message);
    fuzz::check_one_line(message);
  }
  return 0;
}
