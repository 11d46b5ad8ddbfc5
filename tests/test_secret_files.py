"""Secrets from files (SECRET_KEY_FILE, REDIS_PASSWORD_FILE: compose's `secrets:`): read
when the app's settings are read, the Redis password added to REDIS_URL, and neither
the secret nor the URL that carries it in any log line or error."""

import logging

import pytest

from service import config


@pytest.fixture
def clean_environment(monkeypatch):
    for name in ("SECRET_KEY", "SECRET_KEY_FILE", "REDIS_PASSWORD_FILE", "REDIS_USERNAME",
                 "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_secret_key_is_read_from_its_file_when_unset(clean_environment, tmp_path):
    key = "k" * 43
    (tmp_path / "secret_key").write_text(key + "\n")
    clean_environment.setenv("SECRET_KEY_FILE", str(tmp_path / "secret_key"))
    assert config.read_config()["SECRET_KEY"] == key
    clean_environment.setenv("SECRET_KEY", "e" * 43)  # the variable, when set, wins
    assert config.read_config()["SECRET_KEY"] == "e" * 43


@pytest.mark.parametrize(("url", "username", "expected"), [
    ("redis://redis:6379/0", None, "redis://:p%40ss%3Aw%2Fd@redis:6379/0"),
    ("redis://old:secret@redis:6379/0", "patience", "redis://patience:p%40ss%3Aw%2Fd@redis:6379/0"),
    ("redis+cluster://redis-1:6379,redis-2:6379", "patience",
     "redis+cluster://patience:p%40ss%3Aw%2Fd@redis-1:6379,redis-2:6379"),
])
def test_the_redis_password_is_added_to_the_url(clean_environment, tmp_path, url, username,
                                                expected):
    (tmp_path / "redis_password").write_text("p@ss:w/d\n")
    clean_environment.setenv("REDIS_URL", url)
    clean_environment.setenv("REDIS_PASSWORD_FILE", str(tmp_path / "redis_password"))
    if username:
        clean_environment.setenv("REDIS_USERNAME", username)
    assert config.read_config()["REDIS_URL"] == expected


def test_the_cluster_client_logs_in_with_it():
    from service.storage.cluster import parse_cluster_url

    nodes, credentials = parse_cluster_url(
        "redis+cluster://patience:p%40ss%3Aw%2Fd@redis-1:6379,redis-2:6379")
    assert nodes == [("redis-1", 6379), ("redis-2", 6379)]
    assert credentials == {"username": "patience", "password": "p@ss:w/d"}


@pytest.mark.parametrize("content", [None, "", "\n"])
def test_a_missing_or_empty_file_names_the_setting_not_the_secret(clean_environment, tmp_path,
                                                                  content):
    path = tmp_path / "redis_password"
    if content is not None:
        path.write_text(content)
    clean_environment.setenv("REDIS_PASSWORD_FILE", str(path))
    with pytest.raises(ValueError, match="REDIS_PASSWORD_FILE"):
        config.read_config()


def test_the_app_with_a_password_logs_neither_it_nor_the_url(clean_environment, tmp_path,
                                                            caplog, capfd):
    """An app whose Redis cannot be reached (nothing listens there) answers /readyz 503;
    nothing it logs carries the password."""
    from service.app import create_app

    password = "Pw-" + "x" * 29
    (tmp_path / "redis_password").write_text(password)
    clean_environment.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    clean_environment.setenv("REDIS_PASSWORD_FILE", str(tmp_path / "redis_password"))
    clean_environment.setenv("SECRET_KEY", "s" * 43)
    caplog.set_level(logging.DEBUG)
    app = create_app()
    assert password in app.config["REDIS_URL"]
    with app.test_client() as client:
        assert client.get("/readyz").status_code == 503
        client.post("/v1/games", json={"variant": "clock"})
    written = capfd.readouterr()
    logged = caplog.text + written.out + written.err
    assert '"status": 503' in logged  # the request lines were read here
    assert password not in logged
    assert "redis://:" not in logged  # nor the URL that carries it
