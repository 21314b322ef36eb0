#include "python/replay_keywords.h"

#include <cstdlib>
#include <optional>
#include <sstream>

namespace py = pybind11;

namespace kv::python {

namespace {

bool is_number(const std::string& text) {
  if (text.empty()) return false;
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  return *end == '\0';
}

// A replay's rows: the table's, without the fleet's (a Replay is one engine).
std::vector<const replay::ConfigOption*> replay_rows() {
  std::vector<const replay::ConfigOption*> rows;
  for (const replay::ConfigOption& o : replay::config_options()) {
    if (!replay::fleet_option_names().count(std::string(o.name))) rows.push_back(&o);
  }
  return rows;
}

const replay::ConfigOption* find_option(const std::string& keyword) {
  for (const replay::ConfigOption* o : replay_rows()) {
    if (python_name(o->name) == keyword) return o;
  }
  return nullptr;
}

const char* type_names(OptionKind kind) {
  switch (kind) {
    case OptionKind::kSwitch:
      return "bool or 'on'/'off'";
    case OptionKind::kNumber:
      return "int, float or its text";
    case OptionKind::kText:
      break;
  }
  return "str";
}

const char* stub_type(OptionKind kind) {
  switch (kind) {
    case OptionKind::kSwitch:
      return "bool | str";
    case OptionKind::kNumber:
      return "int | float | str";
    case OptionKind::kText:
      break;
  }
  return "str";
}

// The command-line text of `value` for an option of `kind`, or an empty optional on a wrong type.
std::optional<std::string> option_text(OptionKind kind, const py::handle& value) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::bool_>(value)) {
    if (kind != OptionKind::kSwitch) return std::nullopt;
    return std::string(value.cast<bool>() ? "on" : "off");
  }
  if ((py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value)) && kind == OptionKind::kNumber) {
    return py::str(value).cast<std::string>();  // repr: round-trips a float exactly
  }
  return std::nullopt;
}

}  // namespace

OptionKind option_kind(const replay::ConfigOption& option) {
  if (option.is_switch) return OptionKind::kSwitch;
  const std::string value = option.get(replay::ReplayConfig{});
  if (value == "on" || value == "off") return OptionKind::kSwitch;
  return is_number(value) ? OptionKind::kNumber : OptionKind::kText;
}

std::string python_name(std::string_view option_name) {
  std::string name(option_name);
  for (char& c : name) c = c == '-' ? '_' : c;
  return name;
}

void set_keyword(replay::ReplayConfig& config, const std::string& keyword, const py::handle& value) {
  const replay::ConfigOption* option = find_option(keyword);
  if (option == nullptr) {
    throw py::type_error("Replay() got an unexpected keyword argument '" + keyword +
                         "' (kvsim.options() lists the options)");
  }
  const OptionKind kind = option_kind(*option);
  const std::optional<std::string> text = option_text(kind, value);
  if (!text) {
    throw py::type_error("--" + std::string(option->name) + " (" + keyword + "): takes " + type_names(kind) + ", got " +
                         py::str(py::type::of(value).attr("__name__")).cast<std::string>());
  }
  if (Status s = replay::set_option(config, option->name, *text); !s.ok()) throw py::value_error(s.message());
}

std::string stub_keywords() {
  std::ostringstream out;
  for (const replay::ConfigOption* o : replay_rows()) {
    out << "        " << python_name(o->name) << ": " << stub_type(option_kind(*o)) << " = ...,\n";
  }
  return out.str();
}

std::string keywords_doc() {
  std::ostringstream out;
  std::string_view group;
  for (const replay::ConfigOption* o : replay_rows()) {
    if (o->group != group) out << "\n" << (group = o->group) << ":\n";
    out << "  " << python_name(o->name) << " (" << type_names(option_kind(*o)) << "): " << o->help << "\n";
  }
  return out.str();
}

}  // namespace kv::python
