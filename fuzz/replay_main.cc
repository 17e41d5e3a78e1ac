// main() for a fuzz target built without libFuzzer: runs
// LLVMFuzzerTestOneInput once on every file named on the command line or
// found (recursively) in a directory named there, in sorted order, so that
// a normal test build runs each target over its seed corpus and over the
// crash inputs kept beside it.
//
// Each input is copied into a heap block of exactly its size (as libFuzzer
// does), so that a sanitizer build catches reads past its end. Prints the
// path of each input before running it (so a crash names it) and
// "replayed N inputs" at the end. Exits 0, or 1 when an argument cannot be
// read or no input was found (a corpus that went missing must not pass).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// The regular files at `path` (itself, or under it), sorted; false when it
// cannot be read.
bool CollectInputs(const fs::path& path, std::vector<fs::path>* inputs) {
  std::error_code error;
  if (fs::is_regular_file(path, error)) {
    inputs->push_back(path);
    return true;
  }
  if (!fs::is_directory(path, error)) {
    std::fprintf(stderr, "replay: %s is neither a file nor a directory\n",
                 path.c_str());
    return false;
  }
  std::vector<fs::path> found;
  fs::recursive_directory_iterator it(
      path, fs::directory_options::follow_directory_symlink, error);
  for (; !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    if (fs::is_regular_file(it->path(), error)) found.push_back(it->path());
  }
  if (error) {
    std::fprintf(stderr, "replay: cannot list %s: %s\n", path.c_str(),
                 error.message().c_str());
    return false;
  }
  std::sort(found.begin(), found.end());
  inputs->insert(inputs->end(), found.begin(), found.end());
  return true;
}

bool ReadFile(const fs::path& path, std::vector<char>* bytes) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  bytes->assign(std::istreambuf_iterator<char>(file),
                std::istreambuf_iterator<char>());
  return !file.bad();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  bool ok = true;
  for (int i = 1; i < argc; ++i) ok &= CollectInputs(argv[i], &inputs);
  if (!ok) return 1;
  for (const fs::path& path : inputs) {
    std::vector<char> bytes;
    if (!ReadFile(path, &bytes)) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 1;
    }
    std::fprintf(stderr, "replaying %s\n", path.c_str());
    // Exactly the input's size (at least 1, so the pointer is never null).
    std::unique_ptr<uint8_t[]> copy(
        new uint8_t[std::max<size_t>(bytes.size(), 1)]);
    std::copy(bytes.begin(), bytes.end(), copy.get());
    LLVMFuzzerTestOneInput(copy.get(), bytes.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs found\n");
    return 1;
  }
  return 0;
}
