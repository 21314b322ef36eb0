// kvsim_campaign: the reliability campaign. Mutates real inputs of every kind kvsim reads
// (fuzz/campaign_kinds.h) with mutations whose class says what a correct reader must do
// (fuzz/campaign_mutators.h), runs each in a child process under a time limit, and classifies
// the outcome:
//   clean error      refused with a message that says where (file and line, or the option);
//   accepted         a random mutation read as valid, or a neutral one giving the seed's output;
//   unclear error    refused without saying where;
//   silent           an invalidating mutation accepted;
//   wrong output     a neutral mutation refused, or accepted with another output than the seed's;
//   partial output   refused, but an output file left behind;
//   crash, hang      the child died, or outlived --timeout-ms on one input.
// Input i is a pure function of (--seed, i), so a run is resumable: the state (the next input
// and every count) is saved after each batch and --resume continues it. Findings (the first 20
// of each bad outcome and kind) are kept under OUT/findings/; OUT/table.md is the table.
//   kvsim_campaign --out DIR [--inputs N] [--seed S] [--batch B] [--timeout-ms T] [--resume]
//                  [--source DIR]
// Exit status: 0 when no input crashed, hung, or gave a wrong or partial output; 1 otherwise;
// 2 on bad usage.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/campaign_kinds.h"
#include "fuzz/campaign_mutators.h"

#ifndef KVSIM_SOURCE_DIR
#error "KVSIM_SOURCE_DIR must name the repository (for the seed inputs)"
#endif

namespace kv::campaign {
namespace {

namespace fs = std::filesystem;

enum Outcome : int { kClean, kAccepted, kUnclear, kSilent, kWrong, kPartial, kCrash, kHang, kNumOutcomes };
constexpr std::array<const char*, kNumOutcomes> kOutcomeNames = {
    "clean error", "accepted", "unclear error", "silent acceptance", "wrong output", "partial output", "crash", "hang"};

struct Options {
  std::string out, source = KVSIM_SOURCE_DIR;
  long long inputs = 1000000, seed = 1, batch = 2000, timeout_ms = 2000;
  bool resume = false;
};

struct State {
  long long next = 0;
  std::map<std::string, std::array<long long, kNumOutcomes>> counts;    // kind -> outcome -> inputs
  std::map<std::string, std::array<long long, kNumOutcomes>> by_class;  // mutation class -> outcome -> inputs
};

struct Input {
  std::size_t kind = 0;
  std::size_t seed = 0;
  Mutation mutation;
};

Input input_at(const std::vector<InputKind>& kinds, long long seed, long long i) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(seed) * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(i));
  Input in;
  in.kind = static_cast<std::size_t>(i) % kinds.size();
  const InputKind& k = kinds[in.kind];
  in.seed = static_cast<std::size_t>(rng() % k.seeds.size());
  in.mutation = mutate(k, k.seeds[in.seed], rng);
  return in;
}

Outcome classify(const Input& in, const RunResult& r, const RunResult& baseline) {
  if (r.verdict == Verdict::kPartialOutput) return kPartial;
  const MutationClass c = in.mutation.cls;
  const bool baseline_ok = baseline.verdict == Verdict::kAccepted;
  if (c == MutationClass::kNeutral && baseline_ok) {
    return r.verdict == Verdict::kAccepted && r.output == baseline.output ? kAccepted : kWrong;
  }
  if (r.verdict == Verdict::kUnclearError) return kUnclear;
  if (r.verdict == Verdict::kError) return kClean;
  return c == MutationClass::kInvalidating ? kSilent : kAccepted;
}

// The child: runs inputs [from, to) and writes one outcome byte per input to `fd`.
[[noreturn]] void run_batch(const std::vector<InputKind>& kinds, const std::vector<std::vector<RunResult>>& baselines,
                            const Options& o, long long from, long long to, int fd) {
  for (long long i = from; i < to; ++i) {
    const Input in = input_at(kinds, o.seed, i);
    alarm(static_cast<unsigned>((o.timeout_ms + 999) / 1000));
    const RunResult r = kinds[in.kind].run(in.mutation.bytes);
    alarm(0);
    const char code = static_cast<char>(classify(in, r, baselines[in.kind][in.seed]));
    if (write(fd, &code, 1) != 1) _exit(3);
  }
  _exit(0);
}

void save_finding(const Options& o, const std::vector<InputKind>& kinds, long long i, Outcome what, State& s) {
  const Input in = input_at(kinds, o.seed, i);
  const std::string& kind = kinds[in.kind].name;
  if (s.counts[kind][what] > 20) return;
  const fs::path dir = fs::path(o.out) / "findings";
  fs::create_directories(dir);
  std::string name = std::string(kOutcomeNames[what]) + "-" + kind + "-" + std::to_string(i);
  for (char& c : name) c = c == ' ' ? '_' : c;
  std::ofstream(dir / (name + ".bin"), std::ios::binary) << in.mutation.bytes;
  std::ofstream(dir / (name + ".txt")) << "input " << i << " (seed " << o.seed << "): kind " << kind << ", seed file "
                                       << in.seed << ", mutation " << in.mutation.name << " ("
                                       << class_name(in.mutation.cls) << ")\n";
}

// The class of input i's mutation, "(fallback)" when an invalidating or neutral draw could not
// apply to its seed and a random mutation stood in.
std::string class_of(const std::vector<InputKind>& kinds, const Options& o, long long i) {
  const Mutation m = input_at(kinds, o.seed, i).mutation;
  return std::string(class_name(m.cls)) + (m.name.find("(fallback)") != std::string::npos ? " (fallback)" : "");
}

void count(const Options& o, const std::vector<InputKind>& kinds, long long i, Outcome what, State& s) {
  const std::string& kind = kinds[static_cast<std::size_t>(i) % kinds.size()].name;
  ++s.counts[kind][what];
  ++s.by_class[class_of(kinds, o, i)][what];
  if (what != kClean && what != kAccepted) save_finding(o, kinds, i, what, s);
}

// Runs [from, to) in children; a child that dies marks the input it was on and the rest
// continue in a new child.
void run_range(const std::vector<InputKind>& kinds, const std::vector<std::vector<RunResult>>& baselines,
               const Options& o, long long from, long long to, State& s) {
  while (from < to) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      run_batch(kinds, baselines, o, from, to, fds[1]);
    }
    close(fds[1]);
    char code;
    while (read(fds[0], &code, 1) == 1) count(o, kinds, from++, static_cast<Outcome>(code), s);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (from < to && WIFSIGNALED(status)) count(o, kinds, from++, WTERMSIG(status) == SIGALRM ? kHang : kCrash, s);
    if (from < to && !WIFSIGNALED(status)) throw std::runtime_error("a batch ended early without a signal");
  }
}

std::string table(const std::map<std::string, std::array<long long, kNumOutcomes>>& counts, const char* what) {
  std::ostringstream t;
  t << "| " << what << " |";
  for (const char* n : kOutcomeNames) t << ' ' << n << " |";
  t << " inputs |\n|---|";
  for (int k = 0; k <= kNumOutcomes; ++k) t << "---:|";
  t << '\n';
  std::array<long long, kNumOutcomes> total{};
  long long all = 0;
  for (const auto& [kind, c] : counts) {
    long long n = 0;
    t << "| " << kind << " |";
    for (int k = 0; k < kNumOutcomes; ++k) {
      t << ' ' << c[static_cast<std::size_t>(k)] << " |";
      total[static_cast<std::size_t>(k)] += c[static_cast<std::size_t>(k)];
      n += c[static_cast<std::size_t>(k)];
    }
    t << ' ' << n << " |\n";
    all += n;
  }
  t << "| **all** |";
  for (long long v : total) t << " **" << v << "** |";
  t << " **" << all << "** |\n";
  return t.str();
}

std::string tables(const State& s) { return table(s.counts, "kind") + "\n" + table(s.by_class, "mutation class"); }

void save_state(const Options& o, const State& s) {
  const fs::path path = fs::path(o.out) / "state.txt", tmp = fs::path(o.out) / "state.txt.tmp";
  {
    std::ofstream out(tmp);
    out << "seed " << o.seed << "\ninputs " << o.inputs << "\nnext " << s.next << "\n";
    for (const auto& [kind, c] : s.counts) {
      out << "kind " << kind;
      for (long long v : c) out << ' ' << v;
      out << '\n';
    }
    for (const auto& [cls, c] : s.by_class) {
      out << "class " << std::quoted(cls);
      for (long long v : c) out << ' ' << v;
      out << '\n';
    }
  }
  fs::rename(tmp, path);
  std::ofstream(fs::path(o.out) / "table.md") << tables(s);
}

bool load_state(const Options& o, State& s) {
  std::ifstream in(fs::path(o.out) / "state.txt");
  if (!in) return false;
  std::string word;
  long long seed = -1, inputs = -1;
  while (in >> word) {
    if (word == "seed") in >> seed;
    if (word == "inputs") in >> inputs;
    if (word == "next") in >> s.next;
    if (word == "kind") {
      std::string kind;
      in >> kind;
      for (long long& v : s.counts[kind]) in >> v;
    }
    if (word == "class") {
      std::string cls;
      in >> std::quoted(cls);
      for (long long& v : s.by_class[cls]) in >> v;
    }
  }
  if (seed != o.seed) throw std::runtime_error("--resume: the saved run used --seed " + std::to_string(seed));
  return true;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + ": needs a value");
      return argv[++i];
    };
    const auto number = [&](long long lo, long long hi) {
      const std::string v = value();
      std::size_t used = 0;
      const long long n = std::stoll(v, &used);
      if (used != v.size() || n < lo || n > hi) {
        throw std::invalid_argument(a + ": must be from " + std::to_string(lo) + " to " + std::to_string(hi));
      }
      return n;
    };
    if (a == "--out")
      o.out = value();
    else if (a == "--source")
      o.source = value();
    else if (a == "--inputs")
      o.inputs = number(1, 1000000000);
    else if (a == "--seed")
      o.seed = number(0, 1LL << 62);
    else if (a == "--batch")
      o.batch = number(1, 1000000);
    else if (a == "--timeout-ms")
      o.timeout_ms = number(1, 600000);
    else if (a == "--resume")
      o.resume = true;
    else
      throw std::invalid_argument("unknown option " + a);
  }
  if (o.out.empty()) throw std::invalid_argument("--out: required");
  return o;
}

int run(const Options& o) {
  const std::vector<InputKind> kinds = campaign_kinds(o.source);
  std::vector<std::vector<RunResult>> baselines;
  for (const InputKind& k : kinds) {
    if (k.seeds.empty()) throw std::runtime_error(k.name + ": no seed inputs under " + o.source);
    baselines.emplace_back();
    for (const std::string& seed : k.seeds) baselines.back().push_back(k.run(seed));
  }
  fs::create_directories(o.out);
  State s;
  if (o.resume && load_state(o, s)) std::cout << "resuming at input " << s.next << "\n";
  if (!o.resume && fs::exists(fs::path(o.out) / "state.txt")) {
    throw std::runtime_error(o.out + " holds a campaign already: --resume it, or choose another --out");
  }
  while (s.next < o.inputs) {
    const long long to = std::min(o.inputs, s.next + o.batch);
    run_range(kinds, baselines, o, s.next, to, s);
    s.next = to;
    save_state(o, s);
    std::cerr << "\r" << s.next << " / " << o.inputs << " inputs" << std::flush;
  }
  std::cerr << "\n";
  std::cout << tables(s);
  long long bad = 0;
  for (const auto& [kind, c] : s.counts) bad += c[kCrash] + c[kHang] + c[kWrong] + c[kPartial];
  return bad == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kv::campaign

int main(int argc, char** argv) {
  try {
    return kv::campaign::run(kv::campaign::parse(argc, argv));
  } catch (const std::invalid_argument& e) {
    std::cerr << "kvsim_campaign: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvsim_campaign: " << e.what() << "\n";
    return 2;
  }
}
