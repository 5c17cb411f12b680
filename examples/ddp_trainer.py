"""Train a small MLP on the digits dataset with PyTorch DistributedDataParallel (gloo, CPU).

Runs as every worker of a multi-worker Trainyard job: the worker contract gives it RANK,
WORLD_SIZE, MASTER_ADDR and MASTER_PORT (read by init_method="env://"), and each rank trains
on its own shard of the training set (DistributedSampler), so every step's gradients are
averaged across the workers. With WORLD_SIZE unset (or 1) it is one plain process.

The rest is the job contract, as for examples/trainer.py: the dataset's train.csv / test.csv
at TRAINING_DATA_PATH (label first, then 64 pixel values 0..16), the hyperparameters LR,
EPOCHS, BATCH_SIZE (per worker), SEED and HIDDEN (hidden layer widths, e.g. "64" or
"128,64"), submitted or from the plain environment. Rank 0 logs loss and test_accuracy per
epoch (step=epoch) to METRICS_PATH, saves a checkpoint (model, optimizer, epoch) in
CHECKPOINT_PATH after each epoch, and writes the final weights to MODEL_SAVE_PATH. A run that
finds a checkpoint resumes after its epoch. Every rank prints "weights-sha256 HEX rank R" at
the end, and rank 0 stores all ranks' digests in the model directory.

Locally, two workers on this machine:
`python -m trainyard.runtime launch --workers 2 -- "python examples/ddp_trainer.py"`.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data.distributed import DistributedSampler

from trainyard import runtime

CLASSES = 10
PIXELS = 64
PIXEL_MAX = 16.0  # digits pixels are integers in 0..16
MOMENTUM = 0.9
CHECKPOINT_FILE = "ddp-checkpoint.pt"
DIGESTS_FILE = "weights-sha256.json"
# How long a rank waits for the others at the rendezvous and at each collective.
COLLECTIVE_TIMEOUT = datetime.timedelta(seconds=float(os.environ.get("DDP_TIMEOUT", "300")))


@dataclass(frozen=True)
class Config:
    lr: float
    epochs: int
    batch_size: int  # per worker
    seed: int
    hidden: tuple[int, ...]


def _param(name: str, default: str) -> str:
    # Submitted hyperparameters first, then the plain environment for local runs.
    return runtime.hyperparameters().get(name) or os.environ.get(name) or default


def load_config() -> Config:
    try:
        config = Config(lr=float(_param("LR", "0.05")), epochs=int(_param("EPOCHS", "3")),
                        batch_size=int(_param("BATCH_SIZE", "32")),
                        seed=int(_param("SEED", "0")),
                        hidden=tuple(int(n) for n in _param("HIDDEN", "64").split(",")))
    except ValueError as exc:
        sys.exit(f"ddp_trainer: bad hyperparameter: {exc}")
    if min(config.lr, config.epochs, config.batch_size, *config.hidden) <= 0:
        sys.exit(f"ddp_trainer: LR, EPOCHS, BATCH_SIZE and HIDDEN must be positive: {config}")
    return config


def load_split(path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    if not path.is_file():
        sys.exit(f"ddp_trainer: dataset file {path} is missing; expected train.csv and "
                 f"test.csv in {path.parent} (TRAINING_DATA_PATH)")
    table = np.loadtxt(path, delimiter=",", dtype=np.float32, ndmin=2)
    if table.shape[1] != 1 + PIXELS:
        sys.exit(f"ddp_trainer: {path} has {table.shape[1]} columns; expected the label and "
                 f"{PIXELS} pixel values")
    return (torch.from_numpy(table[:, 1:] / PIXEL_MAX),
            torch.from_numpy(table[:, 0].astype(np.int64)))


def build_model(hidden: tuple[int, ...]) -> nn.Sequential:
    layers: list[nn.Module] = []
    sizes = [PIXELS, *hidden]
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    layers.append(nn.Linear(sizes[-1], CLASSES))
    return nn.Sequential(*layers)


def weights_digest(net: nn.Module) -> str:
    """sha256 of the parameters' bytes, concatenated in parameter order."""
    digest = hashlib.sha256()
    for param in net.parameters():
        digest.update(param.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def load_checkpoint(distributed: bool, rank: int) -> dict[str, Any] | None:
    """Rank 0 reads the checkpoint and hands it to the others, whose CHECKPOINT_PATH need not
    hold it (on other nodes it may be empty)."""
    state: dict[str, Any] | None = None
    if rank == 0:
        path = runtime.checkpoint_path() / CHECKPOINT_FILE
        if path.is_file():
            state = torch.load(path, map_location="cpu", weights_only=True)
    if distributed:
        box = [state]
        dist.broadcast_object_list(box, src=0)
        state = box[0]
    return state


def save_checkpoint(net: nn.Module, optimizer: torch.optim.Optimizer, epoch: int,
                    config: Config) -> None:
    directory = runtime.checkpoint_path()
    partial = directory / f"{CHECKPOINT_FILE}.partial"
    torch.save({"epoch": epoch, "model": net.state_dict(), "optimizer": optimizer.state_dict(),
                "hidden": list(config.hidden)}, partial)
    os.replace(partial, directory / CHECKPOINT_FILE)  # never a half-written checkpoint
    saved = getattr(runtime, "checkpoint_saved", None)  # the remote runtime uploads it then
    if callable(saved):
        saved()


def evaluate(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((net(x).argmax(dim=1) == y).float().mean())


def save_model(net: nn.Module, config: Config, world: int, epochs_done: int,
               test_acc: float, digests: list[str]) -> Path:
    out = runtime.model_path()
    torch.save(net.state_dict(), out / "model.pt")
    (out / DIGESTS_FILE).write_text(json.dumps(
        {"ranks": {str(r): d for r, d in enumerate(digests)},
         "identical": len(set(digests)) == 1}, indent=2) + "\n")
    # No job id or time in here: the same run gives byte-identical files, so the same hash.
    meta = {"model": "mlp", "framework": "pytorch-ddp",
            "layers": [PIXELS, *config.hidden, CLASSES], "hyperparameters": asdict(config),
            "world_size": world, "epochs_trained": epochs_done, "test_accuracy": test_acc,
            "weights_sha256": digests[0]}
    (out / "model.json").write_text(json.dumps(meta, indent=2) + "\n")
    return out


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # live logs
    torch.set_num_threads(1)
    config = load_config()
    rank, world = runtime.rank(), runtime.world_size()
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                                timeout=COLLECTIVE_TIMEOUT)
    try:
        code = train(config, rank, world, distributed)
        if distributed:
            dist.barrier()  # no rank tears the group down while another still uses it
        return code
    finally:
        if distributed:
            dist.destroy_process_group()


def train(config: Config, rank: int, world: int, distributed: bool) -> int:
    started = time.perf_counter()
    data = runtime.data_path()
    x_train, y_train = load_split(data / "train.csv")
    x_test, y_test = load_split(data / "test.csv")

    torch.manual_seed(config.seed)  # the same initial weights on every rank
    net = build_model(config.hidden)
    optimizer = torch.optim.SGD(net.parameters(), lr=config.lr, momentum=MOMENTUM)
    first_epoch = 1
    state = load_checkpoint(distributed, rank)
    if state is not None:
        if tuple(state["hidden"]) != config.hidden:
            sys.exit(f"ddp_trainer: the checkpoint has hidden layers {state['hidden']}, this "
                     f"run asks for {list(config.hidden)}; remove it or keep HIDDEN")
        net.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        for group in optimizer.param_groups:  # the submitted LR, not the checkpoint's
            group["lr"] = config.lr
        first_epoch = int(state["epoch"]) + 1
        print(f"rank {rank}: resuming from epoch {first_epoch} (checkpoint of epoch "
              f"{state['epoch']})")
    model: nn.Module = DistributedDataParallel(net) if distributed else net

    # Each rank its own shard; every shard the same length, so every rank takes as many steps.
    sampler = DistributedSampler(torch.arange(len(y_train)), num_replicas=world, rank=rank,
                                 shuffle=True, seed=config.seed)
    if rank == 0:
        print(f"job {runtime.job_id()}: {world} worker(s), {len(y_train)} train / "
              f"{len(y_test)} test samples, {len(sampler)} per worker, {config}")
    loss_fn = nn.CrossEntropyLoss()
    test_acc = evaluate(net, x_test, y_test)
    for epoch in range(first_epoch, config.epochs + 1):
        epoch_started = time.perf_counter()
        sampler.set_epoch(epoch)
        order = torch.tensor(list(sampler))
        model.train()
        totals = torch.zeros(2, dtype=torch.float64)  # summed loss, samples
        for start in range(0, len(order), config.batch_size):
            batch = order[start:start + config.batch_size]
            optimizer.zero_grad()
            loss = loss_fn(model(x_train[batch]), y_train[batch])
            loss.backward()  # DDP averages the gradients across the ranks here
            optimizer.step()
            totals += torch.stack([loss.detach().double() * len(batch),
                                  torch.tensor(len(batch), dtype=torch.float64)])
        if distributed:
            dist.all_reduce(totals)
        mean_loss = float(totals[0] / totals[1])
        if rank == 0:
            test_acc = evaluate(net, x_test, y_test)
            runtime.log_metric(step=epoch, loss=mean_loss, test_accuracy=test_acc)
            save_checkpoint(net, optimizer, epoch, config)
            print(f"epoch {epoch:3d}/{config.epochs}  loss {mean_loss:.4f}  "
                  f"test_acc {test_acc:.4f}  ({time.perf_counter() - epoch_started:.2f}s)")
    if first_epoch > config.epochs and rank == 0:
        print(f"nothing to train: the checkpoint already covers all {config.epochs} epochs")

    digest = weights_digest(net)
    print(f"weights-sha256 {digest} rank {rank}")
    digests = [digest]
    if distributed:
        gathered: list[Any] = [None] * world
        dist.all_gather_object(gathered, digest)
        digests = [str(d) for d in gathered]
    if rank != 0:
        return 0
    out = save_model(net, config, world, max(config.epochs, first_epoch - 1), test_acc, digests)
    print(f"saved model to {out} (test_acc {test_acc:.4f}) in "
          f"{time.perf_counter() - started:.2f}s")
    if len(set(digests)) != 1:
        print(f"ddp_trainer: the ranks ended with different weights: {digests}", file=sys.stderr)
        return 1
    if distributed:
        print(f"all {world} ranks ended with identical weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
