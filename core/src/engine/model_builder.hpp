// model_builder.hpp: the core's ModelBuilder: weights dispatched to quant plugins by format.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/model_file.hpp"
#include "tessera/architecture.hpp"
#include "tessera/quantizer.hpp"

namespace tessera {

class RequestVocabulary;  // engine/vocabulary_subset_linear.hpp

class CoreModelBuilder final : public ModelBuilder {
 public:
  using AttentionFactory = std::function<Result<std::shared_ptr<AttentionKernel>>()>;
  // Given every Linear linear() makes, with the tensors it was made from;
  // returns the Linear the model gets (`tessera quantize` wraps each one to
  // observe its inputs and later swap in the quantized weight).
  using LinearWrapper =
      std::function<Result<std::unique_ptr<Linear>>(const TensorRef& weight, const TensorRef* bias, std::unique_ptr<Linear>)>;

  // `quantizers` in search order: the first to declare a format executes it.
  // Once linear() has handed a weight to its quant plugin, the file's pages of
  // it are released (ModelFile::release_resident): a plugin that repacked it
  // never reads them again, and one that reads it in place faults them back.
  // `make_attention` runs on the first attention() call only.
  CoreModelBuilder(const ModelFile& weights, const std::vector<std::shared_ptr<Quantizer>>& quantizers,
                   AttentionFactory make_attention, LinearWrapper wrap_linear = {});

  const WeightStore& weights() const noexcept override { return weights_; }
  Result<std::unique_ptr<Linear>> linear(std::string_view name, std::string_view bias_name = {}) noexcept override;
  Status dequantize(const TensorRef& tensor, float* out) noexcept override;
  Status dequantize_rows(const TensorRef& tensor, int64_t first_row, int64_t n_rows, float* out) noexcept override;
  Result<std::unique_ptr<RowDecoder>> row_decoder(const TensorRef& tensor) noexcept override;
  Result<AttentionKernel*> attention() noexcept override;
  // With output ids set (set_output_ids), a head over those rows only
  // (VocabularySubsetLinear); else linear(name, bias_name).
  Result<std::unique_ptr<Linear>> output_linear(std::string_view name,
                                                std::string_view bias_name = {}) noexcept override;
  // The vocabulary ids whose logits output_linear()'s head computes
  // (ascending, unique); empty: all of them.
  void set_output_ids(std::vector<int32_t> ids) { output_ids_ = std::move(ids); }
  // The request's own ids that such a head computes too (nullptr: no head
  // made with output ids).
  const std::shared_ptr<RequestVocabulary>& request_vocabulary() const { return request_vocabulary_; }
  // A Linear for `weight` (which need not be one of the file's tensors: a
  // quantized copy, say) from the quant plugin that executes its format; not wrapped.
  // A format stored as several tensors (Quantizer::part_suffixes) finds its
  // parts in the file by name; the second form is given them, in any order
  // (matched by name; an optional part may be left out). Neither gathers
  // the input of an act-order weight (ModelFile::input_order): linear() does.
  Result<std::unique_ptr<Linear>> make_linear(const TensorRef& weight, const TensorRef* bias) noexcept;
  Result<std::unique_ptr<Linear>> make_linear(const TensorRef& weight, std::span<const TensorRef* const> parts,
                                              const TensorRef* bias) noexcept;
  // The tensors stored beside `tensor` that its format needs (none for most),
  // in the format's order; nullptr for an optional one the file does not hold.
  Result<std::vector<const TensorRef*>> parts(const TensorRef& tensor) const noexcept;
  void warn(std::string_view message) noexcept override;

  // Formats some plugin executes, for messages.
  std::vector<std::string> formats() const;
  // The attention kernel, if the model asked for one (nullptr otherwise).
  const std::shared_ptr<AttentionKernel>& made_attention() const { return attention_; }

 private:
  Result<std::shared_ptr<Quantizer>> quantizer_for(const TensorRef& tensor) const;
  // The tensors stored beside `tensor` that its format needs (none for most).
  Result<std::vector<const TensorRef*>> parts_of(const Quantizer& quantizer, const TensorRef& tensor) const;
  // The file's input order of `tensor`'s columns (ModelFile::input_order), nullptr for most.
  const std::vector<int32_t>* input_order_of(const TensorRef& tensor) const noexcept;

  const ModelFile& weights_;
  std::map<std::string, std::shared_ptr<Quantizer>, std::less<>> by_format_;
  AttentionFactory make_attention_;
  LinearWrapper wrap_linear_;
  std::shared_ptr<AttentionKernel> attention_;
  std::vector<int32_t> output_ids_;
  std::shared_ptr<RequestVocabulary> request_vocabulary_;
};

}  // namespace tessera
