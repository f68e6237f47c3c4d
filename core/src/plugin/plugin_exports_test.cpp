// What a built plugin exports: its dynamic symbol table, read from the ELF
// file, must name tessera_plugin_entry and nothing else (cmake/tessera_plugin.map).
// Any other exported definition (a Boost.System category, a template's
// type_info) could be bound by the dynamic linker to another library's copy.
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tessera {
namespace {

namespace fs = std::filesystem;

// The symbols a 64-bit ELF shared library defines and lets other modules bind
// to (global, weak or unique binding; default or protected visibility), or
// nullopt if the file is not such a library or is malformed.
std::optional<std::set<std::string>> exported_definitions(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto fits = [&](uint64_t offset, uint64_t size) { return offset <= bytes.size() && size <= bytes.size() - offset; };
  if (!fits(0, sizeof(Elf64_Ehdr))) return std::nullopt;
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_shentsize != sizeof(Elf64_Shdr) || !fits(header.e_shoff, uint64_t{header.e_shnum} * sizeof(Elf64_Shdr)))
    return std::nullopt;
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), bytes.data() + header.e_shoff, sections.size() * sizeof(Elf64_Shdr));

  const auto dynsym = std::find_if(sections.begin(), sections.end(), [](const Elf64_Shdr& s) { return s.sh_type == SHT_DYNSYM; });
  if (dynsym == sections.end() || dynsym->sh_link >= sections.size() || !fits(dynsym->sh_offset, dynsym->sh_size))
    return std::nullopt;
  const Elf64_Shdr& strings = sections[dynsym->sh_link];
  if (!fits(strings.sh_offset, strings.sh_size)) return std::nullopt;

  std::set<std::string> names;
  for (uint64_t i = 1; i < dynsym->sh_size / sizeof(Elf64_Sym); ++i) {  // entry 0 is the null symbol
    Elf64_Sym sym;
    std::memcpy(&sym, bytes.data() + dynsym->sh_offset + i * sizeof(Elf64_Sym), sizeof sym);
    const unsigned binding = ELF64_ST_BIND(sym.st_info), visibility = ELF64_ST_VISIBILITY(sym.st_other);
    const bool bindable = binding == STB_GLOBAL || binding == STB_WEAK || binding == STB_GNU_UNIQUE;
    if (sym.st_shndx == SHN_UNDEF || !bindable || (visibility != STV_DEFAULT && visibility != STV_PROTECTED)) continue;
    if (sym.st_name >= strings.sh_size) return std::nullopt;
    const char* name = bytes.data() + strings.sh_offset + sym.st_name;
    names.emplace(name, strnlen(name, strings.sh_size - sym.st_name));
  }
  return names;
}

// The reader itself: a fixture library built without the version script
// exports its own function, which the reader must see.
TEST(PluginExports, TheReaderSeesWhatALibraryWithoutTheScriptExports) {
  const fs::path file = fs::path(TESSERA_FIXTURE_DIR) / "broken" / "libfixture_no_entry.so";
  const auto names = exported_definitions(file);
  ASSERT_TRUE(names.has_value()) << file << " could not be read as a 64-bit ELF library";
  EXPECT_TRUE(names->count("fixture_not_a_plugin")) << file;
  EXPECT_FALSE(names->count("tessera_plugin_entry")) << file;
  EXPECT_FALSE(exported_definitions(fs::path(TESSERA_SOURCE_DIR) / "README.md").has_value());
}

TEST(PluginExports, EveryBuiltPluginExportsOnlyItsEntry) {
  const fs::path folder = TESSERA_PLUGIN_BUILD_DIR;
  std::vector<fs::path> plugins;
  if (fs::is_directory(folder))
    for (const auto& e : fs::directory_iterator(folder))
      if (e.path().extension() == ".so") plugins.push_back(e.path());
  if (plugins.empty()) GTEST_SKIP() << "no plugin is built in " << folder << " (TESSERA_PLUGIN_FILTER?)";
  for (const fs::path& plugin : plugins) {
    const auto names = exported_definitions(plugin);
    ASSERT_TRUE(names.has_value()) << plugin << " could not be read as a 64-bit ELF library";
    std::string listed;
    for (const std::string& n : *names) listed += "\n  " + n;
    EXPECT_EQ(*names, std::set<std::string>{"tessera_plugin_entry"}) << plugin << " exports:" << listed;
  }
}

}  // namespace
}  // namespace tessera
