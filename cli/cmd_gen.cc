// kvsim gen sharegpt|prefix|shared-prefix -o OUT: writes a seeded synthetic trace (traces/generators.h).
// The same arguments always give the same bytes.
#include <boost/program_options.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/number_options.h"
#include "model/util/parse_number.h"
#include "traces/generators.h"
#include "traces/trace_io.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

constexpr std::string_view kCommand = "gen";

// The command line of `kvsim gen`, with its defaults.
struct GenArgs {
  trace::ShareGptGenOptions sg;
  trace::PrefixGenOptions px;
  trace::SharedPrefixGenOptions sp;
  std::string stages;  // shared-prefix --stages
  std::string kind, out, seed_text = "0";
};

po::options_description common_options(GenArgs& a) {
  po::options_description common(
      "kvsim gen sharegpt|prefix|shared-prefix -o OUT [options]\n\n"
      "Writes a seeded synthetic trace; the same arguments give the same bytes.\n"
      "  sharegpt  multi-turn chat: each turn's prompt is the conversation so far (shared system\n"
      "            prompt, earlier user turns and replies), outputs given explicitly; lognormal\n"
      "            turn lengths; sessions interleaved; Poisson or bursty arrivals.\n"
      "  prefix    vLLM's prefix-caching benchmark: shared prefix + unique suffix, each prompt\n"
      "            repeated, shuffled.\n"
      "  shared-prefix  the router benchmarks' workload: per group a system prompt (--prefix-len),\n"
      "            per user a question; each request one (group, user) drawn uniformly, Poisson\n"
      "            arrivals (--rate), --num-requests requests; session id g<group>-u<user>.\n"
      "Exit status: 0 ok, 2 bad usage or an error writing OUT.\n\n"
      "Options");
  common.add_options()("help,h", "show this help")("kind", po::value<std::string>(&a.kind),
                                                   "sharegpt, prefix or shared-prefix")(
      "output,o", po::value<std::string>(&a.out), "output trace file")("force", "replace OUT if it exists")(
      "seed", po::value<std::string>(&a.seed_text)->default_value(a.seed_text), "random seed (0 to 2^64-1)");
  return common;
}

po::options_description sharegpt_options(trace::ShareGptGenOptions& sg) {
  po::options_description sharegpt("sharegpt options (--num-requests and --rate: shared-prefix's too)");
  sharegpt.add_options()("num-requests", bounded("num-requests", &sg.num_requests), "requests (turns) to write")(
      "rate", po::value<double>(&sg.rate)->default_value(sg.rate), "arrivals per second")(
      "arrival-cv", po::value<double>(&sg.arrival_cv)->default_value(sg.arrival_cv),
      "coefficient of variation of gaps: 1 Poisson, > 1 bursty")(
      "sessions", bounded("sessions", &sg.concurrent_sessions), "conversations open at once")(
      "system-prompt", token_count("system-prompt", &sg.system_prompt_tokens), "tokens of the shared system prompt")(
      "mean-turns", po::value<double>(&sg.mean_turns)->default_value(sg.mean_turns),
      "mean turns per conversation (>= 1)")("mean-user",
                                            po::value<double>(&sg.mean_user_tokens)->default_value(sg.mean_user_tokens),
                                            "mean user-turn tokens")(
      "mean-reply", po::value<double>(&sg.mean_reply_tokens)->default_value(sg.mean_reply_tokens), "mean reply tokens")(
      "sigma", po::value<double>(&sg.sigma)->default_value(sg.sigma), "lognormal sigma of turn lengths")(
      "max-turn", token_count("max-turn", &sg.max_turn_tokens), "longest turn (longer draws are redrawn)")(
      "max-model-len", token_count("max-model-len", &sg.max_model_len),
      "a conversation ends before exceeding this context");
  return sharegpt;
}

po::options_description prefix_options(trace::PrefixGenOptions& px) {
  po::options_description prefix("prefix options (--prefix-len and --output-len: shared-prefix's too)");
  prefix.add_options()("num-prompts", bounded("num-prompts", &px.num_prompts), "distinct prompts")(
      "num-prefixes", bounded("num-prefixes", &px.num_prefixes), "distinct shared prefixes")(
      "prefix-len", token_count("prefix-len", &px.prefix_len), "shared prefix tokens")(
      "suffix-len", token_count("suffix-len", &px.suffix_len), "unique suffix tokens")(
      "repeat", bounded("repeat", &px.repeat), "copies of each prompt")(
      "output-len", token_count("output-len", &px.output_len), "output tokens per request")(
      "prefix-rate", po::value<double>(&px.rate)->default_value(px.rate), "arrivals per second (0 = all at time 0)");
  return prefix;
}

po::options_description shared_prefix_options(trace::SharedPrefixGenOptions& sp, std::string& stages) {
  po::options_description shared("shared-prefix options");
  shared.add_options()("groups", bounded("groups", &sp.groups, 1, 1 << 20), "groups (distinct system prompts)")(
      "users", bounded("users", &sp.users, 1, 1 << 20), "users per group (distinct questions)")(
      "question-len", token_count("question-len", &sp.question_len), "tokens of each user's question")(
      "stages", po::value(&stages),
      "a load ladder instead of --rate and --num-requests: RATE:SECONDS,RATE:SECONDS,... (Poisson at each "
      "rate for its seconds, in order)");
  return shared;
}

// shared-prefix shares --num-requests, --rate, --prefix-len and --output-len with the others.
void share_options(GenArgs& a, const po::variables_map& vm) {
  a.sp.num_requests = vm.count("num-requests") ? a.sg.num_requests : a.sp.num_requests;
  a.sp.rate = vm.count("rate") && !vm["rate"].defaulted() ? a.sg.rate : a.sp.rate;
  a.sp.prefix_len = vm.count("prefix-len") && !vm["prefix-len"].defaulted() ? a.px.prefix_len : a.sp.prefix_len;
  a.sp.output_len = vm.count("output-len") && !vm["output-len"].defaulted() ? a.px.output_len : a.sp.output_len;
}

// The seed set and the options of `a.kind` checked; the header of its trace.
StatusOr<trace::TraceHeader> gen_header(GenArgs& a, std::uint64_t seed) {
  if (a.kind == "sharegpt") {
    a.sg.seed = seed;
    if (Status s = trace::validate(a.sg); !s.ok()) return s;
    return trace::sharegpt_gen_header(a.sg);
  }
  if (a.kind == "shared-prefix") {
    a.sp.seed = seed;
    if (!a.stages.empty()) {
      auto stages = trace::parse_stages(a.stages);
      if (!stages.ok()) return stages.status();
      a.sp.stages = std::move(*stages);
    }
    if (Status s = trace::validate(a.sp); !s.ok()) return s;
    return trace::shared_prefix_gen_header(a.sp);
  }
  a.px.seed = seed;
  if (Status s = trace::validate(a.px); !s.ok()) return s;
  return trace::prefix_gen_header(a.px);
}

// Generates into OUT; a failed generation leaves no OUT behind.
int write_trace(GenArgs& a, const trace::TraceHeader& header, bool force) {
  StatusOr<trace::TraceWriter> writer = trace::TraceWriter::create(a.out, header, force);
  if (!writer.ok()) return usage_error(kCommand, writer.status().message());
  StatusOr<std::int64_t> n = a.kind == "sharegpt"        ? trace::generate_sharegpt(a.sg, *writer)
                             : a.kind == "shared-prefix" ? trace::generate_shared_prefix(a.sp, *writer)
                                                         : trace::generate_prefix(a.px, *writer);
  Status closed = n.ok() ? writer->close() : Status();
  if (!n.ok() || !closed.ok()) {
    writer->abandon();
    return usage_error(kCommand, n.ok() ? closed.message() : n.status().message());
  }
  std::cout << "wrote " << *n << " requests (" << writer->bytes_written() << " bytes) to " << a.out << "\n";
  return 0;
}

}  // namespace

int run_gen(int argc, char** argv) {
  GenArgs a;
  po::options_description all;
  all.add(common_options(a))
      .add(sharegpt_options(a.sg))
      .add(prefix_options(a.px))
      .add(shared_prefix_options(a.sp, a.stages));
  po::positional_options_description pos;
  pos.add("kind", 1);
  po::variables_map vm;
  if (!parse_options(argc, argv, all, &pos, vm)) return 0;  // --help
  if (a.kind != "sharegpt" && a.kind != "prefix" && a.kind != "shared-prefix")
    return usage_error(kCommand, "say what to generate: sharegpt, prefix or shared-prefix (--help)");
  share_options(a, vm);
  if (a.out.empty()) return usage_error(kCommand, "missing -o OUT");
  const std::optional<std::uint64_t> seed = parse_uint64(a.seed_text);
  if (!seed) return usage_error(kCommand, "--seed: '" + a.seed_text + "' is not an integer from 0 to 2^64-1");
  StatusOr<trace::TraceHeader> header = gen_header(a, *seed);
  if (!header.ok()) return usage_error(kCommand, header.status().message());
  return write_trace(a, *header, vm.count("force") > 0);
}

}  // namespace kv::cli
