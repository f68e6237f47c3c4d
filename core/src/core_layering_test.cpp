// The core's areas (core/src/<area>) depend one way: each includes only its
// own headers and those of the areas its CMakeLists.txt declares (DEPENDS),
// and the declared graph has no cycle. This test reads the graph CMake wrote
// and every #include "<area>/..." under core/src.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using Graph = std::map<std::string, std::set<std::string>>;

Graph read_layers() {
  Graph graph;
  std::ifstream in(TESSERA_CORE_LAYERS);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::set<std::string>& deps = graph[line.substr(0, colon)];
    std::istringstream rest(line.substr(colon + 1));
    for (std::string dep; rest >> dep;) deps.insert(dep);
  }
  return graph;
}

TEST(CoreLayering, TheDeclaredGraphHasEveryAreaAndNoCycle) {
  const Graph graph = read_layers();
  ASSERT_FALSE(graph.empty()) << "no layers in " << TESSERA_CORE_LAYERS;
  for (const auto& entry : fs::directory_iterator(fs::path(TESSERA_SOURCE_DIR) / "core/src")) {
    if (entry.is_directory())
      EXPECT_TRUE(graph.count(entry.path().filename().string()))
          << "core/src/" << entry.path().filename().string() << " is not declared with tessera_core_area";
  }
  std::map<std::string, int> state;  // 1 = on the current path, 2 = done
  std::function<void(const std::string&, std::string)> visit = [&](const std::string& area, std::string path) {
    path += area;
    if (state[area] == 1) {
      ADD_FAILURE() << "the core's areas depend in a cycle: " << path;
      return;
    }
    if (state[area] == 2) return;
    state[area] = 1;
    auto it = graph.find(area);
    if (it != graph.end()) {
      for (const auto& dep : it->second) {
        EXPECT_TRUE(graph.count(dep)) << area << " declares a dependency on unknown area " << dep;
        visit(dep, path + " -> ");
      }
    }
    state[area] = 2;
  };
  for (const auto& [area, deps] : graph) visit(area, "");
}

TEST(CoreLayering, EveryIncludeOfAnotherAreaIsDeclared) {
  const Graph graph = read_layers();
  const std::regex include(R"re(^\s*#\s*include\s*"([a-z_]+)/)re");
  int checked = 0;
  for (const auto& [area, deps] : graph) {
    const fs::path root = fs::path(TESSERA_SOURCE_DIR) / "core/src" / area;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu")) continue;
      std::ifstream in(entry.path());
      std::string line;
      int number = 0;
      while (std::getline(in, line)) {
        ++number;
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const std::string target = m[1];
        if (target == area || target == "tessera" || !graph.count(target)) continue;
        ++checked;
        EXPECT_TRUE(deps.count(target)) << entry.path().string() << ":" << number << ": area '" << area
                                        << "' includes '" << target << "/', which its CMakeLists.txt does not "
                                        << "declare in DEPENDS";
      }
    }
  }
  EXPECT_GT(checked, 10) << "the scan found almost no cross-area includes: is the source tree where it should be?";
}

}  // namespace
