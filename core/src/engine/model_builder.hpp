// model_builder.hpp: the core's ModelBuilder: weights dispatched to quant plugins by format.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/model_file.hpp"
#include "tessera/architecture.hpp"
#include "tessera/quantizer.hpp"

namespace tessera {

class CoreModelBuilder final : public ModelBuilder {
 public:
  // `quantizers` in search order: the first to declare a format executes it.
  // Once linear() has handed a weight to its quant plugin, the file's pages of
  // it are released (ModelFile::release_resident): a plugin that repacked it
  // never reads them again, and one that reads it in place faults them back.
  CoreModelBuilder(const ModelFile& weights, const std::vector<std::shared_ptr<Quantizer>>& quantizers,
                   std::shared_ptr<AttentionKernel> attention);

  const WeightStore& weights() const override { return weights_; }
  Result<std::unique_ptr<Linear>> linear(std::string_view name, std::string_view bias_name = {}) override;
  Status dequantize(const TensorRef& tensor, float* out) override;
  Status dequantize_rows(const TensorRef& tensor, int64_t first_row, int64_t n_rows, float* out) override;
  AttentionKernel& attention() override { return *attention_; }
  Result<std::unique_ptr<RowDecoder>> row_decoder(const TensorRef& tensor) override;

  // Formats some plugin executes, for messages.
  std::vector<std::string> formats() const;

 private:
  Result<std::shared_ptr<Quantizer>> quantizer_for(const TensorRef& tensor) const;

  const ModelFile& weights_;
  std::map<std::string, std::shared_ptr<Quantizer>, std::less<>> by_format_;
  std::shared_ptr<AttentionKernel> attention_;
};

}  // namespace tessera
