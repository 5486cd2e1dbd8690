"""Models: which providers have a key, the embedded model's state, and the capability probe
that tells `auto` what a model really does. Keys are only ever reported as set or not set."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import streamlit as st

from flowcall.core.errors import ConfigError
from flowcall.core.model_profile import Check, ModelProfile
from flowcall.core.spec import ModelConfig
from flowcall.service import models
from flowcall.studio.shared import WARMING_NOTE, md, service


def key_source(variable: str) -> str | None:
    """Where a key is set, never its value. Streamlit copies root-level secrets into
    os.environ, where the providers read them, so a secret counts as set."""
    if st.secrets.load_if_toml_exists() and variable in st.secrets:
        return "st.secrets"
    return "environment variable" if os.environ.get(variable) else None


def check_rows(checks: list[Check]) -> list[dict[str, Any]]:
    return [
        {"check": c.name, "result": c.outcome, "latency s": round(c.latency_ms / 1000, 2), "detail": c.detail}
        for c in checks
    ]


def check_line(check: Check) -> str:
    icon = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️"}[check.outcome]
    # the detail quotes the model server's answer or error: text, not Markdown
    return (
        f"{icon} **{md(check.name)}** · {check.outcome} · {check.latency_ms / 1000:.1f} s · "
        f"{md(check.detail)}"
    )


st.title("Models")

# --- providers --------------------------------------------------------------------------------
st.header("Providers")
try:
    infos = models.providers()  # each provider's own ProviderInfo, built in or installed
except ConfigError as exc:  # an installed provider package that cannot be read
    st.error(md(exc))
    st.stop()
rows = []
for info in infos:
    source = key_source(info.api_key_variable) if info.api_key_variable else None
    optional = " (optional: most local servers need none)" if info.key_optional else ""
    rows.append(
        {
            "provider": info.name,
            "about": info.description,
            "key variable": info.api_key_variable or "-",
            "key": (f"set ({source})" if source else f"not set{optional}")
            if info.api_key_variable
            else "no key needed",
            "base URL variable": info.base_url_variable or "-",
            "base URL": models.shown_base_url(info) or ("default" if info.hosted else "in-process"),
        }
    )
st.dataframe(rows, hide_index=True)
st.caption(
    "Set a key with `export OPENAI_API_KEY=...` before starting the studio, or as a root-level entry in "
    "`.streamlit/secrets.toml`. Keys are never shown here."
)

# --- the embedded model -----------------------------------------------------------------------
st.header("Embedded model")
if service().prompt_cache_warming():
    st.info(WARMING_NOTE, icon=":material/hourglass_top:")
summary = st.container()  # filled after the verify button, so it shows the outcome of a verification
status = models.embedded_model_status()
path = Path(status["path"])
if st.button("Verify the SHA-256 now", disabled=not status["present"]):
    with st.spinner(f"Hashing {status['size'] / 1e6:.0f} MB…"):
        if status["embedded"]:
            if models.verify_embedded_model(path):
                st.success("The file matches the published SHA-256.")
            else:
                st.error(
                    "The file does not match the published SHA-256: it is damaged or another file. "
                    "Delete it and run `flowcall model fetch` again."
                )
        else:
            st.info(
                f"SHA-256 {models.file_sha256(path)}. This is not the embedded model, so there is no "
                "published hash to compare with."
            )
    status = models.embedded_model_status(path)
with summary:
    present, size, verified = st.columns(3)
    present.metric("Present", "yes" if status["present"] else "no")
    size.metric("Size", f"{status['size'] / 1e6:.1f} MB")
    verified.metric("Hash verified", "yes" if status["verified"] else "no")
    expected = (
        f"{status['name']}, expected SHA-256 `{status['expected_sha256']}`"
        if status["embedded"]
        else "not an embedded model: no published SHA-256 to compare with"
    )
    st.caption(md(f"Path: {status['path']} · {expected}"))
    if not status["present"]:
        st.warning(
            "No model file there: run `flowcall model fetch` (or `bash scripts/setup.sh`), "
            "or set FLOWCALL_MODEL_PATH to a GGUF file."
        )

# --- the capability probe ---------------------------------------------------------------------
st.header("Capability probe")
st.caption(
    "Three small requests: a tool call the question needs (it must come back as a structured call, not "
    "as text), JSON valid against a schema, and two calls in one turn. The result is stored, and a flow "
    "with calling way `auto` then starts on a way the model passed. The embedded models keep their own "
    "order, chosen on many more requests than these three; `auto` still falls back."
)
by_name = {info.name: info for info in infos}
provider = st.selectbox("Provider", list(by_name))
chosen = by_name[provider]
if provider == "local":
    model = st.text_input(
        "Model", value=path.stem, disabled=True, help="The local provider runs this GGUF file."
    )
else:
    first = chosen.suggested_models[0] if chosen.suggested_models else ""
    model = st.text_input("Model", value=first, key=f"model_{provider}")
base_url = None
if chosen.flow_base_url:
    base_url = (
        st.text_input(
            "Base URL",
            placeholder=models.shown_base_url(chosen) or "http://127.0.0.1:11434/v1",
            help=f"Empty: {chosen.base_url_variable}, the one server its key is sent to",
        ).strip()
        or None
    )

if st.button("Run the probe", type="primary", disabled=not model.strip()):
    config = ModelConfig(provider=provider, model=model.strip(), base_url=base_url)
    failed = None
    with st.status(f"Probing {md(provider)}/{md(config.model)}…", expanded=True) as box:
        try:
            profile = service().probe_model(config, on_check=lambda check: st.write(check_line(check)))
        except ConfigError as exc:
            box.update(label="The probe could not start", state="error", expanded=True)
            failed, profile = exc, None
    if failed is not None:  # the reason in the open, not inside a box that may close
        st.error(md(failed))
    if profile is not None and profile.learned_anything():  # stored by the service
        passed = sum(c.passed for c in profile.checks)
        box.update(
            label=f"{md(profile.provider)}/{md(profile.model)}: "
            f"{passed} of {len(profile.checks)} checks passed",
            state="complete",
            expanded=False,
        )
        st.session_state["last_probe"] = profile.model_dump(mode="json")
    elif profile is not None:
        box.update(label="No check reached the model", state="error", expanded=True)
        st.error(
            f"{md(profile.checks[0].detail)}. Check that the server is running, the base URL and the key, "
            "then probe again. Nothing was stored."
        )

if last := st.session_state.get("last_probe"):
    profile = ModelProfile.model_validate(last)
    st.subheader(md(f"Last probe: {profile.provider}/{profile.model}"))
    st.dataframe(check_rows(profile.checks), hide_index=True)
    st.caption(f"`auto` now uses: {md(profile.capabilities_update())}")

st.subheader("Stored profiles")
try:
    stored = service().model_profiles()
except ConfigError as exc:
    st.error(md(exc))
    st.stop()
if not stored:
    st.info(
        "No model has been probed yet: pick one above and run "
        "the probe, or `flowcall profiles probe --provider local`."
    )
else:
    st.dataframe(
        [
            {
                "provider": p.provider,
                "model": p.model,
                "base URL": p.base_url or "",
                "probed": f"{p.probed_at:%Y-%m-%d %H:%M}",
                **{c.name: c.outcome for c in p.checks},
            }
            for p in stored
        ],
        hide_index=True,
    )
