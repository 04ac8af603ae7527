import ipaddress

import pytest

from crawl_assets.crawler.settings import PROJECT_ROOT, SettingsError, load_settings


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
