"""More than one machine: where the instance keeps its records and where a run's steps execute.

Both are choices of the deployment, read when the definitions load (like shard_count):

- Records (runs, events, schedules): SQLite files in DAGSTER_HOME by default; PostgreSQL
  (dagster-postgres) when the instance file says so. `instance_file(postgres=True)` is the
  project's dagster.yaml (the run queue and its one-run-per-shard limit) with
  deploy/storage-postgres.yaml under it; the database URL comes from RECRAWL_POSTGRES_URL.
- Steps: in the run's own process by default; on Celery workers (dagster-celery) when
  RECRAWL_CELERY_BROKER names a broker such as redis://db-host:6379/0. Every run's steps go
  there, fetch batches included, whatever launched the run; the run queue still allows one
  run per shard, so one shard is never fetched by two workers at once. Start workers with
  `python -m crawl_assets.deployment.cluster worker --name NAME` on machines that share the data root.

dagster-postgres and dagster-celery are the `cluster` extra (pyproject.toml).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from dagster import ExecutorDefinition, in_process_executor

from ..crawler.settings import PROJECT_ROOT

CELERY_BROKER_ENV = "RECRAWL_CELERY_BROKER"
CELERY_BACKEND_ENV = "RECRAWL_CELERY_BACKEND"  # where step results go; the broker by default
POSTGRES_URL_ENV = "RECRAWL_POSTGRES_URL"  # read by deploy/storage-postgres.yaml
POSTGRES_STORAGE_FILE = PROJECT_ROOT / "deploy" / "storage-postgres.yaml"
INSTANCE_FILE = PROJECT_ROOT / "dagster.yaml"
# dagster-celery's workers take tasks from this queue (dagster_celery.make_app routes there).
CELERY_QUEUE = "dagster"


class ClusterSetupError(RuntimeError):
    """The deployment asks for a distributed piece that is not installed or not reachable."""


def celery_settings(env: Mapping[str, str] = os.environ) -> dict | None:
    """Broker and result backend of the Celery executor, or None to run steps in-process."""
    broker = env.get(CELERY_BROKER_ENV)
    if not broker:
        return None
    return {"broker": broker, "backend": env.get(CELERY_BACKEND_ENV) or broker}


def run_executor(env: Mapping[str, str] = os.environ) -> ExecutorDefinition:
    """The executor every run uses: Celery workers when a broker is set, else in-process (each
    step's work is I/O or DuckDB, which has its own threads, so one machine needs no more)."""
    settings = celery_settings(env)
    if settings is None:
        return in_process_executor
    try:
        from dagster_celery import celery_executor
    except ImportError:
        raise ClusterSetupError(
            f"{CELERY_BROKER_ENV} is set but dagster-celery is not installed here: install the "
            "cluster extra (make cluster-tools) or unset it to run steps in-process") from None
    return celery_executor.configured(settings)


def celery_app_args(env: Mapping[str, str] = os.environ) -> dict:
    """What a worker builds its Celery app from: the executor's own app arguments, so the worker
    and the runs agree on the broker, the backend and dagster-celery's defaults."""
    settings = celery_settings(env)
    if settings is None:
        raise ClusterSetupError(f"set {CELERY_BROKER_ENV} (e.g. redis://127.0.0.1:6379/0) "
                                "before starting a worker: it is the broker the runs send steps to")
    try:
        from dagster_celery.executor import CeleryExecutor
    except ImportError:
        raise ClusterSetupError("dagster-celery is not installed here: install the cluster extra "
                                "(make cluster-tools) and start the worker from the project's venv") from None
    return CeleryExecutor.for_cli(**settings).app_args()


def instance_file(postgres: bool) -> str:
    """The text of DAGSTER_HOME/dagster.yaml: the project's instance settings, and with
    `postgres` the PostgreSQL storage block (top-level keys of their own, so the two files
    are laid one under the other)."""
    text = INSTANCE_FILE.read_text()
    if postgres:
        text = text.rstrip("\n") + "\n\n" + POSTGRES_STORAGE_FILE.read_text()
    return text


def worker_command(name: str, concurrency: int, pool: str) -> list[str]:
    """`celery worker` with the app of crawl_assets.deployment.celery_worker, one task prefetched at a
    time (a fetch step is long: a second one waiting on a busy worker would hold it back)."""
    return [sys.executable, "-m", "celery", "-A", "crawl_assets.deployment.celery_worker", "worker",
            "-Q", CELERY_QUEUE, "-n", name, "--pool", pool, "--concurrency", str(concurrency),
            "--prefetch-multiplier", "1", "--without-gossip", "--without-mingle", "--loglevel", "INFO"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crawl_assets.deployment.cluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    instance = commands.add_parser("instance-file", help="print the instance file for DAGSTER_HOME")
    instance.add_argument("--postgres", action="store_true", help=f"records in PostgreSQL ({POSTGRES_URL_ENV})")
    worker = commands.add_parser("worker", help=f"run a Celery worker for the broker in {CELERY_BROKER_ENV}")
    worker.add_argument("--name", required=True, help="the worker's node name, e.g. fetch1@%%h")
    worker.add_argument("--concurrency", type=int, default=os.cpu_count() or 1,
                        help="steps at once (default: one per core)")
    worker.add_argument("--pool", default="prefork", choices=["prefork", "solo", "threads"],
                        help="solo: steps run in the worker's own process, one at a time")
    args = parser.parse_args(argv)
    if args.command == "instance-file":
        sys.stdout.write(instance_file(args.postgres))
        return 0
    try:
        celery_app_args()  # a clear error before celery starts, not a traceback from inside it
    except ClusterSetupError as exc:
        print(f"cannot start a worker: {exc}", file=sys.stderr)
        return 2
    command = worker_command(args.name, 1 if args.pool == "solo" else args.concurrency, args.pool)
    os.execv(command[0], command)


if __name__ == "__main__":
    sys.exit(main())
