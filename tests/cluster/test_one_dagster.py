"""One Dagster for the whole deployment: the cluster extra (dagster-postgres, dagster-celery)
installs into the project's own venv, beside the webserver, and each of them requires exactly
the dagster this venv runs, so webserver, daemon, runs and Celery workers share one release."""

import sys
from importlib.metadata import PackageNotFoundError, requires, version

import pytest
from packaging.requirements import Requirement

CLUSTER_PACKAGES = ("dagster-postgres", "dagster-celery")


def dagster_required_by(package: str) -> str:
    """The dagster specifier `package` declares (its releases pin one release exactly)."""
    (pinned,) = [req.specifier for req in map(Requirement, requires(package)) if req.name == "dagster"]
    return str(pinned)


@pytest.mark.parametrize("package", CLUSTER_PACKAGES)
def test_the_cluster_extra_runs_on_this_venvs_dagster(package):
    try:
        pinned = dagster_required_by(package)
    except PackageNotFoundError:
        pytest.fail(f"{package} is not installed in {sys.prefix}: `make cluster-tools` installs the cluster extra there")
    assert pinned == f"=={version('dagster')}"
    assert version("dagster-webserver") == version("dagster")
