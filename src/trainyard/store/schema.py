"""Tables. Changing one means adding an Alembic migration under migrations/versions/."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy import false as sa_false

metadata = MetaData()

jobs = Table(
    "jobs",
    metadata,
    # seq gives the submit order (FIFO) and keyset paging; id is what users see.
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", String(32), nullable=False, unique=True),
    Column("client_request_id", String(128), nullable=True, unique=True),
    Column("owner", String(128), nullable=False, default=""),
    Column("name", String(128), nullable=False),
    Column("command", Text, nullable=False, default=""),
    Column("image", String(512), nullable=False, default=""),
    # Which executor runs it (domain.kinds), decided once at submit.
    Column("kind", String(32), nullable=False, server_default="local"),
    # Whose worker variables its workers get (domain.spec.FRAMEWORKS); "": both.
    Column("framework", String(16), nullable=False, server_default=""),
    Column("dataset_name", String(128), nullable=True),
    Column("dataset_version", String(64), nullable=True),
    Column("hyperparameters", JSON, nullable=False),
    Column("labels", JSON, nullable=False),
    Column("cpus", Float, nullable=False),
    Column("memory_mb", BigInteger, nullable=False),
    Column("gpus", Integer, nullable=False),
    # Workers started together; cpus, memory_mb and gpus are each one's.
    Column("workers", Integer, nullable=False, default=1, server_default="1"),
    Column("queue", String(128), nullable=False),
    Column("priority", Integer, nullable=False),
    Column("state", String(16), nullable=False),
    Column("attempt", Integer, nullable=False, default=0),
    Column("message", Text, nullable=False, default=""),
    Column("exit_code", Integer, nullable=True),
    Column("cancel_requested", Boolean, nullable=False, default=False),
    Column("pending_code", String(64), nullable=False, default=""),
    Column("pending_message", Text, nullable=False, default=""),
    Column("executor", String(32), nullable=False, default=""),
    Column("handle", String(256), nullable=False, default=""),
    # Device ids allocated to the current attempt, comma-separated; empty without GPUs.
    Column("gpu_ids", String(1024), nullable=False, default="", server_default=""),
    # The team whose quota the job draws on (from the policy, at submit), and the pool the
    # scheduler placed its current attempt in.
    Column("team", String(64), nullable=False, default="", server_default=""),
    Column("pool", String(64), nullable=False, default="", server_default=""),
    # Asked to stop so that a team gets its quota back; it returns to WAITING when stopped.
    Column("preempt_requested", Boolean, nullable=False, default=False,
           server_default=sa_false()),
    Column("started_at", Float, nullable=True),  # when the current attempt began running
    # Seconds it held its resources in attempts that ended: the service it attained, with
    # its rate (scheduler.attained), orders it among the waiting jobs of its priority.
    Column("held_s", Float, nullable=False, default=0.0, server_default="0"),
    Column("sweep_id", String(32), nullable=False, default="", server_default=""),
    Column("metrics_offset", BigInteger, nullable=False, default=0),
    Column("malformed_metric_lines", BigInteger, nullable=False, default=0),
    Column("submitted_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    # The code's version the client named beside the command or image, the model its
    # artifact becomes a version of (empty: its name), and the run it reproduces.
    Column("git_commit", String(64), nullable=False, default="", server_default=""),
    Column("model_name", String(128), nullable=False, default="", server_default=""),
    Column("reproduced_from", String(48), nullable=False, default="", server_default=""),
    # Retries and time limits (domain.retry), as the spec gave them with its queue's
    # defaults; 0 is "none" (max_attempts 0, on jobs stored before them: the default).
    Column("max_attempts", Integer, nullable=False, default=0, server_default="0"),
    Column("retry_on_failure", Boolean, nullable=False, default=False,
           server_default=sa_false()),
    Column("retry_exit_codes", JSON, nullable=False, default=list, server_default="[]"),
    Column("time_limit_s", Float, nullable=False, default=0.0, server_default="0"),
    Column("pending_timeout_s", Float, nullable=False, default=0.0, server_default="0"),
    # Its attempts lost or failed and retried; while it backs off, when it may start again.
    Column("retries", Integer, nullable=False, default=0, server_default="0"),
    Column("retry_after", Float, nullable=True),
    # Why it ended, where its state alone does not say: STOPPED_EARLY (domain.early_stopping)
    # for a trial its sweep's rule stopped, which ends CANCELLED.
    Column("end_reason", String(32), nullable=False, default="", server_default=""),
    # Preemption with notice (domain.notice): when the current attempt was given notice,
    # the checkpoints it reported (the counter its runtime writes) and when the last was
    # seen; the work its preemptions lost (seconds past their last checkpoint), and how many.
    Column("notice_at", Float, nullable=True),
    Column("checkpoint_at", Float, nullable=True),
    Column("work_lost_s", Float, nullable=False, default=0.0, server_default="0"),
    Column("checkpoints", Integer, nullable=False, default=0, server_default="0"),
    Column("preemptions", Integer, nullable=False, default=0, server_default="0"),
    # The registered algorithm version it runs (pinned at submit; None: none), and for one of
    # a code directory that directory's content hash.
    Column("algorithm_name", String(128), nullable=True),
    Column("algorithm_version", Integer, nullable=True),
    Column("code_hash", String(64), nullable=False, default="", server_default=""),
    Index("ix_jobs_state_queue_seq", "state", "queue", "seq"),
    # The jobs in one state, newest first, whatever their queue (a list by state).
    Index("ix_jobs_state_seq", "state", "seq"),
    Index("ix_jobs_algorithm", "algorithm_name", "algorithm_version"),
    Index("ix_jobs_dataset", "dataset_name", "dataset_version"),
    Index("ix_jobs_reproduced_from", "reproduced_from"),
    # The jobs that ended lately, newest first: what run-time estimates learn from.
    Index("ix_jobs_state_updated_at", "state", "updated_at"),
    # The jobs submitted lately: what a forecast expects the next hours to bring.
    Index("ix_jobs_submitted_at", "submitted_at"),
    # A sweep's trials, for `trainyard sweeps show` and its budgets and early stopping.
    Index("ix_jobs_sweep_id", "sweep_id"),
)

# One row per attempt of a job: a run. Written with the job's transitions, in the same
# transaction (JobStore.transition), so the two never disagree.
runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),  # newest last
    Column("job_id", String(32), ForeignKey("jobs.id"), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("state", String(16), nullable=False),
    Column("executor", String(32), nullable=False),
    Column("pool", String(64), nullable=False),
    Column("handle", String(256), nullable=False),
    Column("gpu_ids", String(1024), nullable=False),
    # The image id (sha256:...) the container was created from, resolved at launch.
    Column("image_id", String(80), nullable=False, default="", server_default=""),
    Column("exit_code", Integer, nullable=True),
    Column("message", Text, nullable=False, default=""),
    Column("launched_at", Float, nullable=False),
    Column("started_at", Float, nullable=True),
    Column("ended_at", Float, nullable=True),
    # Metric points (one key's value at one step) the attempt kept, and those past the
    # server's cap it wrote and lost.
    Column("metric_points", BigInteger, nullable=False, default=0, server_default="0"),
    Column("dropped_metric_points", BigInteger, nullable=False, default=0,
           server_default="0"),
    # The attempt's notice, its last checkpoint seen, and the work lost when it was preempted.
    Column("notice_at", Float, nullable=True),
    Column("checkpoint_at", Float, nullable=True),
    Column("work_lost_s", Float, nullable=False, default=0.0, server_default="0"),
    UniqueConstraint("job_id", "attempt", name="uq_runs_job_attempt"),
)

job_labels = Table(
    "job_labels",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id"), primary_key=True),
    Column("key", String(64), primary_key=True),
    Column("value", String(256), nullable=False),
    Index("ix_job_labels_key_value", "key", "value"),
)

job_events = Table(
    "job_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(32), ForeignKey("jobs.id"), nullable=False),
    Column("from_state", String(16), nullable=True),
    Column("to_state", String(16), nullable=False),
    Column("time", Float, nullable=False),
    Column("reason", Text, nullable=False, default=""),
    Index("ix_job_events_job_id_id", "job_id", "id"),
)

metrics = Table(
    "metrics",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(32), ForeignKey("jobs.id"), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("step", BigInteger, nullable=True),
    Column("key", String(128), nullable=False),
    Column("value", Float, nullable=False),
    Column("time", Float, nullable=False),
    Index("ix_metrics_job_key_id", "job_id", "key", "id"),
)

# Each run's last value of each of its metrics (the point of that key written last), kept by
# MetricStore.ingest in the ingest's own transaction: what runs are sorted and filtered by
# (ListRuns), found in order of value through the (key, value) index, never by reading every
# run's points.
run_final_metrics = Table(
    "run_final_metrics",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id"), primary_key=True),
    Column("attempt", Integer, primary_key=True),
    Column("key", String(128), primary_key=True),
    Column("value", Float, nullable=False),
    Column("step", BigInteger, nullable=True),
    Index("ix_run_final_metrics_key_value", "key", "value"),
)

dataset_versions = Table(
    "dataset_versions",
    metadata,
    Column("name", String(128), primary_key=True),
    Column("version", String(64), primary_key=True),
    Column("size_bytes", BigInteger, nullable=False),
    Column("file_count", Integer, nullable=False),
    Column("path", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)

model_versions = Table(
    "model_versions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("model_name", String(128), nullable=False),
    Column("version", Integer, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("uri", Text, nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("file_count", Integer, nullable=False),
    Column("job_id", String(32), ForeignKey("jobs.id"), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("dataset_name", String(128), nullable=True),
    Column("dataset_version", String(64), nullable=True),
    Column("hyperparameters", JSON, nullable=False),
    Column("command", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("model_name", "version", name="uq_model_versions_name_version"),
    Index("ix_model_versions_job_id", "job_id"),
    Index("ix_model_versions_dataset", "dataset_name", "dataset_version"),
)

# A stable handle on one version of a model ("production"); moved in one transaction with
# a row of its history.
model_aliases = Table(
    "model_aliases",
    metadata,
    Column("model_name", String(128), primary_key=True),
    Column("alias", String(128), primary_key=True),
    Column("version", Integer, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("updated_by", String(128), nullable=False),
)

model_alias_history = Table(
    "model_alias_history",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("model_name", String(128), nullable=False),
    Column("alias", String(128), nullable=False),
    Column("from_version", Integer, nullable=True),  # None: the alias was new
    Column("to_version", Integer, nullable=False),
    Column("actor", String(128), nullable=False),
    Column("time", Float, nullable=False),
    Index("ix_model_alias_history_model", "model_name", "id"),
)

# --- algorithms ----------------------------------------------------------------------------

# A registered algorithm's versions, numbered per name: an image pinned by its content id, or
# a code directory stored by content hash (under the server's code directory) with the image
# it runs in and its command; its defaults apply under a job's own.
algorithm_versions = Table(
    "algorithm_versions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(128), nullable=False),
    Column("version", Integer, nullable=False),
    Column("source", String(8), nullable=False),  # domain.algorithms.Source
    Column("image", String(512), nullable=False, default=""),
    Column("image_id", String(80), nullable=False, default=""),
    Column("code_hash", String(64), nullable=False, default=""),
    Column("code_size_bytes", BigInteger, nullable=False, default=0),
    Column("code_file_count", Integer, nullable=False, default=0),
    Column("command", Text, nullable=False, default=""),
    Column("hyperparameters", JSON, nullable=False),
    Column("cpus", Float, nullable=False, default=0.0),
    Column("memory_mb", BigInteger, nullable=False, default=0),
    Column("gpus", Integer, nullable=False, default=0),
    Column("description", Text, nullable=False, default=""),
    Column("git_commit", String(64), nullable=False, default=""),
    Column("created_at", Float, nullable=False),
    Column("created_by", String(128), nullable=False, default=""),
    UniqueConstraint("name", "version", name="uq_algorithm_versions_name_version"),
    Index("ix_algorithm_versions_code_hash", "code_hash"),
)

# A stable handle on one version of an algorithm ("production"), moved in one transaction with
# a row of its history, as model aliases are.
algorithm_aliases = Table(
    "algorithm_aliases",
    metadata,
    Column("name", String(128), primary_key=True),
    Column("alias", String(128), primary_key=True),
    Column("version", Integer, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("updated_by", String(128), nullable=False),
)

algorithm_alias_history = Table(
    "algorithm_alias_history",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(128), nullable=False),
    Column("alias", String(128), nullable=False),
    Column("from_version", Integer, nullable=True),  # None: the alias was new
    Column("to_version", Integer, nullable=False),
    Column("actor", String(128), nullable=False),
    Column("time", Float, nullable=False),
    Index("ix_algorithm_alias_history_name", "name", "id"),
)

# The sample training service's 32-bit job ids (`training.TrainingService`), each naming one
# of Trainyard's jobs for good.
sample_job_ids = Table(
    "sample_job_ids",
    metadata,
    Column("number", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(32), ForeignKey("jobs.id"), nullable=False, unique=True),
)

# --- identity and access -------------------------------------------------------------------

users = Table(
    "users",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("admin", Boolean, nullable=False),
    Column("created_at", Float, nullable=False),
)

teams = Table(
    "teams",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("created_at", Float, nullable=False),
)

team_members = Table(
    "team_members",
    metadata,
    Column("team", String(64), ForeignKey("teams.name"), primary_key=True),
    Column("user_name", String(64), ForeignKey("users.name"), primary_key=True),
    Index("ix_team_members_user_name", "user_name"),
)

# A token is "ty_<id>_<secret>"; only the secret's SHA-256 is kept.
api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", String(16), primary_key=True),
    Column("user_name", String(64), ForeignKey("users.name"), nullable=False),
    Column("secret_hash", String(64), nullable=False),
    Column("read_only", Boolean, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=True),
    Column("revoked_at", Float, nullable=True),
    Index("ix_api_tokens_user_name", "user_name"),
)

# Who may submit to a queue; a queue with no rows is open to every user.
queue_access = Table(
    "queue_access",
    metadata,
    Column("queue", String(128), primary_key=True),
    Column("kind", String(8), primary_key=True),  # "user" or "team"
    Column("principal", String(64), primary_key=True),
)

audit_events = Table(
    "audit_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("time", Float, nullable=False),
    Column("actor", String(64), nullable=False),
    Column("action", String(64), nullable=False),
    Column("target", String(256), nullable=False),
    Column("allowed", Boolean, nullable=False),
    Column("detail", Text, nullable=False),
)

# A sweep's or a pipeline's jobs (kind) run at most max_parallel at a time (0: no limit of
# its own).
sweeps = Table(
    "sweeps",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(128), nullable=False),
    Column("owner", String(128), nullable=False),
    Column("max_parallel", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("kind", String(16), nullable=False, default="sweep", server_default="sweep"),
    # A sweep's objective (a metric and "max" or "min"; "" none), its early-stopping rule
    # ("median", "asha"; "" none) with its settings, and its budgets (0: none). Pipelines
    # keep them empty.
    Column("objective", String(128), nullable=False, default="", server_default=""),
    Column("direction", String(8), nullable=False, default="", server_default=""),
    Column("early_stop", String(16), nullable=False, default="", server_default=""),
    Column("min_steps", Integer, nullable=False, default=0, server_default="0"),
    Column("reduction", Integer, nullable=False, default=0, server_default="0"),
    Column("max_trials", Integer, nullable=False, default=0, server_default="0"),
    Column("max_gpu_hours", Float, nullable=False, default=0.0, server_default="0"),
    Column("max_cpu_hours", Float, nullable=False, default=0.0, server_default="0"),
    # "" open, PAUSED, CANCELLED, or BUDGET (it launches no more trials), with the sentence.
    Column("status", String(16), nullable=False, default="", server_default=""),
    Column("status_message", Text, nullable=False, default="", server_default=""),
)

# Each queue's decayed usage for fair share, as of updated_at: kept across restarts.
queue_usage = Table(
    "queue_usage",
    metadata,
    Column("queue", String(128), primary_key=True),
    Column("usage", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)

# What each attempt that ran held (all its workers' GPUs and CPUs) and from when to when,
# written when it ends (store/budget_usage.py): the budgets over time sum the part of each
# inside their window, found by when it ended.
budget_usage = Table(
    "budget_usage",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id"), primary_key=True),
    Column("attempt", Integer, primary_key=True),
    Column("team", String(64), nullable=False),
    Column("queue", String(128), nullable=False),
    Column("gpus", Integer, nullable=False),
    Column("cpus", Float, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float, nullable=False),
    # A budget's attempts in its window, each index holding every column its sum reads.
    Index("ix_budget_usage_team", "team", "ended_at", "started_at", "gpus", "cpus"),
    Index("ix_budget_usage_queue", "queue", "ended_at", "started_at", "gpus", "cpus"),
)

# --- the job runtime -----------------------------------------------------------------------

# A job token is "tyjob_<job>_<attempt>_<secret>", one per attempt; only the secret's
# SHA-256 is kept. The rows go when the attempt ends (store/jobs.py, _move).
job_tokens = Table(
    "job_tokens",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id"), primary_key=True),
    Column("attempt", Integer, primary_key=True),
    Column("secret_hash", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
)

# Where an attempt's pushed stream ("metrics", "log") stands in its host file: the bytes
# committed, and each rank's next sequence number ({"0": 17}). A push moves both at once.
runtime_streams = Table(
    "runtime_streams",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id"), primary_key=True),
    Column("attempt", Integer, primary_key=True),
    Column("stream", String(16), primary_key=True),
    Column("committed_offset", BigInteger, nullable=False),
    Column("seqs", JSON, nullable=False),
)

# --- leadership ----------------------------------------------------------------------------

# Which server runs the tracker (PostgreSQL; SQLite keeps its file lock). `token` grows by
# one at each change of holder and fences the tracker's writes; times are the database's
# clock, in epoch seconds, so servers' clocks never have to agree.
leader_lease = Table(
    "leader_lease",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("holder", String(256), nullable=False),
    Column("token", BigInteger, nullable=False),
    Column("acquired_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)

# --- predictions ---------------------------------------------------------------------------

# Each waiting job's latest predicted start (domain.prediction), in epoch seconds: the whole
# set is replaced at each of the forecast's refreshes (store/predictions.py). p50 and p90 are
# null past the forecast's horizon, or when the job cannot start (cannot_start says why).
predicted_starts = Table(
    "predicted_starts",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id"), primary_key=True),
    Column("p50", Float, nullable=True),
    Column("p90", Float, nullable=True),
    Column("as_of", Float, nullable=False),
    Column("cannot_start", Text, nullable=False, default="", server_default=""),
    Column("horizon_s", Float, nullable=False, default=0.0, server_default="0"),
)

# --- dependencies --------------------------------------------------------------------------

# Jobs that wait for jobs (`--after`): job_id waits for needs_job_id to end as `condition`
# asks ("succeeded" or "finished"). `met` is set once it has, for good (store/dependencies.py);
# a waiting job with an unmet row is held out of the queue. Rows are found by the needed job
# when it ends (ix_job_dependencies_needs), and by the dependent through the primary key.
job_dependencies = Table(
    "job_dependencies",
    metadata,
    Column("job_id", String(32), ForeignKey("jobs.id"), primary_key=True),
    Column("needs_job_id", String(32), ForeignKey("jobs.id"), primary_key=True),
    Column("condition", String(16), nullable=False),
    Column("met", Boolean, nullable=False, default=False, server_default=sa_false()),
    Index("ix_job_dependencies_needs", "needs_job_id"),
)

