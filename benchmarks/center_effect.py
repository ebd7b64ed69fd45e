"""The measured effect of ``data.center`` on MLP-Attn (docs/protocol.md#defaults).

    python benchmarks/center_effect.py

MNIST (../shared/data/mnist) 3 vs 8 and 10-class, n 1000/200, seed 0: the mean and the
minimum pairwise cosine of MLP-Attn's first-layer inputs Cx̂/‖Cx̂‖ over the training set,
and MLP-Attn's test accuracy after 100 epochs (width 1024, Adam, the defaults), without and
with centring.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MNIST = ROOT / ".." / "shared" / "data" / "mnist"

# isort: off
import engine  # noqa: E402,F401  (OMP_WAIT_POLICY before torch)
import torch  # noqa: E402

# isort: on
from engine.data import load_dataset  # noqa: E402
from engine.models import MLPAttn, build_model  # noqa: E402
from engine.run.spec import TrainSpec  # noqa: E402
from engine.train import evaluate, train  # noqa: E402

for name, root, cl in [("mnist", str(MNIST), (3, 8)), ("mnist", str(MNIST), None)]:  # noqa: B007
    for center in (False, True):
        ds = load_dataset(
            name, root=root, classes=cl, n_train=1000, n_test=200, seed=0, center=center
        )
        shift = ds.pixel_mean.float() if ds.pixel_mean is not None else None
        m = build_model("attn", ds.x_train.float(), 1024, ds.n_out, seed=0, input_shift=shift)
        assert isinstance(m, MLPAttn)
        with torch.no_grad():
            f = m.features(ds.x_train_raw.float())
            cos = f @ f.T
            off = cos[~torch.eye(cos.shape[0], dtype=torch.bool)]
        y = ds.y_train.float() if ds.task == "binary" else ds.y_train
        for _ in train(
            m,
            ds.x_train_raw.float(),
            y,
            TrainSpec(epochs=100),
            generator=torch.Generator().manual_seed(0),
        ):
            pass
        yt = ds.y_test.float() if ds.task == "binary" else ds.y_test
        tl, ta = evaluate(m, ds.x_test_raw.float(), yt)
        print(
            f"{name} {cl or 'all'} center={center}: feature cosine mean {off.mean():.3f} min {off.min():.3f}; MLP-Attn test acc {ta:.3f} (100 epochs)"
        )
