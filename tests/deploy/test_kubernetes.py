"""deploy/kubernetes: every manifest valid against Kubernetes' own schemas (strict: an
unknown or misspelt field fails), the things that matter asserted, and the probes run for
real against a runtime started with the Deployment's arguments and a real Postgres."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from deploy_files import KUBERNETES, REPO, manifests, one, parse_argv
from deploy_run import free_port, localise, probe

# The oldest Kubernetes these manifests are meant for (policy/v1 PDBs, seccompProfile and
# topologySpreadConstraints are long stable by then) and the newest the package knows.
VERSIONS = ["1.29.0", kubernetes_validate.utils.latest_version()]
SECRET_NAME, SECRET_KEY = "awa-tui-dsn", "dsn"


def container() -> dict[str, Any]:
    containers = one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def run_argv() -> list[str]:
    c = container()
    return [*c["command"], *c["args"]]


def secret_path() -> str:
    """Where the Deployment mounts the DSN secret's key."""
    pod = one("Deployment")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == SECRET_NAME)
    item = next(i for i in volume["secret"]["items"] if i["key"] == SECRET_KEY)
    mount = next(m for m in container()["volumeMounts"] if m["name"] == volume["name"])
    return f"{mount['mountPath']}/{item['path']}"


def probes() -> dict[str, list[str]]:
    c = container()
    return {kind: c[kind]["exec"]["command"] for kind in ("startupProbe", "livenessProbe", "readinessProbe")}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_is_valid_against_the_kubernetes_schemas(version: str) -> None:
    docs = [(name, d) for name, ds in manifests().items() if name != "kustomization.yaml" for d in ds]
    assert sorted({d["kind"] for _, d in docs}) == ["Deployment", "NetworkPolicy", "PodDisruptionBudget", "Secret",
                                                           "Service"]
    for name, doc in docs:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{name}, {doc['kind']}: {exc}")


def test_the_schema_check_rejects_a_misspelt_field() -> None:
    """The negative control: strict validation does fail on what a typo makes."""
    broken = copy.deepcopy(one("Deployment"))
    broken["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {"exec": {"command": ["true"]}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[-1], strict=True)
    wrong_type = copy.deepcopy(one("Deployment"))
    wrong_type["spec"]["replicas"] = "2"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong_type, VERSIONS[-1], strict=True)


def test_kustomization_applies_every_manifest_but_the_example_secret() -> None:
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Kustomization"
    assert sorted(kustomization["resources"]) == sorted(set(manifests()) - {"kustomization.yaml",
                                                                             "secret.example.yaml"})


def test_two_replicas_and_a_rollout_that_keeps_a_standby() -> None:
    spec = one("Deployment")["spec"]
    assert spec["replicas"] >= 2
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_the_runtime_command_parses_and_takes_the_dsn_from_the_mounted_secret() -> None:
    name, params = parse_argv(run_argv())
    assert name == "run"
    assert params["dsn_file"] == secret_path() == "/var/run/secrets/awa-tui/dsn"
    assert params["dsn"] is None and params["app_ref"] and params["demo"] is False
    secret = one("Secret")
    assert (secret["metadata"]["name"], list(secret["stringData"])) == (SECRET_NAME, [SECRET_KEY])


def test_no_database_url_on_any_command_line_nor_in_the_environment() -> None:
    c = container()
    words = [*run_argv(), *(w for argv in probes().values() for w in argv)]
    assert "--dsn" not in words
    assert not [w for w in words if "postgres" in w.lower() or "@" in w]
    assert "env" not in c and "envFrom" not in c


def test_probes_run_check_with_flags_that_exist_and_fit_each_probe() -> None:
    port = metrics_port()
    parsed = {kind: parse_argv(argv) for kind, argv in probes().items()}
    assert {kind: name for kind, (name, _) in parsed.items()} == dict.fromkeys(parsed, "check")
    for kind in ("startupProbe", "livenessProbe"):
        params = parsed[kind][1]
        # This process's runtime, through its own server, with no database in the way.
        assert (params["alive"], params["registered"]) == (f"127.0.0.1:{port}", False)
        assert params["dsn"] is None and params["dsn_file"] is None
    ready = parsed["readinessProbe"][1]
    assert (ready["registered"], ready["alive"], ready["dsn_file"]) == (True, None, secret_path())
    for params in (p for _, p in parsed.values()):
        assert (params["owner"], params["schedule"], params["tag"]) == (None, None, None)  # never the fleet
    # A probe's timeout leaves room for the interpreter to start (~0.2 s) and the answer.
    assert all(container()[kind]["timeoutSeconds"] >= 5 for kind in parsed)


def test_a_misspelt_probe_flag_would_be_caught() -> None:
    from typer._click.exceptions import UsageError

    with pytest.raises(UsageError):
        parse_argv(["awa-tui", "check", "--live", "127.0.0.1:9464"])


def metrics_port() -> int:
    ports = [p for p in container()["ports"] if p["name"] == "metrics"]
    assert len(ports) == 1
    return int(ports[0]["containerPort"])


def test_the_scraped_port_is_the_one_the_runtime_serves() -> None:
    annotations = one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    _, params = parse_argv(run_argv())
    host, _, served = params["metrics_addr"].rpartition(":")
    assert host == "0.0.0.0"  # reachable by the scraper, not only from inside the pod
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    assert int(annotations["prometheus.io/port"]) == int(served) == metrics_port() == 9464
    service = one("Service")["spec"]
    assert [(p["port"], p["targetPort"]) for p in service["ports"]] == [(9464, "metrics")]


def test_the_budget_and_the_service_select_exactly_the_deployments_pods() -> None:
    deployment = one("Deployment")["spec"]
    pod_labels = deployment["template"]["metadata"]["labels"]
    selector = deployment["selector"]["matchLabels"]
    assert selector.items() <= pod_labels.items()
    pdb = one("PodDisruptionBudget")["spec"]
    assert pdb["selector"] == {"matchLabels": selector}
    assert pdb["minAvailable"] == 1 and pdb["minAvailable"] < deployment["replicas"]
    assert one("Service")["spec"]["selector"] == selector


def test_non_root_read_only_and_without_capabilities() -> None:
    pod = one("Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001  # the image's user (deploy/Dockerfile)
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    sc = container()["securityContext"]
    assert (sc["readOnlyRootFilesystem"], sc["allowPrivilegeEscalation"], sc["capabilities"]) == (
        True, False, {"drop": ["ALL"]})


def mebibytes(quantity: str) -> float:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()  # type: ignore[union-attr]
    return int(number) * (1024 if unit == "Gi" else 1)


def test_memory_is_sized_from_the_measured_rss() -> None:
    """docs/scaling.md's peak RSS of a runtime at every size measured: the request holds the
    largest, the limit leaves room for the probes' processes and the handlers."""
    rows = [line for line in (REPO / "docs" / "scaling.md").read_text().splitlines()
            if line.startswith("| runtime RSS (peak) |")]
    peak_mb = max(float(m) for line in rows for m in re.findall(r"([\d.]+) MB", line))
    assert 70 < peak_mb < 100, peak_mb  # the 1M figure, as committed
    resources = container()["resources"]
    peak_mib = peak_mb * 1e6 / 2**20
    assert mebibytes(resources["requests"]["memory"]) >= peak_mib
    assert mebibytes(resources["limits"]["memory"]) >= 3 * peak_mib
    assert resources["requests"]["cpu"] and resources["limits"]["cpu"]


def test_the_probes_work_against_a_live_runtime_and_fail_without_one(
        launch: Any, dsn_file: Path, tmp_path: Path) -> None:
    port = free_port()
    here = {"secret": secret_path(), "dsn_file": dsn_file, "port": port}
    checks = {kind: localise(argv, **here) for kind, argv in probes().items()}
    runtime = launch(localise(run_argv(), **here))
    for kind in ("startupProbe", "livenessProbe"):
        code, lines = probe(checks[kind])
        assert code == 0 and len(lines) == 1 and lines[0].endswith("running, 7 loops, none stuck"), (kind, lines)
    code, lines = probe(checks["readinessProbe"])
    assert code == 0 and re.fullmatch(r"OK: registered as [0-9a-f-]{36} on .+ \(pid \d+\)", lines[0]), lines
    assert f"(pid {runtime.process.pid})" in lines[0]
    # SIGTERM, as the kubelet stops a pod: a clean stop, then neither probe passes.
    assert runtime.stop() == 0
    assert "stopped cleanly" in runtime.output()
    assert probe(checks["livenessProbe"])[0] == 2
    assert probe(checks["readinessProbe"])[0] == 2


def test_migration_is_an_init_step_and_the_runtime_never_migrates() -> None:
    spec = one("Deployment")["spec"]["template"]["spec"]
    (init,) = spec["initContainers"]
    name, params = parse_argv([*init["command"], *init["args"]])
    assert (name, params["dsn_file"], params["dry_run"], params["down_to"]) == ("migrate", secret_path(), False, None)
    assert init["image"] == container()["image"]  # the same release migrates and runs
    assert init["securityContext"] == container()["securityContext"]
    _, run = parse_argv(run_argv())
    assert run["no_migrate"] is True


def test_the_pod_waits_longer_than_the_runtime_gives_its_running_jobs() -> None:
    """terminationGracePeriodSeconds covers --shutdown-grace plus 5 s for the release, the last
    snapshot and the leader lock: otherwise the kubelet kills jobs the runtime would release."""
    argv = run_argv()
    grace = float(argv[argv.index("--shutdown-grace") + 1])
    pod = one("Deployment")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == grace + 5 == 30


def test_only_the_monitoring_namespace_reaches_the_runtime_and_only_its_metrics_port() -> None:
    policy = one("NetworkPolicy")["spec"]
    pods = one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"] == pods
    assert policy["policyTypes"] == ["Ingress"]
    metrics_port = int(parse_argv(run_argv())[1]["metrics_addr"].rsplit(":", 1)[1])
    assert policy["ingress"] == [{
        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        "ports": [{"protocol": "TCP", "port": metrics_port}]}]
