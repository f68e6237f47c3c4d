// Fuzzes the GGUF reader from memory. Properties checked beyond "no crash":
// every tensor's bytes lie inside the input (ASan sees the reads), metadata
// helpers and the metadata view architecture plugins read (GgufMetadata)
// never fail on any type, and a parsed file written back by GgufWriter parses
// again with the same metadata and tensors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include "model/gguf.hpp"
#include "model/gguf_writer.hpp"
#include "model/metadata.hpp"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_gguf: property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  auto parsed = GgufFile::open_memory(std::as_bytes(std::span(data, size)), "fuzz.gguf");
  if (!parsed.ok()) return 0;
  const std::shared_ptr<const GgufFile> file = std::move(parsed).value();
  const GgufFile& f = *file;

  unsigned sum = 0;
  for (const auto& t : f.tensors()) {
    if (t.nbytes > 0) sum += static_cast<unsigned>(t.data[0]) + static_cast<unsigned>(t.data[t.nbytes - 1]);
    require(t.offset + t.nbytes <= f.file_size(), "tensor inside the file");
  }
  for (const auto& [key, value] : f.metadata()) {
    (void)f.get_int(key);
    (void)f.get_float(key);
    (void)f.get_string_array(key);
    (void)f.get_float_array(key);
    (void)f.get_int_array(key);
    require(f.find(key) == &value, "find returns the entry");
  }
  // Every accessor on every key, as an architecture plugin reading its
  // hyper-parameters would call them.
  const GgufMetadata meta(file);
  require(meta.size() == f.metadata().size(), "the metadata view has every key");
  for (size_t i = 0; i < meta.size(); ++i) {
    const std::string_view key = meta.key(i);
    (void)meta.type(key);
    (void)meta.get_int(key);
    (void)meta.get_real(key);
    (void)meta.get_bool(key);
    (void)meta.get_string(key);
    (void)meta.element_type(key);
    const size_t n = meta.array_length(key);
    for (size_t j : {size_t{0}, n / 2, n > 0 ? n - 1 : 0, n}) {  // n: one past the end
      (void)meta.get_int(key, j);
      (void)meta.get_real(key, j);
      (void)meta.get_string(key, j);
    }
  }
  (void)meta.get_int("no such key");

  // Round trip through the writer (bounded so that huge paddings stay cheap).
  if (f.alignment() <= 4096 && f.tensors().size() <= 64) {
    GgufWriter w(static_cast<uint32_t>(f.alignment()));
    for (const auto& [key, value] : f.metadata()) w.set(key, value);
    for (const auto& t : f.tensors())
      require(w.add_tensor_view(t.name, t.dtype, t.dims, {t.data, t.nbytes}).ok(), "writer accepts a parsed tensor");
    const auto bytes = w.to_bytes();
    auto again = GgufFile::open_memory(bytes, "fuzz-rewritten.gguf");
    require(again.ok(), "a rewritten file parses");
    const GgufFile& g = *again.value();
    require(g.metadata().size() == f.metadata().size(), "same metadata count");
    require(g.tensors().size() == f.tensors().size(), "same tensor count");
    for (size_t i = 0; i < f.tensors().size(); ++i) {
      const auto& a = f.tensors()[i];
      const auto& b = g.tensors()[i];
      require(a.name == b.name && a.dims == b.dims && a.dtype == b.dtype && a.nbytes == b.nbytes, "same tensor info");
      require(a.nbytes == 0 || std::memcmp(a.data, b.data, a.nbytes) == 0, "same tensor bytes");
    }
  }
  return static_cast<int>(sum & 0);
}
