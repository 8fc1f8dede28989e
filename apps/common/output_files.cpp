#include "output_files.hpp"

#include <attendre/error.hpp>

#include <cerrno>
#include <cstdio>
#include <system_error>
#include <unistd.h>

namespace attendre::cli {
namespace {

std::string errno_text() { return std::generic_category().message(errno); }

}  // namespace

OutputFiles::~OutputFiles() {
  for (const auto& [target, staging] : files_) {
    std::error_code ignored;  // the error that brought us here is the one worth reporting
    std::filesystem::remove(staging, ignored);
  }
}

std::filesystem::path OutputFiles::stage(const std::string& flag, const std::filesystem::path& target) {
  if (std::filesystem::is_directory(target))
    throw Error(ErrorCode::io_error, flag + " " + target.string() + ": is a folder");
  std::filesystem::path staging = target;
  staging += ".tmp-" + std::to_string(::getpid());
  std::FILE* file = std::fopen(staging.c_str(), "wb");
  if (!file) throw Error(ErrorCode::io_error, flag + " " + target.string() + ": cannot write there: " + errno_text());
  std::fclose(file);
  files_.emplace_back(target, staging);
  return staging;
}

const std::filesystem::path& OutputFiles::staged(const std::filesystem::path& target) const {
  for (const auto& [t, staging] : files_)
    if (t == target) return staging;
  throw Error(ErrorCode::invalid_argument, target.string() + ": written without being staged");
}

void OutputFiles::write_text(const std::filesystem::path& target, const std::string& text) {
  const std::filesystem::path& path = staged(target);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) throw Error(ErrorCode::io_error, target.string() + ": cannot write: " + errno_text());
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const bool flushed = std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
  const bool closed = std::fclose(file) == 0;
  if (!written || !flushed || !closed) throw Error(ErrorCode::io_error, target.string() + ": write failed: " + errno_text());
}

void OutputFiles::commit() {
  for (const auto& [target, staging] : files_) {
    std::error_code ec;
    std::filesystem::rename(staging, target, ec);
    if (ec) throw Error(ErrorCode::io_error, target.string() + ": cannot move the output into place: " + ec.message());
  }
  files_.clear();
}

}  // namespace attendre::cli
