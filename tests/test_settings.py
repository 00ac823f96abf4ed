"""Configuration from the environment, and the errors a typo gets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conveyor.settings import Settings, SettingsError, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30d", 2592000.0),
        ("12h", 43200.0),
        ("10m", 600.0),
        ("45s", 45.0),
        ("500ms", 0.5),
        ("2", 2.0),
        (" 1.5 s ", 1.5),
        ("1w", 604800.0),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-1s", "10 parsecs", "1e3"])
def test_bad_durations_say_what_to_write(text: str) -> None:
    with pytest.raises(SettingsError, match="not a duration"):
        parse_duration(text)


def test_settings_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CONVEYOR_DATABASE_URL", "postgresql://db/x")
    monkeypatch.setenv("CONVEYOR_HOME", str(tmp_path))
    monkeypatch.setenv("CONVEYOR_POLL_INTERVAL", "250ms")
    monkeypatch.setenv("CONVEYOR_LISTEN", "off")
    monkeypatch.setenv("CONVEYOR_PRUNE_AFTER", "30d")
    monkeypatch.setenv("CONVEYOR_LOG_FORMAT", "json")
    s = Settings.from_env()
    assert (s.database_url, s.home, s.poll_interval, s.listen, s.prune_after, s.log_format) == (
        "postgresql://db/x",
        tmp_path,
        0.25,
        False,
        2592000.0,
        "json",
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("CONVEYOR_LISTEN", "maybe", "expected 1/0"),
        ("CONVEYOR_SWEEP_INTERVAL", "often", "is not a number of seconds"),
        ("CONVEYOR_LOG_FORMAT", "xml", "expected text or json"),
        ("CONVEYOR_STATEMENT_TIMEOUT", "0", "from 1ms to 1d"),
        ("CONVEYOR_STATEMENT_TIMEOUT", "2d", "from 1ms to 1d"),
        ("CONVEYOR_STATEMENT_TIMEOUT", "forever", "is not a number of seconds"),
    ],
)
def test_a_bad_variable_is_named_in_the_error(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match=message) as error:
        Settings.from_env()
    assert name in str(error.value)


def test_the_statement_timeout_bounds_every_statement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVEYOR_STATEMENT_TIMEOUT", raising=False)
    assert Settings.from_env().statement_timeout == 10.0  # a bound even when unset
    monkeypatch.setenv("CONVEYOR_STATEMENT_TIMEOUT", "90s")
    assert Settings.from_env().statement_timeout == 90.0


def test_root_keeps_its_state_out_of_its_home_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.delenv("CONVEYOR_HOME", raising=False)
    home = Settings.from_env().home
    if os.geteuid() == 0:
        assert home == Path("/var/lib/conveyor")
    else:
        assert home == Path.home() / ".conveyor"


def test_reading_the_settings_loads_no_llm_code() -> None:
    """Settings check CONVEYOR_LLM_PRICES at start without importing conveyor.llm (the
    layer below it): a fresh interpreter, with prices set, has read them and loaded none."""
    code = (
        "import sys; from conveyor.settings import Settings; s = Settings.from_env(); "
        "print(bool(s.llm_prices), sorted(m for m in sys.modules if m.startswith('conveyor.llm')))"
    )
    prices = '{"m": {"input_per_mtok": 1, "output_per_mtok": 2}}'
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "CONVEYOR_LLM_PRICES": prices},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == ["True", "[]"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "is not JSON"),
        ("[]", "must be a JSON object"),
        ('{"m": {"input_per_mtok": 1}}', "must be"),
        ('{"m": {"input_per_mtok": -1, "output_per_mtok": 1}}', "must be a number >= 0"),
    ],
)
def test_bad_llm_prices_are_a_settings_error(
    monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    monkeypatch.setenv("CONVEYOR_LLM_PRICES", text)
    with pytest.raises(SettingsError, match=message) as error:
        Settings.from_env()
    assert "CONVEYOR_LLM_PRICES" in str(error.value)
