// What a run stopped by SIGINT, SIGTERM, SIGHUP or SIGPIPE must not leave
// behind: the staging files and folders of its outputs. The handler removes
// the paths registered here (files unlinked, then folders removed once
// empty, innermost first whatever the order), then re-raises the signal with
// its default disposition, so the exit status is the signal's (a shell sees
// 130 for SIGINT). Signals the parent had ignored (nohup's SIGHUP, a
// background job's SIGINT) stay ignored.
#pragma once

#include <cstddef>
#include <filesystem>

namespace attendre::cli {

inline constexpr size_t kNotWatched = static_cast<size_t>(-1);

// Registers `path` for removal on those signals; call it before the path
// exists, so no moment is left uncovered. Returns the ticket for
// stop_removing_on_signal(), or kNotWatched when the path is too long or
// every slot is taken (then only the signal's default applies to it).
size_t remove_on_signal(const std::filesystem::path& path);
// Forgets `ticket` (kNotWatched included): the path was committed or removed.
void stop_removing_on_signal(size_t ticket) noexcept;

}  // namespace attendre::cli
