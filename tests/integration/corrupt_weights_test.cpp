// A weight holding NaN makes the logits NaN: the run stops with an error that
// says the model file may be corrupt and names the first tensor holding a
// non-finite value, instead of sampling garbage.
#include <unistd.h>

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "model/gguf_writer.hpp"
#include "model/model_file.hpp"
#include "model_fixture.hpp"
#include "support/scratch_dir.hpp"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

// The default model with the scale of the first block of `victim` set to NaN.
Status write_with_nan(const ModelFile& original, const std::string& victim, const fs::path& file,
                      std::vector<std::byte>& spoiled) {
  GgufWriter writer;
  for (const auto& [key, value] : original.gguf()->metadata())
    if (key != "general.alignment") writer.set(key, value);
  for (const TensorRef& t : original.tensors()) {
    std::vector<uint64_t> dims;  // GGUF order: innermost first
    for (int i = t.ndim - 1; i >= 0; --i) dims.push_back(static_cast<uint64_t>(t.shape[i]));
    std::span<const std::byte> bytes(static_cast<const std::byte*>(t.data), t.nbytes);
    if (t.name == victim) {
      spoiled.assign(bytes.begin(), bytes.end());
      const uint16_t nan = 0x7e00;  // f16 NaN: every GGUF block format starts with an f16 scale
      std::memcpy(spoiled.data(), &nan, sizeof nan);
      bytes = spoiled;
    }
    TESSERA_RETURN_IF_ERROR(writer.add_tensor_view(t.name, t.dtype, std::move(dims), bytes));
  }
  return writer.write(file.string());
}

TEST(CorruptWeights, NonFiniteLogitsNameTheFirstBrokenTensor) {
  if (!fs::exists(kModel)) TESSERA_MODEL_ABSENT(kModel.string() + " is absent: run scripts/fetch-model.sh");
  auto model = open_model(kModel.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  const fs::path file = scratch_dir("tessera_integration_test") / fmt::format("tessera-nan-{}.gguf", getpid());
  std::vector<std::byte> spoiled;
  ASSERT_TRUE(write_with_nan(**model, "blk.5.ffn_down.weight", file, spoiled).ok());
  {
    TESSERA_OPEN_OR_SKIP(session, (std::vector<PipelineOverride>{{"model", "path", file.string(), true}}));
    auto r = session->generate(greedy("Why is the sky blue?", 4));
    ASSERT_FALSE(r.ok()) << "NaN logits were sampled: " << r->text;
    EXPECT_EQ(r.status().code(), StatusCode::corrupt_data);
    const std::string& m = r.status().message();
    EXPECT_NE(m.find("non-finite logits"), std::string::npos) << m;
    EXPECT_NE(m.find("may be corrupt"), std::string::npos) << m;
    EXPECT_NE(m.find("'blk.5.ffn_down.weight'"), std::string::npos) << m;
    EXPECT_NE(m.find(file.string()), std::string::npos) << m;
  }
  fs::remove(file);
}

}  // namespace
}  // namespace tessera::test
