#include "reports/gnuplot.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kv::reports {

namespace {

std::string program() {
  const char* env = std::getenv("KVSIM_GNUPLOT");
  return env != nullptr && *env != '\0' ? env : "gnuplot";
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
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
    if (c == '\'') out += "''";
    else out += c;
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
  {
    std::ofstream f(gp, std::ios::binary);
    f << script.str();
    if (!f) return Status::error("cannot write " + gp);
  }
  std::string out;
  const int rc = run_capture(shell_quote(program()) + " " + shell_quote(gp), &out);
  if (rc != 0) {
    return Status::error("gnuplot failed on " + gp + " (exit " + std::to_string(rc) + "): " + out);
  }
  return {};
}

}  // namespace kv::reports
