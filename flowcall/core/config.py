"""Settings, all from environment variables, with defaults that work with no API key.

FLOWCALL_HOME          folder for the database and the embedded model (default ~/.flowcall)
FLOWCALL_DATABASE_URL  any SQLAlchemy URL (default: SQLite at $FLOWCALL_HOME/flowcall.db)
FLOWCALL_MODEL         which embedded model the local provider runs, by name (default
                       qwen2.5-coder-1.5b; qwen2.5-coder-0.5b for slow machines)
FLOWCALL_MODEL_PATH    a GGUF file for the local provider (default: the embedded model's file)
FLOWCALL_THREADS       CPU threads for the local model (default: the physical cores; 1 each lets
                       two runs share 2 cores)
FLOWCALL_LOCAL_TIMEOUT_S  how long one local model generation may run (default 600)
FLOWCALL_PROMPT_CACHE_MB  memory for the local model's cached prompt prefixes (default 1024; 0 turns it off)
FLOWCALL_PROMPT_CACHE_DISK_MB  disk for them under $FLOWCALL_HOME/prompt-cache, across processes
                               (default 1024; 0: off)
FLOWCALL_PROVIDER_TIMEOUT_S  how long one request to a remote or OpenAI-compatible model may take (default 60)
FLOWCALL_LEASE_S       how long a running run's lease lasts before another host may take it over (default 30)
FLOWCALL_BROKER_URL    a Redis URL (redis://host:6379/0): runs submitted with --queue go to `flowcall worker`s
FLOWCALL_QUEUE         the queue's name on that broker (default flowcall)
FLOWCALL_REDELIVERY_S  a queued run taken by a worker that died goes to another after this long (default 300)
FLOWCALL_PLUGIN_DIRS   extra plugin folders, separated by ':' (the repo's plugins/ is always read)
FLOWCALL_DATA_DIR      folder the plugins read data files from (default: plugins/data)
FLOWCALL_LANGUAGE      the studio's language for text written in two languages: en (default) or zh

Each provider's own variables (its API key, the base URL its key may be sent to, any other) are
declared by the provider, in its ProviderInfo (flowcall/providers): the Models page lists them,
and docs/guide/configuration.md. OPENAI_COMPATIBLE_BASE_URL is named here too: consent, a floor
below the providers, reads it (the one server OPENAI_COMPATIBLE_API_KEY is sent to).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from flowcall.core import embedded_models

REPO_ROOT = Path(__file__).resolve().parents[2]  # a clone's root; in an installed package, site-packages
# the example flows and sample plugins ship inside the package (flows/ and plugins/ at a clone's
# root point here)
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXAMPLE_FLOWS = EXAMPLES / "flows"
EMBEDDED_MODEL_FILE = embedded_models.MODELS[embedded_models.DEFAULT].file


def studio_language() -> str:
    """FLOWCALL_LANGUAGE: which part of a two-language description the studio shows (en, zh)."""
    return "zh" if os.environ.get("FLOWCALL_LANGUAGE", "").strip().lower().startswith("zh") else "en"


def home() -> Path:
    return Path(os.environ.get("FLOWCALL_HOME", Path.home() / ".flowcall")).expanduser()


def database_url() -> str:
    url = os.environ.get("FLOWCALL_DATABASE_URL")
    if url:
        return url
    return f"sqlite:///{home() / 'flowcall.db'}"


def broker_url() -> str | None:
    """FLOWCALL_BROKER_URL: where runs submitted with --queue wait for a worker; None runs
    everything in the process that asks, as without workers."""
    return os.environ.get("FLOWCALL_BROKER_URL", "").strip() or None


def queue_name() -> str:
    """FLOWCALL_QUEUE: the broker queue FlowCall's workers read (one per deployment or test)."""
    return os.environ.get("FLOWCALL_QUEUE", "").strip() or "flowcall"


def redelivery_s() -> float:
    """FLOWCALL_REDELIVERY_S: how long a run's task may stay taken and unacknowledged before the
    broker hands it to another worker (Redis's visibility timeout). A worker that was killed
    holds its task until then; a run still going after it is found running and waited for."""
    value = os.environ.get("FLOWCALL_REDELIVERY_S", "").strip()
    try:
        seconds = float(value) if value else 300.0
    except ValueError:
        seconds = 0.0
    if seconds < 1:
        from flowcall.core.errors import ConfigError

        raise ConfigError(f"FLOWCALL_REDELIVERY_S must be a number of seconds, at least 1, not {value!r}")
    return seconds


def embedded_model(name: str | None = None) -> embedded_models.EmbeddedModel:
    """The named embedded model, else FLOWCALL_MODEL's, else the default."""
    name = name or os.environ.get("FLOWCALL_MODEL", "").strip() or embedded_models.DEFAULT
    if name not in embedded_models.MODELS:
        from flowcall.core.errors import ConfigError

        raise ConfigError(
            f"no embedded model named {name!r}; choose one of {', '.join(embedded_models.MODELS)} "
            "(FLOWCALL_MODEL), or set FLOWCALL_MODEL_PATH to a GGUF file"
        )
    return embedded_models.MODELS[name]


def model_path() -> Path:
    configured = os.environ.get("FLOWCALL_MODEL_PATH")
    if configured:
        return Path(configured).expanduser()
    return home() / "models" / embedded_model().file


def model_label(provider: str, model: str) -> str:
    """provider/model as shown and recorded: a local flow runs this machine's embedded model
    (its file's name), whatever its model field says."""
    return f"local/{model_path().stem}" if provider == "local" else f"{provider}/{model}"


def physical_cores() -> int:
    """Cores, not hardware threads: llama.cpp's matrix work gains nothing from a core's second
    hyper-thread and loses to the contention. Read from /proc/cpuinfo's (physical id, core id)
    pairs, limited to the CPUs this process may run on; else every CPU counts."""
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return len(usable)
    cores, cpu, physical = set(), -1, "0"
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "processor":
            cpu, physical = int(value), "0"
        elif key == "physical id":
            physical = value
        elif key == "core id" and cpu in usable:
            cores.add((physical, value))
    return max(1, len(cores) or len(usable))


def model_threads() -> int:
    """FLOWCALL_THREADS, else the physical cores (llama-cpp-python's own default is half the
    CPUs for generation, which leaves half of a small machine's cores idle while it writes)."""
    value = os.environ.get("FLOWCALL_THREADS", "").strip()
    if not value:
        return physical_cores()
    if not value.isdigit() or int(value) < 1:
        from flowcall.core.errors import ConfigError

        raise ConfigError(f"FLOWCALL_THREADS must be a whole number of threads (1 or more), not {value!r}")
    return int(value)


def _megabytes(variable: str, default: int) -> int:
    value = os.environ.get(variable, "").strip()
    if not value:
        return default
    if not value.isdigit():
        from flowcall.core.errors import ConfigError

        raise ConfigError(
            f"{variable} must be a whole number of megabytes (0 turns the cache off), not {value!r}"
        )
    return int(value)


def prompt_cache_mb() -> int:
    """FLOWCALL_PROMPT_CACHE_MB: memory for the local model's prompt-prefix states (0: off)."""
    return _megabytes("FLOWCALL_PROMPT_CACHE_MB", 1024)


def prompt_cache_disk_mb() -> int:
    """FLOWCALL_PROMPT_CACHE_DISK_MB: disk for prompt-prefix states kept across processes, under
    $FLOWCALL_HOME/prompt-cache (0: off)."""
    return _megabytes("FLOWCALL_PROMPT_CACHE_DISK_MB", 1024)


def prompt_cache_folder() -> Path:
    return home() / "prompt-cache"


def local_timeout_s() -> float:
    """How long one generation of the local model may run before it is stopped (a timeout,
    as remote providers have; max_tokens bounds it too, but not on a slow machine)."""
    value = os.environ.get("FLOWCALL_LOCAL_TIMEOUT_S", "").strip()
    try:
        seconds = float(value) if value else 600.0
    except ValueError:
        seconds = -1.0
    if seconds <= 0:
        from flowcall.core.errors import ConfigError

        raise ConfigError(f"FLOWCALL_LOCAL_TIMEOUT_S must be a number of seconds above 0, not {value!r}")
    return seconds


def decoding() -> str:
    """FLOWCALL_DECODING: how the local model writes at temperature 0. "fast" (the default)
    appends the tokens a JSON Schema forces without a choice of the model's (providers/
    fast_decoding.py); "draft" also guesses copied tokens from the prompt and checks them in one
    pass; "plain" writes one token per pass, as llama-cpp-python does."""
    value = os.environ.get("FLOWCALL_DECODING", "").strip().lower() or "fast"
    if value not in ("fast", "draft", "plain"):
        from flowcall.core.errors import ConfigError

        raise ConfigError(f"FLOWCALL_DECODING must be fast, draft or plain, not {value!r}")
    return value


def plugin_dirs() -> list[Path]:
    dirs = [EXAMPLES / "plugins"]
    extra = os.environ.get("FLOWCALL_PLUGIN_DIRS", "")
    dirs.extend(Path(p).expanduser() for p in extra.split(os.pathsep) if p)
    return dirs


def data_dir() -> Path:
    return Path(os.environ.get("FLOWCALL_DATA_DIR", EXAMPLES / "plugins" / "data")).expanduser()


# provider openai-compatible's base URL variable (its ProviderInfo points here): the one server its
# key is sent to, which consent also reads to tell a flow's own server from the configured one
COMPATIBLE_BASE_URL_VARIABLE = "OPENAI_COMPATIBLE_BASE_URL"


def compatible_base_url() -> str | None:
    """OPENAI_COMPATIBLE_BASE_URL: the one place OPENAI_COMPATIBLE_API_KEY is sent to."""
    return os.environ.get(COMPATIBLE_BASE_URL_VARIABLE, "").strip() or None


_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNSAFE_URL_CHARS = re.compile(r"[\\\s\x00-\x1f\x7f]")  # parsers disagree on these: never "the same"


def _url_identity(url: str) -> tuple[str, str, int, str, str] | None:
    """scheme, host, port, path and query, normalised; None for anything not a plain http(s) URL."""
    if not isinstance(url, str) or _UNSAFE_URL_CHARS.search(url):
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a port that is not a number, a bad IPv6 literal
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return (
        scheme,
        parts.hostname.lower().rstrip("."),
        port or _DEFAULT_PORTS[scheme],
        parts.path.rstrip("/"),
        parts.query,
    )


def same_base_url(a: str | None, b: str | None) -> bool:
    """Do two base URLs name the same server and path? Scheme and host compare case-blind, a
    default port equals no port, a trailing slash does not count and user:password does not
    count (it does not change where a request goes). Anything unparsable is never the same."""
    if not a or not b:
        return False
    left, right = _url_identity(a), _url_identity(b)
    return left is not None and left == right
