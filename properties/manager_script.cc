#include "properties/manager_script.h"

#include <sstream>

namespace kv::props {

void ManagerCommand::show(std::ostream& os) const {
  const ManagerModel empty{ModelConfig{}};
  const std::vector<std::string> lines = ops_lines(empty);
  for (std::size_t i = 0; i < lines.size(); ++i) os << (i ? "; " : "") << lines[i];
}

ManagerScript write_manager_script(const ModelConfig& config, const ManagerCommands& commands, int failed_step) {
  ManagerScript s;
  std::ostringstream text, expected;
  auto command_line = [&](const std::string& line) {
    text << line << "\n";
    ++s.num_lines;
  };
  auto output_line = [&](const std::string& line) {
    text << "#> " << line << "\n";
    expected << line << "\n";
  };
  text << "# Reproducer: kvsim ops FILE. Lines starting with '#> ' are the expected output.\n";
  command_line(config.ops_config_line());
  ManagerModel model(config);
  int i = 0;
  for (const auto& base : commands) {
    if (failed_step >= 0 && i > failed_step) break;
    const auto& command = static_cast<const ManagerCommand&>(*base);
    for (const std::string& line : command.ops_lines(model)) command_line(line);
    command.apply(model);
    for (const std::string& line : model.printed()) output_line(line);
    if (i == failed_step) text << "# ^ the property fails at this command\n";
    ++i;
  }
  command_line("queue");
  output_line(model.queue_line());
  command_line("num_free");
  output_line("num_free " + std::to_string(model.queue().size()));
  command_line("stats");
  output_line(model.stats_line());
  command_line("check");
  output_line("check ok");
  s.text = text.str();
  s.expected = expected.str();
  return s;
}

std::string format_reproducer(const ManagerScript& script) {
  std::ostringstream os;
  os << "---- ops reproducer (" << script.num_lines << " lines) ----\n"
     << script.text << "---- end of ops reproducer ----\n";
  return os.str();
}

}  // namespace kv::props
