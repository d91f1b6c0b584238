//===- tests/node/CaseIsolation.cpp - Run a case in a forked child ---------===//

#include "tests/node/CaseIsolation.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace onnxc::nodetest {
namespace {

/// Writes all of `text`, retrying short writes (a pipe takes at most its
/// buffer size at once).
void writeAll(int fd, const std::string &text) {
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    written += size_t(n);
  }
}

[[noreturn]] void runChild(const CaseInfo &info, int writeFd) {
  std::optional<std::string> failure = runCase(info);
#if defined(__SANITIZE_ADDRESS__)
  // _exit below skips LeakSanitizer's check at exit, so an ASan build checks
  // here what this case leaked (the report goes to stderr).
  if (__lsan_do_recoverable_leak_check() && !failure)
    failure = "leaked memory (see the LeakSanitizer report above)";
#endif
  // 'P' or 'F' then the reason: a child that dies before writing leaves the
  // parent with an empty pipe, which is how a crash is told from a failure.
  writeAll(writeFd, failure ? "F" + *failure : std::string("P"));
  ::close(writeFd);
  std::fflush(stdout);
  std::fflush(stderr);
  // _exit: skip static destructors and atexit handlers of the forked copy.
  ::_exit(0);
}

/// Reads the child's report until EOF; false if the deadline passed first.
bool readReport(int readFd, std::chrono::steady_clock::time_point deadline, std::string &report) {
  char buffer[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return false;
    pollfd poller{readFd, POLLIN, 0};
    int ready = ::poll(&poller, 1, int(left.count()));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      continue; // timeout is re-checked at the top
    ssize_t n = ::read(readFd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return true;
    report.append(buffer, size_t(n));
  }
}

CaseOutcome outcomeFromReport(const std::string &report) {
  if (report == "P")
    return {CaseOutcome::Kind::Passed, ""};
  return {CaseOutcome::Kind::Failed, report.substr(1)};
}

} // namespace

CaseOutcome runCaseIsolated(const CaseInfo &info, int timeoutSeconds) {
  int fds[2];
  if (::pipe(fds) != 0)
    return {CaseOutcome::Kind::Failed, std::string("pipe: ") + std::strerror(errno)};
  // Unflushed output would be written twice, once by each process.
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {CaseOutcome::Kind::Failed, std::string("fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    ::close(fds[0]);
    runChild(info, fds[1]);
  }
  ::close(fds[1]);

  std::string report;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  bool finished = readReport(fds[0], deadline, report);
  ::close(fds[0]);
  if (!finished)
    ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!finished)
    return {CaseOutcome::Kind::TimedOut,
            "timed out after " + std::to_string(timeoutSeconds) + " s"};
  if (WIFSIGNALED(status)) {
    int signal = WTERMSIG(status);
    return {CaseOutcome::Kind::Crashed,
            "crashed: signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")"};
  }
  if (report.empty() || WEXITSTATUS(status) != 0)
    return {CaseOutcome::Kind::Crashed, "crashed: child exited with status " +
                                            std::to_string(WEXITSTATUS(status)) +
                                            " without a report"};
  return outcomeFromReport(report);
}

CaseOutcome runCaseInProcess(const CaseInfo &info) {
  std::optional<std::string> failure = runCase(info);
  if (!failure)
    return {CaseOutcome::Kind::Passed, ""};
  return {CaseOutcome::Kind::Failed, *failure};
}

} // namespace onnxc::nodetest
