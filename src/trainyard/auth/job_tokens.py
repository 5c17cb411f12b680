"""Job tokens: "tyjob_<job>_<attempt>_<secret>", minted for one attempt of one job. The job
and attempt are public (they name the row); only the SHA-256 of the secret is stored. A
token is good while its attempt is the job's current one and the job holds its resources:
it dies with the attempt, without anyone revoking it. Pure: no store here."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from trainyard.auth.tokens import hash_secret, matches
from trainyard.domain.errors import Unauthenticated
from trainyard.domain.states import ACTIVE_STATES, JobState

PREFIX = "tyjob_"
# Job ids are lowercase letters and digits (domain/runs.JOB_ID_RE); the secret's length is
# fixed, so its own '_' and '-' cannot be mistaken for separators.
JOB_TOKEN_RE = re.compile(r"^tyjob_([0-9a-z]{1,32})_([1-9][0-9]{0,8})_([A-Za-z0-9_-]{43})\Z")
MAX_TOKEN = 128  # longer values are refused without being matched


@dataclass(frozen=True)
class MintedToken:
    token: str  # handed to the attempt once, through its environment
    secret_hash: str  # what the store keeps


@dataclass(frozen=True)
class JobCredential:
    """What a presented job token claims: its job and attempt, and the secret to check."""

    job_id: str
    attempt: int
    secret: str

    def __repr__(self) -> str:  # a credential in a log line must not leak its secret
        return f"JobCredential({self.job_id!r}, {self.attempt})"


def mint(job_id: str, attempt: int) -> MintedToken:
    secret = secrets.token_urlsafe(32)
    token = f"{PREFIX}{job_id}_{attempt}_{secret}"
    if JOB_TOKEN_RE.match(token) is None:  # an id no job can have
        raise ValueError(f"cannot mint a job token for job {job_id[:40]!r}, attempt {attempt}")
    return MintedToken(token, hash_secret(secret))


def is_job_token(credential: str) -> bool:
    """Whether a bearer credential claims to be a job token (rather than a user's)."""
    return credential.startswith(PREFIX)


def parse(credential: str) -> JobCredential:
    """The job, attempt and secret of a job token, or Unauthenticated with a sentence that
    never repeats the value."""
    if len(credential) > MAX_TOKEN:
        raise Unauthenticated(f"the job token is longer than {MAX_TOKEN} characters")
    match = JOB_TOKEN_RE.match(credential)
    if match is None:
        raise Unauthenticated("the job token is malformed: job tokens look like "
                              "tyjob_<job id>_<attempt>_<43 characters>")
    return JobCredential(match.group(1), int(match.group(2)), match.group(3))


def check(credential: JobCredential, stored_hash: str | None, current_attempt: int,
          state: JobState) -> None:
    """Raise Unauthenticated unless the token is good: its secret matches what was stored
    for its attempt, that attempt is the job's current one, and the job is active."""
    name = f"the job token of {credential.job_id}-{credential.attempt}"
    if stored_hash is None or not matches(credential.secret, stored_hash):
        raise Unauthenticated(f"{name} is not valid here")
    if current_attempt != credential.attempt or state not in ACTIVE_STATES:
        raise Unauthenticated(f"{name} has expired: its attempt ended (the job is "
                              f"{state} at attempt {current_attempt})")

