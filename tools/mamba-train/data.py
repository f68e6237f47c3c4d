"""Token streams, training batches, held-out windows and greedy prompts.

Every verse becomes <s> followed by its SentencePiece ids; the verses are
concatenated into one stream per split.  Nothing here is random except the
training batches, which come from a seeded numpy generator.
"""
import numpy as np
import sentencepiece as spm

BOS = 1
EVAL_WINDOWS = 32
EVAL_LEN = 128
N_PROMPTS = 8


def read_lines(path):
    with open(path, encoding="ascii") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def encode_verses(sp, verses):
    return [[BOS] + sp.encode(v) for v in verses]


def stream(encoded):
    return np.array([t for verse in encoded for t in verse], dtype=np.int64)


def eval_windows(held_stream):
    """EVAL_WINDOWS windows of EVAL_LEN tokens, each starting at a verse's <s>,
    spread evenly over the held-out stream.  Window 0 is the reference window."""
    starts = np.flatnonzero(held_stream[: len(held_stream) - EVAL_LEN] == BOS)
    picks = starts[np.linspace(0, len(starts) - 1, EVAL_WINDOWS).round().astype(int)]
    return np.stack([held_stream[s: s + EVAL_LEN] for s in picks])


def greedy_prompts(held_encoded):
    """N_PROMPTS prompts from different held-out verses: <s> plus the first
    7, 9, ..., 21 tokens of the verse (8 to 22 ids in all)."""
    prompts = []
    n = len(held_encoded)
    for i in range(N_PROMPTS):
        want = 8 + 2 * i
        j = (2 * i + 1) * n // (2 * N_PROMPTS)       # middle of the i-th eighth
        while len(held_encoded[j]) < want + 4:     # skip verses that are too short
            j += 1
        prompts.append(held_encoded[j][:want])
    return prompts


class Batches:
    """Random training windows of seq_len + 1 tokens from the training stream."""

    def __init__(self, train_stream, batch, seq_len, seed):
        self.data = train_stream
        self.batch, self.seq_len = batch, seq_len
        self.rng = np.random.default_rng(seed)

    def next(self):
        starts = self.rng.integers(0, len(self.data) - self.seq_len - 1, size=self.batch)
        return np.stack([self.data[s: s + self.seq_len + 1] for s in starts])


def load(tokenizer_path, train_txt, held_txt):
    sp = spm.SentencePieceProcessor(model_file=tokenizer_path)
    train_enc = encode_verses(sp, read_lines(train_txt))
    held_enc = encode_verses(sp, read_lines(held_txt))
    return sp, stream(train_enc), stream(held_enc), held_enc
