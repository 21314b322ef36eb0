#include "properties/harness.h"

#include <fcntl.h>
#include <rapidcheck.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>

namespace kv::props {
namespace {

// Shared between the parent and its forked child: the child's verdict and progress.
struct SharedVerdict {
  int step;      // the step now running (written before each command)
  int finished;  // 1 once the child wrote its verdict
  int passed;
  int failed_step;
  char message[60000];
};

// One T in memory that a forked child shares with its parent, mapped on first use.
template <typename T>
T* shared_mapping() {
  static T* page = [] {
    void* p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("kvsim properties: mmap");
      std::abort();
    }
    return static_cast<T*>(p);
  }();
  return page;
}

SharedVerdict* shared_page() { return shared_mapping<SharedVerdict>(); }

// The child's stderr goes to this anonymous file; the parent reads it back.
int stderr_capture_fd() {
  static int fd = [] {
    std::FILE* f = std::tmpfile();
    if (f == nullptr) {
      std::perror("kvsim properties: tmpfile");
      std::abort();
    }
    return fileno(f);
  }();
  return fd;
}

bool fork_enabled() {
  const char* env = std::getenv("KVSIM_PROPS_FORK");
  return env == nullptr || std::strcmp(env, "0") != 0;
}

bool in_child = false;
// Inside the child that runs a whole property's cases in one process (check_batched).
bool in_batch = false;

// Shared between the parent and the child of check_batched: the property's verdict.
struct BatchVerdict {
  int finished;   // 1 once the child wrote its verdict
  int passed;     // RapidCheck found no failing case
  int cases_run;  // cases that passed
  char report[8000];
};

BatchVerdict* batch_page() { return shared_mapping<BatchVerdict>(); }

std::string read_capture(int fd) {
  std::string out;
  char buf[4096];
  off_t off = 0;
  for (;;) {
    const ssize_t n = pread(fd, buf, sizeof buf, off);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    off += n;
    if (out.size() > 8000) {
      out += "\n[... stderr truncated]";
      break;
    }
  }
  return out;
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

void note_step(int step) {
  if (in_child) shared_page()->step = step;
}

namespace {

// How a child that did not report a verdict ended, from its wait status: "<who> crashed:
// signal 6 (Aborted)" (SIGALRM: it ran past its time limit) or "<who> exited with status 1".
std::string how_it_ended(const std::string& who, int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return who + " crashed: signal " + std::to_string(sig) + " (" + strsignal(sig) + ")" +
           (sig == SIGALRM ? ", the case ran past its time limit" : "");
  }
  return who + " exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

}  // namespace

// The wait status of child `pid`, waiting through interruptions.
int wait_child(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      std::perror("kvsim properties: waitpid");
      std::abort();
    }
  }
  return status;
}

// Flushes every stream, forks, runs `child` in the child (which then exits with status 0) and
// returns the child's wait status; nullopt when fork fails (errno says why).
std::optional<int> run_in_child(const std::function<void()>& child) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return std::nullopt;
  if (pid == 0) {
    child();
    std::fflush(nullptr);
    _exit(0);
  }
  return wait_child(pid);
}

// Runs body here; an exception it throws fails the case at the step then running.
CaseOutcome run_body(const std::function<CaseOutcome()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    CaseOutcome o;
    o.passed = false;
    o.failed_step = in_child ? shared_page()->step : -1;
    o.message = std::string("exception: ") + e.what();
    return o;
  }
}

CaseOutcome run_isolated(const std::function<CaseOutcome()>& body, int timeout_s) {
  if (!fork_enabled()) return body();
  if (in_batch) {
    // The whole property runs in one child already: a case past its time limit kills it, and
    // check_property then runs every case in a child of its own.
    alarm(static_cast<unsigned>(timeout_s));
    CaseOutcome o = run_body(body);
    alarm(0);
    return o;
  }
  SharedVerdict* v = shared_page();
  v->step = -1;
  v->finished = 0;
  v->passed = 0;
  v->failed_step = -1;
  v->message[0] = '\0';
  const int cap = stderr_capture_fd();
  if (ftruncate(cap, 0) != 0) std::perror("kvsim properties: ftruncate");
  const std::optional<int> waited = run_in_child([&] {
    in_child = true;
    dup2(cap, STDERR_FILENO);
    lseek(STDERR_FILENO, 0, SEEK_SET);
    alarm(static_cast<unsigned>(timeout_s));
    const CaseOutcome o = run_body(body);
    v->passed = o.passed ? 1 : 0;
    v->failed_step = o.failed_step;
    std::snprintf(v->message, sizeof v->message, "%s", o.message.c_str());
    v->finished = 1;
  });
  if (!waited) {
    std::perror("kvsim properties: fork");
    return body();
  }
  const int status = *waited;
  CaseOutcome o;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && v->finished) {
    o.passed = v->passed != 0;
    o.failed_step = v->failed_step;
    o.message = v->message;
    return o;
  }
  o.passed = false;
  o.failed_step = v->step;
  std::ostringstream msg;
  msg << how_it_ended("the case", status) << " during step " << v->step;
  const std::string err = read_capture(cap);
  if (!err.empty()) msg << "\nstderr of the case:\n" << err;
  o.message = msg.str();
  return o;
}

namespace {

// RapidCheck's verdict on the property, its cases run in this process.
PropertyResult check_here(const std::string& name, const std::function<void()>& property,
                          const PropertyParams& params) {
  rc::detail::TestMetadata meta;
  meta.id = name;
  meta.description = name;
  rc::detail::TestParams tp;
  tp.seed = params.seed;
  tp.maxSuccess = params.cases;
  tp.maxSize = params.max_size;
  tp.maxDiscardRatio = 10;
  const rc::detail::TestResult result = rc::detail::checkTestable(property, meta, tp);
  PropertyResult out;
  if (result.is<rc::detail::SuccessResult>()) {
    out.cases_run = result.get<rc::detail::SuccessResult>().numSuccess;
    return out;
  }
  out.passed = false;
  if (result.is<rc::detail::FailureResult>()) out.cases_run = result.get<rc::detail::FailureResult>().numSuccess + 1;
  std::ostringstream os;
  rc::detail::printResultMessage(result, os);
  out.report = os.str();
  return out;
}

// Runs every case of the property in one forked child, without a fork per case. Returns the
// result when the child passed; otherwise, the failure (or the way the child died) as text.
std::optional<PropertyResult> check_batched(const std::string& name, const std::function<void()>& property,
                                            const PropertyParams& params, std::string* failure) {
  BatchVerdict* v = batch_page();
  *v = BatchVerdict{};
  const std::optional<int> waited = run_in_child([&] {
    in_batch = true;
    in_child = true;
    const PropertyResult r = check_here(name, property, params);
    v->passed = r.passed ? 1 : 0;
    v->cases_run = r.cases_run;
    std::snprintf(v->report, sizeof v->report, "%s", r.report.c_str());
    v->finished = 1;
  });
  if (!waited) {
    *failure = std::string("fork: ") + std::strerror(errno);
    return std::nullopt;
  }
  const int status = *waited;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && v->finished) {
    if (v->passed) {
      PropertyResult r;
      r.cases_run = v->cases_run;
      return r;
    }
    *failure = v->report;
  } else {
    *failure = how_it_ended("the process running the cases", status);
  }
  return std::nullopt;
}

}  // namespace

PropertyResult check_property(const std::string& name, const std::function<void()>& property,
                              const PropertyParams& params) {
  if (!fork_enabled() || in_batch) return check_here(name, property, params);
  std::string batch_failure;
  if (auto passed = check_batched(name, property, params, &batch_failure)) return *passed;
  // A failure or a crash: again, each case in a child of its own, so that a crash is a failing
  // case that RapidCheck shrinks. The cases are the same (the parameters fix them).
  PropertyResult r = check_here(name, property, params);
  if (r.passed) {
    r.passed = false;
    r.report =
        "the property failed with its cases run in one process but passed with each case in a process "
        "of its own (state leaks from one case into the next?); in one process:\n" +
        batch_failure;
  }
  return r;
}

PropertyParams default_params(const std::string& name, int base_cases) {
  PropertyParams p;
  p.cases = base_cases;
  p.seed = fnv1a(name);
  if (const char* env = std::getenv("KVSIM_PROP_CASES")) p.cases = std::max(1, std::atoi(env));
  if (const char* env = std::getenv("KVSIM_PROP_SEED")) p.seed ^= std::strtoull(env, nullptr, 10);
  if (std::getenv("RC_PARAMS") != nullptr) {
    const rc::detail::TestParams& tp = rc::detail::configuration().testParams;
    p.seed = tp.seed ^ fnv1a(name);
    p.cases = tp.maxSuccess;
    p.max_size = tp.maxSize;
  }
  return p;
}

}  // namespace kv::props
