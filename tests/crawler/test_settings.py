import dataclasses
import importlib
import ipaddress
import os
import re
import subprocess
import sys
import tomllib

import pytest

from crawl_assets.crawler.settings import PROJECT_ROOT, CrawlSettings, SettingsError, load_settings


def test_defaults_are_for_a_real_crawl(monkeypatch):
    monkeypatch.delenv("RECRAWL_SETTINGS", raising=False)
    settings = load_settings()
    assert settings.default_delay_s == 1.0
    assert settings.shard_count == 8
    assert settings.data_root == PROJECT_ROOT / "data"
    assert settings.resolver_overrides == {} and settings.network_exceptions == ()
    assert "+http" in settings.user_agent  # a contact URL travels with every request


def test_demo_settings_layer_on_top(monkeypatch):
    monkeypatch.setenv("RECRAWL_SETTINGS", str(PROJECT_ROOT / "settings" / "demo.toml"))
    settings = load_settings()
    assert settings.default_delay_s < 1.0
    assert settings.resolver_overrides == {"*.demo.test": "127.0.0.1"}
    assert settings.network_exceptions[0].networks == (ipaddress.ip_network("127.0.0.0/8"),)
    assert settings.user_agent.startswith("recrawl/")  # untouched keys keep the defaults


def test_bad_settings_name_the_file_and_key(tmp_path, monkeypatch):
    monkeypatch.delenv("RECRAWL_SETTINGS", raising=False)
    bad = tmp_path / "bad.toml"
    bad.write_text("[crawl]\nshard_count = 0\n")
    with pytest.raises(SettingsError, match=r"bad.toml.*shard_count"):
        load_settings(bad)
    bad.write_text("[crawl]\nshard_cuont = 4\n")
    with pytest.raises(SettingsError, match=r"unknown setting 'shard_cuont'"):
        load_settings(bad)
    with pytest.raises(SettingsError, match="not found"):
        load_settings(tmp_path / "missing.toml")


def test_recrawl_toml_documents_every_setting_with_its_default(tmp_path):
    """Each setting of CrawlSettings has a line in recrawl.toml, set or commented out
    (`# key = value`), whose value is the default in settings.py."""
    text = (PROJECT_ROOT / "recrawl.toml").read_text()
    head, _, tables = text.partition("\n[crawl.")  # the sub-tables' examples stay commented
    uncommented = [re.sub(r"^#\s*(\w+ = .*?)(\s+#.*)?$", r"\1", line) for line in head.splitlines()]
    every_line = tmp_path / "every_line.toml"
    every_line.write_text("\n".join(uncommented) + "\n[crawl." + tables)
    documented = set(tomllib.loads(every_line.read_text())["crawl"])
    fields = {f.name for f in dataclasses.fields(CrawlSettings)}
    # network_exceptions is an example table: its default, none, is an empty list.
    assert fields - documented == {"network_exceptions"} and "[[crawl.network_exceptions]]" in text
    assert documented <= fields
    assert load_settings(every_line, use_env=False) == CrawlSettings()


@pytest.mark.parametrize("line", [
    "trap_min_refused = -1", "trap_min_refused = 2.7", "trap_min_refused = true", 'trap_min_refused = "lots"',
    "trap_refused_ratio = -0.5", "trap_refused_ratio = nan", "trap_refused_ratio = inf",
    'trap_refused_ratio = "x"', "trap_refused_ratio = [0.1]", "work_dir = 7", 'work_dir = "s3://b/w"',
    'data_root = "nosuchfs://bucket/x"', "data_root = 5", 'change_definition = "bytes"', "change_definition = 1",
    "listing_reserve_share = 1.5", 'ca_bundle_mode = "merge"', "ca_bundle = 3", 'ca_bundle = "s3://b/ca.pem"',
])
def test_a_wrong_value_of_a_new_setting_is_refused_by_name(line, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(f"[crawl]\n{line}\n")
    key = line.split(" =")[0]
    with pytest.raises(SettingsError, match=rf"bad.toml: bad value for '{key}'"):
        load_settings(bad, use_env=False)


def test_whole_numbers_and_ratios_above_one_are_accepted(tmp_path):
    # A trap host refuses several URLs per page it serves: a ratio above 1 is a real threshold.
    good = tmp_path / "good.toml"
    good.write_text("[crawl]\ntrap_min_refused = 7.0\ntrap_refused_ratio = 2\n")
    settings = load_settings(good, use_env=False)
    assert (settings.trap_min_refused, settings.trap_refused_ratio) == (7, 2.0)


@pytest.mark.parametrize("command", ["sql", "captures"])
def test_the_command_line_tools_print_a_settings_error_as_one_line(command, tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[crawl]\ntrap_refused_ratio = -1\n")
    monkeypatch.setenv("RECRAWL_SETTINGS", str(bad))
    main = importlib.import_module(f"crawl_assets.analyst.{command}").main
    assert main([] if command == "sql" else ["list", "http://example.org/"]) == 2
    err = capsys.readouterr().err
    assert err == f"{command}: {bad}: bad value for 'trap_refused_ratio': -1 (must not be negative)\n"


def test_an_s3_root_without_s3fs_says_to_install_the_s3_extra(tmp_path):
    # A fresh process (fsspec keeps a file system class once it has imported it), in which
    # s3fs cannot be imported: as if the s3 extra were not installed.
    settings = tmp_path / "s3.toml"
    settings.write_text('[crawl]\ndata_root = "s3://bucket/crawl"\n')
    script = ("import sys; sys.modules['s3fs'] = None\n"
              "from crawl_assets.crawler.settings import SettingsError, load_settings\n"
              "try:\n    load_settings(sys.argv[1], use_env=False)\n"
              "except SettingsError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", script, str(settings)], capture_output=True, text=True,
                         cwd=PROJECT_ROOT, timeout=120).stdout
    assert re.search(r"s3.toml: bad value for 'data_root'.*pip install -e '\.\[s3\]'", out), out


@pytest.mark.parametrize("command", ["sql", "captures"])
def test_without_the_catalog_of_a_url_root_the_tools_say_where_its_copy_is(command, tmp_path, monkeypatch, capsys):
    settings = tmp_path / "remote.toml"
    settings.write_text(f'[crawl]\ndata_root = "memory://bucket/crawl"\nwork_dir = "{tmp_path / "work"}"\n')
    monkeypatch.setenv("RECRAWL_SETTINGS", str(settings))
    main = importlib.import_module(f"crawl_assets.analyst.{command}").main
    assert main([] if command == "sql" else ["list", "http://example.org/"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{command}: no catalog at {tmp_path}/work/crawl.duckdb (the catalog of the settings: "
                          f"recrawl.toml and {settings}): run `make demo` or a crawl ")
    assert err.endswith("under a URL data root the catalog is built in one machine's work_dir: copy the data "
                        f"root's memory://bucket/crawl/crawl.duckdb to {tmp_path}/work/crawl.duckdb\n")


@pytest.mark.parametrize("command", ["cycle", "demo"])
def test_make_crawl_and_make_demo_print_a_bad_setting_as_one_line(command, tmp_path):
    # Their modules read the settings while they load, before the command's own error handler.
    bad = tmp_path / "bad.toml"
    bad.write_text("[crawl]\ntrap_min_refused = 2.5\n")
    env = os.environ | {"RECRAWL_SETTINGS": str(bad), "DAGSTER_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", f"crawl_assets.cli.{command}"], capture_output=True, text=True,
                          cwd=PROJECT_ROOT, env=env, timeout=300)
    assert done.returncode == 1
    assert done.stderr == f"{command}: {bad}: bad value for 'trap_min_refused': 2.5 (must be a whole number)\n"


@pytest.mark.parametrize("text, words", [
    ('[crawl]\nmax_concurrent_hosts = "64"\n', "bad value for 'max_concurrent_hosts': '64' (must be a whole number, written without quotes)"),
    ('[crawl]\ndefault_delay_s = "1.5"\n', "bad value for 'default_delay_s': '1.5' (must be a number, written without quotes)"),
    ("[crawl]\nuser_agent = 7\n", "bad value for 'user_agent': 7 (must be a string, in quotes)"),
    ('[crawl]\nhost_scope = "*.example.org"\n', "bad value for 'host_scope'"),
    ('[crawl]\npriority_weights = "16"\n', "bad value for 'priority_weights'"),
    ("[crawl]\nstart_date = 20261101\n", "bad value for 'start_date'"),
    ('[crawl]\nresolver_overrides = "127.0.0.1"\n', "bad value for 'resolver_overrides'"),
    ("[crawler]\nmax_concurrent_hosts = 2\n", "unknown table [crawler]: every setting goes under [crawl]"),
    ("max_concurrent_hosts = 2\n[crawl]\n", "unknown key 'max_concurrent_hosts' outside the [crawl] table"),
    ("[crawl.resolver_override]\n", "unknown setting 'resolver_override' in [crawl]"),
])
def test_a_wrong_type_or_an_unknown_table_is_refused_by_name(text, words, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    with pytest.raises(SettingsError) as refused:
        load_settings(bad, use_env=False)
    assert str(refused.value).startswith(f"{bad}: ") and words in str(refused.value), refused.value


def test_the_ca_bundle_is_a_path_relative_to_the_project_or_unset(tmp_path):
    settings = tmp_path / "tls.toml"
    settings.write_text('[crawl]\nca_bundle = "certs/company-ca.pem"\nca_bundle_mode = "replace"\n')
    loaded = load_settings(settings, use_env=False)
    assert (loaded.ca_bundle, loaded.ca_bundle_mode) == (PROJECT_ROOT / "certs" / "company-ca.pem", "replace")
    settings.write_text('[crawl]\nca_bundle = ""\n')
    assert load_settings(settings, use_env=False).ca_bundle is None
