#include "reports/gnuplot.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "files/output_file.h"

namespace kv::reports {

namespace {

// A relative KVSIM_GNUPLOT is taken from the current folder (plots run in their own folder).
std::string program() {
  const char* env = std::getenv("KVSIM_GNUPLOT");
  if (env == nullptr || *env == '\0') return "gnuplot";
  const std::string p = env;
  return p.find('/') == std::string::npos ? p : std::filesystem::absolute(p).string();
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// Runs a shell command; returns its exit status and its combined output.
int run_capture(const std::string& command, std::string* output) {
  std::FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output->append(buf, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// 1: pngcairo works, 0: it does not, -1: not probed yet.
int g_cairo = -1;

}  // namespace

std::string gnuplot_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "''";
    else
      out += c;
  }
  return out + "'";
}

bool gnuplot_available(std::string* why) {
  std::string out;
  const int rc = run_capture(shell_quote(program()) + " --version", &out);
  if (rc == 0 && out.find("gnuplot") != std::string::npos) return true;
  if (why != nullptr) {
    *why = "cannot run '" + program() + "' (install Debian package gnuplot-nox, or set KVSIM_GNUPLOT)";
  }
  return false;
}

Status render_plot(const std::string& base, const std::string& body, int width, int height) {
  if (g_cairo < 0) {
    std::string out;
    g_cairo = run_capture(shell_quote(program()) + " -e 'set terminal pngcairo'", &out) == 0 ? 1 : 0;
  }
  std::ostringstream script;
  script << "# rendered by kvsim: " << base << ".png and " << base << ".svg\n";
  if (g_cairo == 1) {
    script << "set terminal pngcairo size " << width << "," << height << " enhanced font 'sans,10'\n";
  } else {
    script << "set terminal png size " << width << "," << height << "\n";
  }
  script << "set output " << gnuplot_quote(base + ".png") << "\n" << body << "\nunset output\n";
  script << "set terminal svg size " << width << "," << height << " enhanced font 'sans,10' background rgb 'white'\n";
  script << "set output " << gnuplot_quote(base + ".svg") << "\nreplot\nunset output\n";
  const std::string gp = base + ".gp";
  // Paths inside the plot's folder are written relative to it, and gnuplot runs there: the
  // folder can be renamed into place (files/output_folder.h) and the script still works.
  const std::filesystem::path folder = std::filesystem::path(base).parent_path();
  std::string text = script.str();
  if (!folder.empty()) {
    const std::string prefix = folder.string() + "/";
    for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at)) {
      text.erase(at, prefix.size());
    }
  }
  if (Status s = files::write_whole_file(gp, text); !s.ok()) return s;
  std::string out;
  const std::string cd = folder.empty() ? "" : "cd " + shell_quote(folder.string()) + " && ";
  const int rc =
      run_capture(cd + shell_quote(program()) + " " + shell_quote(std::filesystem::path(gp).filename().string()), &out);
  if (rc != 0) {
    return Status::error("gnuplot failed on " + gp + " (exit " + std::to_string(rc) + "): " + out);
  }
  return {};
}

}  // namespace kv::reports
