"""Process set-up shared by the scripts: threads, seeds, versions."""
import os

# Passive OpenMP waiting: with busy-waiting, two torch threads on a machine whose
# cores are shared with other work run many times slower.  Must be set before
# torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import random  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

SEED = 1234
THREADS = 2


def setup(seed=SEED):
    import transformers
    # Quiet: the "falling back to the PyTorch implementation" notices (that
    # fallback is exactly what is wanted here) and the progress bars.
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    torch.set_num_threads(THREADS)
    torch.use_deterministic_algorithms(True)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def versions():
    import sentencepiece
    import transformers
    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "sentencepiece": sentencepiece.__version__, "numpy": np.__version__}
