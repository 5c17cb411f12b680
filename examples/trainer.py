"""Train a small MLP classifier on the digits dataset with numpy mini-batch SGD.

Runs as a Trainyard job: data from TRAINING_DATA_PATH (train.csv / test.csv, label in the
first column, 64 pixel values after it), hyperparameters LR, EPOCHS, BATCH_SIZE, SEED and
HIDDEN (hidden layer widths, e.g. "512,512"), one metrics line per epoch, and the weights
written to MODEL_SAVE_PATH after each epoch (a run stopped early keeps its latest). It also
runs outside the service: `LR=0.1 TRAINING_DATA_PATH=DIR python examples/trainer.py`.

Preemption: told it is about to be preempted (its queue's SIGUSR1 or TERM, or the notice
file, runtime.preemption_requested(), looked at between batches), it saves its parameters,
its place in the epoch and its RNG's state to CHECKPOINT_PATH, says so
(runtime.checkpoint_saved()) and waits to be stopped; its next attempt resumes from there
and ends with the same model, byte for byte, as a run never preempted.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trainyard import runtime

Array = np.ndarray
Params = list[tuple[Array, Array]]  # (weights, bias) per layer
CLASSES = 10
PIXEL_MAX = 16.0  # digits pixels are integers in 0..16


@dataclass(frozen=True)
class Config:
    lr: float
    epochs: int
    batch_size: int
    seed: int
    hidden: tuple[int, ...]  # hidden layer widths


@dataclass
class Split:
    x: Array
    y: Array


def _param(name: str, default: str) -> str:
    # Submitted hyperparameters first, then the plain environment for local runs.
    return runtime.hyperparameters().get(name) or os.environ.get(name) or default


def load_config() -> Config:
    try:
        config = Config(lr=float(_param("LR", "0.1")), epochs=int(_param("EPOCHS", "15")),
                        batch_size=int(_param("BATCH_SIZE", "64")),
                        seed=int(_param("SEED", "0")),
                        hidden=tuple(int(n) for n in _param("HIDDEN", "512,512").split(",")))
    except ValueError as exc:
        sys.exit(f"trainer: bad hyperparameter: {exc}")
    if min(config.lr, config.epochs, config.batch_size, *config.hidden) <= 0:
        sys.exit(f"trainer: LR, EPOCHS, BATCH_SIZE and HIDDEN must be positive: {config}")
    return config


def load_split(path: Path) -> Split:
    if not path.is_file():
        sys.exit(f"trainer: dataset file {path} is missing; expected train.csv and test.csv "
                 f"in {path.parent} (TRAINING_DATA_PATH)")
    table = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    return Split(x=table[:, 1:] / PIXEL_MAX, y=table[:, 0].astype(np.int64))


def init_params(sizes: list[int], rng: np.random.Generator) -> Params:
    # He initialisation suits the ReLU hidden layers.
    return [(rng.normal(0.0, np.sqrt(2.0 / n_in), (n_in, n_out)), np.zeros(n_out))
            for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True)]


def forward(params: Params, x: Array) -> tuple[list[Array], Array]:
    """Each layer's input and the class probabilities."""
    inputs = [x]
    for w, b in params[:-1]:
        inputs.append(np.maximum(inputs[-1] @ w + b, 0.0))
    w, b = params[-1]
    logits = inputs[-1] @ w + b
    logits -= logits.max(axis=1, keepdims=True)  # stable softmax
    exp = np.exp(logits)
    return inputs, exp / exp.sum(axis=1, keepdims=True)


def sgd_step(params: Params, x: Array, y: Array, lr: float) -> None:
    inputs, delta = forward(params, x)
    delta[np.arange(len(y)), y] -= 1.0  # d(cross-entropy)/d(logits)
    delta /= len(y)
    for i in reversed(range(len(params))):
        w, b = params[i]
        grad_in = (delta @ w.T) * (inputs[i] > 0) if i else None
        w -= lr * (inputs[i].T @ delta)
        b -= lr * delta.sum(axis=0)
        if grad_in is not None:
            delta = grad_in


def evaluate(params: Params, split: Split) -> tuple[float, float]:
    """(mean cross-entropy, accuracy)."""
    _, probs = forward(params, split.x)
    picked = probs[np.arange(len(split.y)), split.y]
    loss = float(-np.log(np.clip(picked, 1e-12, None)).mean())
    accuracy = float((probs.argmax(axis=1) == split.y).mean())
    return loss, accuracy


SIGNAL_AFTER_FILE_S = 1.0  # how long a notice found by its file waits for its signal


class Notice:
    """The notice of a preemption: SIGUSR1 or TERM (as the job's queue says), or the file
    the service writes (runtime.preemption_requested())."""

    def __init__(self) -> None:
        self.signum = 0
        for signum in (signal.SIGUSR1, signal.SIGTERM):
            signal.signal(signum, self._heard)

    def _heard(self, signum: int, _frame: object) -> None:
        self.signum = self.signum or signum

    def _await_signal(self) -> None:
        """The file came first: the signal it names follows at once (the service writes
        the file, then signals), so give it a moment to be heard."""
        if self.signum or not runtime.preemption_signal():
            return
        deadline = time.monotonic() + SIGNAL_AFTER_FILE_S
        while not self.signum and time.monotonic() < deadline:
            time.sleep(0.01)

    def requested(self) -> bool:
        return bool(self.signum) or runtime.preemption_requested()

    def stop(self) -> None:
        """The checkpoint is saved: say so, and wait for the stop the service then sends
        (TERM's default, or the TERM heard already)."""
        self._await_signal()
        runtime.checkpoint_saved()
        heard = signal.Signals(self.signum).name if self.signum else "no signal"
        print(f"preemption notice ({heard}, notice file "
              f"{'present' if runtime.preemption_requested() else 'absent'}): checkpoint "
              f"saved, waiting to be stopped", flush=True)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if self.signum == signal.SIGTERM:
            os.kill(os.getpid(), signal.SIGTERM)
        while True:
            signal.pause()


@dataclass
class Place:
    """Where training stands: the parameters, the epoch, the batch the epoch is at and its
    order, and the RNG's state after that order was drawn."""

    params: Params
    epoch: int
    start: int
    order: Array
    rng_state: dict[str, Any]
    test_acc: float


CHECKPOINT_FILE = "trainer-state.npz"


def save_checkpoint(place: Place, config: Config) -> None:
    """One file, written whole by a rename: an attempt stopped mid-write leaves the last."""
    arrays: dict[str, Array] = {"order": place.order}
    for i, (w, b) in enumerate(place.params):
        arrays[f"w{i}"], arrays[f"b{i}"] = w, b
    meta = {"config": asdict(config), "epoch": place.epoch, "start": place.start,
            "rng": place.rng_state, "test_acc": place.test_acc}
    directory = runtime.checkpoint_path()
    partial = directory / f"{CHECKPOINT_FILE}.partial.npz"
    np.savez(partial, meta=np.array(json.dumps(meta)), **arrays)
    os.replace(partial, directory / CHECKPOINT_FILE)


def load_checkpoint(config: Config) -> Place | None:
    """The place a preempted attempt saved, if it trained with this same config."""
    path = runtime.checkpoint_path() / CHECKPOINT_FILE
    if not path.is_file():
        return None
    with np.load(path) as saved:
        meta = json.loads(str(saved["meta"]))
        if meta["config"] != json.loads(json.dumps(asdict(config))):
            print(f"trainer: ignoring {path}: it was saved with {meta['config']}")
            return None
        layers = len(config.hidden) + 1
        params = [(saved[f"w{i}"].copy(), saved[f"b{i}"].copy()) for i in range(layers)]
        return Place(params, meta["epoch"], meta["start"], saved["order"].copy(), meta["rng"],
                     meta["test_acc"])


def train(config: Config, train_set: Split, test_set: Split,
          notice: Notice | None = None) -> tuple[Params, float]:
    rng = np.random.default_rng(config.seed)
    params = init_params([train_set.x.shape[1], *config.hidden, CLASSES], rng)
    test_acc = 0.0
    first, start_at, order = 1, 0, None
    resumed = load_checkpoint(config)
    if resumed is not None:
        params, first, start_at, order = resumed.params, resumed.epoch, resumed.start, \
            resumed.order
        rng.bit_generator.state = resumed.rng_state
        test_acc = resumed.test_acc
        print(f"resumed from the checkpoint at epoch {first}, sample {start_at}", flush=True)
    for epoch in range(first, config.epochs + 1):
        started = time.perf_counter()
        if order is None:
            order = rng.permutation(len(train_set.y))
        for start in range(start_at, len(order), config.batch_size):
            if notice is not None and notice.requested():
                save_checkpoint(Place(params, epoch, start, order, dict(rng.bit_generator.state),
                                      test_acc), config)
                notice.stop()
            batch = order[start:start + config.batch_size]
            sgd_step(params, train_set.x[batch], train_set.y[batch], config.lr)
        start_at, order = 0, None
        loss, train_acc = evaluate(params, train_set)
        _, test_acc = evaluate(params, test_set)
        runtime.log_metric(step=epoch, loss=loss, train_accuracy=train_acc,
                           test_accuracy=test_acc)
        # The model as of this epoch: a trial its sweep stops early keeps it.
        save_model(params, config, test_acc)
        print(f"epoch {epoch:3d}/{config.epochs}  loss {loss:.4f}  train_acc {train_acc:.4f}  "
              f"test_acc {test_acc:.4f}  ({time.perf_counter() - started:.2f}s)")
    return params, test_acc


def save_model(params: Params, config: Config, test_acc: float) -> Path:
    out = runtime.model_path()
    arrays: dict[str, Array] = {}
    for i, (w, b) in enumerate(params):
        arrays[f"w{i}"], arrays[f"b{i}"] = w, b
    np.savez(out / "weights.npz", **arrays)
    # No job id or time in here: the same run gives byte-identical files, so the same hash.
    meta = {"model": "mlp", "layers": [params[0][0].shape[0], *(w.shape[1] for w, _ in params)],
            "hyperparameters": asdict(config), "test_accuracy": test_acc}
    (out / "model.json").write_text(json.dumps(meta, indent=2) + "\n")
    return out


def main() -> None:
    config = load_config()
    data = runtime.data_path()
    train_set, test_set = load_split(data / "train.csv"), load_split(data / "test.csv")
    print(f"job {runtime.job_id()}: {len(train_set.y)} train / {len(test_set.y)} test samples, "
          f"{config}")
    params, test_acc = train(config, train_set, test_set, Notice())
    print(f"saved model to {save_model(params, config, test_acc)} (test_acc {test_acc:.4f})")


if __name__ == "__main__":
    main()
