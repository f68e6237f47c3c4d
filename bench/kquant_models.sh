# bench/kquant_models.sh: sourced by bench/kquant.sh and bench/kquant_perplexity.sh.
# Sets `models` from the script's arguments (or $MODELS; default all five
# keys), `activations` from $ACTIVATIONS (default: the pipeline's own), and
# the two engines' paths `tessera` and `llama`.
#   1.5b    models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
#   0.5b    models/qwen2.5-coder-0.5b-instruct-q5_0.gguf
#   q4_k_m, q5_k_m, q6_k   models/SmolLM2-135M-Instruct.<TYPE>.gguf (scripts/make-kquant-models.sh)
#   or the path of any other .gguf file.
read -r -a activations <<< "${ACTIVATIONS:-}"
((${#activations[@]})) || activations=(default)
tessera=${TESSERA:-${TESSERA_BUILD_DIR:-build}/bin/tessera}
llama=${LLAMA_BIN:-.cache/llama-cpp/build/bin}

keys=("$@")
((${#keys[@]})) || read -r -a keys <<< "${MODELS:-1.5b 0.5b q4_k_m q5_k_m q6_k}"
models=()
for key in "${keys[@]}"; do
  case ${key,,} in
    1.5b) models+=(models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf) ;;
    0.5b) models+=(models/qwen2.5-coder-0.5b-instruct-q5_0.gguf) ;;
    q4_k_m) models+=(models/SmolLM2-135M-Instruct.Q4_K_M.gguf) ;;
    q5_k_m) models+=(models/SmolLM2-135M-Instruct.Q5_K_M.gguf) ;;
    q6_k) models+=(models/SmolLM2-135M-Instruct.Q6_K.gguf) ;;
    *.gguf) models+=("$key") ;;
    *) echo "error: unknown model '$key' (1.5b, 0.5b, q4_k_m, q5_k_m, q6_k or a .gguf path)" >&2; exit 2 ;;
  esac
done
