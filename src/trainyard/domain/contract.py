"""The container contract: names the service gives every training process."""

from __future__ import annotations

import json

JOB_ID = "JOB_ID"
TRAINING_DATA_PATH = "TRAINING_DATA_PATH"
MODEL_SAVE_PATH = "MODEL_SAVE_PATH"
METRICS_PATH = "METRICS_PATH"
CHECKPOINT_PATH = "CHECKPOINT_PATH"
HYPERPARAMETERS = "HYPERPARAMETERS"
# Where a registered algorithm's code directory is, read-only; also the job's working directory.
CODE_PATH = "CODE_PATH"
CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
# What each worker of a multi-worker job gets besides, from the gang launcher
# (`trainyard.runtime`, which sets them and cannot import this module inside an image).
WORKER_NAMES = frozenset(
    {"WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TF_CONFIG",
     CUDA_VISIBLE_DEVICES}
)

CONTRACT_NAMES = frozenset(
    {
        JOB_ID,
        TRAINING_DATA_PATH,
        MODEL_SAVE_PATH,
        METRICS_PATH,
        CHECKPOINT_PATH,
        HYPERPARAMETERS,
        CODE_PATH,
        *WORKER_NAMES,
    }
)

# Variables the process needs to run at all; a hyperparameter may not replace them.
PROCESS_NAMES = frozenset({"PATH", "HOME", "PWD", "SHELL", "USER", "LANG", "TMPDIR"})
RESERVED_PREFIXES = ("TRAINYARD_", "LD_")


def reserved_reason(name: str) -> str | None:
    """Why a hyperparameter may not use this environment name, or None if it may."""
    upper = name.upper()
    if upper in CONTRACT_NAMES:
        return f"{name!r} is a reserved name of the container contract"
    if upper in PROCESS_NAMES:
        return f"{name!r} would replace the process environment variable {upper}"
    for prefix in RESERVED_PREFIXES:
        if upper.startswith(prefix):
            return f"names starting with {prefix} are reserved"
    return None


def contract_env(
    *, job_id: str, data_path: str, model_path: str, metrics_path: str, checkpoint_path: str,
    hyperparameters: dict[str, str], code_path: str = "",
) -> dict[str, str]:
    """The variables every training process receives (README.md, "The container contract");
    CODE_PATH only for a job of a registered algorithm's code directory."""
    env = {
        JOB_ID: job_id,
        TRAINING_DATA_PATH: data_path,
        MODEL_SAVE_PATH: model_path,
        METRICS_PATH: metrics_path,
        CHECKPOINT_PATH: checkpoint_path,
        HYPERPARAMETERS: json.dumps(hyperparameters, sort_keys=True),
    }
    if code_path:
        env[CODE_PATH] = code_path
    env.update(hyperparameters)  # names were checked against the reserved ones at submit
    return env
