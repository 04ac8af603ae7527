"""Choosing the distributed pieces: in-process steps and SQLite records unless the deployment
names a broker and PostgreSQL; a clear error when the cluster extra is missing."""

import sys

import pytest
import yaml
from dagster import in_process_executor

from crawl_assets.defs.jobs import SHARD_TAG
from crawl_assets.deployment.cluster import (
    CELERY_BROKER_ENV,
    POSTGRES_URL_ENV,
    ClusterSetupError,
    celery_settings,
    instance_file,
    main,
    run_executor,
)


def test_steps_run_in_process_unless_a_broker_is_named():
    assert run_executor({}) is in_process_executor
    assert celery_settings({}) is None
    assert celery_settings({CELERY_BROKER_ENV: "redis://10.0.0.5:6379/0"}) == {
        "broker": "redis://10.0.0.5:6379/0", "backend": "redis://10.0.0.5:6379/0"}


def test_a_broker_without_dagster_celery_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "dagster_celery", None)  # as if the extra were not installed
    with pytest.raises(ClusterSetupError, match=f"{CELERY_BROKER_ENV} is set but dagster-celery is not installed"):
        run_executor({CELERY_BROKER_ENV: "redis://127.0.0.1:6379/0"})


def test_a_worker_without_a_broker_says_what_to_set(monkeypatch, capsys):
    monkeypatch.delenv(CELERY_BROKER_ENV, raising=False)
    assert main(["worker", "--name", "w1"]) == 2
    assert CELERY_BROKER_ENV in capsys.readouterr().err


def test_the_postgres_instance_file_keeps_the_one_run_per_shard_limit(capsys):
    plain, postgres = yaml.safe_load(instance_file(False)), yaml.safe_load(instance_file(True))
    assert "storage" not in plain  # SQLite in DAGSTER_HOME, Dagster's default
    assert postgres["storage"] == {"postgres": {"postgres_url": {"env": POSTGRES_URL_ENV}}}
    assert {k: v for k, v in postgres.items() if k != "storage"} == plain
    limits = postgres["concurrency"]["runs"]["tag_concurrency_limits"]
    assert {"key": SHARD_TAG, "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits
    assert main(["instance-file", "--postgres"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == postgres


def test_a_url_data_root_is_an_fsspec_path_and_an_unknown_one_is_named(tmp_path):
    from pathlib import Path

    from upath import UPath

    from crawl_assets.crawler.settings import SettingsError, load_settings

    (tmp_path / "s3.toml").write_text('[crawl]\ndata_root = "s3://crawl-bucket/recrawl"\n')
    settings = load_settings(tmp_path / "s3.toml")
    assert isinstance(settings.data_root, UPath) and str(settings.data_root) == "s3://crawl-bucket/recrawl"
    assert settings.catalog_path == settings.work_dir / "crawl.duckdb"  # a database file is written locally
    (tmp_path / "file.toml").write_text('[crawl]\ndata_root = "file:///srv/shared/recrawl"\n')
    assert load_settings(tmp_path / "file.toml").data_root == Path("/srv/shared/recrawl")
    (tmp_path / "bad.toml").write_text('[crawl]\ndata_root = "nosuchstore://x/y"\n')
    with pytest.raises(SettingsError, match="data_root.*nosuchstore:// is not a file system fsspec knows"):
        load_settings(tmp_path / "bad.toml")
    (tmp_path / "seeds.toml").write_text('[crawl]\nseeds_dir = "s3://crawl-bucket/seeds"\n')
    with pytest.raises(SettingsError, match="seeds_dir.*only data_root may be a URL"):
        load_settings(tmp_path / "seeds.toml")
