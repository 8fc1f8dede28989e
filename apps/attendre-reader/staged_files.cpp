#include "staged_files.hpp"

#include "core/fail.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>

#include <unistd.h>

namespace reader {
namespace fs = std::filesystem;
namespace {

using attendre::ErrorCode;
using attendre::fail;

void write_file(const fs::path& path, std::string_view bytes, const fs::path& target) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) fail(ErrorCode::io_error, "cannot write " + target.string() + ": " + std::strerror(errno));
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size() && std::fflush(file) == 0 &&
                  ::fsync(::fileno(file)) == 0;
  const int error = errno;
  const bool closed = std::fclose(file) == 0;
  if (!ok || !closed) fail(ErrorCode::io_error, "cannot write " + target.string() + ": " + std::strerror(error));
}

}  // namespace

StagedFiles::StagedFiles(std::vector<fs::path> targets) : targets_(std::move(targets)) {
  // Every target is checked before any file is created, so a bad second
  // path leaves nothing of the first behind.
  for (const fs::path& target : targets_) {
    const fs::path absolute = fs::absolute(target);
    const fs::path folder = absolute.parent_path();
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
      fail(ErrorCode::io_error, "cannot write " + target.string() + ": the folder " + folder.string() + " does not exist");
    if (fs::is_directory(absolute, ec)) fail(ErrorCode::io_error, "cannot write " + target.string() + ": it is a folder");
    // pid in the name: concurrent runs never share a staged file.
    std::string name = ".";
    name.append(absolute.filename().string()).append(".attendre-reader-").append(std::to_string(::getpid()));
    staged_.push_back(folder / name);
  }
  try {
    for (size_t i = 0; i < staged_.size(); ++i) write_file(staged_[i], {}, targets_[i]);
  } catch (...) {
    discard();
    throw;
  }
}

void StagedFiles::discard() noexcept {
  std::error_code ignored;  // the failure that got us here is the one worth reporting
  for (const fs::path& path : staged_) fs::remove(path, ignored);
}

StagedFiles::~StagedFiles() {
  if (!committed_) discard();
}

void StagedFiles::write(size_t index, std::string_view bytes) { write_file(staged_.at(index), bytes, targets_.at(index)); }

void StagedFiles::commit() {
  for (size_t i = 0; i < targets_.size(); ++i) {
    std::error_code ec;
    fs::rename(staged_[i], targets_[i], ec);
    if (ec) fail(ErrorCode::io_error, "cannot move the finished " + targets_[i].string() + " into place: " + ec.message());
  }
  committed_ = true;
}

}  // namespace reader
