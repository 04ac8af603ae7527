"""The Celery app a worker runs (`python -m crawl_assets.deployment.cluster worker`): dagster-celery's
step task, on the broker and backend named in RECRAWL_CELERY_BROKER / RECRAWL_CELERY_BACKEND.
A worker needs the same settings (RECRAWL_SETTINGS), data root and instance (DAGSTER_HOME,
RECRAWL_POSTGRES_URL) as the machine that launches the runs."""

from dagster_celery.make_app import make_app
from dagster_celery.tasks import create_task

from .cluster import celery_app_args

app = make_app(celery_app_args())
execute_plan = create_task(app)
