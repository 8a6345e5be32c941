"""Deployment profiles chosen by HCAT_DEPLOYMENT: resources, executor, LLM pools per provider and the
instance config each profile installs (fast: no services started)."""

import os
import subprocess
from pathlib import Path

import dagster as dg
import pytest
import yaml

from hcat_pipeline.resources.sets import apply_pool_limits, deployment, executor_for, llm_pool, pool_limits, resources_for

ROOT = Path(__file__).resolve().parents[1]


def test_unknown_profile_is_refused_with_the_choices(monkeypatch):
    monkeypatch.setenv("HCAT_DEPLOYMENT", "cluster")
    with pytest.raises(ValueError, match="HCAT_DEPLOYMENT='cluster': expected one of local, api, distributed, k8s"):
        deployment()


def test_profiles_pick_resources_executor_and_pool(monkeypatch):
    monkeypatch.delenv("HCAT_LLM_PROVIDER", raising=False)
    monkeypatch.delenv("HCAT_LLM_POOL_LIMITS", raising=False)
    monkeypatch.setenv("HCAT_LLM_CONCURRENCY", "6")
    assert executor_for("local") is None and executor_for("api") is None
    assert executor_for("distributed").name == "celery" and executor_for("k8s").name == "k8s"
    assert resources_for("local")["llm"].provider == "local" and resources_for("distributed")["llm"].provider == "openai"
    assert llm_pool("local") == "llm_local" and llm_pool("distributed") == "llm_openai"
    assert pool_limits("local") == {"llm_local": 1} and pool_limits("api") == {"llm_openai": 6}
    monkeypatch.setenv("HCAT_LLM_PROVIDER", "anthropic")
    monkeypatch.setenv("HCAT_LLM_POOL_LIMITS", "llm_anthropic=2, llm_openai=8")
    assert llm_pool("api") == "llm_anthropic" and pool_limits("api") == {"llm_anthropic": 2, "llm_openai": 8}
    with dg.instance_for_test() as instance:
        assert apply_pool_limits(instance, "api") == {"llm_anthropic": 2, "llm_openai": 8}
        assert instance.event_log_storage.get_concurrency_info("llm_openai").slot_count == 8
    for bad in ("openai=8", "llm_openai=0", "llm_openai=many", "llm_openai"):
        monkeypatch.setenv("HCAT_LLM_POOL_LIMITS", bad)
        with pytest.raises(ValueError, match="HCAT_LLM_POOL_LIMITS"):
            pool_limits("api")


@pytest.mark.parametrize(
    ("env", "expect"),
    [({}, "dagster.yaml"), ({"HCAT_DAGSTER_STORAGE": "postgres"}, "deploy/dagster.postgres.yaml"),
     ({"HCAT_DEPLOYMENT": "distributed"}, "deploy/dagster.distributed.yaml")],
)  # fmt: skip
def test_env_sh_installs_the_profile_instance_config(tmp_path, env, expect):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HCAT_", "DAGSTER_"))}
    out = subprocess.run(["bash", "-c", f"source '{ROOT}/scripts/env.sh' && cat \"$DAGSTER_HOME/dagster.yaml\""],
                         env={**base, "DAGSTER_HOME": str(tmp_path), **env}, capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout == (ROOT / expect).read_text()


def test_instance_configs_are_valid_with_run_retries_and_pools(tmp_path):
    for name in ("dagster.yaml", "deploy/dagster.distributed.yaml"):
        config = yaml.safe_load((ROOT / name).read_text())
        config.pop("storage", None)  # Postgres itself is exercised by test_ops_distributed
        with dg.instance_for_test(overrides=config) as instance:
            assert instance.run_retries_enabled and instance.run_retries_max_retries >= 1
            assert not instance.run_retries_retry_on_asset_or_op_failure  # step failures: the steps' own retries
            assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
