#include "fuzz/fuzz_target.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kv::fuzz {

namespace {

void remove_scratch() {
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir(), ec);
}

}  // namespace

const std::string& scratch_dir() {
  // Never destroyed: remove_scratch reads it at exit, after static destructors may have run.
  static const std::string& dir = *[] {
    const std::filesystem::path p =
        std::filesystem::temp_directory_path() / ("kvsim-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    auto* path = new std::string(p.string());
    std::atexit(remove_scratch);
    return path;
  }();
  return dir;
}

std::string write_scratch(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  FUZZ_CHECK(out.good(), "cannot write " + path);
  return path;
}

}  // namespace kv::fuzz
