// Helpers of the multi-process tests: a temporary folder for a directory store, and forked processes.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

// In a forked process: returns `code` (its exit code) when `cond` is false, saying which check failed.
#define CHILD_CHECK(cond, code)                                                  \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "process check failed at line %d: %s\n", __LINE__, #cond); \
      return code;                                                               \
    }                                                                            \
  } while (0)

namespace neuronmem::dist::testing {

// The threads of this process (its entries in /proc/self/task), 0 if that cannot be read.
inline size_t ThreadsOfThisProcess() {
  std::error_code ec;
  size_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return ec ? 0 : n;
}

// What RunProcesses reports for every process when its caller has threads: it forks none then. A caller must not
// have started threads (nor created a client in its own process: its cores, copy engine and oneTBB's workers are
// threads): a child of a multi-threaded process inherits whatever locks the other threads held, and ThreadSanitizer
// refuses to start threads in it ("starting new threads after multi-threaded fork is not supported").
constexpr int kForkedWithThreads = 97;

// A fresh folder under TMPDIR, removed with its files at the end of the scope.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (getenv("TMPDIR") != nullptr ? std::string(getenv("TMPDIR")) : "/tmp") + "/nm-dist-XXXXXX";
    path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const {
    std::string p = path_ + "/" + name;
    std::filesystem::create_directory(p);
    return p;
  }

 private:
  std::string path_;
};

// The files in /dev/shm that process `pid` made: the shm provider's endpoints of dist::Fabric, each named
// neuronmem_<pid>_<random> (src/dist/fabric.cc), hold a file of that name there (libfabric 1.17 creates no
// other). A process that ends normally closes its endpoints, which removes them; one killed keeps them for ever.
inline std::vector<std::string> ShmFilesOf(pid_t pid) {
  std::vector<std::string> files;
  const std::string prefix = "neuronmem_" + std::to_string(static_cast<long long>(pid)) + "_";
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return files;
  while (const dirent* e = readdir(d))
    if (std::string(e->d_name).compare(0, prefix.size(), prefix) == 0) files.push_back(e->d_name);
  closedir(d);
  return files;
}

// Removes what a killed process left in /dev/shm (ShmFilesOf): called once it has been waited for, so its pid
// cannot have been reused by a process that made files of its own meanwhile.
inline void RemoveShmFilesOf(pid_t pid) {
  for (const std::string& f : ShmFilesOf(pid)) unlink(("/dev/shm/" + f).c_str());
}

// Every process RunProcesses forked in this test binary, for the check that none left files in /dev/shm
// (shm_check.h).
inline std::vector<pid_t>& ForkedProcesses() {
  static std::vector<pid_t> pids;
  return pids;
}

// What the processes this binary forked left in /dev/shm (a process that ended normally and left files: its
// endpoints were not closed), "neuronmem_<pid>_<random>" each.
inline std::vector<std::string> ShmLeftovers() {
  std::vector<std::string> left;
  for (pid_t pid : ForkedProcesses())
    for (std::string& f : ShmFilesOf(pid)) left.push_back(std::move(f));
  return left;
}

// Runs body(i) in n forked processes (the caller must not have started threads yet) and returns each one's
// exit status: its exit code, or 128 + the signal that ended it. A process still running after `limit` is
// killed (and reports 128 + SIGKILL), so a hang fails the test instead of blocking the suite. What a process
// ended by a signal (raise(SIGKILL) in a killed-peer test, or the limit) left in /dev/shm is removed once it has
// been waited for (RemoveShmFilesOf).
inline std::vector<int> RunProcesses(int n, const std::function<int(int)>& body,
                                     std::chrono::seconds limit = std::chrono::seconds(150)) {
  fflush(stdout);
  fflush(stderr);
  if (const size_t threads = ThreadsOfThisProcess(); threads > 1) {  // kForkedWithThreads
    fprintf(stderr, "RunProcesses: this process has %zu threads; forks only from a single-threaded one\n", threads);
    return std::vector<int>(n, kForkedWithThreads);
  }
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      int code = 99;
      try {
        code = body(i);
      } catch (...) {
        code = 98;
      }
      // exit, not _exit: LeakSanitizer checks the process at exit in the sanitizer builds.
      exit(code);
    }
    pids.push_back(pid);
    if (pid > 0) ForkedProcesses().push_back(pid);
  }
  std::vector<int> result(n, -1);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int left = n;
  while (left > 0) {
    for (int i = 0; i < n; ++i) {
      if (result[i] != -1 || pids[i] <= 0) continue;
      int st = 0;
      pid_t r = waitpid(pids[i], &st, WNOHANG);
      if (r == pids[i]) {
        result[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (WIFSIGNALED(st)) RemoveShmFilesOf(pids[i]);
        --left;
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() >= deadline) {
      for (int i = 0; i < n; ++i) {
        if (result[i] == -1 && pids[i] > 0) kill(pids[i], SIGKILL);
      }
      fprintf(stderr, "RunProcesses: processes still running after %lld s were killed\n",
              static_cast<long long>(limit.count()));
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return result;
}

}  // namespace neuronmem::dist::testing
