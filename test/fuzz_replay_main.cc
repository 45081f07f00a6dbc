// Runs a libFuzzer-style target (LLVMFuzzerTestOneInput) as a test: every file of the seed
// corpus, then `--mutations` seeded mutations of each seed (byte flips, inserts, deletes,
// splices, truncations). Deterministic: the same build runs the same inputs every time.
// A crash or a sanitizer report fails the test; so does an empty corpus (a fuzz test that
// feeds nothing cannot fail).
#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::string> ReadCorpus(const std::string& dir) {
  std::vector<std::string> inputs;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return inputs;
  std::vector<std::string> names;
  while (dirent* entry = readdir(d)) {
    if (entry->d_name[0] == '.') continue;
    names.push_back(entry->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    std::ifstream file(dir + "/" + name, std::ios::binary);
    std::stringstream content;
    content << file.rdbuf();
    inputs.push_back(content.str());
  }
  return inputs;
}

std::string Mutate(const std::string& seed, const std::vector<std::string>& corpus,
                   std::mt19937_64& rng) {
  std::string out = seed;
  const int steps = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < steps; ++i) {
    switch (rng() % 6) {
      case 0:  // flip a byte
        if (!out.empty()) out[rng() % out.size()] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 1:  // insert a byte, often a structural one
        {
          static const char kInteresting[] = ":[]{}/.*-\n\"'@ \t\\\x00\xff";
          const char c = (rng() % 2) ? kInteresting[rng() % (sizeof(kInteresting) - 1)]
                                     : static_cast<char>(rng());
          out.insert(out.begin() + (out.empty() ? 0 : rng() % (out.size() + 1)), c);
        }
        break;
      case 2:  // delete a range
        if (!out.empty()) {
          const size_t at = rng() % out.size();
          out.erase(at, 1 + rng() % std::min<size_t>(8, out.size() - at));
        }
        break;
      case 3:  // splice in part of another seed
        {
          const std::string& other = corpus[rng() % corpus.size()];
          if (!other.empty()) {
            const size_t from = rng() % other.size();
            out.insert(out.empty() ? 0 : rng() % (out.size() + 1),
                       other.substr(from, 1 + rng() % 16));
          }
        }
        break;
      case 4:  // truncate
        if (!out.empty()) out.resize(rng() % out.size());
        break;
      default:  // repeat a chunk (long runs)
        if (!out.empty()) {
          const size_t at = rng() % out.size();
          const std::string chunk = out.substr(at, 1 + rng() % 4);
          std::string run;
          for (int r = 0; r < 64; ++r) run += chunk;
          out.insert(at, run);
        }
        break;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string corpus_dir;
  long mutations = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--corpus=", 9) == 0) corpus_dir = argv[i] + 9;
    if (std::strncmp(argv[i], "--mutations=", 12) == 0) mutations = std::atol(argv[i] + 12);
  }
  const std::vector<std::string> corpus = ReadCorpus(corpus_dir);
  if (corpus.empty()) {
    std::cerr << "FAIL: no seed corpus at '" << corpus_dir << "'\n";
    return 1;
  }
  for (const std::string& input : corpus) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  }
  std::mt19937_64 rng(0x1ea5f00d);
  long runs = 0;
  for (const std::string& seed : corpus) {
    for (long m = 0; m < mutations; ++m) {
      const std::string input = Mutate(seed, corpus, rng);
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
      ++runs;
    }
  }
  std::cout << "replayed " << corpus.size() << " seeds and " << runs << " mutations from "
            << corpus_dir << "\n";
  return 0;
}
