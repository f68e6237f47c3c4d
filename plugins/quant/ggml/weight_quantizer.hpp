// weight_quantizer.hpp: the ggml plugin's offline quantizers (ABI 3.2, 3.3):
// round-to-nearest, GPTQ and AWQ onto the GGUF block formats (Q4_0 to Q8_0,
// Q3_K to Q6_K), so llama.cpp runs what they write, and onto GPTQ
// checkpoint groups (format "gptq": 2/3/4/8 bits, groups of 32·k columns or
// whole rows; group_grid.hpp), which GGUF's block types cannot hold.
//
// AWQ's part here is per weight: the output error of rounding under
// candidate input scales (the core searches the scales over the Linears that
// share an input and folds them into the operation before), the inputs'
// statistics rescaled once the scales are chosen, and the clipping search.
#pragma once

#include <memory>

#include "tessera/quantizer.hpp"

namespace tessera::ggml {

// invalid_argument when spec asks for something these formats cannot hold
// (bits, symmetry or group size other than the format's, a row length not a
// multiple of 32; for "gptq", output rows whose zeros do not fill 32-bit
// words); unsupported for a method or format this plugin lacks.
Result<std::unique_ptr<WeightQuantizer>> make_weight_quantizer(const QuantizeSpec& spec, int64_t out_features,
                                                               int64_t in_features);

}  // namespace tessera::ggml
