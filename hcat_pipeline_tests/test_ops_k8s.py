"""HCAT_DEPLOYMENT=k8s without a cluster: the Helm values in deploy/k8s/ are loaded, turned into the
instance config the dagster chart renders from them, and that config builds a real Dagster instance
(K8sRunLauncher, QueuedRunCoordinator, run retries, run monitoring) against a throwaway kubeconfig;
the step executor of the profile is dagster-k8s's k8s_job_executor with a valid config."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import yaml

ROOT = Path(__file__).resolve().parents[1]
VALUES = ROOT / "deploy" / "k8s" / "values.yaml"

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: none, user: {token: not-a-real-token}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""


def instance_config(values: dict, kubeconfig: str) -> dict:
    """The dagster.yaml sections the chart renders from these values (the run launcher loads a kubeconfig
    file here instead of the in-cluster config)."""
    k8s = values["runLauncher"]["config"]["k8sRunLauncher"]
    daemon = values["dagsterDaemon"]
    retries, monitoring = daemon["runRetries"], daemon["runMonitoring"]
    return {
        "run_launcher": {
            "module": "dagster_k8s",
            "class": "K8sRunLauncher",
            "config": {
                "instance_config_map": "hcat-dagster-instance",
                "postgres_password_secret": values["global"]["postgresqlSecretName"],
                "dagster_home": "/opt/dagster/dagster_home",
                "service_account_name": values["global"]["serviceAccountName"],
                "image_pull_policy": k8s["imagePullPolicy"],
                "job_namespace": k8s["jobNamespace"],
                "load_incluster_config": False,
                "kubeconfig_file": kubeconfig,
                "env_secrets": [s["name"] for s in k8s["envSecrets"]],
                "volumes": k8s["volumes"],
                "volume_mounts": [{"name": m["name"], "mount_path": m["mountPath"]} for m in k8s["volumeMounts"]],
                "resources": k8s["resources"],
                "fail_pod_on_run_failure": k8s["failPodOnRunFailure"],
            },
        },
        "run_coordinator": {
            "module": "dagster.core.run_coordinator",
            "class": "QueuedRunCoordinator",
            "config": {"max_concurrent_runs": daemon["runCoordinator"]["config"]["queuedRunCoordinator"]["maxConcurrentRuns"]},
        },
        "run_retries": {"enabled": retries["enabled"], "max_retries": retries["maxRetries"],
                        "retry_on_asset_or_op_failure": retries["retryOnAssetOrOpFailure"]},  # fmt: skip
        "run_monitoring": {"enabled": monitoring["enabled"], "start_timeout_seconds": monitoring["startTimeoutSeconds"],
                           "max_resume_run_attempts": monitoring["maxResumeRunAttempts"]},  # fmt: skip
        "telemetry": {"enabled": values["telemetry"]["enabled"]},
    }


def test_helm_values_describe_the_k8s_profile():
    values = yaml.safe_load(VALUES.read_text())
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    (code,) = values["dagster-user-deployments"]["deployments"]
    assert code["dagsterApiGrpcArgs"] == ["--module-name", "hcat_pipeline.definitions"]
    env = {e["name"]: e["value"] for e in code["env"]}
    assert env["HCAT_DEPLOYMENT"] == "k8s" and env["HCAT_LLM_POOL_LIMITS"].startswith("llm_")
    # secrets only by reference: no key, no password anywhere in the file
    text = VALUES.read_text().lower()
    assert "postgresqlpassword:" not in text and "api_key:" not in text and "sk-" not in text
    assert values["postgresql"]["enabled"] is False and values["generatePostgresqlPasswordSecret"] is False
    # run pods and the code server see the same data volume (warehouse, golden sets, checkpoints)
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    assert launcher["volumeMounts"] == code["volumeMounts"] and env["HCAT_DATA_DIR"] == code["volumeMounts"][0]["mountPath"]


def test_rendered_instance_config_builds_a_k8s_run_launcher(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    overrides = instance_config(yaml.safe_load(VALUES.read_text()), str(kubeconfig))
    with dg.instance_for_test(overrides=overrides) as instance:
        launcher = instance.run_launcher
        assert type(launcher).__name__ == "K8sRunLauncher"
        assert launcher.job_namespace == "hcat" and launcher.env_secrets == ["hcat-llm"]
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        assert instance.run_retries_enabled and instance.run_retries_max_retries == 2
        assert instance.run_monitoring_enabled


def test_broken_values_are_refused_by_dagster(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    overrides = instance_config(yaml.safe_load(VALUES.read_text()), str(kubeconfig))
    overrides["run_launcher"]["config"]["job_namespace"] = 7  # a typo'd value must not pass silently
    try:
        with dg.instance_for_test(overrides=overrides) as instance:
            instance.run_launcher  # noqa: B018
    except dg.DagsterInvalidConfigError as e:
        assert "job_namespace" in str(e)
    else:
        raise AssertionError("an invalid run launcher config was accepted")


def test_k8s_profile_uses_the_k8s_job_executor():
    code = (
        "import os; os.environ['HCAT_DEPLOYMENT'] = 'k8s'; os.environ['HCAT_K8S_JOB_NAMESPACE'] = 'hcat'\n"
        "from hcat_pipeline.definitions import defs\n"
        "job = defs.resolve_job_def('campaign_run_job')\n"
        "print(job.executor_def.name, sorted(defs.resources))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HCAT_")}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    name, _ = out.stdout.strip().splitlines()[-1].split(" ", 1)
    assert name == "k8s"
