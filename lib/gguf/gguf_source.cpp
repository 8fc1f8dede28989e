// GGUF file bytes: a read-only mapping (POSIX mmap) or a borrowed buffer.
#include "gguf/gguf_source.hpp"

#include <cerrno>
#include <fcntl.h>
#include <limits>
#include <sys/mman.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace attendre::gguf::detail {
namespace {

std::string errno_text() { return std::generic_category().message(errno); }

// Closes the descriptor on every path out of map(); the mapping keeps the file
// alive on its own once made.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Source::Source(std::filesystem::path path, std::span<const std::byte> bytes, void* mapping)
    : path_(std::move(path)), name_(path_.string()), bytes_(bytes), mapping_(mapping) {}

Source::~Source() {
  if (mapping_) ::munmap(mapping_, bytes_.size());
}

Result<std::shared_ptr<const Source>> Source::map(const std::filesystem::path& path) {
  const std::string name = path.string();
  Descriptor file{::open(name.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return Status(ErrorCode::io_error, name + ": cannot open: " + errno_text());
  struct stat status {};
  if (::fstat(file.fd, &status) != 0) return Status(ErrorCode::io_error, name + ": cannot stat: " + errno_text());
  if (!S_ISREG(status.st_mode)) return Status(ErrorCode::io_error, name + ": not a regular file");
  const auto size = static_cast<uint64_t>(status.st_size);
  if (size > std::numeric_limits<size_t>::max())
    return Status(ErrorCode::io_error, name + ": " + std::to_string(size) + " bytes do not fit the address space");
  // mmap refuses a length of 0; an empty file is then an empty span, which the
  // parser rejects as too short like any other.
  if (size == 0) return std::shared_ptr<const Source>(new Source(path, {}, nullptr));
  void* mapping = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, file.fd, 0);
  if (mapping == MAP_FAILED)
    return Status(ErrorCode::io_error, name + ": cannot map " + std::to_string(size) + " bytes: " + errno_text());
  const std::span<const std::byte> bytes(static_cast<const std::byte*>(mapping), static_cast<size_t>(size));
  // From here the Source owns the mapping and unmaps it when destroyed.
  return std::shared_ptr<const Source>(new Source(path, bytes, mapping));
}

std::shared_ptr<const Source> Source::borrow(std::span<const std::byte> bytes, const std::filesystem::path& name) {
  return std::shared_ptr<const Source>(new Source(name, bytes, nullptr));
}

}  // namespace attendre::gguf::detail
