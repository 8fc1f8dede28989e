#include "signal_cleanup.hpp"

#include <array>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstring>
#include <mutex>

#include <unistd.h>

namespace attendre::cli {
namespace {

// A handler may only read memory that is never allocated nor freed, so each
// path is copied into a fixed slot and published by an atomic flag
// (lock-free, hence safe to read in a handler).
struct Slot {
  std::atomic<bool> used{false};
  char path[PATH_MAX] = {};
};
static_assert(std::atomic<bool>::is_always_lock_free);
constexpr size_t kSlots = 64;  // a run stages a handful of files and folders
std::array<Slot, kSlots> g_slots;
std::mutex g_slots_mutex;  // between threads that register; the handler never takes it

extern "C" void remove_registered_and_reraise(int signal) {
  for (Slot& slot : g_slots)
    if (slot.used.load(std::memory_order_acquire)) ::unlink(slot.path);
  // Folders go once empty; as many rounds as slots empty nested ones from the inside.
  for (size_t round = 0; round < kSlots; ++round)
    for (Slot& slot : g_slots)
      if (slot.used.load(std::memory_order_acquire)) ::rmdir(slot.path);
  // The signal is blocked in here and delivered, by default now, as the handler returns.
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

// Over default dispositions only, looked at on every registration (a few
// system calls): what a fork reset to the default is covered again.
void install_handlers() {
  for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction previous {};
    if (::sigaction(signal, nullptr, &previous) != 0 || (previous.sa_flags & SA_SIGINFO) ||
        previous.sa_handler != SIG_DFL)
      continue;
    struct sigaction action {};
    action.sa_handler = remove_registered_and_reraise;
    sigemptyset(&action.sa_mask);
    ::sigaction(signal, &action, nullptr);
  }
}

}  // namespace

size_t remove_on_signal(const std::filesystem::path& path) {
  install_handlers();
  const std::string& text = path.native();
  if (text.size() >= PATH_MAX) return kNotWatched;
  const std::lock_guard lock(g_slots_mutex);
  for (size_t i = 0; i < kSlots; ++i) {
    Slot& slot = g_slots[i];
    if (slot.used.load(std::memory_order_relaxed)) continue;
    std::memcpy(slot.path, text.c_str(), text.size() + 1);
    slot.used.store(true, std::memory_order_release);
    return i;
  }
  return kNotWatched;
}

void stop_removing_on_signal(size_t ticket) noexcept {
  if (ticket >= kSlots) return;
  const std::lock_guard lock(g_slots_mutex);
  g_slots[ticket].used.store(false, std::memory_order_release);
}

}  // namespace attendre::cli
